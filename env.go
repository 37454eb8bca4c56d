// Package weir is a stream processing engine with Apache Flink's DataStream
// semantics: event time with watermarks, keyed state, timers, windows,
// two-input operators, side outputs, checkpoints and savepoints, in a Go
// library.
//
// Type-changing operations are package functions, since Go methods cannot
// take type parameters. A word count with a running count per word (the
// package's Example, which runs in the test suite):
//
//	type WordCount struct {
//		Word string
//		N    int
//	}
//
//	env := weir.NewEnvironment(weir.WithParallelism(1))
//	words := weir.FromSlice(env, []string{"a", "b", "a", "c", "a"})
//	ones := weir.Map(words, func(w string) WordCount { return WordCount{Word: w, N: 1} })
//	counts := weir.Sum(weir.KeyBy(ones, func(c WordCount) string { return c.Word }),
//		func(c WordCount) int { return c.N }, func(c *WordCount, n int) { c.N = n })
//	weir.Print(counts)
//	if err := env.Execute(context.Background(), "wordcount"); err != nil {
//		log.Fatal(err)
//	}
//
// The README's getting-started section and docs/ (concepts, coming from
// Flink, operations) explain the rest; every main entry point has a
// runnable example.
package weir

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	goruntime "runtime"
	"sync"
	"time"

	"github.com/weirstream/weir/internal/clock"
	"github.com/weirstream/weir/internal/clusterjob"
	"github.com/weirstream/weir/internal/engine"
	"github.com/weirstream/weir/internal/hooks"
	"github.com/weirstream/weir/internal/job"
	"github.com/weirstream/weir/internal/keygroup"
	"github.com/weirstream/weir/metrics"
	"github.com/weirstream/weir/state"
)

// Clock is the processing-time source of a job: the wall clock
// (SystemClock) by default, a weirtest.ManualClock in tests. Processing-time timers
// and windows, periodic watermarks, idleness, state TTL and source rate
// limits all read it.
type Clock interface {
	// NowMillis returns the current processing time in milliseconds.
	NowMillis() int64
	// AfterFunc calls f, on a goroutine of the clock's choosing, once the
	// clock has reached at (milliseconds). The returned function cancels the
	// call if it has not happened yet and reports whether it did cancel it.
	AfterFunc(at int64, f func()) (stop func() bool)
}

// SystemClock is the wall clock: Unix time in ms, callbacks on
// time.AfterFunc.
type SystemClock struct{}

// NowMillis returns the Unix time in ms.
func (SystemClock) NowMillis() int64 { return clock.System{}.NowMillis() }

// AfterFunc implements Clock with time.AfterFunc.
func (SystemClock) AfterFunc(at int64, f func()) (stop func() bool) {
	return clock.System{}.AfterFunc(at, f)
}

type config struct {
	parallelism    int
	maxParallelism int
	wmInterval     time.Duration
	batchSize      int
	credits        int
	chaining       bool
	clock          Clock
	stdout         io.Writer
	logger         *slog.Logger
	restart        RestartStrategy
	savepoint      *savepointRestore // RestoreFromSavepoint
	plugins        []Plugin          // WithPlugin
	keySample      int               // WithKeySampling
	stateBackend   StateBackend      // WithStateBackend (nil: heap)
	storages       []Storage         // WithStorage
	cluster        Cluster           // WithCluster
	checkpointing  *checkpointing    // WithCheckpointing
}

// checkpointing is what WithCheckpointing asked for.
type checkpointing struct {
	interval time.Duration
	opts     []CheckpointOption
}

// Option configures an Environment.
type Option func(*config)

// WithParallelism sets the default parallelism (default: number of CPUs).
func WithParallelism(p int) Option { return func(c *config) { c.parallelism = p } }

// WithMaxParallelism sets the number of key groups (default 128, as Flink).
func WithMaxParallelism(p int) Option { return func(c *config) { c.maxParallelism = p } }

// WithAutoWatermarkInterval sets the periodic watermark interval (default
// 200 ms; 0 disables periodic emission).
func WithAutoWatermarkInterval(d time.Duration) Option {
	return func(c *config) { c.wmInterval = d }
}

// WithBufferSize sets the number of records per exchanged batch (default 1024).
func WithBufferSize(n int) Option { return func(c *config) { c.batchSize = n } }

// WithBufferCredits sets how many batches may be in flight per channel
// before the sender blocks (default 4).
func WithBufferCredits(n int) Option { return func(c *config) { c.credits = n } }

// WithChaining turns operator chaining on or off (default on).
func WithChaining(on bool) Option { return func(c *config) { c.chaining = on } }

// WithClock sets the processing-time clock.
func WithClock(clk Clock) Option { return func(c *config) { c.clock = clk } }

// WithStdout sets where Print writes (default os.Stdout).
func WithStdout(w io.Writer) Option { return func(c *config) { c.stdout = w } }

// WithLogger sets the job's logger (default slog.Default()).
func WithLogger(l *slog.Logger) Option { return func(c *config) { c.logger = l } }

// Environment builds and runs one job.
type Environment struct {
	cfg        config
	nodes      []*engine.Node
	errs       []error
	tagTypes   map[string]string
	executed   bool
	checkpoint *checkpointConfig

	// eng runs the job: its plans, failover, checkpoints and savepoints,
	// checkpoint statistics and monitor (internal/job).
	eng *job.Runner

	// validators check sources' and sinks' settings when the job is built
	// (Validator).
	validators []func(context.Context) error

	// onFinished runs once the job has finished successfully: without
	// checkpointing, exactly-once sinks commit the transactions of their
	// last stretch of input then (with it, the final checkpoint did).
	onFinished []func() error
}

// NewEnvironment returns an environment with the given options. Invalid
// settings are reported by Execute, before anything runs.
func NewEnvironment(opts ...Option) *Environment {
	c := config{
		parallelism:    goruntime.NumCPU(),
		maxParallelism: 128,
		wmInterval:     200 * time.Millisecond,
		batchSize:      1024,
		credits:        4,
		chaining:       true,
		clock:          clock.System{},
		stdout:         os.Stdout,
		keySample:      defaultKeySample,
	}
	for _, o := range opts {
		o(&c)
	}
	if c.logger == nil {
		c.logger = slog.Default()
	}
	e := &Environment{cfg: c, tagTypes: map[string]string{}, eng: job.NewRunner()}
	switch {
	case c.maxParallelism < 1 || c.maxParallelism > keygroup.MaxParallelismLimit:
		e.fail(fmt.Errorf("max parallelism must be in [1, %d], got %d", keygroup.MaxParallelismLimit, c.maxParallelism))
	case c.parallelism < 1 || c.parallelism > c.maxParallelism:
		e.fail(fmt.Errorf("parallelism must be in [1, max parallelism %d], got %d", c.maxParallelism, c.parallelism))
	}
	if c.wmInterval < 0 {
		e.fail(fmt.Errorf("auto-watermark interval must not be negative, got %v", c.wmInterval))
	}
	e.millis("auto-watermark interval", c.wmInterval)
	switch r := c.restart.(type) {
	case job.FixedDelay:
		e.millis("restart delay", r.Delay)
	case job.ExpDelay:
		e.millis("initial restart delay", r.Initial)
		e.millis("maximum restart delay", r.Max)
	}
	if c.batchSize < 1 || c.credits < 1 {
		e.fail(fmt.Errorf("buffer size and credits must be at least 1, got %d and %d", c.batchSize, c.credits))
	}
	if c.clock == nil {
		e.fail(fmt.Errorf("clock is nil"))
		e.cfg.clock = clock.System{}
	}
	if hc, ok := e.cfg.clock.(hooks.HarnessClock); ok {
		hc.BindHarness(harnessEnv{env: e})
	}
	e.checkPlugins()
	if cp := c.checkpointing; cp != nil {
		e.EnableCheckpointing(cp.interval, cp.opts...)
	}
	return e
}

// Parallelism returns the default parallelism.
func (e *Environment) Parallelism() int { return e.cfg.parallelism }

// Clock returns the environment's processing-time clock.
func (e *Environment) Clock() Clock { return e.cfg.clock }

func (e *Environment) fail(err error) { e.errs = append(e.errs, err) }

// logger returns the job's logger once it runs (its entries name the job),
// else the environment's.
func (e *Environment) logger() *slog.Logger {
	if e.eng.Log != nil {
		return e.eng.Log
	}
	return e.cfg.logger
}

// owns reports whether n is an operator of this environment's job.
func (e *Environment) owns(n *engine.Node) bool {
	return n.ID >= 1 && n.ID <= len(e.nodes) && e.nodes[n.ID-1] == n
}

// Err returns the build errors recorded so far, joined.
func (e *Environment) Err() error { return errors.Join(e.errs...) }

func (e *Environment) plan(ctx context.Context) (*engine.Plan, error) {
	if err := e.check(ctx); err != nil {
		return nil, err
	}
	cp, err := e.eng.StartingPoint(ctx)
	if err != nil {
		return nil, err
	}
	return e.eng.BuildPlan(ctx, cp)
}

// check refuses an invalid job, one run before, and sources' and sinks'
// invalid settings (their validators); it marks the environment executed.
func (e *Environment) check(ctx context.Context) error {
	if err := e.Err(); err != nil {
		return fmt.Errorf("weir: invalid job: %w", err)
	}
	if e.executed {
		return fmt.Errorf("weir: an environment runs one job; build a new one")
	}
	if len(e.nodes) == 0 {
		return fmt.Errorf("weir: the job has no operators")
	}
	e.executed = true
	if err := e.eng.Check(ctx, e.nodes, e.cfg.chaining, e.validators); err != nil {
		return err
	}
	e.eng.Cfg = e.jobConfig()
	return nil
}

// Execute runs the job and blocks until it ends, and returns what
// JobHandle.Wait returns: nil only when the job finished (its bounded
// input ended and every record went through), a *StoppedError (errors.Is
// ErrStopped, with the savepoint's path) when it was stopped with a
// savepoint (through the REST API, `weir savepoint --stop`, or
// StopWithSavepoint), ctx's error (context.Canceled) when ctx was
// cancelled or the job was cancelled through the REST API, else the
// failure. A failure names the operator and subtask; a panic in user code
// carries its stack. A nil error therefore means complete output: a job
// that ended early never returns nil.
func (e *Environment) Execute(ctx context.Context, name string) error {
	h, err := e.ExecuteAsync(ctx, name)
	if err != nil {
		return err
	}
	return h.Wait()
}

// ExecuteAsync starts the job and returns its handle.
//
// The job logs through the environment's logger (WithLogger), each entry
// naming the job once (job=name): INFO when it restores, completes a
// savepoint, is stopped with one, or is cancelled by its caller (ctx, or
// JobHandle.Cancel: not an error), WARN when a failure leads to a restart (the failure's message
// in err and, for a panic, its stack in stack: nothing else reports it),
// and one ERROR entry when the job fails for good, with the message in err
// but not the stack, which the error Wait returns carries.
func (e *Environment) ExecuteAsync(ctx context.Context, name string) (*JobHandle, error) {
	if e.cfg.cluster != nil {
		return e.executeCluster(ctx, name)
	}
	jctx, cancel := context.WithCancel(ctx)
	if !e.executed {
		e.eng.Log = e.cfg.logger.With("job", name)
	}
	p, err := e.plan(jctx)
	if err != nil {
		cancel()
		return nil, publicError(err)
	}
	h := &JobHandle{name: name, env: e, cancel: cancel, done: make(chan struct{})}
	h.setPlan(p)
	opened := make(chan error, 1)
	p.OnOpen(func(err error) { opened <- err })
	log := e.eng.Log
	e.eng.Mon.Start()
	stopControl, err := e.startREST(h, log)
	if err != nil {
		cancel()
		return nil, err
	}
	log.Debug("job starting", "tasks", len(p.Tasks))
	// The control endpoint stops last: its requests end with the job.
	e.eng.Start(ctx, jctx, p, h.setPlan, e.onFinished, log, func(err error) (string, bool, error) {
		h.mu.Lock()
		switch {
		case h.stopped && ctx.Err() == nil:
			// Stopped with a savepoint: Flink's job status is FINISHED,
			// but the output is not complete, so the caller is told.
			err = &StoppedError{Savepoint: h.savepointPath}
		case jctx.Err() != nil:
			// Cancelled by the caller: ctx's error (or context.Canceled
			// after Cancel) whatever the tasks made of it, so the same
			// cancellation always reads the same.
			err = jctx.Err()
		}
		h.err = err
		h.mu.Unlock()
		var stopped *StoppedError
		if errors.As(err, &stopped) {
			return stopped.Savepoint, true, err
		}
		return "", false, err
	}, func() { cancel(); close(h.done); stopControl() })
	// Every operator opens and restores its state before any record moves:
	// a state the job cannot read back is refused here, before it runs.
	select {
	case err = <-opened:
	case <-h.done:
		err = h.err
	}
	if errors.Is(err, state.ErrIncompatible) {
		<-h.done
		return nil, err
	}
	return h, nil
}

// JobHandle controls a running job.
type JobHandle struct {
	name    string
	env     *Environment
	plan    *engine.Plan // guarded by mu
	cancel  context.CancelFunc
	done    chan struct{}
	mu      sync.Mutex
	err     error
	stopped bool // by StopWithSavepoint; guarded by mu
	// savepointPath is the path of the savepoint the job was stopped
	// with; guarded by mu.
	savepointPath string
	// cluster, for a cluster member (WithCluster), holds the tasks
	// it owns; plan is then nil and each task has its own.
	cluster *clusterjob.Owned
}

func (h *JobHandle) setPlan(p *engine.Plan) {
	h.mu.Lock()
	h.plan = p
	h.mu.Unlock()
}

// Name returns the job's name.
func (h *JobHandle) Name() string { return h.name }

// Done is closed when the job has ended.
func (h *JobHandle) Done() <-chan struct{} { return h.done }

// Wait blocks until the job ends and returns how it ended, as Execute
// does: nil only if it finished (its input ended and all of it was
// processed), a *StoppedError wrapping ErrStopped if it was stopped with a
// savepoint, context.Canceled (or the error of ExecuteAsync's ctx) if it
// was cancelled, else the failure. Result tells the same as a JobResult.
func (h *JobHandle) Wait() error {
	<-h.done
	h.mu.Lock()
	defer h.mu.Unlock()
	return publicError(h.err)
}

// Cancel stops the job without a savepoint (Flink's cancel); Wait then
// returns context.Canceled and Result JobCanceled. StopWithSavepoint stops
// it after taking a savepoint.
func (h *JobHandle) Cancel() { h.cancel() }

// ErrStopped is wrapped by the error Wait and Execute return for a job
// stopped with a savepoint (errors.Is(err, weir.ErrStopped)); the error is
// a *StoppedError, which carries the savepoint's path.
var ErrStopped = errors.New("weir: job stopped with a savepoint")

// StoppedError is the error of a job stopped with a savepoint (from Go,
// the REST API or `weir savepoint --stop`): the job did not fail, but its
// input did not end either, so its output is partial; it resumes from
// Savepoint with RestoreFromSavepoint. errors.Is(err, ErrStopped) reports
// it.
type StoppedError struct {
	// Savepoint is the path of the savepoint the job stopped with.
	Savepoint string
}

// Error says that the job was stopped and with which savepoint.
func (e *StoppedError) Error() string { return "weir: job stopped with savepoint " + e.Savepoint }

// Is reports whether target is ErrStopped.
func (e *StoppedError) Is(target error) bool { return target == ErrStopped }

// JobStatus is a job's status, as Flink's job statuses with one more:
// a job stopped with a savepoint, FINISHED in Flink (and in the Flink
// fields of the REST API), is JobStoppedWithSavepoint, so that a caller
// can tell partial output from complete output.
type JobStatus int

const (
	// JobRunning: the job has not ended (it may be restarting).
	JobRunning JobStatus = iota
	// JobFinished: the job's input ended and every record was processed.
	JobFinished
	// JobStoppedWithSavepoint: the job was stopped after a savepoint
	// (JobResult.Savepoint); it resumes from there.
	JobStoppedWithSavepoint
	// JobCanceled: the job was cancelled (JobHandle.Cancel, its context,
	// or the REST API's cancel) without a savepoint.
	JobCanceled
	// JobFailed: the job failed (and its restart strategy gave up).
	JobFailed
)

// String returns the status as the REST API and the weir command show it:
// RUNNING, FINISHED, STOPPED_WITH_SAVEPOINT, CANCELED or FAILED.
func (s JobStatus) String() string {
	switch s {
	case JobRunning:
		return "RUNNING"
	case JobFinished:
		return "FINISHED"
	case JobStoppedWithSavepoint:
		return "STOPPED_WITH_SAVEPOINT"
	case JobCanceled:
		return "CANCELED"
	case JobFailed:
		return "FAILED"
	}
	return fmt.Sprintf("JobStatus(%d)", int(s))
}

// JobResult is how a job ended.
type JobResult struct {
	// Status is the job's final status (JobRunning only from Status, for a
	// job that has not ended).
	Status JobStatus
	// Savepoint is the path of the savepoint a JobStoppedWithSavepoint
	// job stopped with, else "".
	Savepoint string
	// Err is the error Wait returns: nil for JobFinished, a *StoppedError
	// for JobStoppedWithSavepoint, the cancellation's error for
	// JobCanceled, the failure for JobFailed.
	Err error
}

// Result blocks until the job ends and returns how it ended.
func (h *JobHandle) Result() JobResult {
	<-h.done
	return h.Status()
}

// Status returns how the job ended, or a JobResult with JobRunning if it
// has not ended yet; it does not block.
func (h *JobHandle) Status() JobResult {
	select {
	case <-h.done:
	default:
		return JobResult{Status: JobRunning}
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	return resultOf(h.err)
}

// resultOf classifies the error of an ended job.
func resultOf(err error) JobResult {
	err = publicError(err)
	r := JobResult{Err: err}
	var stopped *StoppedError
	switch {
	case err == nil:
		r.Status = JobFinished
	case errors.As(err, &stopped):
		r.Status, r.Savepoint = JobStoppedWithSavepoint, stopped.Savepoint
	case errors.Is(err, context.Canceled) || err == context.DeadlineExceeded:
		// ExecuteAsync reports a cancellation as its context's error
		// itself; a failure that wraps a deadline is a failure.
		r.Status = JobCanceled
	default:
		r.Status = JobFailed
	}
	return r
}

// Metrics returns a snapshot of every subtask's counters.
func (h *JobHandle) Metrics() []metrics.Task {
	return job.Metrics(h.taskPlans())
}

// taskPlans returns the plans running now.
func (h *JobHandle) taskPlans() []job.TaskPlan {
	if h.cluster == nil {
		h.mu.Lock()
		defer h.mu.Unlock()
		return []job.TaskPlan{{Plan: h.plan}}
	}
	return job.ClusterPlans(h.cluster)
}

// Durations. Weir keeps time in whole milliseconds, as Flink does (its
// Duration settings become milliseconds with toMillis). Every setting that
// takes a time.Duration follows one rule, checked when the job is built:
// a non-zero duration below 1 ms fails the job (it would become 0 ms,
// which is invalid or means something else for every such setting:
// no out-of-orderness, no periodic watermarks, no lateness, ...); any
// other duration with a sub-millisecond part is truncated toward zero,
// with one warning naming the setting. The window package's assigners,
// triggers and evictors follow the same rule (window.Truncated).

// millis returns d in whole milliseconds, failing the job for a non-zero
// d below 1 ms and warning when a remainder is dropped (job.Millis).
func (e *Environment) millis(what string, d time.Duration) int64 {
	return job.Millis(what, d, e.fail, e.cfg.logger)
}

// warnTruncated logs that a duration lost its sub-millisecond part.
func (e *Environment) warnTruncated(what string) { job.WarnTruncated(e.cfg.logger, what) }

// durationSetting is a duration a watermark strategy was given, checked
// (millis) where the strategy is used.
type durationSetting struct {
	what string
	d    time.Duration
}
