package weir

import (
	"context"
	"fmt"
	"time"

	"github.com/weirstream/weir/internal/asyncio"
	"github.com/weirstream/weir/internal/engine"
	istate "github.com/weirstream/weir/internal/state"
)

// ResultFuture takes the answer to one asynchronous request (Flink's
// ResultFuture). Call Complete or CompleteExceptionally once, from any
// goroutine; later calls are ignored (a timeout handler and a late
// answer may race: the first one counts).
type ResultFuture[OUT any] interface {
	// Complete answers with zero or more results, emitted with the input
	// record's timestamp. The slice belongs to Weir afterwards.
	Complete(results []OUT)
	// CompleteExceptionally answers with an error: the request is retried
	// if its retry strategy says so, else the job fails with err.
	CompleteExceptionally(err error)
}

// AsyncFunction starts an asynchronous request for each record (Flink's
// AsyncFunction): AsyncInvoke runs on the task goroutine, must not block,
// and answers through result later, typically from a goroutine of a
// client library. ctx ends when the answer is no longer wanted (the
// request was answered, timed out and was answered by the timeout handler,
// or the job stops). A function that also implements Opener and Closer is
// opened before the first request and closed after the last.
type AsyncFunction[IN, OUT any] interface {
	AsyncInvoke(ctx context.Context, in IN, result ResultFuture[OUT])
}

// AsyncTimeoutHandler is implemented by an AsyncFunction that answers
// requests whose time is up (Flink's AsyncFunction.timeout). It runs on
// the task goroutine and should answer result; without it a timeout fails
// the job with an error wrapping ErrAsyncTimeout.
type AsyncTimeoutHandler[IN, OUT any] interface {
	Timeout(in IN, result ResultFuture[OUT])
}

// ErrAsyncTimeout is wrapped by the error of a job whose async request timed
// out without a timeout handler (Flink's TimeoutException "Async function
// call has timed out.").
var ErrAsyncTimeout = asyncio.ErrTimeout

// AsyncCall is an AsyncFunction made of a blocking call (AsyncFunc).
type AsyncCall[IN, OUT any] struct {
	call      func(ctx context.Context, in IN) ([]OUT, error)
	onTimeout func(in IN, result ResultFuture[OUT])
	calls     asyncio.Calls
}

// AsyncFunc makes an AsyncFunction of a blocking call: every attempt runs
// call on a goroutine of its own, and what it returns answers the request
// (an error is retried if the retry strategy says so, else fails the job).
// call must return soon after ctx ends; the operator waits for the running
// calls when it closes. A panic in call fails the job with its stack.
func AsyncFunc[IN, OUT any](call func(ctx context.Context, in IN) ([]OUT, error)) *AsyncCall[IN, OUT] {
	return &AsyncCall[IN, OUT]{call: call}
}

// OnTimeout returns a copy of the function that answers timed-out
// requests with h (see AsyncTimeoutHandler).
func (a *AsyncCall[IN, OUT]) OnTimeout(h func(in IN, result ResultFuture[OUT])) *AsyncCall[IN, OUT] {
	c := *a
	c.onTimeout = h
	return &c
}

// Open implements Opener.
func (a *AsyncCall[IN, OUT]) Open(ctx RuntimeContext) error {
	a.calls = asyncio.NewCalls(ctx.OperatorName(), ctx.Subtask())
	return nil
}

// Close implements Closer: it waits for the calls still running.
func (a *AsyncCall[IN, OUT]) Close() error {
	a.calls.Wait()
	return nil
}

// AsyncInvoke implements AsyncFunction.
func (a *AsyncCall[IN, OUT]) AsyncInvoke(ctx context.Context, in IN, result ResultFuture[OUT]) {
	asyncio.Start(&a.calls, a.call, ctx, in, result)
}

// Timeout implements AsyncTimeoutHandler with the handler set by OnTimeout.
func (a *AsyncCall[IN, OUT]) Timeout(in IN, result ResultFuture[OUT]) {
	if a.onTimeout != nil {
		a.onTimeout(in, result)
		return
	}
	result.CompleteExceptionally(ErrAsyncTimeout)
}

// AsyncRetryStrategy decides whether and when an attempt's answer is
// retried (Flink's AsyncRetryStrategy). Attempts count from 1; a retry
// starts BackoffTime(n) after attempt n answered, on the processing-time
// clock, when the answer matches the predicate and CanRetry(n) holds.
type AsyncRetryStrategy[OUT any] interface {
	// CanRetry reports whether another attempt may follow attempt n.
	CanRetry(n int) bool
	// BackoffTime returns the delay before the attempt after attempt n
	// (milliseconds count).
	BackoffTime(n int) time.Duration
	// RetryPredicate tells which answers are retried.
	RetryPredicate() AsyncRetryPredicate[OUT]
}

// AsyncRetryPredicate tells which answers ask for a retry (Flink's
// AsyncRetryPredicate); a nil predicate retries none. With neither set,
// nothing is retried.
type AsyncRetryPredicate[OUT any] struct {
	Result func(results []OUT) bool
	Error  func(err error) bool
}

// AsyncRetry is a built-in AsyncRetryStrategy: FixedDelayRetry or
// ExponentialBackoffRetry, with IfResult and IfError for its predicate.
type AsyncRetry[OUT any] struct {
	r    asyncio.RetrySettings
	pred AsyncRetryPredicate[OUT]
}

// FixedDelayRetry retries up to maxAttempts times after the first attempt,
// waiting delay before each retry (Flink's FixedDelayRetryStrategy: its
// canRetry(n) is n <= maxAttempts). maxAttempts and delay must be
// positive; delay counts in whole milliseconds.
func FixedDelayRetry[OUT any](maxAttempts int, delay time.Duration) AsyncRetry[OUT] {
	return AsyncRetry[OUT]{r: asyncio.FixedRetry(maxAttempts, delay)}
}

// ExponentialBackoffRetry retries up to maxAttempts times after the first
// attempt, waiting initialDelay before the first retry and multiplier
// times longer before each next one, at most maxDelay (Flink's
// ExponentialBackoffDelayRetryStrategy; each product is truncated to whole
// milliseconds). Unlike Flink, whose strategy instance keeps the last delay
// for all requests of a subtask, every request starts again from
// initialDelay.
func ExponentialBackoffRetry[OUT any](maxAttempts int, initialDelay, maxDelay time.Duration, multiplier float64) AsyncRetry[OUT] {
	return AsyncRetry[OUT]{r: asyncio.ExponentialRetry(maxAttempts, initialDelay, maxDelay, multiplier)}
}

// IfResult retries an attempt whose results satisfy p.
func (s AsyncRetry[OUT]) IfResult(p func(results []OUT) bool) AsyncRetry[OUT] {
	s.pred.Result = p
	return s
}

// IfError retries an attempt whose error satisfies p.
func (s AsyncRetry[OUT]) IfError(p func(err error) bool) AsyncRetry[OUT] {
	s.pred.Error = p
	return s
}

// CanRetry implements AsyncRetryStrategy.
func (s AsyncRetry[OUT]) CanRetry(n int) bool { return n <= s.r.MaxAttempts }

// BackoffTime implements AsyncRetryStrategy.
func (s AsyncRetry[OUT]) BackoffTime(n int) time.Duration { return s.r.BackoffTime(n) }

// RetryPredicate implements AsyncRetryStrategy.
func (s AsyncRetry[OUT]) RetryPredicate() AsyncRetryPredicate[OUT] { return s.pred }

func (s AsyncRetry[OUT]) settings() asyncio.RetrySettings { return s.r }

// OrderedWait adds an async I/O operator (Flink's AsyncDataStream.orderedWait):
// fn starts a request per record, at most capacity are in the operator at a
// time (records, and the watermarks between them), and the results leave
// in input order, with their input's timestamp; watermarks keep their
// place. When the operator is full the task takes no more input until an
// answer frees room (backpressure), while it still handles answers, timers
// and checkpoints. A request may take timeout (0: no limit) before fn's
// Timeout answers it or, without one, the job fails (ErrAsyncTimeout).
// Requests in flight are part of checkpoints and are issued again after a
// restore. The end of the input waits for every answer.
func OrderedWait[IN, OUT any](ds DataStream[IN], fn AsyncFunction[IN, OUT], timeout time.Duration, capacity int) DataStream[OUT] {
	return asyncWait(ds, fn, timeout, capacity, true, nil, false)
}

// UnorderedWait is OrderedWait with results leaving as soon as they are
// answered (Flink's AsyncDataStream.unorderedWait), though never across a
// watermark: the records between two watermarks leave in answer order, all
// of them before the later watermark.
func UnorderedWait[IN, OUT any](ds DataStream[IN], fn AsyncFunction[IN, OUT], timeout time.Duration, capacity int) DataStream[OUT] {
	return asyncWait(ds, fn, timeout, capacity, false, nil, false)
}

// OrderedWaitWithRetry is OrderedWait with retries (Flink's
// orderedWaitWithRetry). The timeout, which must be positive, covers all
// attempts of a request; an answer of the timeout handler is final. When
// the input ends, requests waiting for a retry start it at once and their
// answers are final, as in Flink.
func OrderedWaitWithRetry[IN, OUT any](ds DataStream[IN], fn AsyncFunction[IN, OUT], timeout time.Duration, capacity int, retry AsyncRetryStrategy[OUT]) DataStream[OUT] {
	return asyncWait(ds, fn, timeout, capacity, true, retry, true)
}

// UnorderedWaitWithRetry is UnorderedWait with retries (see
// OrderedWaitWithRetry).
func UnorderedWaitWithRetry[IN, OUT any](ds DataStream[IN], fn AsyncFunction[IN, OUT], timeout time.Duration, capacity int, retry AsyncRetryStrategy[OUT]) DataStream[OUT] {
	return asyncWait(ds, fn, timeout, capacity, false, retry, true)
}

func asyncWait[IN, OUT any](ds DataStream[IN], fn AsyncFunction[IN, OUT], timeout time.Duration, capacity int,
	ordered bool, retry AsyncRetryStrategy[OUT], withRetry bool) DataStream[OUT] {
	const name = "AsyncWait"
	fail := func(err error) { ds.env.fail(fmt.Errorf("operator %q: %w", name, err)) }
	if isNil(fn) {
		fail(nilFnError("async function"))
	} else if err := asyncio.Check(capacity, timeout, withRetry, isNil(retry)); err != nil {
		fail(err)
	}
	if timeout >= time.Millisecond {
		ds.env.millis(fmt.Sprintf("operator %q: timeout", name), timeout)
	}
	if v, ok := retry.(interface{ settings() asyncio.RetrySettings }); ok {
		if r := v.settings(); r.Err != nil {
			fail(r.Err)
		} else {
			for _, d := range r.Durations() { // checked as every duration setting is (Environment.millis)
				ds.env.millis(fmt.Sprintf("operator %q: %s", name, d.What), d.D)
			}
		}
	}
	var rs *asyncio.Retry[OUT]
	if withRetry && !isNil(retry) {
		p := retry.RetryPredicate()
		rs = asyncio.NewRetry(retry.CanRetry, retry.BackoffTime, p.Result, p.Error)
	}
	return oneInput(ds, name, func(bc *engine.BuildContext, out *engine.Output[OUT]) (engine.Input[IN], engine.Lifecycle, error) {
		b, f, rc := base(bc), cloneFunction(fn), newRuntimeCtx(bc)
		cfg := asyncio.Config[IN, OUT]{
			Ordered: ordered, Capacity: capacity, Timeout: timeout.Milliseconds(), Retry: rs,
			Invoke: func(ctx context.Context, in IN, fu *asyncio.Future[IN, OUT]) { f.AsyncInvoke(ctx, in, fu) },
			Catch:  b.catch,
		}
		if th, ok := f.(AsyncTimeoutHandler[IN, OUT]); ok {
			if c, isCall := f.(*AsyncCall[IN, OUT]); !isCall || c.onTimeout != nil {
				cfg.OnTimeout = func(in IN, fu *asyncio.Future[IN, OUT]) { th.Timeout(in, fu) }
			}
		}
		open := func() error { return openFn(f, &b, rc) }
		t, err := asyncio.NewTask(cfg, bc, out, istate.DefaultCodec[IN](), open, func() error { return closeFn(f, &b) })
		return t, t, err // oneInput reads t only without err
	})
}
