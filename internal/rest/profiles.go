package rest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/pprof"
	rpprof "runtime/pprof"
	"sort"
	"strconv"
	"strings"
	"sync"
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

// Flame graph types (Flink's ThreadStates).
const (
	FlameOnCPU  = "ON_CPU"
	FlameOffCPU = "OFF_CPU"
	FlameFull   = "FULL"
)

// flameGraph answers Flink's VertexFlameGraph, {"endTimestamp", "data":
// root node}, of the vertex's goroutines (optionally of one subtask:
// ?subtaskindex=, Flink's name, or ?subtask=) for ?type= (case
// insensitive):
//
//   - ON_CPU (default): the CPU samples of Go's profiler, in samples;
//   - OFF_CPU: the goroutines found waiting (parked: on a channel, a
//     lock, I/O, a timer) in goroutine profiles taken every 50 ms;
//   - FULL: every goroutine in those profiles, running or waiting.
//
// With ?seconds= it samples for that long and answers. Without it, as
// Flink's web UI asks, it answers at once with the latest graph of that
// vertex, type and subtask (endTimestamp -1 and no data before the
// first, Flink's "waiting"), and starts a 2 s sampling in the background
// if the latest is older than flameRefresh.
func (s *Server) flameGraph(w http.ResponseWriter, r *http.Request, e *entry, snap *monitor.Snapshot, _ map[string][]monitor.Rate, v *monitor.Vertex) {
	q := r.URL.Query()
	typ := strings.ToUpper(q.Get("type"))
	switch typ {
	case "":
		typ = FlameOnCPU
	case FlameOnCPU, FlameOffCPU, FlameFull:
	default:
		writeError(w, http.StatusBadRequest, fmt.Sprintf("flame graph type %q: one of ON_CPU, OFF_CPU, FULL", q.Get("type")))
		return
	}
	subtask := q.Get("subtaskindex")
	if subtask == "" {
		subtask = q.Get("subtask")
	}
	if !q.Has("seconds") {
		if vertexStatus(*v) != "RUNNING" {
			writeJSON(w, http.StatusOK, vertexFlameGraph{EndTimestamp: flameTerminated})
			return
		}
		writeJSON(w, http.StatusOK, s.flames.latest(s, flameKey{v.UID, typ, subtask}))
		return
	}
	d, err := profileSeconds(r)
	if err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	r = longRequest(w, r, d)
	root, err := s.sampleFlame(r.Context(), flameKey{v.UID, typ, subtask}, d, false)
	if err != nil {
		writeError(w, http.StatusServiceUnavailable, err.Error())
		return
	}
	writeJSON(w, http.StatusOK, vertexFlameGraph{EndTimestamp: time.Now().UnixMilli(), Data: root})
}

// vertexFlameGraph is Flink's VertexFlameGraph.
type vertexFlameGraph struct {
	EndTimestamp int64 `json:"endTimestamp"`
	// Data is omitted in the answers without a graph, as Flink's.
	Data *FlameNode `json:"data,omitempty"`
}

// Flink's endTimestamp values for the answers without a graph
// (VertexFlameGraph.terminated, waiting).
const (
	flameTerminated = -1
	flameWaiting    = -3
)

// flameKey names the flame graphs of one vertex (head UID), type and
// subtask ("" all).
type flameKey struct{ vertex, typ, subtask string }

// flameRefresh is how old the latest flame graph may be before a request
// without ?seconds= starts a new sampling.
const flameRefresh = 10 * time.Second

// flameCache holds the latest flame graph per key, for Flink's web UI,
// which polls without waiting.
type flameCache struct {
	mu       sync.Mutex
	graphs   map[flameKey]vertexFlameGraph
	sampling map[flameKey]bool
}

// latest returns the latest graph of k (or Flink's waiting answer) and
// starts a sampling if it is missing or stale.
func (c *flameCache) latest(s *Server, k flameKey) vertexFlameGraph {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.graphs == nil {
		c.graphs, c.sampling = map[flameKey]vertexFlameGraph{}, map[flameKey]bool{}
	}
	g, ok := c.graphs[k]
	if !ok {
		g = vertexFlameGraph{EndTimestamp: flameWaiting}
	}
	if !c.sampling[k] && (!ok || time.Since(time.UnixMilli(g.EndTimestamp)) > flameRefresh) && s.ctx.Err() == nil {
		c.sampling[k] = true
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			root, err := s.sampleFlame(s.ctx, k, 2*time.Second, true)
			c.mu.Lock()
			defer c.mu.Unlock()
			delete(c.sampling, k)
			if err == nil {
				c.graphs[k] = vertexFlameGraph{EndTimestamp: time.Now().UnixMilli(), Data: root}
			}
		}()
	}
	return g
}

// sampleFlame samples k's goroutines for d (less if ctx ends). A CPU
// profile waits for one in progress if wait, else fails.
func (s *Server) sampleFlame(ctx context.Context, k flameKey, d time.Duration, wait bool) (*FlameNode, error) {
	if k.typ != FlameOnCPU {
		return goroutineFlame(ctx, k, d), nil
	}
	if wait {
		for !s.prof.TryLock() {
			select {
			case <-ctx.Done():
				return nil, ctx.Err()
			case <-time.After(100 * time.Millisecond):
			}
		}
	} else if !s.prof.TryLock() {
		return nil, errors.New("a CPU profile is already being taken")
	}
	var buf bytes.Buffer
	if err := rpprof.StartCPUProfile(&buf); err != nil {
		s.prof.Unlock()
		return nil, errors.New("cannot start the CPU profiler: " + err.Error())
	}
	select {
	case <-time.After(d):
	case <-ctx.Done():
	case <-s.ctx.Done():
	}
	rpprof.StopCPUProfile()
	s.prof.Unlock()
	p, err := profile.Parse(&buf)
	if err != nil {
		return nil, errors.New("reading the CPU profile: " + err.Error())
	}
	return FlameGraph(p, k.vertex, k.subtask), nil
}

// goroutineSampleEvery is the interval between the goroutine profiles
// of an OFF_CPU or FULL flame graph (Flink's default delay between
// stack samples).
const goroutineSampleEvery = 50 * time.Millisecond

// goroutineFlame folds goroutine profiles taken every
// goroutineSampleEvery for d: every goroutine of the vertex (FULL) or
// only the waiting ones (OFF_CPU), valued in goroutine samples.
func goroutineFlame(ctx context.Context, k flameKey, d time.Duration) *FlameNode {
	root := &FlameNode{Name: "root", Children: []*FlameNode{}}
	t := time.NewTicker(goroutineSampleEvery)
	defer t.Stop()
	deadline := time.After(d)
	for {
		var buf bytes.Buffer
		if err := rpprof.Lookup("goroutine").WriteTo(&buf, 0); err == nil {
			if p, err := profile.Parse(&buf); err == nil {
				foldGoroutines(root, p, k)
			}
		}
		select {
		case <-ctx.Done():
			sortTree(root)
			return root
		case <-deadline:
			sortTree(root)
			return root
		case <-t.C:
		}
	}
}

// waiting reports whether a goroutine's stack (leaf first) is parked.
func waiting(locs []*profile.Location) bool {
	for _, l := range locs {
		for _, ln := range l.Line {
			if ln.Function == nil {
				continue
			}
			switch ln.Function.Name {
			case "runtime.gopark", "runtime.goparkunlock":
				return true
			}
			return false
		}
	}
	return false
}

// foldGoroutines adds the goroutines of goroutine profile p that carry
// k's labels (waiting ones only for OFF_CPU) to root.
func foldGoroutines(root *FlameNode, p *profile.Profile, k flameKey) {
	for _, smp := range p.Sample {
		if !hasLabel(smp, LabelVertex, k.vertex) || (k.subtask != "" && !hasLabel(smp, LabelSubtask, k.subtask)) {
			continue
		}
		if k.typ == FlameOffCPU && !waiting(smp.Location) {
			continue
		}
		n := smp.Value[0]
		root.Value += n
		node := root
		for i := len(smp.Location) - 1; i >= 0; i-- {
			lines := smp.Location[i].Line
			for j := len(lines) - 1; j >= 0; j-- {
				name := "?"
				if f := lines[j].Function; f != nil {
					name = f.Name
				}
				// The frames of the preemption that stopped a running
				// goroutine for the profile are not its own.
				if name == "runtime.asyncPreempt" || name == "runtime.asyncPreempt2" {
					continue
				}
				node = child(node, name)
				node.Value += n
			}
		}
	}
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
