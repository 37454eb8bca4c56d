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
// until Close (or the process's exit): a job that has ended stays
// visible with its final state (FINISHED, CANCELED or FAILED, its
// exceptions, checkpoints and last metrics), as in Flink's job store, so
// that a client polling a stop-with-savepoint reads its outcome and a
// post-mortem finds the job; /readyz turns 503 once no job runs.
// StopWithLastJob restores the former lifecycle (the server stops when
// its last job ends); WithArchiveDir also writes each ended job's
// archive, which `weir history DIR` serves as Flink's HistoryServer.
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
	"strings"
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
	// the last one after it stopped; "" before.
	Addr() string
	// Close stops the server now, if it listens, and forgets the ended
	// jobs it showed; a job plugged in later starts it again. It first
	// archives (WithArchiveDir) the jobs that have ended but whose end
	// the server has not handled yet: call it before the program exits,
	// as the server learns of a job's end just after Wait returns.
	Close() error
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

// StopWithLastJob stops the server when the last job it is plugged into
// ends, instead of showing ended jobs until Close: the port is free
// again, and a client asking about the job then finds no server.
func StopWithLastJob() Option { return func(s *server) { s.stopWithJob = true } }

// WithArchiveDir writes an archive of each job that ends into dir (a
// local directory, created if needed): one file named by the job's ID,
// holding the JSON answers of the job's REST paths (overview, details,
// plan, exceptions, checkpoints and their details, vertices, the Weir
// snapshot and history) in the layout of Flink's job archives
// (jobmanager.archive.fs.dir). `weir history DIR` serves them. The
// archive holds what a request with the token sees: key values and
// exceptions' texts included.
func WithArchiveDir(dir string) Option { return func(s *server) { s.opts.ArchiveDir = dir } }

// KeepFinishedJobs sets how many ended jobs the server keeps showing
// (default 32), the oldest forgotten first; 0 or negative: none, a job
// disappears from the API when it ends.
func KeepFinishedJobs(n int) Option {
	return func(s *server) {
		if n <= 0 {
			n = -1
		}
		s.opts.KeepFinished = n
	}
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

	stopWithJob bool

	mu   sync.Mutex
	srv  *irest.Server // from the first Attach until Close
	jobs int           // attached and not ended
	last string        // the address it listened on last
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
	case s.opts.ArchiveDir != "" && strings.Contains(s.opts.ArchiveDir, "://"):
		return errors.New("rest.WithArchiveDir: " + s.opts.ArchiveDir + " is a URL: give a local directory")
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
	srv := s.srv
	id := srv.Register(job)
	jobLog.Info("REST server listening", "address", s.last, "dashboard", "http://"+s.last+"/")
	var once sync.Once
	return func() { once.Do(func() { s.detach(srv, id, jobLog) }) }, nil
}

// detach freezes an ended job (and archives it); with StopWithLastJob
// it stops the server after the last one.
func (s *server) detach(srv *irest.Server, id string, log *slog.Logger) {
	s.mu.Lock()
	defer s.mu.Unlock() // held while closing: a next job listens after
	if s.srv != srv {
		return // closed meanwhile
	}
	if _, err := s.srv.Finish(id); err != nil {
		log.Warn("the job's archive could not be written", "err", err)
	}
	s.jobs--
	if s.jobs > 0 || !s.stopWithJob {
		return
	}
	s.srv = nil
	if err := srv.Close(10 * time.Second); err != nil {
		log.Warn("REST server did not stop cleanly", "err", err)
	}
}

// Close implements Server.
func (s *server) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.srv == nil {
		return nil
	}
	srv := s.srv
	s.srv, s.jobs = nil, 0
	return errors.Join(srv.FinishEnded(), srv.Close(10*time.Second))
}
