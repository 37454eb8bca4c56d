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
	"sort"
	"sync"
	"time"

	"github.com/weirstream/weir/internal/clock"
	"github.com/weirstream/weir/internal/keygroup"
	"github.com/weirstream/weir/internal/runtime"
)

// Clock is the processing-time source of a job: the wall clock
// (SystemClock) by default, a ManualClock in tests. Processing-time timers
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

// ManualClock is a Clock that moves only when told to, for tests that must
// not depend on timing: give it to a job with WithClock, then Set or
// Advance it to fire processing-time timers and periodic watermarks. It is
// safe for concurrent use.
type ManualClock struct{ m *clock.Manual }

// NewManualClock returns a manual clock standing at start ms.
func NewManualClock(start int64) *ManualClock { return &ManualClock{m: clock.NewManual(start)} }

// NowMillis returns the clock's time in ms.
func (c *ManualClock) NowMillis() int64 { return c.m.NowMillis() }

// AfterFunc implements Clock: f runs once the clock reaches at, on the
// goroutine that moves it there (on a new goroutine if at has passed).
func (c *ManualClock) AfterFunc(at int64, f func()) (stop func() bool) { return c.m.AfterFunc(at, f) }

// Set moves the clock to t ms (never backwards) and runs, in order of
// their times, the callbacks that are then due, before it returns.
func (c *ManualClock) Set(t int64) { c.m.Set(t) }

// Advance moves the clock d ms forward, as Set(NowMillis() + d).
func (c *ManualClock) Advance(d int64) { c.m.Advance(d) }

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
	restAddr       string            // WithRESTAddress (or WithControlAddress)
	restToken      string            // WithRESTToken
	keySample      int               // WithKeySampling
	stateBackend   StateBackend      // WithStateBackend (nil: heap)
	s3             *S3Options        // WithS3
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
	nodes      []*runtime.Node
	errs       []error
	tagTypes   map[string]string
	executed   bool
	checkpoint *checkpointConfig

	// savepoints carries JobHandle savepoint requests to the running
	// attempt's checkpoint coordinator.
	savepoints chan *runtime.SavepointRequest
	// base is the checkpoint or savepoint the job started from (nil: none)
	// and firstID the id after which its checkpoints are numbered: a
	// failover restores from the latest checkpoint numbered after firstID,
	// else from base.
	base     *Checkpoint
	firstID  int64
	numbered bool // firstID is set

	mu            sync.Mutex
	cancelAttempt context.CancelCauseFunc // the running attempt's

	// validators check sources' and sinks' settings when the job is built
	// (Validator).
	validators []func(context.Context) error

	// onFinished runs once the job has finished successfully: exactly-once
	// sinks commit the transactions of their last stretch of input then.
	onFinished []func() error

	// cpStats tracks the checkpoints' statistics across attempts, mon the
	// job's identity and failures (monitor.go).
	cpStats *runtime.CheckpointStats
	mon     jobMonitor

	// staged holds the staged Pebble checkpoints of operators that ended
	// while the coordinator could still store them (incremental.go);
	// each attempt discards them when it has ended.
	staged stagedSet
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
	e := &Environment{cfg: c, tagTypes: map[string]string{}, savepoints: make(chan *runtime.SavepointRequest),
		cpStats: runtime.NewCheckpointStats(checkpointHistory)}
	switch {
	case c.maxParallelism < 1 || c.maxParallelism > keygroup.MaxParallelismLimit:
		e.fail(fmt.Errorf("max parallelism must be in [1, %d], got %d", keygroup.MaxParallelismLimit, c.maxParallelism))
	case c.parallelism < 1 || c.parallelism > c.maxParallelism:
		e.fail(fmt.Errorf("parallelism must be in [1, max parallelism %d], got %d", c.maxParallelism, c.parallelism))
	}
	if c.wmInterval < 0 {
		e.fail(fmt.Errorf("auto-watermark interval must not be negative, got %v", c.wmInterval))
	}
	if c.batchSize < 1 || c.credits < 1 {
		e.fail(fmt.Errorf("buffer size and credits must be at least 1, got %d and %d", c.batchSize, c.credits))
	}
	if c.clock == nil {
		e.fail(fmt.Errorf("clock is nil"))
		e.cfg.clock = clock.System{}
	}
	return e
}

// Parallelism returns the default parallelism.
func (e *Environment) Parallelism() int { return e.cfg.parallelism }

// Clock returns the environment's processing-time clock.
func (e *Environment) Clock() Clock { return e.cfg.clock }

func (e *Environment) fail(err error) { e.errs = append(e.errs, err) }

// Err returns the build errors recorded so far, joined.
func (e *Environment) Err() error { return errors.Join(e.errs...) }

func (e *Environment) plan(ctx context.Context) (*runtime.Plan, error) {
	if err := e.Err(); err != nil {
		return nil, fmt.Errorf("weir: invalid job: %w", err)
	}
	if e.executed {
		return nil, fmt.Errorf("weir: an environment runs one job; build a new one")
	}
	if len(e.nodes) == 0 {
		return nil, fmt.Errorf("weir: the job has no operators")
	}
	e.executed = true
	var verrs []error
	for _, v := range e.validators {
		if err := v(ctx); err != nil {
			verrs = append(verrs, err)
		}
	}
	if err := errors.Join(verrs...); err != nil {
		return nil, fmt.Errorf("weir: invalid job: %w", err)
	}
	cp, err := e.startingPoint(ctx)
	if err != nil {
		return nil, err
	}
	return e.buildPlan(ctx, cp)
}

// startingPoint returns what the job starts from: the savepoint of
// RestoreFromSavepoint, or with RestoreFromLatest the latest checkpoint if
// it is newer (a restarted process resumes from its own checkpoints), or
// nothing. A restore is checked against the job: every operator state must
// map to an operator UID of the job (unless AllowNonRestoredState) and the
// max parallelism must be the same.
func (e *Environment) startingPoint(ctx context.Context) (*Checkpoint, error) {
	var (
		cp    *Checkpoint
		what  string
		allow bool
	)
	if r := e.cfg.savepoint; r != nil {
		sp, err := readSavepoint(ctx, r.path, e.cfg.s3, e.cfg.logger)
		if err != nil {
			return nil, fmt.Errorf("weir: restoring from savepoint: %w", err)
		}
		cp, what, allow = sp, "savepoint "+r.path, r.allowNonRestored
	}
	if e.checkpoint != nil && e.checkpoint.restore {
		latest, err := e.checkpoint.store.Latest(ctx)
		if err != nil {
			return nil, fmt.Errorf("weir: reading the latest checkpoint: %w", err)
		}
		if latest != nil && (cp == nil || latest.ID > cp.ID) {
			cp, what = latest, fmt.Sprintf("checkpoint %d", latest.ID)
		}
	}
	if cp == nil {
		return nil, nil
	}
	if err := e.checkRestore(cp, what, allow); err != nil {
		return nil, err
	}
	e.cfg.logger.Info("restoring", "from", what, "checkpoint", cp.ID)
	e.restored(cp, what)
	e.base = cp
	return cp, nil
}

// checkRestore checks that cp fits the job.
func (e *Environment) checkRestore(cp *Checkpoint, what string, allow bool) error {
	if cp.MaxParallelism != 0 && cp.MaxParallelism != e.cfg.maxParallelism {
		return fmt.Errorf("weir: cannot restore from %s: it was taken with max parallelism %d and the job has %d; keyed state is split into max-parallelism key groups, which cannot be remapped (set weir.WithMaxParallelism(%d))",
			what, cp.MaxParallelism, e.cfg.maxParallelism, cp.MaxParallelism)
	}
	uids := map[string]bool{}
	for _, n := range e.nodes {
		uids[runtime.UIDOf(n)] = true
	}
	var unknown []string
	for uid, subs := range cp.Operators {
		if !uids[uid] && hasState(subs) {
			unknown = append(unknown, uid)
		}
	}
	if len(unknown) == 0 {
		return nil
	}
	sort.Strings(unknown)
	if !allow {
		return fmt.Errorf("weir: cannot restore from %s: it has state for operator UIDs %q, which no operator of the job has; give the operators the same UIDs with .UID(...), or restore with weir.AllowNonRestoredState() to drop that state",
			what, unknown)
	}
	e.cfg.logger.Warn("restoring without the state of operators the job no longer has (AllowNonRestoredState)", "from", what, "uids", unknown)
	for _, uid := range unknown {
		delete(cp.Operators, uid)
	}
	return nil
}

func hasState(subs []OperatorSnapshot) bool {
	for _, s := range subs {
		if len(s.State) > 0 || len(s.KeyGroups) > 0 || len(s.ChannelState) > 0 {
			return true
		}
	}
	return false
}

// buildPlan builds the physical plan, restoring from cp if it is not nil.
func (e *Environment) buildPlan(ctx context.Context, cp *Checkpoint) (*runtime.Plan, error) {
	cfg := runtime.Config{
		MaxParallelism: e.cfg.maxParallelism,
		BatchSize:      e.cfg.batchSize,
		Credits:        e.cfg.credits,
		Chaining:       e.cfg.chaining,
		Clock:          e.cfg.clock,
		KeySample:      e.cfg.keySample,
	}
	var first int64
	if cp != nil {
		if cp.MaxParallelism != 0 && cp.MaxParallelism != e.cfg.maxParallelism {
			return nil, fmt.Errorf("weir: checkpoint %d was taken with max parallelism %d, the job has %d; key groups cannot be remapped", cp.ID, cp.MaxParallelism, e.cfg.maxParallelism)
		}
		cfg.Restore = runtimeSnapshots(cp.Operators)
		first = cp.ID
	}
	if e.checkpoint != nil {
		// Number new checkpoints after any already in the store.
		last, err := lastCheckpointID(ctx, e.checkpoint.store)
		if err != nil {
			return nil, fmt.Errorf("weir: reading the checkpoint store: %w", err)
		}
		first = max(first, last)
	}
	if !e.numbered {
		e.numbered, e.firstID = true, first
	}
	cfg.Checkpoint = e.runtimeCheckpointConfig(first, nil)
	p, err := runtime.BuildPlan(ctx, e.nodes, cfg)
	if err != nil {
		return nil, fmt.Errorf("weir: invalid job: %w", err)
	}
	return p, nil
}

// failAttempt fails the running attempt of the job with err (the
// coordinator calls it when too many checkpoints failed).
func (e *Environment) failAttempt(err error) {
	e.mu.Lock()
	cancel := e.cancelAttempt
	e.mu.Unlock()
	if cancel != nil {
		cancel(err)
	}
}

// Execute runs the job and blocks until a bounded job has ended, the job
// fails, or ctx is cancelled (then it returns ctx's error). A failure names
// the operator and subtask; a panic in user code carries its stack.
func (e *Environment) Execute(ctx context.Context, name string) error {
	h, err := e.ExecuteAsync(ctx, name)
	if err != nil {
		return err
	}
	return h.Wait()
}

// ExecuteAsync starts the job and returns its handle.
func (e *Environment) ExecuteAsync(ctx context.Context, name string) (*JobHandle, error) {
	jctx, cancel := context.WithCancel(ctx)
	p, err := e.plan(jctx)
	if err != nil {
		cancel()
		return nil, err
	}
	h := &JobHandle{name: name, env: e, cancel: cancel, done: make(chan struct{})}
	h.setPlan(p)
	log := e.cfg.logger.With("job", name)
	e.mon.start(e.cfg.clock)
	stopControl, err := e.startREST(h, log)
	if err != nil {
		cancel()
		return nil, err
	}
	log.Debug("job starting", "tasks", len(p.Tasks))
	go func() {
		// The control endpoint stops last: its requests end with the job.
		defer stopControl()
		defer close(h.done)
		defer cancel()
		err := e.run(jctx, h, p, log)
		if err == nil && ctx.Err() != nil {
			err = ctx.Err()
		}
		h.mu.Lock()
		if h.stopped && ctx.Err() == nil {
			err = nil // stopped with a savepoint: the job finished
		}
		h.err = err
		h.mu.Unlock()
		if err != nil && !errors.Is(err, context.Canceled) {
			log.Error("job failed", "err", err)
		}
		e.mon.end()
	}()
	return h, nil
}

// run runs the plan and, after a failure, restarts the job from its latest
// completed checkpoint as the restart strategy allows.
func (e *Environment) run(ctx context.Context, h *JobHandle, p *runtime.Plan, log *slog.Logger) error {
	for attempt := 1; ; attempt++ {
		actx, cancel := context.WithCancelCause(ctx)
		e.mu.Lock()
		e.cancelAttempt = cancel
		e.mu.Unlock()
		err := p.Run(actx)
		e.staged.discard()
		if cause := context.Cause(actx); ctx.Err() == nil && errors.Is(cause, ErrTooManyCheckpointFailures) {
			err = fmt.Errorf("weir: %w", cause)
		}
		e.mu.Lock()
		e.cancelAttempt = nil
		e.mu.Unlock()
		cancel(nil)
		if err != nil && ctx.Err() == nil {
			e.mon.failure(err, e.cfg.restart != nil)
		}
		if err == nil {
			for _, f := range e.onFinished {
				if err := f(); err != nil {
					return err
				}
			}
			return nil
		}
		if ctx.Err() != nil || e.cfg.restart == nil {
			return err
		}
		delay, ok := e.cfg.restart.Next(attempt)
		if !ok {
			return fmt.Errorf("weir: giving up after %d restarts: %w", attempt-1, err)
		}
		log.Warn("job failed; restarting", "attempt", attempt, "delay", delay, "err", err)
		e.mon.restarting(true)
		if err := sleep(ctx, e.cfg.clock, e.cfg.clock.NowMillis()+delay.Milliseconds()); err != nil {
			return err
		}
		cp, err := e.failoverPoint(ctx)
		if err != nil {
			return err
		}
		if cp != nil {
			log.Info("restoring from checkpoint", "checkpoint", cp.ID)
		}
		if p, err = e.buildPlan(ctx, cp); err != nil {
			return err
		}
		h.setPlan(p)
		e.mon.restarting(false)
	}
}

// failoverPoint returns what a restarted attempt restores from: the latest
// checkpoint this job completed, else what the job started from.
func (e *Environment) failoverPoint(ctx context.Context) (*Checkpoint, error) {
	if e.checkpoint != nil {
		cp, err := e.checkpoint.store.Latest(ctx)
		if err != nil {
			return nil, fmt.Errorf("weir: reading the latest checkpoint: %w", err)
		}
		if cp != nil && cp.ID > e.firstID {
			return cp, nil
		}
	}
	return e.base, nil
}

// JobHandle controls a running job.
type JobHandle struct {
	name    string
	env     *Environment
	plan    *runtime.Plan // guarded by mu
	cancel  context.CancelFunc
	done    chan struct{}
	mu      sync.Mutex
	err     error
	stopped bool   // by StopWithSavepoint; guarded by mu
	rest    string // the REST server's address, if any
}

func (h *JobHandle) setPlan(p *runtime.Plan) {
	h.mu.Lock()
	h.plan = p
	h.mu.Unlock()
}

// Name returns the job's name.
func (h *JobHandle) Name() string { return h.name }

// Done is closed when the job has ended.
func (h *JobHandle) Done() <-chan struct{} { return h.done }

// Wait blocks until the job ends and returns its error.
func (h *JobHandle) Wait() error {
	<-h.done
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.err
}

// Cancel stops the job; Wait then returns context.Canceled.
// StopWithSavepoint stops it after taking a savepoint.
func (h *JobHandle) Cancel() { h.cancel() }

// TaskMetrics is a snapshot of one subtask's counters.
type TaskMetrics struct {
	Task          string
	Subtask       int
	Busy          time.Duration
	Idle          time.Duration
	BackPressured time.Duration
	// Checkpoints is the number of snapshots the subtask took;
	// CheckpointSync is the time its goroutine spent in their synchronous
	// parts (at the barrier, processing stopped), CheckpointAsync the time
	// their asynchronous parts took on other goroutines.
	Checkpoints     int64
	CheckpointSync  time.Duration
	CheckpointAsync time.Duration
	Operators       []OperatorMetrics
	TaskIO          // records and bytes over the network, key sketches (metrics.go)
}

// OperatorMetrics is a snapshot of one operator's counters in one subtask.
type OperatorMetrics struct {
	Name       string
	RecordsIn  int64
	RecordsOut int64
	// InputWatermarks holds the current watermark of each network input of
	// a task's first operator (MinWatermark before the first one).
	InputWatermarks []int64
	// LateRecordsDropped counts the late records a window operator dropped
	// because no late side output was set (Flink's numLateRecordsDropped);
	// 0 for other operators.
	LateRecordsDropped int64
	// Gauges are the values the operator publishes itself, such as a Kafka
	// source's consumer lag per partition (name "kafka_consumer_lag",
	// labels topic and partition).
	Gauges         []Gauge
	OperatorGauges // idleness, state, timers, source splits (metrics.go)
}

// Gauge is a named value an operator publishes with its metrics, with
// labels that tell which part of the operator it describes.
type Gauge struct {
	Name   string
	Labels map[string]string
	Value  float64
}

// Metrics returns a snapshot of every subtask's counters.
func (h *JobHandle) Metrics() []TaskMetrics {
	h.mu.Lock()
	plan := h.plan
	h.mu.Unlock()
	var out []TaskMetrics
	for _, t := range plan.Tasks {
		m := t.Metrics
		busy, idle, bp := m.Times()
		tm := TaskMetrics{
			Task: m.Name, Subtask: m.Subtask,
			Busy: busy, Idle: idle,
			BackPressured:   bp,
			Checkpoints:     m.Checkpoints.Load(),
			CheckpointSync:  time.Duration(m.CheckpointSyncNanos.Load()),
			CheckpointAsync: time.Duration(m.CheckpointAsyncNanos.Load()),
		}
		for _, o := range m.Operators {
			om := OperatorMetrics{Name: o.Name, RecordsOut: o.RecordsOut()}
			if o.RecordsIn != nil {
				om.RecordsIn = o.RecordsIn()
			}
			if o.InputWatermarks != nil {
				om.InputWatermarks = o.InputWatermarks()
			}
			if o.LateDropped != nil {
				om.LateRecordsDropped = o.LateDropped()
			}
			if o.Gauges != nil {
				for _, g := range o.Gauges() {
					om.Gauges = append(om.Gauges, Gauge{Name: g.Name, Labels: g.Labels, Value: g.Value})
				}
			}
			om.OperatorGauges = operatorGauges(o)
			tm.Operators = append(tm.Operators, om)
		}
		tm.TaskIO = taskIO(t)
		out = append(out, tm)
	}
	return out
}
