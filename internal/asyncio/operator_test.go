package asyncio

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"testing"

	"pgregory.net/rapid"

	istate "github.com/weirstream/weir/internal/state"
)

// env is a deterministic task for one operator: a manual clock with
// scheduled callbacks, a mailbox run on demand, and an output that records
// what it gets.
type env struct {
	now    int64
	cbs    []sched
	mails  []func() error
	events []string
	ended  bool
	calls  []*call // every attempt started, in order
	seq    int
}

type sched struct {
	at, seq int64
	f       func(int64) error
}

type call struct {
	in      int
	ctx     context.Context
	f       *Future[int, int]
	attempt int
}

func (e *env) Now() int64 { return e.now }
func (e *env) Schedule(at int64, f func(int64) error) {
	e.seq++
	e.cbs = append(e.cbs, sched{at, int64(e.seq), f})
}
func (e *env) Post(f func() error) bool { e.mails = append(e.mails, f); return true }

func (e *env) Collect(v int, ts int64) { e.events = append(e.events, fmt.Sprintf("%d@%d", v, ts)) }
func (e *env) EmitWatermark(wm int64) error {
	e.events = append(e.events, fmt.Sprintf("wm%d", wm))
	return nil
}
func (e *env) EmitStatus(idle bool) error {
	e.events = append(e.events, map[bool]string{true: "idle", false: "active"}[idle])
	return nil
}
func (e *env) End() error { e.ended = true; return nil }
func (e *env) Err() error { return nil }

// runMail runs the posted mails in order, those they post too.
func (e *env) runMail() error {
	for len(e.mails) > 0 {
		m := e.mails[0]
		e.mails = e.mails[1:]
		if err := m(); err != nil {
			return err
		}
	}
	return nil
}

// advance moves the clock to t and runs the callbacks due, in time order.
func (e *env) advance(t int64) error {
	e.now = t
	for {
		sort.Slice(e.cbs, func(i, j int) bool {
			if e.cbs[i].at != e.cbs[j].at {
				return e.cbs[i].at < e.cbs[j].at
			}
			return e.cbs[i].seq < e.cbs[j].seq
		})
		if len(e.cbs) == 0 || e.cbs[0].at > t {
			return nil
		}
		cb := e.cbs[0]
		e.cbs = e.cbs[1:]
		if err := cb.f(cb.at); err != nil {
			return err
		}
	}
}

func newOp(t testing.TB, e *env, cfg Config[int, int]) *Operator[int, int] {
	t.Helper()
	if cfg.Invoke == nil {
		cfg.Invoke = func(ctx context.Context, in int, f *Future[int, int]) {
			e.calls = append(e.calls, &call{in: in, ctx: ctx, f: f, attempt: f.attempt})
		}
	}
	o, err := New(cfg, Output[int](e), Clock(e), Mailbox(e))
	if err != nil {
		t.Fatal(err)
	}
	if err := o.Open(nil); err != nil {
		t.Fatal(err)
	}
	return o
}

// expect runs the posted mails and checks everything emitted so far.
func (e *env) expect(t *testing.T, want string) {
	t.Helper()
	must(t, e.runMail())
	if got := strings.Join(e.events, " "); got != want {
		t.Fatalf("emitted %q, want %q", got, want)
	}
}

func rec(v int, ts int64) Element[int] { return Element[int]{Kind: KindRecord, Value: v, TS: ts} }
func wm(w int64) Element[int]          { return Element[int]{Kind: KindWatermark, TS: w} }

func must(t interface {
	Helper()
	Fatal(...any)
}, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func TestOrderedEmitsInArrivalOrder(t *testing.T) {
	e := &env{}
	o := newOp(t, e, Config[int, int]{Ordered: true, Capacity: 10})
	for i := range 3 {
		must(t, o.Add(rec(i, int64(10*i))))
	}
	must(t, o.Add(wm(25)))
	e.calls[2].f.Complete([]int{200, 201})
	e.calls[1].f.Complete(nil)
	e.expect(t, "") // the head has not completed
	e.calls[0].f.Complete([]int{0})
	e.expect(t, "0@0 200@20 201@20 wm25")
}

func TestUnorderedKeepsWatermarkOrder(t *testing.T) {
	e := &env{}
	o := newOp(t, e, Config[int, int]{Capacity: 10})
	must(t, o.Add(rec(1, 1)))
	must(t, o.Add(rec(2, 2)))
	must(t, o.Add(wm(5)))
	must(t, o.Add(rec(3, 6)))
	e.calls[2].f.Complete([]int{3}) // after the watermark: waits
	e.calls[1].f.Complete([]int{2}) // overtakes 1
	e.expect(t, "2@2")
	e.calls[0].f.Complete([]int{1})
	e.expect(t, "2@2 1@1 wm5 3@6")
}

func TestCapacityBlocksInputAndEndWaits(t *testing.T) {
	e := &env{}
	o := newOp(t, e, Config[int, int]{Ordered: true, Capacity: 2})
	for i := range 5 {
		must(t, o.Add(rec(i, 0)))
	}
	if len(e.calls) != 2 || !o.InputBlocked() {
		t.Fatalf("%d calls started with capacity 2, blocked %v", len(e.calls), o.InputBlocked())
	}
	must(t, o.EndInput())
	for i := 0; i < 5; i++ {
		if e.ended {
			t.Fatalf("ended with %d of 5 answered", i)
		}
		e.calls[i].f.Complete([]int{i})
		must(t, e.runMail())
		if o.InFlight() > 2 {
			t.Fatalf("%d in flight, capacity 2", o.InFlight())
		}
	}
	if !e.ended || o.Pending() || o.InputBlocked() {
		t.Fatalf("ended %v, pending %v, blocked %v", e.ended, o.Pending(), o.InputBlocked())
	}
	e.expect(t, "0@0 1@0 2@0 3@0 4@0")
}

func TestTimeoutFailsByDefault(t *testing.T) {
	e := &env{now: 1000}
	o := newOp(t, e, Config[int, int]{Capacity: 2, Timeout: 50})
	must(t, o.Add(rec(7, 3)))
	must(t, e.advance(1049))
	err := e.advance(1050)
	if !errors.Is(err, ErrTimeout) || !strings.Contains(err.Error(), "record 7 (timestamp 3)") {
		t.Fatalf("got %v, want a timeout naming the record", err)
	}
	if e.calls[0].ctx.Err() == nil {
		t.Fatal("the attempt's context was not cancelled")
	}
}

func TestTimeoutHandlerAnswers(t *testing.T) {
	e := &env{}
	o := newOp(t, e, Config[int, int]{Ordered: true, Capacity: 4, Timeout: 10,
		OnTimeout: func(in int, f *Future[int, int]) { f.Complete([]int{-in}) }})
	must(t, o.Add(rec(1, 0)))
	must(t, o.Add(rec(2, 0)))
	e.calls[1].f.Complete([]int{2})
	must(t, e.runMail())
	must(t, e.advance(10))
	must(t, e.runMail())
	e.calls[0].f.Complete([]int{1}) // too late: ignored
	e.expect(t, "-1@0 2@0")
	if o.timers.Len() != 0 {
		t.Fatalf("%d timers left", o.timers.Len())
	}
}

func TestRetryFixedDelayThenSucceed(t *testing.T) {
	e := &env{}
	retry := &Retry[int]{
		CanRetry: func(n int) bool { return n <= 3 },
		Backoff:  func(int) int64 { return 100 },
		IfError:  func(err error) bool { return err.Error() == "busy" },
		IfResult: func(r []int) bool { return len(r) == 0 },
	}
	o := newOp(t, e, Config[int, int]{Capacity: 4, Timeout: 10_000, Retry: retry})
	must(t, o.Add(rec(5, 0)))
	e.calls[0].f.CompleteExceptionally(errors.New("busy"))
	must(t, e.runMail())
	must(t, e.advance(99))
	if len(e.calls) != 1 {
		t.Fatal("retried before the delay")
	}
	must(t, e.advance(100))
	e.calls[1].f.Complete(nil) // empty result: retried too
	must(t, e.runMail())
	must(t, e.advance(200))
	if len(e.calls) != 3 || e.calls[2].attempt != 3 {
		t.Fatalf("%d calls", len(e.calls))
	}
	e.calls[2].f.Complete([]int{50})
	e.expect(t, "50@0")
}

func TestRetryExhaustedFailsWithLastError(t *testing.T) {
	e := &env{}
	retry := &Retry[int]{CanRetry: func(n int) bool { return n <= 2 }, Backoff: func(int) int64 { return 1 },
		IfError: func(error) bool { return true }}
	o := newOp(t, e, Config[int, int]{Capacity: 4, Timeout: 10_000, Retry: retry})
	must(t, o.Add(rec(5, 0)))
	var err error
	for i := 0; err == nil && i < 10; i++ {
		e.calls[i].f.CompleteExceptionally(fmt.Errorf("failure %d", i+1))
		if err = e.runMail(); err == nil {
			must(t, e.advance(e.now+1))
		}
	}
	// Flink's canRetry(n) = n <= maxAttempts: 2 retries after the first.
	if err == nil || len(e.calls) != 3 || !strings.Contains(err.Error(), "failure 3") || !strings.Contains(err.Error(), "after 3 attempt(s)") {
		t.Fatalf("%d calls, err %v", len(e.calls), err)
	}
}

func TestEndInputStartsDelayedRetriesAtOnce(t *testing.T) {
	e := &env{}
	retry := &Retry[int]{CanRetry: func(int) bool { return true }, Backoff: func(int) int64 { return 1000 },
		IfResult: func([]int) bool { return true }}
	o := newOp(t, e, Config[int, int]{Capacity: 4, Timeout: 100_000, Retry: retry})
	must(t, o.Add(rec(1, 0)))
	e.calls[0].f.Complete([]int{1})
	must(t, e.runMail())
	must(t, o.EndInput())
	if len(e.calls) != 2 {
		t.Fatalf("%d calls: the waiting retry did not start at the end of the input", len(e.calls))
	}
	e.calls[1].f.Complete([]int{2}) // would be retried before the end
	e.expect(t, "2@0")
	if !e.ended {
		t.Fatal("not ended")
	}
}

func TestTimeoutCoversRetries(t *testing.T) {
	e := &env{}
	retry := &Retry[int]{CanRetry: func(int) bool { return true }, Backoff: func(int) int64 { return 30 },
		IfError: func(error) bool { return true }}
	o := newOp(t, e, Config[int, int]{Capacity: 4, Timeout: 100, Retry: retry})
	must(t, o.Add(rec(1, 0)))
	for e.now < 90 {
		e.calls[len(e.calls)-1].f.CompleteExceptionally(errors.New("no"))
		must(t, e.runMail())
		must(t, e.advance(e.now+30))
	}
	if err := e.advance(100); !errors.Is(err, ErrTimeout) {
		t.Fatalf("got %v after %d attempts, want the timeout", err, len(e.calls))
	}
}

func TestSnapshotAndRestore(t *testing.T) {
	e := &env{}
	o := newOp(t, e, Config[int, int]{Ordered: true, Capacity: 3})
	must(t, o.Add(rec(1, 10)))
	must(t, o.Add(rec(2, 20)))
	must(t, o.Add(wm(15)))
	must(t, o.Add(rec(3, 30))) // waits: the queue is full
	e.calls[1].f.Complete([]int{2})
	must(t, e.runMail())
	snap := o.Snapshot()
	want := []Element[int]{rec(1, 10), rec(2, 20), wm(15), rec(3, 30)}
	if !slices.Equal(snap, want) {
		t.Fatalf("snapshot %v, want %v", snap, want)
	}
	c := istate.DefaultCodec[int]()
	data, err := Encode(snap, c)
	must(t, err)
	back, err := Restore([][]byte{data}, 0, 1, c)
	must(t, err)
	if !slices.Equal(back, want) {
		t.Fatalf("decoded %v", back)
	}
	// At parallelism 2 from 1: the records split, watermarks dropped.
	a, _ := Restore([][]byte{data}, 0, 2, c)
	b, _ := Restore([][]byte{data}, 1, 2, c)
	if !slices.Equal(a, want[:2]) || !slices.Equal(b, want[3:]) {
		t.Fatalf("rescaled to %v and %v", a, b)
	}
	e2 := &env{}
	o2 := newOp(t, e2, Config[int, int]{Ordered: true, Capacity: 3})
	must(t, o2.Open(back))
	if len(e2.calls) != 2 || !o2.InputBlocked() {
		t.Fatalf("%d calls re-issued", len(e2.calls))
	}
	if _, err := Decode([]byte{1, 5, 0}, c); err == nil {
		t.Fatal("decoded a truncated snapshot")
	}
}

// TestOrderProperty holds both queues against a brute-force model of
// their emission rules, under random arrivals, capacities and completion
// orders: the ordered queue emits exactly the input order; the unordered
// one emits an element at the first moment it is complete and everything
// before the watermark (or status) ahead of it has left, and a watermark
// once everything before it has left; elements that leave at one moment
// go segment by segment, each in completion order.
func TestOrderProperty(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		ordered := rapid.Bool().Draw(t, "ordered")
		capacity := rapid.IntRange(1, 6).Draw(t, "capacity")
		e := &env{}
		step := 0
		doneAt := map[int]int{} // record index -> step its answer was handled
		o, err := New(Config[int, int]{Ordered: ordered, Capacity: capacity,
			Invoke: func(ctx context.Context, in int, f *Future[int, int]) {
				e.calls = append(e.calls, &call{in: in, f: f})
			}}, Output[int](e), Clock(e), Mailbox(e))
		must(t, err)
		must(t, o.Open(nil))
		var input []Element[int]
		var open []*call
		var w int64
		answer := func(c *call) {
			n := c.in % 3 // 0, 1 or 2 results
			res := make([]int, n)
			for i := range res {
				res[i] = c.in*10 + i
			}
			c.f.Complete(res)
			e.mails = append(e.mails[:len(e.mails)-1], func(m func() error) func() error {
				return func() error { step++; doneAt[c.in] = step; return m() }
			}(e.mails[len(e.mails)-1]))
		}
		for range rapid.IntRange(1, 60).Draw(t, "steps") {
			seen := len(e.calls)
			switch rapid.IntRange(0, 5).Draw(t, "action") {
			case 0, 1:
				if !o.InputBlocked() {
					el := rec(len(input), int64(len(input)))
					input = append(input, el)
					step++
					must(t, o.Add(el))
				}
			case 2:
				if !o.InputBlocked() {
					w += rapid.Int64Range(0, 3).Draw(t, "wm")
					var el Element[int]
					if rapid.IntRange(0, 4).Draw(t, "status") == 0 {
						el = Element[int]{Kind: KindStatus, Idle: rapid.Bool().Draw(t, "idle"), Value: len(input)}
					} else {
						el = wm(w)
						el.Value = len(input)
					}
					input = append(input, el)
					step++
					must(t, o.Add(el))
				}
			case 3, 4:
				if len(open) > 0 {
					i := rapid.IntRange(0, len(open)-1).Draw(t, "which")
					answer(open[i])
					open = slices.Delete(open, i, i+1)
				}
			case 5:
				must(t, e.runMail())
			}
			open = append(open, e.calls[seen:]...)
			if o.InFlight() > capacity || o.q.len() > capacity {
				t.Fatalf("%d in flight, %d queued, capacity %d", o.InFlight(), o.q.len(), capacity)
			}
		}
		must(t, o.EndInput())
		for len(open) > 0 || len(e.mails) > 0 {
			seen := len(e.calls)
			if len(open) > 0 {
				answer(open[0])
				open = open[1:]
			}
			must(t, e.runMail())
			open = append(open, e.calls[seen:]...)
		}
		if !e.ended || o.Pending() {
			t.Fatalf("not ended after every answer")
		}
		want := model(input, doneAt, ordered)
		if !slices.Equal(e.events, want) {
			t.Fatalf("emitted\n%v\nwant\n%v", e.events, want)
		}
	})
}

// model computes the output from the input and the step at which each
// record's answer was handled (arrival steps of watermarks do not matter:
// a watermark is complete on arrival, after every earlier element arrived).
func model(input []Element[int], doneAt map[int]int, ordered bool) []string {
	type out struct {
		at, seg, done, pos int
		text               []string
	}
	var outs []out
	seg, barrier := 0, 0 // the time the last boundary left
	segMax := 0          // when everything so far has left
	for pos, el := range input {
		switch el.Kind {
		case KindRecord:
			at := max(doneAt[el.Value], barrier)
			var text []string
			for i := range el.Value % 3 {
				text = append(text, fmt.Sprintf("%d@%d", el.Value*10+i, el.TS))
			}
			if ordered {
				at = max(at, segMax)
			}
			segMax = max(segMax, at)
			outs = append(outs, out{at, seg, doneAt[el.Value], pos, text})
		default:
			at := segMax
			text := fmt.Sprintf("wm%d", el.TS)
			if el.Kind == KindStatus {
				text = map[bool]string{true: "idle", false: "active"}[el.Idle]
			}
			seg++
			outs = append(outs, out{at, seg, 0, pos, []string{text}})
			seg++
			barrier, segMax = at, at
		}
	}
	sort.SliceStable(outs, func(i, j int) bool {
		a, b := outs[i], outs[j]
		if a.at != b.at {
			return a.at < b.at
		}
		if a.seg != b.seg {
			return a.seg < b.seg
		}
		if ordered {
			return a.pos < b.pos
		}
		return a.done < b.done
	})
	var res []string
	for _, o := range outs {
		res = append(res, o.text...)
	}
	return res
}
