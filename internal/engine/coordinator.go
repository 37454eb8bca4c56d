package engine

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"time"

	"github.com/weirstream/weir/internal/clock"
)

// CheckpointConfig configures the checkpoint coordinator of a plan.
type CheckpointConfig struct {
	Interval    time.Duration
	Timeout     time.Duration
	MinPause    time.Duration
	ExactlyOnce bool
	// Unaligned enables unaligned checkpoints (exactly-once only); see
	// Aligner.
	Unaligned bool
	// AlignedTimeout is how long an unaligned-enabled checkpoint stays
	// aligned before it switches to unaligned; 0 starts unaligned.
	AlignedTimeout time.Duration
	// FirstID is the id after which new checkpoints are numbered (the id
	// of the checkpoint the job was restored from).
	FirstID int64
	// Persist stores a checkpoint once every task has acknowledged it; only
	// then is it complete.
	Persist func(ctx context.Context, id int64, acks []TaskAck) error
	// OnComplete, if set, is told of every completed checkpoint.
	OnComplete func(id int64)
	// OnAbort, if set, is told of every periodic checkpoint that was
	// started and will not complete (expired, declined, not stored, or
	// triggered at only some of the sources), before the next one starts.
	OnAbort func(id int64)
	Logger  *slog.Logger
	// TolerableFailures is how many consecutive checkpoint failures
	// (expired, declined by a task, not persisted) are tolerated; one more
	// calls Fail. A completed checkpoint resets the count. Savepoints and
	// checkpoints abandoned because a source was busy, a task finished
	// before any checkpoint held its final state, or the whole job
	// finished are not counted (Flink's CheckpointFailureManager).
	TolerableFailures int
	// Fail, if set, is called once, with an error wrapping
	// ErrTooManyCheckpointFailures, when more than TolerableFailures
	// consecutive checkpoints failed; it should fail the job.
	Fail func(err error)
	// Savepoints delivers savepoint requests (nil: none).
	Savepoints <-chan *SavepointRequest
	// Stats, if set, tracks the checkpoints' statistics.
	Stats *CheckpointStats
}

// ErrTooManyCheckpointFailures is wrapped by the error a job fails with when
// more consecutive checkpoints failed than tolerated.
var ErrTooManyCheckpointFailures = errors.New("exceeded the tolerable number of consecutive checkpoint failures")

// SavepointRequest asks the coordinator for a savepoint: a checkpoint taken
// on demand (as soon as no other checkpoint is in flight, regardless of the
// interval and the minimum pause), persisted by its own Persist and not
// followed by a completion notification, unless Stop is set.
type SavepointRequest struct {
	// Stop makes it a stop-with-savepoint: every source task holds after
	// forwarding the barrier (it emits nothing more), and once the
	// savepoint is stored every task is notified of its completion (so
	// two-phase-commit sinks commit) before Done reports success; the
	// sources then hold until the job is cancelled. If the savepoint fails
	// the sources resume and the job goes on.
	Stop bool
	// Persist stores the savepoint once every task has acknowledged it.
	Persist func(ctx context.Context, id int64, acks []TaskAck) error
	// Done is called once, on the coordinator's goroutine, with the
	// savepoint's id (0 if it never started) and its outcome. It must not
	// block.
	Done func(id int64, err error)
	// Checkpoint makes it a manual checkpoint instead (Flink's REST
	// checkpoint trigger): a checkpoint like the periodic ones, stored in
	// the job's checkpoint store, taken as soon as none is in flight;
	// Persist and Stop are ignored, and Done is called once it started,
	// with its id (its outcome is in the checkpoint statistics), or with
	// an error if it could not start.
	Checkpoint bool
}

// coordinator triggers checkpoints at the sources, collects the tasks'
// acknowledgements, persists complete checkpoints and notifies the tasks.
// At most one checkpoint (or savepoint) is in flight; the next periodic one
// starts no earlier than Interval after the previous one started and
// MinPause after the previous one ended; one that has not completed within
// Timeout expires.
//
// The decisions are made by onTick, onAck and onRequest, which the tests
// call directly with a manual clock; run only feeds them.
type coordinator struct {
	cfg   CheckpointConfig
	clk   clock.Clock
	tasks []*Task
	acks  chan TaskAck
	log   *slog.Logger

	next         int64 // the last id used
	pending      *pendingCheckpoint
	lastEnd      int64 // when the last checkpoint completed or was abandoned
	nextPeriodic int64 // when the next periodic checkpoint is due
	queue        []*SavepointRequest
	lastStarted  int64 // the id of the last checkpoint that started
	failures     int   // consecutive counted failures
	failed       bool  // Fail was called, or the job stopped with a savepoint
	started      bool  // init ran
	// index finds a task by its acknowledgement; final holds each task's
	// acknowledgement of the latest completed checkpoint: once the task
	// has finished (after its final checkpoint), it stands for the task in
	// later checkpoints.
	index map[taskKey]int
	final []*TaskAck
	// ended wakes run when a task's input ends or a task finishes.
	ended chan struct{}
}

// taskKey identifies a task by its acknowledgements: names need not be
// unique (two sources of the same kind), head operators' ids are.
type taskKey struct {
	vertex, name string
	subtask      int
}

type pendingCheckpoint struct {
	id      int64
	started int64
	acks    []TaskAck
	sp      *SavepointRequest
	stop    *stopState
	// acked marks the tasks that acknowledged (or, finished, count as
	// acknowledged), triggered those that were triggered directly.
	acked     []bool
	triggered []bool
	finished  int // tasks counted with their final acknowledgement
}

// stopState coordinates the source tasks held by a stop-with-savepoint.
type stopState struct {
	release  chan struct{} // closed if the savepoint failed: sources resume
	complete chan struct{} // closed once the savepoint is stored
	notified chan error    // one report per notified task
	done     <-chan struct{}
}

func newCoordinator(cfg CheckpointConfig, clk clock.Clock, tasks []*Task, acks chan TaskAck, log *slog.Logger) *coordinator {
	c := &coordinator{cfg: cfg, clk: clk, tasks: tasks, acks: acks, log: log}
	c.init()
	return c
}

// init sets the starting state (Plan.Run builds the struct directly).
func (c *coordinator) init() {
	if c.started {
		return
	}
	c.started = true
	if c.log == nil {
		c.log = slog.Default()
	}
	c.index = make(map[taskKey]int, len(c.tasks))
	c.final = make([]*TaskAck, len(c.tasks))
	c.ended = make(chan struct{}, 1)
	for i, t := range c.tasks {
		c.index[taskKey{t.Vertex, t.Name, t.Subtask}] = i
		t.signal = c.wake
	}
	c.next = c.cfg.FirstID
	now := c.clk.NowMillis()
	c.lastEnd = now - c.cfg.MinPause.Milliseconds() // no pause before the first one
	c.nextPeriodic = now + c.interval()
}

// wake asks run to look at the tasks again (a task's input ended, or a
// task finished); it never blocks.
func (c *coordinator) wake() {
	select {
	case c.ended <- struct{}{}:
	default:
	}
}

func (c *coordinator) interval() int64 { return max(c.cfg.Interval.Milliseconds(), 1) }

// nextWake returns when onTick has something to decide.
func (c *coordinator) nextWake(now int64) int64 {
	if p := c.pending; p != nil {
		// The deadline, and periodic looks for finished tasks meanwhile.
		return min(p.started+c.cfg.Timeout.Milliseconds(), now+c.interval())
	}
	if len(c.queue) > 0 {
		return now
	}
	return max(c.nextPeriodic, c.lastEnd+c.cfg.MinPause.Milliseconds())
}

func (c *coordinator) run(ctx context.Context) {
	c.init()
	tick := make(chan struct{}, 1)
	var (
		armedAt int64 = -1
		stop          = func() bool { return false }
	)
	arm := func() {
		at := c.nextWake(c.clk.NowMillis())
		if at == armedAt {
			return
		}
		stop()
		armedAt = at
		stop = c.clk.AfterFunc(at, func() {
			select {
			case tick <- struct{}{}:
			default:
			}
		})
	}
	defer func() { stop() }()
	for {
		arm()
		select {
		case <-ctx.Done():
			c.shutdown()
			return
		case <-tick:
			armedAt = -1
			c.onTick(ctx, c.clk.NowMillis())
		case <-c.ended:
			c.onTick(ctx, c.clk.NowMillis())
		case a := <-c.acks:
			c.onAck(ctx, a)
		case r := <-c.cfg.Savepoints:
			c.onRequest(ctx, r)
		}
	}
}

// onRequest queues a savepoint and starts it if nothing is in flight.
func (c *coordinator) onRequest(ctx context.Context, r *SavepointRequest) {
	c.queue = append(c.queue, r)
	if c.pending == nil {
		c.onTick(ctx, c.clk.NowMillis())
	}
}

// onTick expires or abandons the checkpoint in flight and starts the next
// one when it is due.
func (c *coordinator) onTick(ctx context.Context, now int64) {
	if p := c.pending; p != nil {
		c.advance(ctx, p, now)
		if p == c.pending && now-p.started >= c.cfg.Timeout.Milliseconds() {
			c.abort(p, now, failure(FailureExpired, fmt.Errorf("checkpoint %d expired: not complete after %v (%d of %d tasks acknowledged)",
				p.id, c.cfg.Timeout, len(p.acks), len(c.tasks))), true)
		}
	}
	if c.pending != nil || c.failed {
		return
	}
	if len(c.queue) > 0 {
		r := c.queue[0]
		c.queue = c.queue[1:]
		if r.Checkpoint {
			before := c.lastStarted
			c.trigger(ctx, now, nil)
			if c.lastStarted > before {
				r.Done(c.lastStarted, nil)
			} else {
				r.Done(0, errors.New("checkpoint not triggered: a source is busy"))
			}
			return
		}
		c.trigger(ctx, now, r)
		return
	}
	if c.allFinishing() {
		return
	}
	// The final checkpoint of a job whose every running task has reached
	// the end of its input is taken at once: nothing else would change
	// before the next interval, and the job ends when it completes.
	if final := c.allEnded(); final || now >= c.nextPeriodic && now-c.lastEnd >= c.cfg.MinPause.Milliseconds() {
		c.nextPeriodic = now + c.interval()
		c.trigger(ctx, now, nil)
	}
}

// advance brings checkpoint p forward after something changed: a task
// that finished without acknowledging p counts as acknowledged with its
// final state; a running task whose input has ended, which no barrier can
// reach any more, is triggered directly (Flink triggers the first running
// tasks after finished ones); p completes once every task is accounted
// for.
func (c *coordinator) advance(ctx context.Context, p *pendingCheckpoint, now int64) {
	for i, t := range c.tasks {
		if p.acked[i] {
			continue
		}
		switch {
		case t.Stopped():
			// A failed or cancelled task is not finished: its latest
			// acknowledgement is not its final state, and counting it
			// would pair older state with the newer positions of the
			// tasks that acknowledged (records lost on restore). The job
			// is going down; no checkpoint completes any more.
			c.failed = true
			c.abort(p, now, fmt.Errorf("checkpoint %d abandoned: %s (subtask %d) failed or was cancelled", p.id, t.Name, t.Subtask), false)
			return
		case t.Finished():
			if c.final[i] == nil || p.sp != nil {
				c.abort(p, now, fmt.Errorf("checkpoint %d abandoned: %s (subtask %d) finished before acknowledging it", p.id, t.Name, t.Subtask), false)
				return
			}
			a := finishedAck(*c.final[i], p.id)
			p.acked[i] = true
			p.acks = append(p.acks, a)
			p.finished++
			c.cfg.Stats.acked(a, now)
		case !p.triggered[i] && !t.IsSource() && t.InputEnded():
			p.triggered[i] = true
			if !c.triggerTask(p, t) {
				return
			}
		}
	}
	if p.finished == len(c.tasks) {
		// Every task finished meanwhile: the job is over, and its final
		// checkpoints hold all there is.
		c.abort(p, now, fmt.Errorf("checkpoint %d abandoned: every task has finished", p.id), false)
		return
	}
	if len(p.acks) == len(c.tasks) {
		c.complete(ctx, p, now)
	}
}

// finishedAck returns a finished task's acknowledgement of its latest
// completed checkpoint as its acknowledgement of checkpoint id. Keyed
// state a state backend keeps as files (KeyedFiles, the Pebble backend's
// staged checkpoints) is left out with the rest of its key groups: those
// files were handed to the store once and are gone, and a finished task
// needs no keyed state (all its input has ended, upstream too, so a
// restore gives it nothing to process). Operator state (source
// positions at their end, a sink's transactions) is kept.
func finishedAck(a TaskAck, id int64) TaskAck {
	a.ID = id
	a.Stats = AckStats{LastInput: -1, LastChannel: -1}
	ops := make([]OperatorSnapshot, len(a.Ops))
	for i, op := range a.Ops {
		if op.KeyedFiles != nil {
			op.KeyedFiles, op.KeyGroups = nil, nil
		}
		ops[i] = op
	}
	a.Ops = ops
	return a
}

// triggerTask triggers checkpoint p at a running task whose input has
// ended (no barrier can reach it); false if p was given up. A savepoint
// gets here when a source ended while it was in flight, before its
// trigger reached it.
func (c *coordinator) triggerTask(p *pendingCheckpoint, t *Task) bool {
	sent := false
	if p.sp == nil {
		sent = t.Trigger(p.id)
	} else {
		select {
		case t.inbox <- triggerMsg{t, p.id}:
			sent = true
		default:
		}
	}
	if !sent && !t.Finished() {
		c.abort(p, c.clk.NowMillis(), fmt.Errorf("checkpoint %d not triggered: the inbox of %s (subtask %d) is full", p.id, t.Name, t.Subtask), false)
		return false
	}
	return true
}

// trigger starts checkpoint (or savepoint, if sp is set) next+1 at every
// running source task.
//
// Checkpoints go on after some tasks have finished (Flink's FLIP-147): a
// finished task counts as acknowledged with the state of its final
// checkpoint, and the barrier starts at the running sources and at the
// running tasks whose input has ended (see advance). Savepoints are taken
// only while every task still runs and no input has ended.
func (c *coordinator) trigger(ctx context.Context, now int64, sp *SavepointRequest) {
	if sp != nil && !c.allRunning() {
		sp.Done(0, errors.New("savepoint not taken: a task of the job has already reached the end of its input"))
		return
	}
	c.next++
	p := &pendingCheckpoint{id: c.next, started: now, sp: sp,
		acked: make([]bool, len(c.tasks)), triggered: make([]bool, len(c.tasks))}
	if sp != nil && sp.Stop {
		p.stop = &stopState{
			release: make(chan struct{}), complete: make(chan struct{}),
			notified: make(chan error, len(c.tasks)), done: ctx.Done(),
		}
	}
	for i, t := range c.tasks {
		if !t.IsSource() || t.Finished() {
			continue
		}
		p.triggered[i] = true
		if sp == nil {
			if !t.Trigger(p.id) && !t.Finished() {
				c.log.Warn("checkpoint not triggered: a source is busy", "checkpoint", p.id)
				if c.cfg.OnAbort != nil {
					c.cfg.OnAbort(p.id) // the sources before this one have the barrier
				}
				return
			}
			continue
		}
		var m message = triggerMsg{t, p.id}
		if p.stop != nil {
			m = stopMsg{t, p.id, p.stop}
		}
		// A savepoint waits for room in the inbox rather than fail, unless
		// the task finishes meanwhile.
		if !c.send(ctx, t, m) {
			if p.stop != nil {
				close(p.stop.release) // sources already held resume
			}
			err := fmt.Errorf("savepoint %d not taken: source %s (subtask %d) finished", p.id, t.Name, t.Subtask)
			if ctx.Err() != nil {
				err = fmt.Errorf("savepoint %d not taken: the job ended, failed or was cancelled first", p.id)
			}
			sp.Done(p.id, err)
			return
		}
	}
	c.pending = p
	c.lastStarted = p.id
	c.cfg.Stats.started(p.id, sp, now, c.tasks)
	c.advance(ctx, p, now)
}

// send puts m in t's inbox, waiting for room; false if ctx ended or t
// finished first.
func (c *coordinator) send(ctx context.Context, t *Task, m message) bool {
	for {
		select {
		case t.inbox <- m:
			return true
		case <-ctx.Done():
			return false
		case <-time.After(10 * time.Millisecond):
			if t.Finished() {
				return false
			}
		}
	}
}

// onAck records a task's acknowledgement and completes the checkpoint when
// every task has acknowledged it.
func (c *coordinator) onAck(ctx context.Context, a TaskAck) {
	p := c.pending
	if p == nil || a.ID != p.id {
		return // late, for an abandoned checkpoint
	}
	now := c.clk.NowMillis()
	if a.Err == nil {
		c.cfg.Stats.acked(a, now)
	}
	if a.Err != nil {
		c.abort(p, now, failure(FailureDeclined, fmt.Errorf("checkpoint %d declined by %s (subtask %d): %w", p.id, a.Task, a.Subtask, a.Err)), true)
		return
	}
	i, ok := c.index[taskKey{a.Vertex, a.Task, a.Subtask}]
	if !ok || p.acked[i] {
		return
	}
	p.acked[i] = true
	p.acks = append(p.acks, a)
	c.advance(ctx, p, now)
}

func (c *coordinator) complete(ctx context.Context, p *pendingCheckpoint, now int64) {
	// Storing the checkpoint is part of it: it may take what is left of
	// the timeout (a store retries transient failures until then), or
	// the whole timeout if the clock is already past it (a manual clock
	// that jumped before the expiry was looked at).
	left := time.Duration(p.started+c.cfg.Timeout.Milliseconds()-now) * time.Millisecond
	if left <= 0 {
		left = c.cfg.Timeout
	}
	pctx, cancel := context.WithTimeout(ctx, left)
	defer cancel()
	if p.sp != nil {
		c.pending = nil
		c.lastEnd = now
		err := persist(pctx, p.sp.Persist, p.id, p.acks)
		if err != nil {
			err = failure(FailureStore, fmt.Errorf("savepoint %d could not be stored: %w", p.id, err))
		} else if p.stop != nil {
			err = c.notifyStopped(ctx, p)
		}
		if err != nil && p.stop != nil {
			close(p.stop.release)
		} else if p.stop != nil {
			c.failed = true // the job is stopping: no more checkpoints
		}
		c.cfg.Stats.ended(p.id, c.clk.NowMillis(), err)
		p.sp.Done(p.id, err)
		return
	}
	if c.cfg.Persist != nil {
		if err := persist(pctx, c.cfg.Persist, p.id, p.acks); err != nil {
			if ctx.Err() != nil {
				c.pending = nil
				return
			}
			c.abort(p, now, failure(FailureStore, fmt.Errorf("checkpoint %d could not be stored: %w", p.id, err)), true)
			return
		}
	}
	c.pending = nil
	c.lastEnd = c.clk.NowMillis()
	c.failures = 0
	c.cfg.Stats.ended(p.id, c.lastEnd, nil)
	var size int64
	for _, a := range p.acks {
		for _, op := range a.Ops {
			size += op.StateSize()
		}
		if i, ok := c.index[taskKey{a.Vertex, a.Task, a.Subtask}]; ok {
			a := a
			c.final[i] = &a
		}
	}
	// As Flink's "Completed checkpoint N for job J (S bytes,
	// checkpointDuration=D ms)"; the job is named by the logger.
	c.log.Info("completed checkpoint", "checkpoint", p.id, "bytes", size,
		"duration_ms", c.lastEnd-p.started, "finished_tasks", p.finished)
	for _, t := range c.tasks {
		if !t.Finished() && !t.Notify(p.id) {
			c.log.Warn("checkpoint completion not delivered: inbox full", "checkpoint", p.id, "task", t.Name, "subtask", t.Subtask)
		}
	}
	if c.cfg.OnComplete != nil {
		c.cfg.OnComplete(p.id)
	}
}

// persist runs a Persist function, turning a panic in it (a store, an
// upload, the conversion of a savepoint) into an error: the checkpoint
// fails as when it cannot be stored, and the coordinator's goroutine, so
// the process, lives on.
func persist(ctx context.Context, f func(context.Context, int64, []TaskAck) error, id int64, acks []TaskAck) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("panic while storing: %v\n%s", r, debug.Stack())
		}
	}()
	return f(ctx, id, acks)
}

// notifyStopped tells every task that the stop-with-savepoint completed
// and waits until each has run its listeners.
func (c *coordinator) notifyStopped(ctx context.Context, p *pendingCheckpoint) error {
	close(p.stop.complete) // the held sources notify their own operators
	n := 0
	for _, t := range c.tasks {
		n++
		if t.IsSource() {
			continue
		}
		select {
		case t.inbox <- notifyWaitMsg{t, p.id, p.stop.notified}:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	var first error
	for range n {
		select {
		case err := <-p.stop.notified:
			if err != nil && first == nil {
				first = fmt.Errorf("savepoint %d stored, but notifying its completion failed: %w", p.id, err)
			}
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return first
}

// abort abandons checkpoint p; counted failures may fail the job.
func (c *coordinator) abort(p *pendingCheckpoint, now int64, err error, counted bool) {
	c.pending = nil
	c.lastEnd = now
	c.cfg.Stats.ended(p.id, now, err)
	if p.sp != nil {
		if p.stop != nil {
			close(p.stop.release)
		}
		p.sp.Done(p.id, fmt.Errorf("savepoint failed: %w", err))
		return
	}
	if c.cfg.OnAbort != nil {
		c.cfg.OnAbort(p.id)
	}
	if !counted {
		c.log.Info("checkpoint abandoned", "checkpoint", p.id, "reason", err.Error())
		return
	}
	c.failures++
	c.log.Warn("checkpoint failed", "checkpoint", p.id, "err", err.Error(),
		"consecutive_failures", c.failures, "tolerable", c.cfg.TolerableFailures)
	if c.failures > c.cfg.TolerableFailures && !c.failed {
		c.failed = true
		if c.cfg.Fail != nil {
			c.cfg.Fail(fmt.Errorf("%w (%d tolerated); the last one: %w", ErrTooManyCheckpointFailures, c.cfg.TolerableFailures, err))
		}
	}
}

// shutdown answers the savepoint requests still waiting: the job ended or
// failed first.
func (c *coordinator) shutdown() {
	err := errors.New("savepoint not taken: the job ended, failed or was cancelled first")
	if p := c.pending; p != nil {
		c.cfg.Stats.ended(p.id, c.clk.NowMillis(), fmt.Errorf("checkpoint %d abandoned: the job ended, failed or was cancelled first", p.id))
	}
	if p := c.pending; p != nil && p.sp != nil {
		c.pending = nil
		p.sp.Done(p.id, err)
	}
	for _, r := range c.queue {
		r.Done(0, err)
	}
	c.queue = nil
}

// allRunning reports whether every task runs and none has reached the
// end of its input.
func (c *coordinator) allRunning() bool {
	for _, t := range c.tasks {
		if t.Finished() || t.InputEnded() {
			return false
		}
	}
	return true
}

// allFinishing reports whether every task has finished or completed its
// final checkpoint: no checkpoint is needed any more.
func (c *coordinator) allFinishing() bool {
	for _, t := range c.tasks {
		if !t.Finished() && !t.FinalDone() {
			return false
		}
	}
	return true
}

// allEnded reports whether every task that has not finished has reached
// the end of its input and waits for its final checkpoint (and at least
// one does; one whose final checkpoint completed is finishing).
func (c *coordinator) allEnded() bool {
	waiting := false
	for _, t := range c.tasks {
		switch {
		case t.Finished() || t.FinalDone():
		case t.InputEnded():
			waiting = true
		default:
			return false
		}
	}
	return waiting
}

// stopMsg triggers a stop-with-savepoint at a source task: the task
// snapshots and forwards the barrier, then holds (it reads no more input)
// until the savepoint is stored, notifies its operators, and holds on
// until the job is cancelled, when it ends the task with context.Canceled.
// If the savepoint fails it resumes.
type stopMsg struct {
	t  *Task
	id int64
	s  *stopState
}

func (m stopMsg) process() error {
	if err := m.t.Checkpoint(m.id); err != nil {
		return err
	}
	select {
	case <-m.s.release:
		return nil
	case <-m.s.done:
		return context.Canceled
	case <-m.s.complete:
	}
	err := m.t.NotifyComplete(m.id)
	m.s.notified <- err
	if err != nil {
		return err
	}
	<-m.s.done
	// End the task at once: returning nil would let it process the
	// batches already in its inbox, emitting records after the barrier.
	return context.Canceled
}

// notifyWaitMsg notifies a task of a completed checkpoint and reports back.
type notifyWaitMsg struct {
	t    *Task
	id   int64
	done chan<- error
}

func (m notifyWaitMsg) process() error {
	err := m.t.NotifyComplete(m.id)
	m.done <- err
	return err
}
