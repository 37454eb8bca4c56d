// Package asyncio is the engine of Weir's async I/O operator (Flink's
// AsyncWaitOperator): a queue of requests in flight with a capacity, the
// ordered and unordered emission rules, per-request timeouts, retries and
// the snapshot of the queue's input elements.
//
// The operator is a step machine on the task goroutine. User code starts a
// request and answers it later, from any goroutine, through a Future;
// the answer enters the task as a mail (runtime.Mailbox) and is handled
// between two steps. All time (timeouts, retry delays) is the task's
// processing time.
package asyncio

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync/atomic"
	"time"
)

// Kind tells what an input element is.
type Kind uint8

const (
	// KindRecord is a record, answered by a request.
	KindRecord Kind = iota
	// KindWatermark is a watermark (TS holds it).
	KindWatermark
	// KindStatus is a watermark status (Idle holds it).
	KindStatus
)

// Element is one input element of the operator.
type Element[IN any] struct {
	Kind  Kind
	Value IN
	TS    int64 // a record's timestamp, or the watermark
	Idle  bool  // a status
}

// ErrTimeout is the error of a request that timed out without a timeout
// handler (Flink's "Async function call has timed out.").
var ErrTimeout = errors.New("async function call has timed out")

// Output is where the operator emits: results keep their input record's
// timestamp.
type Output[OUT any] interface {
	Collect(v OUT, ts int64)
	EmitWatermark(wm int64) error
	EmitStatus(idle bool) error
	End() error
	Err() error
}

// Clock is the task's processing-time service.
type Clock interface {
	Now() int64
	Schedule(at int64, f func(at int64) error)
}

// Mailbox takes functions to run on the task goroutine.
type Mailbox interface {
	Post(f func() error) bool
}

// Retry is a retry strategy (Flink's AsyncRetryStrategy with its
// AsyncRetryPredicate). Attempts count from 1.
type Retry[OUT any] struct {
	// CanRetry reports whether another attempt may follow attempt n.
	CanRetry func(n int) bool
	// Backoff returns the delay in milliseconds before the attempt after
	// attempt n.
	Backoff func(n int) int64
	// IfResult and IfError tell which answers ask for a retry; nil: none.
	IfResult func([]OUT) bool
	IfError  func(error) bool
}

// Config describes an operator.
type Config[IN, OUT any] struct {
	Ordered  bool
	Capacity int
	// Timeout is the time in milliseconds a request may take, over all
	// its attempts, before it times out; 0: no timeout.
	Timeout int64
	Retry   *Retry[OUT] // nil: no retries
	// Invoke starts an attempt: the user's AsyncInvoke. ctx ends when the
	// request's answer is no longer wanted.
	Invoke func(ctx context.Context, in IN, f *Future[IN, OUT])
	// OnTimeout is the user's timeout handler; nil: a timeout fails the
	// request with ErrTimeout.
	OnTimeout func(in IN, f *Future[IN, OUT])
	// Catch is deferred by the operator's own callbacks (timers, mails),
	// which call user code: it turns a panic into an error naming the
	// operator, with the stack.
	Catch func(err *error)
}

// Operator is the async I/O operator's engine.
type Operator[IN, OUT any] struct {
	cfg  Config[IN, OUT]
	out  Output[OUT]
	clk  Clock
	mail Mailbox

	q       queue[IN, OUT]
	waiting ring[Element[IN]] // arrived while the queue was full
	timers  timerHeap[IN, OUT]
	seq     uint64
	// scheduledAt is the earliest time a callback is asked for.
	scheduledAt int64

	ended, endSent bool
	retryOff       bool // retries end with the input, as in Flink
	ctx            context.Context
	cancel         context.CancelFunc
	inFlight       int
	err            error // the first error met while emitting
}

// entry is one element in the queue; for a record, its request.
type entry[IN, OUT any] struct {
	el      Element[IN]
	done    bool
	results []OUT

	attempt  int
	cancel   context.CancelFunc // the attempt in flight
	timedOut bool
	timeout  *timer[IN, OUT]
	retry    *timer[IN, OUT] // waiting for the next attempt

	seg        *segment[IN, OUT]
	prev, next *entry[IN, OUT]
}

// New returns an operator emitting to out.
func New[IN, OUT any](cfg Config[IN, OUT], out Output[OUT], clk Clock, mail Mailbox) (*Operator[IN, OUT], error) {
	if cfg.Capacity < 1 {
		return nil, fmt.Errorf("the capacity must be at least 1, got %d", cfg.Capacity)
	}
	if cfg.Timeout < 0 {
		return nil, fmt.Errorf("the timeout must not be negative, got %d ms", cfg.Timeout)
	}
	if cfg.Catch == nil {
		cfg.Catch = func(*error) {}
	}
	o := &Operator[IN, OUT]{cfg: cfg, out: out, clk: clk, mail: mail, scheduledAt: math.MaxInt64}
	if cfg.Ordered {
		o.q = &orderedQueue[IN, OUT]{}
	} else {
		o.q = &unorderedQueue[IN, OUT]{}
	}
	return o, nil
}

// Open starts the operator and re-issues the elements restored from a
// checkpoint, in order (Flink processes them in open()).
func (o *Operator[IN, OUT]) Open(restored []Element[IN]) error {
	o.ctx, o.cancel = context.WithCancel(context.Background())
	for _, el := range restored {
		if err := o.Add(el); err != nil {
			return err
		}
	}
	return nil
}

// Close ends every request's context.
func (o *Operator[IN, OUT]) Close() {
	if o.cancel != nil {
		o.cancel()
	}
}

// Add takes one input element: a record starts a request when the queue
// has room, else it waits (and InputBlocked holds the input back).
func (o *Operator[IN, OUT]) Add(el Element[IN]) error {
	if o.waiting.len() > 0 || o.q.len() >= o.cfg.Capacity {
		o.waiting.push(el)
		return nil
	}
	o.start(el)
	if el.Kind == KindRecord {
		return nil
	}
	return o.drain()
}

// EndInput marks the end of the input: the operator ends its output once
// every request has been answered.
func (o *Operator[IN, OUT]) EndInput() error {
	o.ended = true
	return o.drain()
}

// InputBlocked reports whether the operator takes no more input for now.
func (o *Operator[IN, OUT]) InputBlocked() bool {
	return o.waiting.len() > 0 || o.q.len() >= o.cfg.Capacity
}

// Pending reports whether elements are in the queue or waiting for it.
func (o *Operator[IN, OUT]) Pending() bool { return o.q.len() > 0 || o.waiting.len() > 0 }

// InFlight returns the number of attempts started and not yet answered.
func (o *Operator[IN, OUT]) InFlight() int { return o.inFlight }

// Snapshot returns the input elements of the queue and of the waiting
// line, in order: records (answered or not, when not emitted yet) and
// watermarks, as Flink stores the queue's elements. Statuses are left out.
func (o *Operator[IN, OUT]) Snapshot() []Element[IN] {
	var out []Element[IN]
	o.q.each(func(e *entry[IN, OUT]) {
		if e.el.Kind != KindStatus {
			out = append(out, e.el)
		}
	})
	for i := range o.waiting.len() {
		if el := o.waiting.at(i); el.Kind != KindStatus {
			out = append(out, el)
		}
	}
	return out
}

// start puts an element into the queue; a record's request starts.
func (o *Operator[IN, OUT]) start(el Element[IN]) {
	e := &entry[IN, OUT]{el: el, done: el.Kind != KindRecord}
	o.q.put(e)
	if e.done {
		return
	}
	if o.cfg.Timeout > 0 {
		e.timeout = o.addTimer(o.clk.Now()+o.cfg.Timeout, e, timerTimeout)
	}
	o.invoke(e)
}

// invoke starts the next attempt of e's request.
func (o *Operator[IN, OUT]) invoke(e *entry[IN, OUT]) {
	e.attempt++
	ctx, cancel := context.WithCancel(o.ctx)
	e.cancel = cancel
	o.inFlight++
	o.cfg.Invoke(ctx, e.el.Value, &Future[IN, OUT]{op: o, e: e, attempt: e.attempt})
}

// drain emits what may leave the queue, lets waiting elements in as room
// frees, and ends the output once the input has ended and all is out.
func (o *Operator[IN, OUT]) drain() error {
	for {
		o.q.emit(o.emitEntry)
		moved := false
		for o.waiting.len() > 0 && o.q.len() < o.cfg.Capacity {
			o.start(o.waiting.pop())
			moved = true
		}
		if !moved {
			break
		}
	}
	if o.ended && o.waiting.len() == 0 {
		o.finishRetries()
		if !o.endSent && o.q.len() == 0 {
			o.endSent = true
			if err := o.outErr(); err != nil {
				return err
			}
			return o.out.End()
		}
	}
	return o.outErr()
}

// finishRetries runs at the end of the input, once every element is in
// the queue: as Flink's finishInFlightDelayedRetry, requests waiting for
// a retry start it now, and no answer is retried any more.
func (o *Operator[IN, OUT]) finishRetries() {
	if o.retryOff || o.cfg.Retry == nil {
		return
	}
	o.retryOff = true
	var due []*entry[IN, OUT]
	o.q.each(func(e *entry[IN, OUT]) {
		if e.retry != nil {
			due = append(due, e)
		}
	})
	for _, e := range due {
		o.timers.remove(e.retry)
		e.retry = nil
		o.invoke(e)
	}
}

func (o *Operator[IN, OUT]) emitEntry(e *entry[IN, OUT]) {
	switch e.el.Kind {
	case KindRecord:
		for _, v := range e.results {
			o.out.Collect(v, e.el.TS)
		}
		e.results = nil
	case KindWatermark:
		if err := o.out.EmitWatermark(e.el.TS); err != nil {
			o.fail(err)
		}
	case KindStatus:
		if err := o.out.EmitStatus(e.el.Idle); err != nil {
			o.fail(err)
		}
	}
}

// fail keeps the first error met while emitting.
func (o *Operator[IN, OUT]) fail(err error) {
	if o.err == nil {
		o.err = err
	}
}

// outErr returns the first error met while emitting.
func (o *Operator[IN, OUT]) outErr() error {
	if o.err != nil {
		return o.err
	}
	return o.out.Err()
}

// answer handles an answer on the task goroutine.
func (o *Operator[IN, OUT]) answer(f *Future[IN, OUT], results []OUT, err error, fatal bool) (rerr error) {
	defer o.cfg.Catch(&rerr)
	e := f.e
	if !f.timeout {
		o.inFlight--
	}
	if e.done || (!f.timeout && f.attempt != e.attempt) {
		return nil // late: the request is over, or this attempt is
	}
	if e.cancel != nil && !f.timeout {
		e.cancel()
		e.cancel = nil
	}
	if fatal {
		return o.failRequest(e, err)
	}
	if !f.timeout && o.shouldRetry(e, results, err) {
		e.retry = o.addTimer(o.clk.Now()+o.cfg.Retry.Backoff(e.attempt), e, timerRetry)
		return nil
	}
	if err != nil {
		return o.failRequest(e, err)
	}
	o.release(e)
	e.done, e.results = true, results
	o.q.completed(e)
	return o.drain()
}

func (o *Operator[IN, OUT]) shouldRetry(e *entry[IN, OUT], results []OUT, err error) bool {
	r := o.cfg.Retry
	if r == nil || o.retryOff || e.timedOut {
		return false
	}
	ask := (err == nil && r.IfResult != nil && r.IfResult(results)) ||
		(err != nil && r.IfError != nil && r.IfError(err))
	return ask && r.CanRetry(e.attempt)
}

// failRequest fails the job with the request's error, as Flink's
// completeExceptionally does.
func (o *Operator[IN, OUT]) failRequest(e *entry[IN, OUT], err error) error {
	o.release(e)
	ts := "no timestamp"
	if e.el.TS != math.MinInt64 {
		ts = fmt.Sprintf("timestamp %d", e.el.TS)
	}
	return fmt.Errorf("could not complete the async request for record %v (%s) after %d attempt(s): %w", e.el.Value, ts, e.attempt, err)
}

// release ends the request's attempt context and timers.
func (o *Operator[IN, OUT]) release(e *entry[IN, OUT]) {
	if e.cancel != nil {
		e.cancel()
		e.cancel = nil
	}
	if e.timeout != nil {
		o.timers.remove(e.timeout)
		e.timeout = nil
	}
	if e.retry != nil {
		o.timers.remove(e.retry)
		e.retry = nil
	}
}

func (o *Operator[IN, OUT]) addTimer(at int64, e *entry[IN, OUT], kind timerKind) *timer[IN, OUT] {
	o.seq++
	t := &timer[IN, OUT]{at: at, seq: o.seq, kind: kind, e: e}
	o.timers.add(t)
	o.schedule()
	return t
}

// schedule asks the task for a callback at the earliest timer, unless one
// is asked for already at or before it.
func (o *Operator[IN, OUT]) schedule() {
	if len(o.timers) == 0 {
		return
	}
	if at := o.timers[0].at; at < o.scheduledAt {
		o.scheduledAt = at
		o.clk.Schedule(at, o.onTime)
	}
}

// onTime fires the timers due by now: timeouts and retries.
func (o *Operator[IN, OUT]) onTime(at int64) (err error) {
	defer o.cfg.Catch(&err)
	if at >= o.scheduledAt {
		o.scheduledAt = math.MaxInt64
	}
	now := max(o.clk.Now(), at)
	for len(o.timers) > 0 && o.timers[0].at <= now {
		t := o.timers.popMin()
		e := t.e
		switch t.kind {
		case timerTimeout:
			e.timeout = nil
			if err := o.timedOut(e); err != nil {
				return err
			}
		case timerRetry:
			e.retry = nil
			o.invoke(e)
		}
	}
	o.schedule()
	return o.outErr()
}

// timedOut handles a request whose time is up: no more retries; the
// timeout handler answers it, or it fails.
func (o *Operator[IN, OUT]) timedOut(e *entry[IN, OUT]) error {
	e.timedOut = true
	if e.retry != nil {
		o.timers.remove(e.retry)
		e.retry = nil
	}
	if o.cfg.OnTimeout == nil {
		return o.failRequest(e, fmt.Errorf("%w after %v", ErrTimeout, time.Duration(o.cfg.Timeout)*time.Millisecond))
	}
	o.cfg.OnTimeout(e.el.Value, &Future[IN, OUT]{op: o, e: e, attempt: e.attempt, timeout: true})
	return nil
}

// Future is the handle of one attempt of a request (or of its timeout
// handler): the first Complete or CompleteExceptionally counts, from any
// goroutine; later calls are ignored.
type Future[IN, OUT any] struct {
	op      *Operator[IN, OUT]
	e       *entry[IN, OUT]
	attempt int
	timeout bool
	once    atomic.Bool
}

// Complete answers the request with results (nil or empty: none). The
// slice belongs to the operator afterwards.
func (f *Future[IN, OUT]) Complete(results []OUT) { f.post(results, nil, false) }

// CompleteExceptionally answers the request with an error: it is retried
// if the retry strategy says so, else the job fails.
func (f *Future[IN, OUT]) CompleteExceptionally(err error) {
	if err == nil {
		err = errors.New("completed exceptionally with a nil error")
	}
	f.post(nil, err, false)
}

// Fail answers the request with an error that is never retried (a panic
// in user code).
func (f *Future[IN, OUT]) Fail(err error) { f.post(nil, err, true) }

func (f *Future[IN, OUT]) post(results []OUT, err error, fatal bool) {
	if !f.once.CompareAndSwap(false, true) {
		return
	}
	f.op.mail.Post(func() error { return f.op.answer(f, results, err, fatal) })
}
