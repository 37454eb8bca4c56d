package engine

import (
	"container/heap"
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	"github.com/weirstream/weir/internal/clock"
	"github.com/weirstream/weir/metrics"
)

type atomicCounter = atomic.Int64

// TaskMetrics are counted by a task's goroutine and read by anyone. Counters
// are updated once per step or batch, never with an atomic per record.
type TaskMetrics struct {
	Name               string
	Subtask            int
	BusyNanos          atomic.Int64
	IdleNanos          atomic.Int64
	BackPressuredNanos atomic.Int64
	// CheckpointSyncNanos is the time the task goroutine spent in the
	// synchronous part of its snapshots (at the barrier, from the flush
	// before the operators' snapshots to the acknowledgement or the start of
	// the asynchronous part), over Checkpoints snapshots.
	CheckpointSyncNanos atomic.Int64
	// CheckpointAsyncNanos is the time the asynchronous parts of the
	// task's snapshots took, on their own goroutines.
	CheckpointAsyncNanos atomic.Int64
	// Checkpoints counts the snapshots the task took.
	Checkpoints atomic.Int64
	// Operators lists per-operator counters in chain order.
	Operators []*OperatorMetrics
	// IO counts what the subtask exchanges over the network.
	IO IOCounters
	// KeySketches are the sampled key sketches of the subtask's writers
	// into keyBy exchanges (metrics.go).
	KeySketches []*KeySketch
	live        liveTimes
	finished    atomic.Bool
}

// OperatorMetrics are the counters of one operator in one subtask.
type OperatorMetrics struct {
	Name string
	// RecordsOut reads the operator's main output counter.
	RecordsOut func() int64
	// RecordsIn reads the counter of records that reached the operator, when known.
	RecordsIn func() int64
	// InputWatermarks reads the current input watermark per input, when
	// known.
	InputWatermarks func() []int64
	// OutputWatermark reads the latest watermark of the main output and
	// OutputIdle whether it has announced IDLE.
	OutputWatermark func() int64
	OutputIdle      func() bool
	// LateDropped reads the count of late records dropped, for operators
	// that drop them (LateDropCounter).
	LateDropped func() int64
	// Gauges reads the gauges the operator publishes (GaugeReporter).
	Gauges func() []Gauge
	// UID is the operator's state id (runtime.UIDOf).
	UID string
	// InputIdle reads whether each input is idle, when known: for a
	// task's first operator, each network input's valve status; for a
	// chained operator, whether the operator before it announced idle.
	InputIdle func() []bool
	// InputRecords reads the records that reached each network input of
	// a task's first operator, when known.
	InputRecords func() []int64
	// State is published by operators that implement StateReporter (nil
	// otherwise).
	State *StateGauges
	// Splits reads a source operator's per-split metrics (nil for other
	// operators).
	Splits func() []SplitMetrics
	// Join reads an interval join's probe sample (nil for other operators).
	Join func() JoinSample
	// User holds the metrics the operator's user functions registered
	// (BuildContext.UserMetrics).
	User *metrics.Group
}

// LateDropCounter is implemented by operators that drop late records
// (window operators without a late side output): Flink's
// numLateRecordsDropped. It may be called from any goroutine.
type LateDropCounter interface {
	LateRecordsDropped() int64
}

// ProcessingTimeService schedules callbacks on a task's processing-time
// clock. Callbacks run on the task goroutine, between other steps.
type ProcessingTimeService interface {
	Now() int64
	// Schedule asks for f(at) once processing time has reached at.
	Schedule(at int64, f func(at int64) error)
}

// Task is one subtask: a chain of operators with its inputs, driven as a
// step machine. Run drives it from a goroutine; a test harness may call the
// step methods directly instead.
type Task struct {
	Name    string
	Subtask int
	Metrics *TaskMetrics
	// Vertex is the UID of the task's head operator.
	Vertex string

	clk      clock.Clock
	inbox    chan message
	wake     chan struct{}
	mail     *Mailbox     // work posted by other goroutines (mailbox.go)
	parked   []message    // input taken while an operator held it back
	outputs  []OutputPort // in topological order, flushed after each step
	writers  []barrierWriter
	lifes    []namedLifecycle
	starters []func(ctx context.Context, wg *sync.WaitGroup)
	activity *clock.Pausable
	done     func() bool

	gauges    refresher
	gates     []gate       // the head's input gates
	capture   *taskCapture // input capture in progress (capture.go)
	timers    callbackHeap
	seq       uint64
	armedAt   int64
	armedStop func() bool
	advancing bool // AdvanceProcessingTime runs callbacks: arm at its end
	curOp     string

	snaps     []namedSnapshotter
	listeners []CheckpointListener
	acks      chan<- TaskAck
	aligner   *Aligner
	pending   *TaskAck         // snapshot taken, not yet acknowledged
	async     *asyncCheckpoint // asynchronous part in flight (checkpoint_async.go)
	ctx       context.Context  // Run's; nil when driven step by step
	wg        *sync.WaitGroup  // Run's helper goroutines
	headUID   string           // where channel state is reported
	replay    func() error
	periodic  atomic.Int64 // the last checkpoint triggered with Trigger
	source    bool
	// parallelism of the task's operators (recorded with channel state)
	parallelism int
	finished    atomic.Bool
	// stopped is set, before finished, when the loop ended with an error:
	// the task failed or was cancelled, and did not reach the end of its
	// input. Such a task has no final state a checkpoint may count.
	stopped atomic.Bool
	failure atomic.Pointer[error] // the first failure reported by Fail
	// startGate, set by Plan.Run, learns whether Open succeeded and holds
	// the task until every task of the plan has opened.
	startGate func(opened error) error

	// The end of input (FLIP-147): with checkpointing, a task whose input
	// has ended (every split of a source, every channel of its gates)
	// waits for a final checkpoint, one it snapshots after the end, to
	// complete before it finishes, so that what it wrote last (a
	// two-phase-commit sink's last transaction) is committed by a
	// checkpoint. See awaitFinal.
	inputEnded atomic.Bool // read by the coordinator
	lastSnap   int64       // the last checkpoint snapshotted
	finalFrom  int64       // the first checkpoint snapshotted after the end
	finalDone  atomic.Bool // a checkpoint >= finalFrom completed
	signal     func()      // tells the coordinator of the end and of the finish
}

type namedLifecycle struct {
	name string
	l    Lifecycle
}

// NewTask returns an empty task. done reports when the task has finished.
func NewTask(name string, subtask int, clk clock.Clock) *Task {
	return &Task{
		Name: name, Subtask: subtask, clk: clk, activity: clock.NewPausable(clk),
		wake:    make(chan struct{}, 1),
		mail:    NewMailbox(),
		armedAt: MaxWatermark,
		Metrics: &TaskMetrics{Name: name, Subtask: subtask, live: liveTimes{base: time.Now()}},
	}
}

// SetInbox sets the task's inbox.
func (t *Task) SetInbox(c chan message) { t.inbox = c }

// AddOutput registers an output to flush after every step (topological order).
func (t *Task) AddOutput(o OutputPort) { t.outputs = append(t.outputs, o) }

// AddWriter registers an exchange writer to flush after every step; its
// blocked sends pause the task's input-activity clock.
func (t *Task) AddWriter(w barrierWriter) {
	w.SetActivity(t.activity)
	t.writers = append(t.writers, w)
}

// Activity returns the task's input-activity clock (Flink's
// PausableRelativeClock of FLIP-471): processing time that stands still
// while the task waits for credit to send. Only the task goroutine uses it.
func (t *Task) Activity() *clock.Pausable { return t.activity }

// AddLifecycle registers an operator to open before and close after running.
func (t *Task) AddLifecycle(name string, l Lifecycle) {
	t.lifes = append(t.lifes, namedLifecycle{name, l})
}

// AddStarter registers a function that starts helper goroutines (source
// readers) when the task runs.
func (t *Task) AddStarter(f func(ctx context.Context, wg *sync.WaitGroup)) {
	t.starters = append(t.starters, f)
}

// SetDone sets the predicate that tells when the task has finished.
func (t *Task) SetDone(f func() bool) { t.done = f }

// Now implements ProcessingTimeService.
func (t *Task) Now() int64 { return t.clk.NowMillis() }

// Schedule implements ProcessingTimeService.
func (t *Task) Schedule(at int64, f func(at int64) error) {
	t.seq++
	heap.Push(&t.timers, &ptCallback{at: at, seq: t.seq, f: f})
	t.arm()
}

func (t *Task) arm() {
	if len(t.timers) == 0 || t.advancing {
		return
	}
	at := t.timers[0].at
	if at >= t.armedAt {
		return
	}
	if t.armedStop != nil {
		t.armedStop()
	}
	t.armedAt = at
	wake := t.wake
	t.armedStop = t.clk.AfterFunc(at, func() {
		select {
		case wake <- struct{}{}:
		default:
		}
	})
}

// NextProcessingTime returns the earliest scheduled callback time.
func (t *Task) NextProcessingTime() (int64, bool) {
	if len(t.timers) == 0 {
		return 0, false
	}
	return t.timers[0].at, true
}

// AdvanceProcessingTime runs every callback scheduled at or before now, in
// time order (callbacks scheduled meanwhile with a due time run too), then
// flushes.
func (t *Task) AdvanceProcessingTime(now int64) error {
	if err := t.Failure(); err != nil {
		return err
	}
	// The callbacks do not arm the wake-up: one that schedules while
	// another due callback is still queued would arm it, a time that has
	// passed, and no wake-up would come for the later ones (a task without
	// input would never run its timers again). It is armed once, after.
	t.advancing = true
	for len(t.timers) > 0 && t.timers[0].at <= now {
		cb := heap.Pop(&t.timers).(*ptCallback)
		if err := t.guard(func() error { return cb.f(cb.at) }); err != nil {
			t.advancing = false
			return err
		}
	}
	t.advancing = false
	t.armedAt = MaxWatermark
	t.arm()
	return t.Flush()
}

// Flush flushes every output and exchange writer of the task.
func (t *Task) Flush() error {
	for _, o := range t.outputs {
		if err := o.Flush(); err != nil {
			return err
		}
	}
	for _, w := range t.writers {
		if err := w.Flush(); err != nil {
			return err
		}
	}
	return nil
}

// Open opens every operator, last in the chain first (as Flink does).
func (t *Task) Open() error {
	for i := len(t.lifes) - 1; i >= 0; i-- {
		l := t.lifes[i]
		t.curOp = l.name
		if err := t.guard(l.l.Open); err != nil {
			return err
		}
	}
	t.curOp = ""
	return nil
}

// Close closes every operator, head first, and returns the first error.
func (t *Task) Close() error {
	var first error
	for _, l := range t.lifes {
		t.curOp = l.name
		if err := t.guard(l.l.Close); err != nil && first == nil {
			first = err
		}
	}
	t.curOp = ""
	return first
}

// Fail fails the task from any goroutine, for a failure that happens
// outside its steps (a state backend's database failing on one of its own
// goroutines): the task stops with err before its next step, Run also
// when it is idle, and the job's failure handling applies as for any
// failed task. The first failure wins; Fail never blocks.
func (t *Task) Fail(err error) {
	if err == nil || !t.failure.CompareAndSwap(nil, &err) {
		return
	}
	select {
	case t.wake <- struct{}{}:
	default:
	}
}

// Failure returns the failure reported by Fail, or nil.
func (t *Task) Failure() error {
	if p := t.failure.Load(); p != nil {
		return *p
	}
	return nil
}

// Do runs one step given as a function (a test harness feeding a gate
// directly), turning a panic into an error, then flushes.
func (t *Task) Do(f func() error) error {
	if err := t.Failure(); err != nil {
		return err
	}
	if err := t.guard(f); err != nil {
		return err
	}
	return t.Flush()
}

// Drain processes every message waiting in the inbox and every mail
// posted to the mailbox without blocking and reports how many it processed
// (a test harness running a multi-task plan on one goroutine uses it).
func (t *Task) Drain() (int, error) {
	n := 0
	for {
		select {
		case m := <-t.inbox:
			n++
			if err := t.Step(m); err != nil {
				return n, err
			}
		default:
			k, err := t.RunMail()
			if err != nil || k == 0 {
				return n, err
			}
			n += k
		}
	}
}

// Step processes one inbox message and flushes.
func (t *Task) Step(m message) error {
	if err := t.Failure(); err != nil {
		return err
	}
	if err := t.guard(m.process); err != nil {
		return err
	}
	return t.Flush()
}

// guard runs f and turns a panic into an OperatorError with its stack.
func (t *Task) guard(f func() error) (err error) {
	defer func() {
		if r := recover(); r != nil {
			e, ok := r.(error)
			if !ok {
				e = fmt.Errorf("%v", r)
			}
			name := t.curOp
			if name == "" {
				name = t.Name
			}
			err = &OperatorError{Operator: name, Subtask: t.Subtask, Err: e, Stack: string(debug.Stack())}
		}
	}()
	err = f()
	var oe *OperatorError
	if err != nil && !errors.As(err, &oe) && !errors.Is(err, context.Canceled) {
		name := t.curOp
		if name == "" {
			name = t.Name
		}
		err = &OperatorError{Operator: name, Subtask: t.Subtask, Err: err}
	}
	return err
}

// Run opens the task, starts its helpers and processes its inbox until the
// task is done, the context is cancelled, or a step fails.
func (t *Task) Run(ctx context.Context) (err error) {
	ctx = t.labelGoroutine(ctx)
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	defer t.signalCoordinator()
	defer t.finished.Store(true)
	defer t.Metrics.finished.Store(true)
	defer func() {
		if err != nil {
			t.stopped.Store(true)
		}
	}()
	defer func() {
		t.mail.close()
		cancel()
		wg.Wait()
		if t.armedStop != nil {
			t.armedStop()
		}
		if cerr := t.Close(); err == nil && cerr != nil {
			err = cerr
		}
	}()
	for _, w := range t.writers {
		w.SetContext(ctx)
	}
	t.ctx, t.wg = ctx, &wg
	err = t.Open()
	if t.startGate != nil {
		// Every task of the plan opens (and restores) before any starts:
		// a state the job cannot restore is refused before a record moves.
		if gerr := t.startGate(err); err == nil {
			err = gerr
		}
	}
	if err != nil {
		return err
	}
	if err := t.ReplayChannelState(); err != nil {
		return err
	}
	for _, s := range t.starters {
		s(ctx, &wg)
	}
	if err := t.Flush(); err != nil {
		return err
	}
	last := time.Now()
	tm := t.Metrics
	tm.live.mark(last, false)
	steps := 0
	for {
		// Mails first: an answer frees room in an operator before more
		// input comes. While an operator holds the input back, input
		// messages are parked and only mails, timers and control messages
		// (checkpoint triggers, notifications) run; parked input goes
		// first once the operator has room.
		if _, err := t.RunMail(); err != nil {
			return err
		}
		if t.done() && !t.mail.pending() && !t.awaitFinal() {
			break
		}
		blocked := t.mail.blocked()
		var m message
		if !blocked && len(t.parked) > 0 {
			m = t.parked[0]
			t.parked[0] = nil
			t.parked = t.parked[1:]
		} else {
			select {
			case m = <-t.inbox:
			default:
				busy := time.Now()
				t.refresh(busy, false)
				tm.BusyNanos.Add(int64(busy.Sub(last)))
				tm.live.mark(busy, true)
				select {
				case m = <-t.inbox:
				case <-t.wake:
				case <-t.mail.notify:
				case <-ctx.Done():
					return ctx.Err()
				}
				last = time.Now()
				tm.IdleNanos.Add(int64(last.Sub(busy)))
				tm.live.mark(last, false)
			}
			if _, data := m.(inputMsg); data && blocked {
				// Held back, keeping its credit (so the producer stops
				// too), until the operator has room again.
				t.parked = append(t.parked, m)
				m = nil
			}
		}
		if err := t.Failure(); err != nil {
			return err
		}
		if m != nil {
			if err := t.Step(m); err != nil {
				return err
			}
		}
		// A task that never waits accounts its busy time and publishes
		// its gauges every 16 steps (a clock read per 16 batches).
		if steps++; steps&15 == 0 {
			now := time.Now()
			tm.BusyNanos.Add(int64(now.Sub(last)))
			tm.live.mark(now, false)
			last = now
			t.refresh(now, false)
		}
		if len(t.timers) > 0 && t.timers[0].at <= t.clk.NowMillis() {
			if err := t.AdvanceProcessingTime(t.clk.NowMillis()); err != nil {
				return err
			}
		}
	}
	t.Metrics.BusyNanos.Add(int64(time.Since(last)))
	t.refresh(time.Now(), true)
	if err := t.Failure(); err != nil {
		return err
	}
	t.finishAsync()
	return nil
}

// awaitFinal reports whether the task, whose input has ended, must wait
// for its final checkpoint before it finishes: with checkpointing, until a
// checkpoint it snapshotted after the end has completed (Flink's
// checkpoints after tasks finish, FLIP-147). The first call marks the end
// of input and tells the coordinator, which triggers such a task directly
// (no barrier can reach it any more).
func (t *Task) awaitFinal() bool {
	if t.acks == nil {
		return false
	}
	if !t.inputEnded.Load() {
		t.inputEnded.Store(true)
		t.signalCoordinator()
	}
	return !t.finalDone.Load()
}

// FinalDone reports whether the task's final checkpoint has completed
// (the task is finishing).
func (t *Task) FinalDone() bool { return t.finalDone.Load() }

// InputEnded reports whether the task's input has ended while it waits
// for its final checkpoint (or has finished after it).
func (t *Task) InputEnded() bool { return t.inputEnded.Load() }

func (t *Task) signalCoordinator() {
	if t.signal != nil {
		t.signal()
	}
}

type ptCallback struct {
	at  int64
	seq uint64
	f   func(int64) error
}

type callbackHeap []*ptCallback

func (h callbackHeap) Len() int { return len(h) }
func (h callbackHeap) Less(i, j int) bool {
	if h[i].at != h[j].at {
		return h[i].at < h[j].at
	}
	return h[i].seq < h[j].seq
}
func (h callbackHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *callbackHeap) Push(x any)   { *h = append(*h, x.(*ptCallback)) }
func (h *callbackHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	old[len(old)-1] = nil
	*h = old[:len(old)-1]
	return x
}
