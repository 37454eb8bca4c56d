// Package rest is Weir's HTTP server for a job process: Flink's REST API
// (v1 paths and JSON field names, so that scripts written for Flink read
// Weir), the legacy control endpoint of internal/control, a Prometheus
// /metrics endpoint, /debug/pprof and CPU flame graphs per vertex, Weir's
// own resources under /weir/ (the monitor.Snapshot of a job, its sampled
// history, `weir doctor` findings, operator input capture) and the web
// dashboard, embedded.
//
// Access: monitoring resources are open, with key values and exceptions'
// texts redacted unless the request has the token or Options.OpenDetails
// is set; write actions (savepoints, stop, cancel, input capture) and
// profiles need the token given at start (Authorization: Bearer TOKEN)
// when there is one. Listen refuses an address that is not loopback
// without a token. Every request must name the server in its Host header,
// and writes must not come from another origin (guard.go). Nothing is
// uploaded, and no file is served but the embedded assets and, with
// Options.FlinkUI, the files of Apache Flink's web UI in that folder
// (flinkui.go).
package rest

import (
	"context"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/weirstream/weir/internal/monitor"
)

// Job is a job the server shows and controls.
type Job interface {
	// Snapshot returns the job's state now.
	Snapshot() *monitor.Snapshot
	// Savepoint takes a savepoint into dir ("" means the job's default
	// directory), stopping the job after it if stop, and returns its path.
	Savepoint(ctx context.Context, dir string, stop bool) (string, error)
	// Cancel cancels the job.
	Cancel()
}

// Recorder is implemented by jobs whose operators' inputs can be captured
// (`weir record`).
type Recorder interface {
	// Record captures the inputs of one subtask of a vertex (by ID or
	// name) until ctx ends or limit input lines were captured (0: no
	// limit) and returns them as a scenario file.
	Record(ctx context.Context, vertex string, subtask int, limit int) ([]byte, error)
}

// Options configure a Server.
type Options struct {
	// Token, if set, is required (Authorization: Bearer TOKEN) for write
	// actions and profiles. An address that is not loopback needs one.
	Token string
	// Logger logs requests that change the job; nil: slog.Default().
	Logger *slog.Logger
	// SampleEvery is how often the server samples each job's snapshot
	// into its history (rates, the dashboard's charts, the doctor panel);
	// default 1 s; negative: only when Sample is called.
	SampleEvery time.Duration
	// History is the number of samples kept per job (default 600).
	History int
	// Version is shown as flink-version in /overview and /config.
	Version string

	// Hosts are the names, besides loopback names, IP addresses, the
	// listen address's host and the machine's host name, that requests
	// may give in their Host header (a reverse proxy's name); any other
	// Host is refused, against DNS rebinding.
	Hosts []string
	// OpenDetails shows key values (key skew, hot keys) and exceptions'
	// texts to requests without the token; without it they are redacted
	// (monitor.Redacted) unless the server has a token and the request
	// carries it.
	OpenDetails bool
	// SavepointRoots are the directories and URL prefixes (file://,
	// s3://bucket/prefix) under which a request may name a savepoint
	// target, besides the job's default savepoint directory; a target
	// elsewhere is refused with 403.
	SavepointRoots []string
	// ReadTimeout bounds reading a request, headers and body (default
	// 30 s; headers alone are bounded at 10 s); WriteTimeout bounds
	// writing a response (default 60 s; the endpoints that take longer by
	// design, profiles, flame graphs, input capture and the synchronous
	// savepoint, set their own deadlines); IdleTimeout bounds a kept-alive
	// connection between requests (default 120 s). Negative: no limit.
	ReadTimeout, WriteTimeout, IdleTimeout time.Duration
	// MaxConns bounds the connections served at once (default 256;
	// negative: no limit); more wait to be accepted.
	MaxConns int
	// FlinkUI, if set, is a directory holding Apache Flink's web UI (the
	// web/ folder of flink-runtime-web, scripts/flink-web.sh), served at
	// FlinkUIPrefix (/flink/) over this server's REST API (flinkui.go).
	FlinkUI string

	// ArchiveDir, if set, is the directory where Finish writes each
	// ended job's archive (archive.go), which `weir history` serves.
	ArchiveDir string
	// KeepFinished is the number of ended jobs the server keeps showing
	// (default 32; negative: none), the oldest dropped first.
	KeepFinished int
}

// The defaults of Options' limits.
const (
	DefaultReadHeaderTimeout = 10 * time.Second
	DefaultReadTimeout       = 30 * time.Second
	DefaultWriteTimeout      = 60 * time.Second
	DefaultIdleTimeout       = 120 * time.Second
	DefaultMaxConns          = 256
)

// orDefault returns d for 0, no limit (0) for a negative v, else v.
func orDefault[T time.Duration | int](v, d T) T {
	switch {
	case v == 0:
		return d
	case v < 0:
		return 0
	}
	return v
}

// Server serves the REST API for the jobs registered with it.
type Server struct {
	opts Options
	srv  *http.Server
	ln   net.Listener
	log  *slog.Logger
	done chan struct{}
	ctx  context.Context
	stop context.CancelFunc
	wg   sync.WaitGroup
	prof sync.Mutex // one CPU profile at a time
	// hosts are the names allowed in the Host header besides IP
	// addresses and loopback names (allowedHosts).
	hosts map[string]bool
	// ui is Options.FlinkUI, opened (nil: none).
	ui *os.Root
	// flames are the latest flame graphs (profiles.go).
	flames flameCache

	mu   sync.Mutex
	jobs map[string]*entry // by job ID
	ops  map[string]*operation
}

// entry is a registered job with its history.
type entry struct {
	job  Job // an *ending or *endingRecorder (Register)
	end  *ending
	id   string
	name string
	mu   sync.Mutex
	hist []*monitor.Snapshot // oldest first
}

// Loopback reports whether addr's host is a loopback address or
// "localhost".
func Loopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		host = addr
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// Listen starts a server on addr ("127.0.0.1:0" picks a free port).
func Listen(addr string, opts Options) (*Server, error) {
	return listen(addr, opts, (*Server).Handler)
}

// listen starts a server on addr that answers with handler(s).
func listen(addr string, opts Options, handler func(*Server) http.Handler) (*Server, error) {
	if !Loopback(addr) && opts.Token == "" {
		return nil, fmt.Errorf("rest: %s is not a loopback address: give a token for write actions and profiles (rest.WithToken)", addr)
	}
	var ui *os.Root
	if opts.FlinkUI != "" {
		var err error
		if ui, err = openFlinkUI(opts.FlinkUI); err != nil {
			return nil, err
		}
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		if ui != nil {
			ui.Close()
		}
		return nil, fmt.Errorf("rest: %w", err)
	}
	if n := orDefault(opts.MaxConns, DefaultMaxConns); n > 0 {
		ln = limitListener(ln, n)
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.SampleEvery == 0 {
		opts.SampleEvery = time.Second
	}
	if opts.History <= 0 {
		opts.History = 600
	}
	if opts.Version == "" {
		opts.Version = "weir"
	}
	s := &Server{opts: opts, ln: ln, log: opts.Logger, done: make(chan struct{}), jobs: map[string]*entry{}, ops: map[string]*operation{}, ui: ui}
	s.hosts = allowedHosts(addr, opts.Hosts)
	s.ctx, s.stop = context.WithCancel(context.Background())
	s.srv = &http.Server{
		Handler:           handler(s),
		ReadHeaderTimeout: DefaultReadHeaderTimeout,
		ReadTimeout:       orDefault(opts.ReadTimeout, DefaultReadTimeout),
		WriteTimeout:      orDefault(opts.WriteTimeout, DefaultWriteTimeout),
		IdleTimeout:       orDefault(opts.IdleTimeout, DefaultIdleTimeout),
	}
	if rt := s.srv.ReadTimeout; rt > 0 && rt < s.srv.ReadHeaderTimeout {
		s.srv.ReadHeaderTimeout = rt
	}
	go func() {
		defer close(s.done)
		if err := s.srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			s.log.Error("REST server stopped", "err", err)
		}
	}()
	if opts.SampleEvery > 0 {
		s.wg.Add(1)
		go s.sampler()
	}
	return s, nil
}

// Addr returns the address the server listens on.
func (s *Server) Addr() string { return s.ln.Addr().String() }

// Register makes j reachable under its ID (and, for the legacy control
// routes and `weir` commands, its name), takes a first sample and
// returns the ID.
func (s *Server) Register(j Job) string {
	snap := j.Snapshot()
	e := &entry{id: snap.Job.ID, name: snap.Job.Name, hist: []*monitor.Snapshot{snap}}
	e.job, e.end = wrapEnding(j)
	s.mu.Lock()
	s.jobs[e.id] = e
	s.mu.Unlock()
	return e.id
}

// Unregister removes the job registered under id.
func (s *Server) Unregister(id string) {
	s.mu.Lock()
	delete(s.jobs, id)
	s.mu.Unlock()
}

// Close stops the server after the requests in progress have been
// answered (waiting at most timeout), and waits for its goroutines.
func (s *Server) Close(timeout time.Duration) error {
	s.stop()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	err := s.srv.Shutdown(ctx)
	if err != nil {
		err = errors.Join(err, s.srv.Close())
	}
	<-s.done
	s.wg.Wait()
	if s.ui != nil {
		s.ui.Close()
	}
	return err
}

func (s *Server) sampler() {
	defer s.wg.Done()
	t := time.NewTicker(s.opts.SampleEvery)
	defer t.Stop()
	for {
		select {
		case <-s.ctx.Done():
			return
		case <-t.C:
			s.Sample()
		}
	}
}

// Sample adds a snapshot of every job to its history now.
func (s *Server) Sample() {
	for _, e := range s.entries() {
		if !e.end.ended() {
			e.add(e.job.Snapshot(), s.opts.History)
		}
	}
}

func (e *entry) add(snap *monitor.Snapshot, keep int) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.hist = append(e.hist, snap)
	if len(e.hist) > keep {
		e.hist = append(e.hist[:0:0], e.hist[len(e.hist)-keep:]...)
	}
}

// history returns the job's samples, oldest first.
func (e *entry) history() []*monitor.Snapshot {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]*monitor.Snapshot(nil), e.hist...)
}

// now returns a fresh snapshot and the rates since the newest sample at
// least a second older (else the oldest), so that rates cover at least
// one sampling interval.
func (e *entry) now() (*monitor.Snapshot, map[string][]monitor.Rate) {
	snap := e.job.Snapshot()
	h := e.history()
	var ref *monitor.Snapshot
	for i := len(h) - 1; i >= 0; i-- {
		if h[i].Timestamp <= snap.Timestamp-1000 {
			ref = h[i]
			break
		}
	}
	if ref == nil && len(h) > 0 && h[0].Timestamp < snap.Timestamp {
		ref = h[0]
	}
	return snap, monitor.Rates(ref, snap)
}

func (s *Server) entries() []*entry {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]*entry, 0, len(s.jobs))
	for _, e := range s.jobs {
		out = append(out, e)
	}
	sort.Slice(out, func(a, b int) bool { return out[a].id < out[b].id })
	return out
}

// lookup finds a job by ID or name (a running job before an ended one
// of the same name, else the one that ended last).
func (s *Server) lookup(id string) *entry {
	s.mu.Lock()
	defer s.mu.Unlock()
	if e, ok := s.jobs[id]; ok {
		return e
	}
	var found *entry
	for _, e := range s.jobs {
		if e.name == id && (found == nil || e.end.after(found.end)) {
			found = e
		}
	}
	return found
}

// authorized reports whether r may take write actions or profiles.
func (s *Server) authorized(r *http.Request) bool {
	if s.opts.Token == "" {
		return true
	}
	got, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	return ok && subtle.ConstantTimeCompare([]byte(got), []byte(s.opts.Token)) == 1
}

// guarded wraps a write action or profile handler with the token check.
func (s *Server) guarded(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if !s.authorized(r) {
			w.Header().Set("WWW-Authenticate", `Bearer realm="weir"`)
			writeError(w, http.StatusUnauthorized, "this action needs the server's token (Authorization: Bearer TOKEN)")
			return
		}
		h(w, r)
	}
}

// withJob resolves the {jobid} path value.
func (s *Server) withJob(h func(w http.ResponseWriter, r *http.Request, e *entry)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		e := s.lookup(r.PathValue("jobid"))
		if e == nil {
			writeError(w, http.StatusNotFound, fmt.Sprintf("Job %s not found", r.PathValue("jobid")))
			return
		}
		h(w, r, e)
	}
}

// withVertex resolves {jobid} and {vertexid} on a fresh snapshot.
func (s *Server) withVertex(h func(w http.ResponseWriter, r *http.Request, e *entry, snap *monitor.Snapshot, rates map[string][]monitor.Rate, v *monitor.Vertex)) http.HandlerFunc {
	return s.withJob(func(w http.ResponseWriter, r *http.Request, e *entry) {
		snap, rates := e.now()
		v := snap.Vertex(r.PathValue("vertexid"))
		if v == nil {
			writeError(w, http.StatusNotFound, fmt.Sprintf("JobVertex %s not found", r.PathValue("vertexid")))
			return
		}
		h(w, r, e, snap, rates, v)
	})
}

// Handler returns the server's HTTP handler.
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	s.routeFlink(mux)
	s.routeWeir(mux)
	s.routeHealth(mux)
	s.routeProfiles(mux)
	s.routeDashboard(mux)
	if s.ui != nil {
		return s.checkRequest(flinkUI(s.ui, v1(mux)))
	}
	return s.checkRequest(v1(mux))
}

// v1 serves Flink's versioned paths (/v1/jobs/...) as the unversioned
// ones, as Flink's REST endpoint does.
func v1(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if p, ok := strings.CutPrefix(r.URL.Path, "/v1/"); ok {
			r = r.Clone(r.Context())
			r.URL.Path, r.URL.RawPath = "/"+p, ""
		}
		h.ServeHTTP(w, r)
	})
}

// writeJSON writes v with status code.
func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(code)
	json.NewEncoder(w).Encode(v)
}

// writeError writes Flink's error body, {"errors": [msg]}.
func writeError(w http.ResponseWriter, code int, msg string) {
	writeJSON(w, code, map[string][]string{"errors": {msg}})
}
