package weir_test

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/connector"
	"github.com/weirstream/weir/connector/file"
	"github.com/weirstream/weir/weirtest"
)

// service is a fake slow outside service: every request waits in reqs
// until the test answers it, from the test's goroutine. It counts the
// requests in flight (shared by every subtask's copy of the function).
type service struct {
	reqs     chan *request
	inFlight *atomic.Int64
	peak     *atomic.Int64
}

type request struct {
	in     int64
	ctx    context.Context
	result weir.ResultFuture[int64]
	svc    *service
}

func newService(buffer int) *service {
	return &service{reqs: make(chan *request, buffer), inFlight: new(atomic.Int64), peak: new(atomic.Int64)}
}

func (s *service) AsyncInvoke(ctx context.Context, in int64, result weir.ResultFuture[int64]) {
	n := s.inFlight.Add(1)
	for p := s.peak.Load(); n > p && !s.peak.CompareAndSwap(p, n); p = s.peak.Load() {
	}
	s.reqs <- &request{in: in, ctx: ctx, result: result, svc: s}
}

func (r *request) answer(results ...int64) {
	r.svc.inFlight.Add(-1)
	r.result.Complete(results)
}

// next returns the next request, or nil when ctx ends first.
func (s *service) next(ctx context.Context) *request {
	select {
	case r := <-s.reqs:
		return r
	case <-ctx.Done():
		return nil
	}
}

// results of the order test: in -> 0, 1 or 2 results.
func resultsOf(in int64) []int64 {
	switch in % 5 {
	case 0:
		return nil
	case 1:
		return []int64{in * 10, in*10 + 1}
	}
	return []int64{in * 10}
}

// everyTenth emits watermark ts at every record whose ts ends in 9.
type everyTenth struct{}

func (everyTenth) OnEvent(_ int64, ts int64, out weir.WatermarkOutput) {
	if ts%10 == 9 {
		out.EmitWatermark(ts)
	}
}
func (everyTenth) OnPeriodicEmit(weir.WatermarkOutput) {}

type seen struct {
	V, TS, WM int64
}

// TestAsyncWaitOrder runs 300 records with a watermark after every tenth
// through both modes while the service answers the requests it holds in
// reverse order: ordered output is the input order; unordered output has
// every record between the two watermarks it came between (the watermark
// a downstream operator sees with a record is the last one before it in
// the input), with its input's timestamp.
func TestAsyncWaitOrder(t *testing.T) {
	for _, ordered := range []bool{true, false} {
		t.Run(fmt.Sprintf("ordered=%v", ordered), func(t *testing.T) {
			const n = 300
			recs := make([]weir.Record[int64], n)
			for i := range recs {
				recs[i] = weir.Record[int64]{Value: int64(i), TS: int64(i)}
			}
			svc := newService(n)
			env := weir.NewEnvironment(weir.WithParallelism(1), weir.WithBufferSize(8))
			src := weir.FromRecords(env, recs, weir.ForGenerator(func() weir.WatermarkGenerator[int64] { return everyTenth{} }))
			var out weir.DataStream[int64]
			if ordered {
				out = weir.OrderedWait[int64, int64](src, svc, 0, 16)
			} else {
				out = weir.UnorderedWait[int64, int64](src, svc, 0, 16)
			}
			got := weir.Collect(weir.ProcessStreamFunc(out, func(v int64, ctx weir.Context, c weir.Collector[seen]) error {
				ts, _ := ctx.Timestamp()
				c.Collect(seen{v, ts, ctx.CurrentWatermark()})
				return nil
			}))
			ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
			defer cancel()
			go func() { // answer what has arrived, newest first
				for answered := 0; answered < n; {
					batch := []*request{svc.next(ctx)}
					if batch[0] == nil {
						return
					}
					for more := true; more; {
						select {
						case r := <-svc.reqs:
							batch = append(batch, r)
						default:
							more = false
						}
					}
					for i := len(batch) - 1; i >= 0; i-- {
						batch[i].answer(resultsOf(batch[i].in)...)
					}
					answered += len(batch)
				}
			}()
			if err := env.Execute(ctx, "async-order"); err != nil {
				t.Fatal(err)
			}
			var want []seen
			for i := range int64(n) {
				wm := int64(weir.MinWatermark)
				if i >= 10 {
					wm = i/10*10 - 1
				}
				for _, r := range resultsOf(i) {
					want = append(want, seen{r, i, wm})
				}
			}
			res := make([]seen, 0, len(want))
			for _, r := range got.Records() {
				res = append(res, r.Value)
			}
			if !ordered {
				key := func(a, b seen) int { return int(a.V - b.V) }
				overtaken := !slices.IsSortedFunc(res, key)
				slices.SortFunc(res, key)
				if !overtaken {
					t.Log("no record overtook another: the unordered path ran in order")
				}
			}
			if !slices.Equal(res, want) {
				for i := range min(len(res), len(want)) {
					if res[i] != want[i] {
						t.Fatalf("output %d: got %+v, want %+v (%d results, want %d)", i, res[i], want[i], len(res), len(want))
					}
				}
				t.Fatalf("%d results, want %d", len(res), len(want))
			}
		})
	}
}

// TestAsyncReaches100InFlight: with capacity 100 the service sees 100
// requests at once (it answers only when it holds 100, so a smaller limit
// would hang until the deadline), and never more.
func TestAsyncReaches100InFlight(t *testing.T) {
	const n, capacity = 1000, 100
	svc := newService(n)
	env := weir.NewEnvironment(weir.WithParallelism(1))
	src := weir.Generate(env, n, 0, func(i int64) int64 { return i }, weir.NoWatermarks[int64]())
	got := weir.Collect(weir.UnorderedWait[int64, int64](src, svc, 0, capacity))
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	go func() {
		for answered := 0; answered < n; answered += capacity {
			var held []*request
			for len(held) < capacity {
				r := svc.next(ctx)
				if r == nil {
					return
				}
				held = append(held, r)
			}
			for _, r := range held {
				r.answer(r.in)
			}
		}
	}()
	if err := env.Execute(ctx, "async-100"); err != nil {
		t.Fatalf("%v (at most %d requests were in flight)", err, svc.peak.Load())
	}
	if p := svc.peak.Load(); p != capacity {
		t.Fatalf("peak in flight %d, want %d", p, capacity)
	}
	if len(got.Records()) != n {
		t.Fatalf("%d results, want %d", len(got.Records()), n)
	}
}

// TestAsyncBackpressure: when the operator is full its task takes no more
// input. The map chained before the operator sees record j only when at
// least j-capacity+1 results have left through the map chained after it
// (both run on the task goroutine, one-record batches, no watermarks),
// while the service answers one request at a time.
func TestAsyncBackpressure(t *testing.T) {
	const n, capacity = 2000, 4
	svc := newService(n)
	env := weir.NewEnvironment(weir.WithParallelism(1), weir.WithBufferSize(1), weir.WithBufferCredits(1))
	src := weir.Generate(env, n, 0, func(i int64) int64 { return i }, weir.NoWatermarks[int64]())
	var in, out int64
	var violation atomic.Value
	before := weir.Map(weir.Rebalance(src), func(v int64) int64 {
		if in-capacity+1 > out && violation.Load() == nil {
			violation.Store(fmt.Sprintf("record %d taken with %d results out, capacity %d", in, out, capacity))
		}
		in++
		return v
	})
	after := weir.Map(weir.UnorderedWait[int64, int64](before, svc, 0, capacity), func(v int64) int64 { out++; return v })
	got := weir.Collect(after)
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	go func() {
		for range n {
			r := svc.next(ctx)
			if r == nil {
				return
			}
			r.answer(r.in)
		}
	}()
	if err := env.Execute(ctx, "async-backpressure"); err != nil {
		t.Fatal(err)
	}
	if v := violation.Load(); v != nil {
		t.Fatal(v)
	}
	if len(got.Records()) != n || svc.peak.Load() > capacity {
		t.Fatalf("%d results, peak in flight %d", len(got.Records()), svc.peak.Load())
	}
}

// withTimeout answers timed-out requests with the negated input.
type withTimeout struct{ *service }

func (w withTimeout) Timeout(in int64, result weir.ResultFuture[int64]) {
	w.inFlight.Add(-1)
	result.Complete([]int64{-in})
}

// TestAsyncTimeout drives time with a manual clock: without a handler a
// request that outlives its timeout fails the job with ErrAsyncTimeout
// naming the record; with one, the handler answers, also while the
// operator is full (its timers run while the input is held back).
func TestAsyncTimeout(t *testing.T) {
	t.Run("fails", func(t *testing.T) {
		clk := weirtest.NewManualClock(1_000)
		svc := newService(4)
		env := weir.NewEnvironment(weir.WithParallelism(1), weir.WithClock(clk))
		src := weir.FromRecords(env, []weir.Record[int64]{{Value: 7, TS: 70}}, weir.NoWatermarks[int64]())
		weir.Discard(weir.OrderedWait[int64, int64](src, svc, 100*time.Millisecond, 2))
		h, err := env.ExecuteAsync(t.Context(), "async-timeout")
		if err != nil {
			t.Fatal(err)
		}
		<-svc.reqs // the timeout is set before the request starts
		clk.Advance(99)
		clk.Advance(1)
		err = h.Wait()
		if !errors.Is(err, weir.ErrAsyncTimeout) || !strings.Contains(err.Error(), "record 7 (timestamp 70)") ||
			!strings.Contains(err.Error(), `"AsyncWait"`) {
			t.Fatalf("got %v, want a timeout of record 7 in AsyncWait", err)
		}
	})
	t.Run("handler", func(t *testing.T) {
		const n, capacity = 9, 2
		clk := weirtest.NewManualClock(1_000)
		svc := newService(n)
		env := weir.NewEnvironment(weir.WithParallelism(1), weir.WithClock(clk))
		src := weir.FromSlice(env, []int64{0, 1, 2, 3, 4, 5, 6, 7, 8})
		got := weir.Collect(weir.OrderedWait[int64, int64](src, withTimeout{svc}, 50*time.Millisecond, capacity))
		h, err := env.ExecuteAsync(t.Context(), "async-timeout-handler")
		if err != nil {
			t.Fatal(err)
		}
		// No request is answered: with two in the queue the task holds its
		// input back, and only the timers (the clock moves once both are
		// in) let the next two in.
		var held []*request
		for i := range n {
			held = append(held, svc.next(t.Context()))
			if len(held)%capacity == 0 || i == n-1 {
				clk.Advance(50)
			}
		}
		if err := h.Wait(); err != nil {
			t.Fatal(err)
		}
		var vals []int64
		for _, r := range got.Records() {
			vals = append(vals, r.Value)
		}
		if want := []int64{0, -1, -2, -3, -4, -5, -6, -7, -8}; !slices.Equal(vals, want) {
			t.Fatalf("got %v, want %v", vals, want)
		}
		for _, r := range held {
			if r.ctx.Err() == nil {
				t.Fatal("a timed-out request's context is still live")
			}
		}
	})
}

// flaky answers synchronously, on the task goroutine: attempts of input v
// before failures[v] fail with errBusy, then it answers [v]. It records
// the processing time of every attempt.
type flaky struct {
	failures map[int64]int
	attempts map[int64][]int64
	now      func() int64
	empty    bool // answer a failure with no results instead of errBusy
}

var errBusy = errors.New("busy")

func (f *flaky) AsyncInvoke(_ context.Context, in int64, result weir.ResultFuture[int64]) {
	f.attempts[in] = append(f.attempts[in], f.now())
	if len(f.attempts[in]) <= f.failures[in] {
		if f.empty {
			result.Complete(nil)
		} else {
			result.CompleteExceptionally(fmt.Errorf("attempt %d: %w", len(f.attempts[in]), errBusy))
		}
		return
	}
	result.Complete([]int64{in})
}

// TestAsyncRetry runs retries in the test harness, on its manual clock:
// attempts start exactly one backoff after the previous answer, fixed or
// exponential; an exhausted strategy fails the job with the last error;
// the result predicate retries too; the end of the input starts waiting
// retries at once and takes their answers as they are.
func TestAsyncRetry(t *testing.T) {
	build := func(f *flaky, s weir.AsyncRetryStrategy[int64]) *weirtest.OneInput[int64, int64] {
		var h *weirtest.OneInput[int64, int64]
		f.now = func() int64 { return h.ProcessingTime() }
		h, err := weirtest.NewOneInput(func(in weir.DataStream[int64]) weir.DataStream[int64] {
			return weir.OrderedWaitWithRetry[int64, int64](in, f, time.Hour, 10, s)
		})
		if err != nil {
			t.Fatal(err)
		}
		return h
	}
	busy := func(err error) bool { return errors.Is(err, errBusy) }
	t.Run("fixed", func(t *testing.T) {
		f := &flaky{failures: map[int64]int{1: 2}, attempts: map[int64][]int64{}}
		h := build(f, weir.FixedDelayRetry[int64](3, 100*time.Millisecond).IfError(busy))
		defer h.Close()
		noErr(t, h.ProcessElement(1, 5))
		for _, now := range []int64{99, 100, 199, 200} {
			noErr(t, h.SetProcessingTime(now))
		}
		if got := f.attempts[1]; !slices.Equal(got, []int64{0, 100, 200}) {
			t.Fatalf("attempts at %v", got)
		}
		if out := h.Output(); len(out) != 1 || out[0] != (weir.Record[int64]{Value: 1, TS: 5}) {
			t.Fatalf("output %v", out)
		}
	})
	t.Run("exponential", func(t *testing.T) {
		f := &flaky{failures: map[int64]int{1: 5}, attempts: map[int64][]int64{}}
		h := build(f, weir.ExponentialBackoffRetry[int64](5, 10*time.Millisecond, 50*time.Millisecond, 2).IfError(busy))
		defer h.Close()
		noErr(t, h.ProcessElement(1, 0))
		for now := int64(1); now <= 200; now++ {
			noErr(t, h.SetProcessingTime(now))
		}
		if got, want := f.attempts[1], []int64{0, 10, 30, 70, 120, 170}; !slices.Equal(got, want) {
			t.Fatalf("attempts at %v, want %v", got, want)
		}
	})
	t.Run("exhausted", func(t *testing.T) {
		f := &flaky{failures: map[int64]int{1: 9}, attempts: map[int64][]int64{}}
		h := build(f, weir.FixedDelayRetry[int64](2, time.Millisecond).IfError(busy))
		defer h.Close()
		noErr(t, h.ProcessElement(1, 0))
		noErr(t, h.SetProcessingTime(1))
		err := h.SetProcessingTime(2)
		if !errors.Is(err, errBusy) || !strings.Contains(err.Error(), "attempt 3") || len(f.attempts[1]) != 3 {
			t.Fatalf("got %v after %d attempts, want the third attempt's error", err, len(f.attempts[1]))
		}
	})
	t.Run("result predicate and end of input", func(t *testing.T) {
		f := &flaky{failures: map[int64]int{1: 1, 2: 5}, attempts: map[int64][]int64{}, empty: true}
		h := build(f, weir.FixedDelayRetry[int64](9, time.Second).IfResult(func(r []int64) bool { return len(r) == 0 }))
		defer h.Close()
		noErr(t, h.ProcessElement(1, 0))
		noErr(t, h.ProcessElement(2, 0))
		noErr(t, h.SetProcessingTime(1000))
		noErr(t, h.EndInput()) // 2 waits for its third attempt: it starts now, and is final
		if got := [][]int64{f.attempts[1], f.attempts[2]}; !slices.Equal(got[0], []int64{0, 1000}) || !slices.Equal(got[1], []int64{0, 1000, 1000}) {
			t.Fatalf("attempts %v", got)
		}
		if out := h.Output(); len(out) != 1 || out[0].Value != 1 {
			t.Fatalf("output %v: input 2's empty answer after the end is final", out)
		}
	})
}

func TestAsyncBackoffTimes(t *testing.T) {
	s := weir.ExponentialBackoffRetry[int](9, 3*time.Millisecond, 100*time.Millisecond, 1.5)
	var got []int64
	for n := 1; n <= 12; n++ {
		got = append(got, s.BackoffTime(n).Milliseconds())
	}
	// Flink's sequence for one request: each step truncated, capped.
	if want := []int64{3, 4, 6, 9, 13, 19, 28, 42, 63, 94, 100, 100}; !slices.Equal(got, want) {
		t.Fatalf("backoff %v, want %v", got, want)
	}
	if !s.CanRetry(9) || s.CanRetry(10) {
		t.Fatal("CanRetry(n) must be n <= max attempts")
	}
}

// TestAsyncFunc runs blocking calls on goroutines: results, ctx, errors
// and a panic, which fails the job with its stack.
func TestAsyncFunc(t *testing.T) {
	env := weir.NewEnvironment(weir.WithParallelism(2))
	src := weir.Generate(env, 500, 0, func(i int64) int64 { return i }, weir.NoWatermarks[int64]())
	call := weir.AsyncFunc(func(ctx context.Context, in int64) ([]string, error) {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return []string{strconv.FormatInt(in, 10)}, nil
	})
	got := weir.Collect(weir.UnorderedWait(src, call, time.Minute, 20))
	if err := env.Execute(t.Context(), "async-func"); err != nil {
		t.Fatal(err)
	}
	if len(got.Records()) != 500 {
		t.Fatalf("%d results", len(got.Records()))
	}

	for _, c := range []struct {
		name string
		fn   weir.AsyncFunction[int64, int64]
		want string
	}{
		{"call", weir.AsyncFunc(func(ctx context.Context, in int64) ([]int64, error) {
			if in == 3 {
				panic("lookup exploded")
			}
			return []int64{in}, nil
		}), "lookup exploded"},
		{"invoke", weir.AsyncFunction[int64, int64](invokePanics{}), "invoke exploded"},
		{"error", weir.AsyncFunc(func(ctx context.Context, in int64) ([]int64, error) {
			return nil, errors.New("no such customer")
		}), "no such customer"},
	} {
		t.Run(c.name, func(t *testing.T) {
			env := weir.NewEnvironment(weir.WithParallelism(1))
			src := weir.FromSlice(env, []int64{1, 2, 3, 4})
			weir.Discard(weir.OrderedWait(src, c.fn, 0, 4))
			err := env.Execute(t.Context(), "async-fails")
			if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), `"AsyncWait"`) {
				t.Fatalf("got %v, want an error of AsyncWait with %q", err, c.want)
			}
			if c.name != "error" && !strings.Contains(err.Error(), "goroutine") {
				t.Fatalf("no stack in %v", err)
			}
		})
	}
}

type invokePanics struct{}

func (invokePanics) AsyncInvoke(context.Context, int64, weir.ResultFuture[int64]) {
	panic("invoke exploded")
}

func TestAsyncBuildErrors(t *testing.T) {
	fn := weir.AsyncFunc(func(context.Context, int64) ([]int64, error) { return nil, nil })
	for _, c := range []struct {
		build func(weir.DataStream[int64])
		want  string
	}{
		{func(ds weir.DataStream[int64]) { weir.OrderedWait(ds, fn, 0, 0) }, "capacity"},
		{func(ds weir.DataStream[int64]) { weir.UnorderedWait(ds, fn, -time.Second, 1) }, "timeout"},
		{func(ds weir.DataStream[int64]) { weir.UnorderedWait[int64, int64](ds, nil, 0, 1) }, "nil"},
		{func(ds weir.DataStream[int64]) {
			weir.OrderedWaitWithRetry(ds, fn, 0, 1, weir.FixedDelayRetry[int64](1, time.Millisecond))
		}, "timeout must be set"},
		{func(ds weir.DataStream[int64]) {
			weir.OrderedWaitWithRetry(ds, fn, time.Second, 1, weir.FixedDelayRetry[int64](0, time.Millisecond))
		}, "max attempts"},
		{func(ds weir.DataStream[int64]) {
			weir.UnorderedWaitWithRetry(ds, fn, time.Second, 1, weir.ExponentialBackoffRetry[int64](3, time.Second, time.Millisecond, 2))
		}, "max delay"},
	} {
		env := weir.NewEnvironment(weir.WithParallelism(1))
		c.build(weir.FromSlice(env, []int64{1}))
		if err := env.Execute(t.Context(), "bad"); err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "AsyncWait") {
			t.Errorf("got %v, want an AsyncWait error about %q", err, c.want)
		}
	}
}

// heldSource emits 0..n-1 as one split; while hold is set it stops after
// limit records until the job stops.
type heldSource struct {
	n, limit int64
	hold     *atomic.Bool
}

type heldSplit struct{}

func (heldSplit) SplitID() string { return "held" }

func (s heldSource) Splits(int) ([]connector.Split, error) {
	return []connector.Split{heldSplit{}}, nil
}
func (s heldSource) Reader(connector.Split) (connector.SplitReader[int64], error) {
	return &heldReader{s: s}, nil
}
func (s heldSource) ReaderAt(_ connector.Split, pos []byte) (connector.SplitReader[int64], error) {
	next, n := binary.Varint(pos)
	if n <= 0 {
		return nil, fmt.Errorf("bad position %x", pos)
	}
	return &heldReader{s: s, next: next}, nil
}

type heldReader struct {
	s    heldSource
	next int64
}

func (r *heldReader) Read(ctx context.Context, buf []weir.Record[int64]) ([]weir.Record[int64], error) {
	if r.next >= r.s.n {
		return buf, io.EOF
	}
	if r.s.hold.Load() && r.next >= r.s.limit {
		<-ctx.Done()
		return buf, ctx.Err()
	}
	end := min(r.next+25, r.s.n)
	if r.s.hold.Load() {
		end = min(end, r.s.limit)
	}
	for ; r.next < end; r.next++ {
		buf = append(buf, weir.Record[int64]{Value: r.next, TS: weir.NoTimestamp})
	}
	return buf, nil
}
func (r *heldReader) Position() ([]byte, error) { return binary.AppendVarint(nil, r.next), nil }
func (r *heldReader) Close() error              { return nil }

// TestAsyncRestoreInFlight fails a job after a checkpoint taken while
// requests were in flight (the service holds some until then, so in
// ordered mode the answered ones behind them wait in the queue too) and
// the source had stopped at record 200; the job then resumes from that
// checkpoint: by a restart, or in a new environment at another
// parallelism. The held requests must be issued again from the operator's
// state (the source does not read them again) and every result must be
// committed exactly once by the file sink.
func TestAsyncRestoreInFlight(t *testing.T) {
	for _, c := range []struct {
		name    string
		ordered bool
		p1, p2  int // 0: restart within the job
	}{
		{"restart", true, 2, 0},
		{"rescale 2 to 3", false, 2, 3},
		{"rescale 2 to 1", true, 2, 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			const n, limit = 300, 200
			held := map[int64]bool{20: true, 21: true, 150: true, 151: true}
			out, cps := t.TempDir(), t.TempDir()
			hold := new(atomic.Bool)
			hold.Store(true)
			var issued, reissued atomic.Int64
			inject := make(chan struct{})
			call := weir.AsyncFunc(func(ctx context.Context, in int64) ([]int64, error) {
				if !hold.Load() {
					if held[in] {
						reissued.Add(1)
					}
					return []int64{in * 10}, nil
				}
				issued.Add(1)
				if !held[in] {
					return []int64{in * 10}, nil
				}
				select {
				case <-inject: // the injected failure
					if in == 20 {
						return nil, errors.New("injected failure")
					}
					<-ctx.Done()
				case <-ctx.Done():
				}
				return nil, ctx.Err()
			})
			job := func(p int, restart bool) (*weir.Environment, weir.CheckpointStore) {
				st, err := weir.NewDirCheckpointStore(cps)
				if err != nil {
					t.Fatal(err)
				}
				opts := []weir.Option{weir.WithParallelism(p)}
				if restart {
					opts = append(opts, weir.WithRestartStrategy(weir.FixedDelayRestart(1, 0)))
				}
				env := weir.NewEnvironment(opts...)
				env.EnableCheckpointing(5*time.Millisecond, weir.CheckpointStoreIn(st), weir.RestoreFromLatest())
				src := weir.FromSource(env, heldSource{n: n, limit: limit, hold: hold}, weir.NoWatermarks[int64](), "held").SetParallelism(1).UID("src")
				var res weir.DataStream[int64]
				if c.ordered {
					res = weir.OrderedWait(weir.Rebalance(src), call, 0, 256)
				} else {
					res = weir.UnorderedWait(weir.Rebalance(src), call, 0, 256)
				}
				file.Sink(res.UID("async"), out, func(v int64) []byte { return strconv.AppendInt(nil, v, 10) })
				return env, st
			}
			env, st := job(c.p1, c.p2 == 0)
			h, err := env.ExecuteAsync(t.Context(), "async-restore")
			if err != nil {
				t.Fatal(err)
			}
			// Once every record up to the limit has reached the service, wait
			// for a checkpoint triggered after that (two later than the
			// latest then: one at a time), then fail.
			waitFor(t, h, func() bool { return issued.Load() >= limit })
			first := latestID(t, st)
			waitFor(t, h, func() bool { return latestID(t, st) >= first+2 })
			hold.Store(false)
			close(inject)
			err = h.Wait()
			if c.p2 != 0 {
				if err == nil || !strings.Contains(err.Error(), "injected failure") {
					t.Fatalf("first run: %v, want the injected failure", err)
				}
				env, _ = job(c.p2, false)
				err = env.Execute(t.Context(), "async-restore")
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := reissued.Load(); got < int64(len(held)) {
				t.Fatalf("%d of the %d held requests were issued again after the restore", got, len(held))
			}
			lines := committedSorted(t, out)
			var want []string
			for i := range int64(n) {
				want = append(want, strconv.FormatInt(i*10, 10))
			}
			slices.Sort(want)
			if !slices.Equal(lines, want) {
				t.Fatalf("%d lines committed, want %d exactly once", len(lines), len(want))
			}
		})
	}
}

func noErr(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// waitFor polls cond until it holds; it fails if the job ends first.
func waitFor(t *testing.T, h *weir.JobHandle, cond func() bool) {
	t.Helper()
	tick := time.NewTicker(time.Millisecond)
	defer tick.Stop()
	for !cond() {
		select {
		case <-h.Done():
			t.Fatalf("the job ended before the condition held: %v", h.Wait())
		case <-tick.C:
		}
	}
}

func latestID(t *testing.T, st weir.CheckpointStore) int64 {
	t.Helper()
	cp, err := st.Latest(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if cp == nil {
		return 0
	}
	return cp.ID
}

// BenchmarkAsyncThroughput: a service answering after 1 ms on a timer,
// with 1 and 100 requests in flight; records/s per case.
func BenchmarkAsyncThroughput(b *testing.B) {
	for _, capacity := range []int{1, 100} {
		b.Run(fmt.Sprintf("inflight=%d", capacity), func(b *testing.B) {
			env := weir.NewEnvironment(weir.WithParallelism(1))
			src := weir.Generate(env, int64(b.N), 0, func(i int64) int64 { return i }, weir.NoWatermarks[int64]())
			var wg sync.WaitGroup
			weir.Discard(weir.UnorderedWait[int64, int64](src, latency{time.Millisecond, &wg}, 0, capacity))
			b.ResetTimer()
			start := time.Now()
			if err := env.Execute(context.Background(), "async-bench"); err != nil {
				b.Fatal(err)
			}
			b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "records/s")
			wg.Wait()
		})
	}
}

type latency struct {
	d  time.Duration
	wg *sync.WaitGroup
}

func (l latency) AsyncInvoke(_ context.Context, in int64, result weir.ResultFuture[int64]) {
	l.wg.Add(1)
	time.AfterFunc(l.d, func() { result.Complete([]int64{in}); l.wg.Done() })
}

// BenchmarkAsyncOverhead: the engine's own cost per record, with answers
// given at once inside AsyncInvoke (each still goes through the mailbox).
func BenchmarkAsyncOverhead(b *testing.B) {
	env := weir.NewEnvironment(weir.WithParallelism(1))
	src := weir.Generate(env, int64(b.N), 0, func(i int64) int64 { return i }, weir.NoWatermarks[int64]())
	weir.Discard(weir.UnorderedWait[int64, int64](src, immediate{}, time.Minute, 100))
	b.ReportAllocs()
	b.ResetTimer()
	if err := env.Execute(context.Background(), "async-overhead"); err != nil {
		b.Fatal(err)
	}
}

type immediate struct{}

func (immediate) AsyncInvoke(_ context.Context, in int64, result weir.ResultFuture[int64]) {
	result.Complete([]int64{in})
}

// parked keeps the futures it is given, for the test to answer.
type parked struct{ futures *[]weir.ResultFuture[string] }

func (p parked) AsyncInvoke(_ context.Context, in string, result weir.ResultFuture[string]) {
	*p.futures = append(*p.futures, result)
}

// TestAsyncInHarness answers from another goroutine; ProcessMail delivers
// the answers, and unordered output lets the second record overtake the
// first but not the watermark between them and the third.
func TestAsyncInHarness(t *testing.T) {
	var futures []weir.ResultFuture[string]
	h, err := weirtest.NewOneInput(func(in weir.DataStream[string]) weir.DataStream[string] {
		return weir.UnorderedWait[string, string](in, parked{&futures}, 0, 10)
	})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	noErr(t, h.ProcessElement("a", 1))
	noErr(t, h.ProcessElement("b", 2))
	noErr(t, h.ProcessWatermark(5))
	noErr(t, h.ProcessElement("c", 6))
	done := make(chan struct{})
	go func() {
		defer close(done)
		futures[2].Complete([]string{"C"})
		futures[1].Complete([]string{"B"})
	}()
	<-done
	noErr(t, h.ProcessMail())
	if got := fmt.Sprint(h.Events()); got != "[B@2]" {
		t.Fatalf("events %s", got)
	}
	futures[0].Complete([]string{"A"})
	futures[0].Complete([]string{"again"}) // ignored
	noErr(t, h.ProcessMail())
	if got := fmt.Sprint(h.Events()); got != "[B@2 A@1 wm 5 C@6]" {
		t.Fatalf("events %s", got)
	}
}
