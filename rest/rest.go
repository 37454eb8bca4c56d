// Package rest is Weir's HTTP server for a job process, as a plugin of
// the root package: Flink's REST API (v1 paths and JSON field names:
// /overview, /config, /jobs/overview, /jobs/:jobid, /jobs/:jobid/plan,
// /jobs/:jobid/vertices/:vertexid with .../watermarks, .../backpressure
// and .../flamegraph, /jobs/:jobid/checkpoints and
// .../checkpoints/details/:id, /jobs/:jobid/exceptions,
// /jobs/:jobid/status, the subtasks, the task manager and job manager
// resources, the metrics queries, savepoints, manual checkpoints, stop
// with savepoint and cancel; also under /v1/), Prometheus metrics at /metrics,
// /debug/pprof, Weir's own resources under /weir/ (snapshots, history,
// doctor findings, input capture), liveness and readiness at /healthz and
// /readyz, the web dashboard at / and, with WithFlinkUI, Apache Flink's
// own web UI at /flink/. The job's id in the paths is a 32-hex-digit id
// (weir.JobHandle.ID); its name works too.
//
// Plug a server into an environment with weir.WithPlugin:
//
//	srv := rest.New("127.0.0.1:8081")
//	env := weir.NewEnvironment(weir.WithPlugin(srv))
//	h, err := env.ExecuteAsync(ctx, "job")
//	// ... the REST API is at http://srv.Addr()/
//
// The server listens from the start of the first job it is plugged into
// until the last such job has ended; it shows every job it is plugged
// into while that job runs.
//
// Bind it to a loopback address unless you give a token (WithToken): on
// any other address the job fails when it is built. With a token, write
// actions (savepoints, stop, cancel, input capture) and profiles need
// the header "Authorization: Bearer TOKEN"; monitoring is open, but key
// values and exceptions' texts are shown only with the token (or to all
// with WithOpenDetails). Requests must name the server in their Host
// header (WithHosts for a proxy's name), write actions must come from
// its own origin with a content type no foreign page can send (JSON),
// and a savepoint target a request names must lie under the job's
// default savepoint directory or AllowSavepointTargets. Reading and
// writing are bounded in time (WithTimeouts) and the connections in
// number (WithMaxConnections). docs/operations.md tells the details.
//
// Importing this package links Prometheus' client and the pprof profile
// reader; a program that does not import it does not pay for them.
package rest

import (
	"errors"
	"log/slog"
	"os"
	"sync"
	"time"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/internal/hooks"
	irest "github.com/weirstream/weir/internal/rest"
)

// Server is a REST server to plug into environments with
// weir.WithPlugin.
type Server interface {
	weir.Plugin
	// Addr returns the address the server listens on once a job it is
	// plugged into has started ("127.0.0.1:0" picks a free port), and
	// the last one after the job has ended; "" before.
	Addr() string
}

// Option configures a Server.
type Option func(*server)

// WithToken sets the token the server requires (Authorization: Bearer
// TOKEN) for write actions (savepoints, stop, cancel, input capture) and
// profiles. An address that is not loopback needs one.
func WithToken(token string) Option { return func(s *server) { s.token = token } }

// WithSampleInterval sets how often the server samples each job into
// its history (rates, the dashboard's charts, `weir doctor`); default
// 1 s.
func WithSampleInterval(d time.Duration) Option { return func(s *server) { s.sample = d } }

// WithHosts names the hosts, besides IP addresses, loopback names, the
// listen address's host and the machine's host name, that requests may
// give in their Host header: the name a reverse proxy passes on. Any
// other Host is refused (403), so that a web page whose name resolves to
// the server's address (DNS rebinding) can neither read nor act.
func WithHosts(hosts ...string) Option {
	return func(s *server) { s.opts.Hosts = append(s.opts.Hosts, hosts...) }
}

// WithOpenDetails shows key values (the dashboard's key skew, the hot
// keys of `weir doctor`) and exceptions' texts to every request. Without
// it they are shown only to requests with the token (WithToken), and
// redacted for the others, or for everyone on a server without a token.
func WithOpenDetails() Option { return func(s *server) { s.opts.OpenDetails = true } }

// AllowSavepointTargets lets REST clients name savepoint targets under
// roots (local directories, file:// URLs, s3://bucket/prefix), besides
// the job's default savepoint directory (weir.DefaultSavepointDir,
// RunService's), which they may always name. Other targets are refused
// with 403; a request without a target uses the default.
func AllowSavepointTargets(roots ...string) Option {
	return func(s *server) { s.opts.SavepointRoots = append(s.opts.SavepointRoots, roots...) }
}

// WithTimeouts sets how long the server waits to read a request (headers
// and body; default 30 s, the headers alone at most 10 s), to write an
// answer (default 60 s; profiles, flame graphs, input capture and
// synchronous savepoints get deadlines of their own) and for the next
// request on a kept-alive connection (default 120 s). Zero keeps a
// default; negative means no limit.
func WithTimeouts(read, write, idle time.Duration) Option {
	return func(s *server) { s.opts.ReadTimeout, s.opts.WriteTimeout, s.opts.IdleTimeout = read, write, idle }
}

// WithMaxConnections bounds the connections served at once (default
// 256; negative: no limit); more wait to be accepted.
func WithMaxConnections(n int) Option { return func(s *server) { s.opts.MaxConns = n } }

// WithFlinkUI serves Apache Flink's own web UI at /flink/ over the
// server's REST API: dir is the web/ folder of the
// org.apache.flink:flink-runtime-web jar, which scripts/flink-web.sh
// downloads from Maven Central (Weir ships none of its files). Paths
// under /flink/ name the folder's files, or else the REST API, which the
// UI calls relative to its page. A folder without index.html fails the
// job's start.
func WithFlinkUI(dir string) Option { return func(s *server) { s.opts.FlinkUI = dir } }

// New returns a server that will listen on addr (host:port; port 0
// picks a free one) while a job it is plugged into runs.
func New(addr string, opts ...Option) Server {
	s := &server{addr: addr}
	for _, o := range opts {
		o(s)
	}
	return s
}

// server is the Server implementation; it also implements
// hooks.JobPlugin.
type server struct {
	addr   string
	token  string
	sample time.Duration
	opts   irest.Options // the other settings

	mu   sync.Mutex
	srv  *irest.Server // while jobs are attached
	jobs int
	last string // the address it listened on last
}

var _ hooks.JobPlugin = (*server)(nil)

// PluginName implements weir.Plugin.
func (s *server) PluginName() string { return "rest server on " + s.addr }

// Addr implements Server.
func (s *server) Addr() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.last
}

// Check implements hooks.JobPlugin.
func (s *server) Check() error {
	switch {
	case s.addr == "":
		return errors.New("rest.New: no address given (\"127.0.0.1:0\" picks a free port)")
	case !irest.Loopback(s.addr) && s.token == "":
		return errors.New("rest.New: " + s.addr + " is not a loopback address: give a token for write actions and profiles (rest.WithToken)")
	case s.sample < 0:
		return errors.New("rest.WithSampleInterval: the interval must not be negative")
	}
	if s.opts.FlinkUI != "" {
		if st, err := os.Stat(s.opts.FlinkUI); err != nil || !st.IsDir() {
			return errors.New("rest.WithFlinkUI: " + s.opts.FlinkUI + " is not a directory (the web/ folder of flink-runtime-web: scripts/flink-web.sh)")
		}
	}
	for _, root := range s.opts.SavepointRoots {
		if root == "" {
			return errors.New("rest.AllowSavepointTargets: an empty root")
		}
	}
	return nil
}

// Attach implements hooks.JobPlugin: it starts the server for the first
// job and registers job with it.
func (s *server) Attach(job hooks.Job, logger, jobLog *slog.Logger) (func(), error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.srv == nil {
		o := s.opts
		o.Token, o.Logger, o.Version, o.SampleEvery = s.token, logger, "weir", s.sample
		srv, err := irest.Listen(s.addr, o)
		if err != nil {
			return nil, err
		}
		s.srv, s.last = srv, srv.Addr()
	}
	s.jobs++
	id := s.srv.Register(job)
	jobLog.Info("REST server listening", "address", s.last, "dashboard", "http://"+s.last+"/")
	var once sync.Once
	return func() { once.Do(func() { s.detach(id, jobLog) }) }, nil
}

// detach unregisters a job and stops the server after the last one.
func (s *server) detach(id string, log *slog.Logger) {
	s.mu.Lock()
	defer s.mu.Unlock() // held while closing: a next job listens after
	s.srv.Unregister(id)
	s.jobs--
	if s.jobs > 0 {
		return
	}
	srv := s.srv
	s.srv = nil
	if err := srv.Close(10 * time.Second); err != nil {
		log.Warn("REST server did not stop cleanly", "err", err)
	}
}
