package rest

import (
	"bytes"
	"fmt"
	"net/http"
	"net/http/pprof"
	rpprof "runtime/pprof"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/google/pprof/profile"

	"github.com/weirstream/weir/internal/engine"
	"github.com/weirstream/weir/internal/monitor"
)

// Profiles: Go's /debug/pprof handlers and CPU flame graphs per vertex.
// Every task goroutine (and the goroutines it starts: source readers,
// asynchronous snapshots) carries the pprof labels LabelVertex (the
// vertex's head UID) and LabelSubtask, so a CPU profile tells one
// vertex's share (Flink's flame graphs per operator, sampled here by Go's
// profiler rather than by thread dumps).

// The pprof labels of task goroutines.
const (
	LabelVertex  = engine.LabelVertex
	LabelSubtask = engine.LabelSubtask
)

func (s *Server) routeProfiles(mux *http.ServeMux) {
	mux.HandleFunc("GET /debug/pprof/", s.guarded(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Has("seconds") { // a delta profile
			r = longRequest(w, r, pprofSeconds(r))
		}
		pprof.Index(w, r)
	}))
	mux.HandleFunc("GET /debug/pprof/cmdline", s.guarded(pprof.Cmdline))
	mux.HandleFunc("GET /debug/pprof/profile", s.guarded(s.cpuProfile))
	mux.HandleFunc("GET /debug/pprof/symbol", s.guarded(pprof.Symbol))
	mux.HandleFunc("POST /debug/pprof/symbol", s.guarded(pprof.Symbol))
	mux.HandleFunc("GET /debug/pprof/trace", s.guarded(func(w http.ResponseWriter, r *http.Request) {
		pprof.Trace(w, longRequest(w, r, pprofSeconds(r)))
	}))
	mux.HandleFunc("GET /jobs/{jobid}/vertices/{vertexid}/flamegraph", s.guarded(s.withVertex(s.flameGraph)))
}

// cpuProfile is pprof.Profile, serialized with the flame graphs (one CPU
// profile at a time per process).
func (s *Server) cpuProfile(w http.ResponseWriter, r *http.Request) {
	s.prof.Lock()
	defer s.prof.Unlock()
	pprof.Profile(w, longRequest(w, r, pprofSeconds(r)))
}

// pprofSeconds is the duration net/http/pprof's profile and trace
// handlers take: ?seconds= (default 30 s for a profile; at most an hour
// here, beyond which the server's write deadline applies again).
func pprofSeconds(r *http.Request) time.Duration {
	f, err := strconv.ParseFloat(r.URL.Query().Get("seconds"), 64)
	if err != nil || f <= 0 {
		return 30 * time.Second
	}
	return time.Duration(min(f, 3600) * float64(time.Second))
}

// FlameNode is Flink's flame graph node (VertexFlameGraph.Node).
type FlameNode struct {
	Name     string       `json:"name"`
	Value    int64        `json:"value"`
	Children []*FlameNode `json:"children"`
}

// profileSeconds reads ?seconds= (default 2, at most 60).
func profileSeconds(r *http.Request) (time.Duration, error) {
	q := r.URL.Query().Get("seconds")
	if q == "" {
		return 2 * time.Second, nil
	}
	f, err := strconv.ParseFloat(q, 64)
	if err != nil || f <= 0 || f > 60 {
		return 0, fmt.Errorf("seconds must be in (0, 60], got %q", q)
	}
	return time.Duration(f * float64(time.Second)), nil
}

// flameGraph profiles the process's CPU for ?seconds= and returns the
// samples of the vertex's goroutines (optionally of ?subtask= only) as
// Flink's VertexFlameGraph: {"endTimestamp", "data": root node}. Only
// ?type=on_cpu (the default) is supported.
func (s *Server) flameGraph(w http.ResponseWriter, r *http.Request, e *entry, snap *monitor.Snapshot, _ map[string][]monitor.Rate, v *monitor.Vertex) {
	if t := strings.ToLower(r.URL.Query().Get("type")); t != "" && t != "on_cpu" {
		writeError(w, http.StatusBadRequest, "only on_cpu flame graphs are supported (Go's CPU profiler)")
		return
	}
	d, err := profileSeconds(r)
	if err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	subtask := r.URL.Query().Get("subtask")
	r = longRequest(w, r, d)
	if !s.prof.TryLock() {
		writeError(w, http.StatusServiceUnavailable, "a CPU profile is already being taken")
		return
	}
	var buf bytes.Buffer
	err = rpprof.StartCPUProfile(&buf)
	if err != nil {
		s.prof.Unlock()
		writeError(w, http.StatusServiceUnavailable, "cannot start the CPU profiler: "+err.Error())
		return
	}
	select {
	case <-time.After(d):
	case <-r.Context().Done():
	case <-s.ctx.Done():
	}
	rpprof.StopCPUProfile()
	s.prof.Unlock()
	p, err := profile.Parse(&buf)
	if err != nil {
		writeError(w, http.StatusInternalServerError, "reading the CPU profile: "+err.Error())
		return
	}
	root := FlameGraph(p, v.UID, subtask)
	writeJSON(w, http.StatusOK, map[string]any{"endTimestamp": time.Now().UnixMilli(), "data": root})
}

// FlameGraph folds the CPU samples of profile p whose goroutines carry
// LabelVertex = vertex (and LabelSubtask = subtask, unless "") into a tree
// of frames from the root, valued in samples; children sorted by name.
func FlameGraph(p *profile.Profile, vertex, subtask string) *FlameNode {
	root := &FlameNode{Name: "root", Children: []*FlameNode{}}
	valueIndex := 0
	for i, st := range p.SampleType {
		if st.Type == "samples" {
			valueIndex = i
		}
	}
	for _, smp := range p.Sample {
		if !hasLabel(smp, LabelVertex, vertex) || (subtask != "" && !hasLabel(smp, LabelSubtask, subtask)) {
			continue
		}
		n := smp.Value[valueIndex]
		root.Value += n
		node := root
		// Locations are leaf first; inlined lines of a location too.
		for i := len(smp.Location) - 1; i >= 0; i-- {
			lines := smp.Location[i].Line
			for j := len(lines) - 1; j >= 0; j-- {
				name := "?"
				if f := lines[j].Function; f != nil {
					name = f.Name
				}
				node = child(node, name)
				node.Value += n
			}
		}
	}
	sortTree(root)
	return root
}

func hasLabel(s *profile.Sample, key, value string) bool {
	for _, v := range s.Label[key] {
		if v == value {
			return true
		}
	}
	return false
}

func child(n *FlameNode, name string) *FlameNode {
	for _, c := range n.Children {
		if c.Name == name {
			return c
		}
	}
	c := &FlameNode{Name: name, Children: []*FlameNode{}}
	n.Children = append(n.Children, c)
	return c
}

func sortTree(n *FlameNode) {
	sort.Slice(n.Children, func(a, b int) bool { return n.Children[a].Name < n.Children[b].Name })
	for _, c := range n.Children {
		sortTree(c)
	}
}
