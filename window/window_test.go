package window

import (
	"math"
	"slices"
	"testing"
	"time"

	"github.com/weirstream/weir/state"
)

type procCtx int64

func (p procCtx) CurrentProcessingTime() int64 { return int64(p) }

func ms(v int64) time.Duration { return time.Duration(v) * time.Millisecond }

func assign[W Window](t *testing.T, a Assigner[W], ts int64) []W {
	t.Helper()
	ws, err := a.AssignWindows(ts, procCtx(0), nil)
	if err != nil {
		t.Fatal(err)
	}
	return ws
}

// V13 of the reference, row by row.
func TestAssignmentV13(t *testing.T) {
	tw := func(s, e int64) TimeWindow { return TimeWindow{s, e} }
	cases := []struct {
		name string
		a    Assigner[TimeWindow]
		ts   int64
		want []TimeWindow
	}{
		{"tumbling 10 @0", TumblingEventTime(ms(10)), 0, []TimeWindow{tw(0, 10)}},
		{"tumbling 10 @9", TumblingEventTime(ms(10)), 9, []TimeWindow{tw(0, 10)}},
		{"tumbling 10 @10", TumblingEventTime(ms(10)), 10, []TimeWindow{tw(10, 20)}},
		{"tumbling 10 @-1", TumblingEventTime(ms(10)), -1, []TimeWindow{tw(-10, 0)}},
		{"tumbling 10 @-10", TumblingEventTime(ms(10)), -10, []TimeWindow{tw(-10, 0)}},
		{"tumbling 10 @-11", TumblingEventTime(ms(10)), -11, []TimeWindow{tw(-20, -10)}},
		{"tumbling 10+3 @2", TumblingEventTime(ms(10)).WithOffset(ms(3)), 2, []TimeWindow{tw(-7, 3)}},
		{"tumbling 10+3 @3", TumblingEventTime(ms(10)).WithOffset(ms(3)), 3, []TimeWindow{tw(3, 13)}},
		{"tumbling 10+3 @12", TumblingEventTime(ms(10)).WithOffset(ms(3)), 12, []TimeWindow{tw(3, 13)}},
		{"tumbling 10-3 @2", TumblingEventTime(ms(10)).WithOffset(ms(-3)), 2, []TimeWindow{tw(-3, 7)}},
		{"tumbling 10-3 @7", TumblingEventTime(ms(10)).WithOffset(ms(-3)), 7, []TimeWindow{tw(7, 17)}},
		{"tumbling 10-3 @-5", TumblingEventTime(ms(10)).WithOffset(ms(-3)), -5, []TimeWindow{tw(-13, -3)}},
		{"sliding 10/5 @12", SlidingEventTime(ms(10), ms(5)), 12, []TimeWindow{tw(10, 20), tw(5, 15)}},
		{"sliding 10/5 @10", SlidingEventTime(ms(10), ms(5)), 10, []TimeWindow{tw(10, 20), tw(5, 15)}},
		{"sliding 10/5 @-3", SlidingEventTime(ms(10), ms(5)), -3, []TimeWindow{tw(-5, 5), tw(-10, 0)}},
		{"sliding 10/3 @7", SlidingEventTime(ms(10), ms(3)), 7, []TimeWindow{tw(6, 16), tw(3, 13), tw(0, 10)}},
		{"sliding 10/3+1 @7", SlidingEventTime(ms(10), ms(3)).WithOffset(ms(1)), 7, []TimeWindow{tw(7, 17), tw(4, 14), tw(1, 11), tw(-2, 8)}},
		{"sliding 4/6 @5", SlidingEventTime(ms(4), ms(6)), 5, nil},
		{"session 3 @5", EventTimeSessions(ms(3)), 5, []TimeWindow{tw(5, 8)}},
	}
	for _, c := range cases {
		if err := c.a.Validate(); err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if got := assign(t, c.a, c.ts); !slices.Equal(got, c.want) {
			t.Errorf("%s: got %v, want %v", c.name, got, c.want)
		}
	}
}

func TestProcessingTimeAssigners(t *testing.T) {
	ws, _ := TumblingProcessingTime(ms(10)).AssignWindows(999, procCtx(23), nil)
	if !slices.Equal(ws, []TimeWindow{{20, 30}}) {
		t.Fatalf("tumbling processing: %v", ws)
	}
	ws, _ = SlidingProcessingTime(ms(10), ms(5)).AssignWindows(999, procCtx(7), nil)
	if !slices.Equal(ws, []TimeWindow{{5, 15}, {0, 10}}) {
		t.Fatalf("sliding processing: %v", ws)
	}
	ws, _ = ProcessingTimeSessions(ms(4)).AssignWindows(999, procCtx(7), nil)
	if !slices.Equal(ws, []TimeWindow{{7, 11}}) {
		t.Fatalf("session processing: %v", ws)
	}
	d := DynamicEventTimeSessions(func(v int) time.Duration { return ms(int64(v)) })
	ws, err := d.AssignElement(5, 100, procCtx(0), nil)
	if err != nil || !slices.Equal(ws, []TimeWindow{{100, 105}}) {
		t.Fatalf("dynamic session: %v %v", ws, err)
	}
	if _, err := d.AssignElement(0, 100, procCtx(0), nil); err == nil {
		t.Fatal("dynamic gap 0 accepted")
	}
	if typ := d.ElementType(); typ.String() != "int" {
		t.Fatalf("ElementType = %v", typ)
	}
	g, _ := Global().AssignWindows(1, procCtx(0), nil)
	if len(g) != 1 || g[0].MaxTimestamp() != math.MaxInt64 || Global().IsEventTime() {
		t.Fatalf("global: %v", g)
	}
	if _, err := TumblingEventTime(ms(10)).AssignWindows(math.MinInt64, procCtx(0), nil); err == nil {
		t.Fatal("event-time tumbling accepted a record without timestamp")
	}
}

func TestValidate(t *testing.T) {
	// Assigners, triggers and evictors with parameters are Validators.
	bad := []any{
		TumblingEventTime(0), TumblingEventTime(ms(-1)),
		TumblingEventTime(ms(10)).WithOffset(ms(10)), TumblingEventTime(ms(10)).WithOffset(ms(-10)),
		TumblingEventTime(ms(10)).WithOffset(math.MinInt64),
		SlidingEventTime(ms(10), 0), SlidingEventTime(0, ms(5)), SlidingEventTime(ms(10), ms(5)).WithOffset(ms(5)),
		SlidingEventTime(ms(10), ms(5)).WithOffset(ms(-5)),
		EventTimeSessions(0), ProcessingTimeSessions(ms(-1)),
		DynamicEventTimeSessions[int](nil),
		CountTrigger(0), ContinuousEventTimeTrigger(0), ContinuousProcessingTimeTrigger(ms(-1)),
		PurgingTrigger(nil), PurgingTrigger(CountTrigger(-1)),
		CountEvictor(-1), DeltaEvictor[int](1, nil),
	}
	for i, b := range bad {
		if b.(Validator).Validate() == nil {
			t.Errorf("case %d (%T): invalid parameters accepted", i, b)
		}
	}
	good := []any{
		TumblingEventTime(ms(10)).WithOffset(ms(9)), TumblingEventTime(ms(10)).WithOffset(ms(-9)),
		SlidingEventTime(ms(4), ms(6)).WithOffset(ms(-5)), EventTimeSessions(ms(1)), CountTrigger(1),
	}
	for i, g := range good {
		if err := g.(Validator).Validate(); err != nil {
			t.Errorf("good case %d: %v", i, err)
		}
	}
}

func TestMergeTimeWindows(t *testing.T) {
	type call struct {
		result TimeWindow
		merged []TimeWindow
	}
	var calls []call
	MergeTimeWindows([]TimeWindow{{5, 8}, {1, 4}, {3, 6}, {20, 23}, {23, 26}, {40, 43}}, func(r TimeWindow, m []TimeWindow) {
		calls = append(calls, call{r, slices.Clone(m)})
	})
	want := []call{
		{TimeWindow{1, 8}, []TimeWindow{{1, 4}, {5, 8}, {3, 6}}}, // java.util.HashSet order, as Flink
		{TimeWindow{20, 26}, []TimeWindow{{20, 23}, {23, 26}}},
	}
	if len(calls) != len(want) {
		t.Fatalf("calls %v", calls)
	}
	for i := range want {
		if calls[i].result != want[i].result || !slices.Equal(calls[i].merged, want[i].merged) {
			t.Fatalf("call %d: %v, want %v", i, calls[i], want[i])
		}
	}
	if !(TimeWindow{1, 4}).Intersects(TimeWindow{4, 7}) || (TimeWindow{1, 4}).Intersects(TimeWindow{5, 7}) {
		t.Fatal("Intersects is not inclusive")
	}
	if (TimeWindow{0, 10}).MaxTimestamp() != 9 {
		t.Fatal("MaxTimestamp")
	}
}

// fakeCtx is a TriggerContext over one key and window.
type fakeCtx struct {
	maxTS, wm, now int64
	event, proc    map[int64]bool
	st             map[string]int64
}

func newCtx(maxTS int64) *fakeCtx {
	return &fakeCtx{maxTS: maxTS, wm: math.MinInt64, event: map[int64]bool{}, proc: map[int64]bool{}, st: map[string]int64{}}
}

func (c *fakeCtx) Window() any                          { return TimeWindow{0, c.maxTS + 1} }
func (c *fakeCtx) MaxTimestamp() int64                  { return c.maxTS }
func (c *fakeCtx) Element() any                         { return nil }
func (c *fakeCtx) CurrentWatermark() int64              { return c.wm }
func (c *fakeCtx) CurrentProcessingTime() int64         { return c.now }
func (c *fakeCtx) RegisterEventTimeTimer(ts int64)      { c.event[ts] = true }
func (c *fakeCtx) RegisterProcessingTimeTimer(ts int64) { c.proc[ts] = true }
func (c *fakeCtx) DeleteEventTimeTimer(ts int64)        { delete(c.event, ts) }
func (c *fakeCtx) DeleteProcessingTimeTimer(ts int64)   { delete(c.proc, ts) }
func (c *fakeCtx) PartitionedState() StateStore         { return c }
func (c *fakeCtx) MergePartitionedState(string) error   { return nil }
func (c *fakeCtx) Erased(ErasedState) (any, error)      { return nil, nil }
func (c *fakeCtx) Int64Reducing(d state.ReducingDescriptor[int64]) (state.ReducingState[int64], error) {
	return &fakeReducing{c: c, name: d.Name, f: d.Reduce}, nil
}

type fakeReducing struct {
	c    *fakeCtx
	name string
	f    func(a, b int64) int64
}

func (r *fakeReducing) Get() (int64, bool) { v, ok := r.c.st[r.name]; return v, ok }
func (r *fakeReducing) Add(v int64) {
	if old, ok := r.c.st[r.name]; ok {
		v = r.f(old, v)
	}
	r.c.st[r.name] = v
}
func (r *fakeReducing) Clear() { delete(r.c.st, r.name) }

func must(r TriggerResult, err error) TriggerResult {
	if err != nil {
		panic(err)
	}
	return r
}

func TestEventTimeTrigger(t *testing.T) {
	tr := EventTimeTrigger()
	c := newCtx(9)
	if r := must(tr.OnElement(3, c)); r != Continue || !c.event[9] {
		t.Fatalf("onElement: %v %v", r, c.event)
	}
	if r := must(tr.OnEventTime(8, c)); r != Continue {
		t.Fatal("fired before max timestamp")
	}
	if r := must(tr.OnEventTime(9, c)); r != Fire {
		t.Fatal("did not fire at max timestamp")
	}
	c.wm = 9
	if r := must(tr.OnElement(5, c)); r != Fire {
		t.Fatal("late element did not fire at once")
	}
	if err := tr.Clear(c); err != nil || c.event[9] {
		t.Fatal("clear kept the timer")
	}
	c.wm = 5
	_ = tr.OnMerge(c)
	if !c.event[9] {
		t.Fatal("merge did not register the timer")
	}
	c2 := newCtx(9)
	c2.wm = 9
	_ = tr.OnMerge(c2)
	if len(c2.event) != 0 {
		t.Fatal("merge registered a timer behind the watermark")
	}
}

func TestProcessingTimeTrigger(t *testing.T) {
	tr := ProcessingTimeTrigger()
	c := newCtx(9)
	if r := must(tr.OnElement(3, c)); r != Continue || !c.proc[9] {
		t.Fatal("onElement")
	}
	if r := must(tr.OnProcessingTime(1, c)); r != Fire {
		t.Fatal("processing-time trigger must fire on any timer")
	}
	if r := must(tr.OnEventTime(9, c)); r != Continue {
		t.Fatal("fired on event time")
	}
}

func TestCountAndPurgingTrigger(t *testing.T) {
	c := newCtx(9)
	tr := CountTrigger(2)
	p := PurgingTrigger(tr)
	if r := must(p.OnElement(0, c)); r != Continue {
		t.Fatal("first")
	}
	if r := must(p.OnElement(0, c)); r != FireAndPurge {
		t.Fatalf("second: %v", r)
	}
	if _, ok := c.st["count"]; ok {
		t.Fatal("count not cleared after firing")
	}
	if r := must(tr.OnElement(0, c)); r != Continue {
		t.Fatal("count restarted wrong")
	}
	if err := tr.Clear(c); err != nil || len(c.st) != 0 {
		t.Fatal("clear")
	}
	n := NeverTrigger()
	if r := must(n.OnElement(0, c)); r != Continue {
		t.Fatal("never")
	}
	for _, r := range []TriggerResult{Continue, Fire, Purge, FireAndPurge} {
		if r.IsFire() != (r == Fire || r == FireAndPurge) || r.IsPurge() != (r == Purge || r == FireAndPurge) {
			t.Fatalf("%v flags", r)
		}
	}
}

// The first-fire table of V13, then V4's chain on window [0,10).
func TestContinuousEventTimeTrigger(t *testing.T) {
	for _, c := range []struct{ ts, interval, first int64 }{{1, 3, 3}, {4, 3, 6}, {-1, 3, 3}, {-4, 3, 0}, {12, 3, 15}} {
		ctx := newCtx(100)
		tr := ContinuousEventTimeTrigger(ms(c.interval))
		must(tr.OnElement(c.ts, ctx))
		if got := ctx.st["fire-time"]; got != c.first || !ctx.event[c.first] || !ctx.event[100] {
			t.Errorf("ts %d interval %d: first fire %d timers %v, want %d", c.ts, c.interval, got, ctx.event, c.first)
		}
	}
	tr := ContinuousEventTimeTrigger(ms(3))
	ctx := newCtx(9)
	must(tr.OnElement(1, ctx))
	must(tr.OnElement(4, ctx))
	if ctx.st["fire-time"] != 3 {
		t.Fatal("second element changed the fire time")
	}
	ctx.wm = 3
	if r := must(tr.OnEventTime(3, ctx)); r != Fire || ctx.st["fire-time"] != 6 {
		t.Fatalf("at 3: %v next %d", r, ctx.st["fire-time"])
	}
	ctx.wm = 7
	if r := must(tr.OnEventTime(6, ctx)); r != Fire || ctx.st["fire-time"] != 9 {
		t.Fatalf("at 6: %v next %d (clamped to 9)", r, ctx.st["fire-time"])
	}
	ctx.wm = 9
	if r := must(tr.OnEventTime(9, ctx)); r != Fire || ctx.st["fire-time"] != 9 {
		t.Fatal("end of window must fire and leave the state")
	}
	if err := tr.Clear(ctx); err != nil || len(ctx.st) != 0 || ctx.event[9] {
		t.Fatalf("clear: %v %v", ctx.st, ctx.event)
	}
	late := newCtx(9)
	late.wm = 9
	if r := must(tr.OnElement(5, late)); r != Fire || len(late.st) != 0 || len(late.event) != 0 {
		t.Fatal("element of a passed window must fire at once without state")
	}
	// Weir's difference: global window at the maximum watermark.
	g := newCtx(math.MaxInt64)
	must(tr.OnElement(0, g))
	g.wm = math.MaxInt64
	if r := must(tr.OnEventTime(3, g)); r != Continue || len(g.st) != 0 {
		t.Fatalf("global end: periodic timer gave %v, state %v", r, g.st)
	}
	if r := must(tr.OnEventTime(math.MaxInt64, g)); r != Fire {
		t.Fatal("global end timer must fire once")
	}
}

// V18's trigger calls.
func TestContinuousProcessingTimeTrigger(t *testing.T) {
	tr := ContinuousProcessingTimeTrigger(ms(4))
	c := newCtx(9)
	c.now = 1
	if r := must(tr.OnElement(0, c)); r != Continue || !c.proc[4] {
		t.Fatalf("first fire should be 4: %v", c.proc)
	}
	if r := must(tr.OnProcessingTime(4, c)); r != Fire || !c.proc[8] {
		t.Fatal("at 4")
	}
	if r := must(tr.OnProcessingTime(8, c)); r != Fire || !c.proc[9] || c.st["fire-time"] != 9 {
		t.Fatal("at 8: next must clamp to 9")
	}
	if r := must(tr.OnProcessingTime(9, c)); r != Fire {
		t.Fatal("at 9 (window end)")
	}
	if r := must(tr.OnEventTime(9, c)); r != Continue {
		t.Fatal("event time")
	}
	if r := must(tr.OnProcessingTime(7, newCtx(9))); r != Continue {
		t.Fatal("empty state must not fire")
	}
}

type elems struct {
	ts  []int64
	v   []float64
	out []bool
}

func (e *elems) Len() int                      { return len(e.ts) }
func (e *elems) Timestamp(i int) (int64, bool) { return e.ts[i], e.ts[i] != math.MinInt64 }
func (e *elems) Evict(i int)                   { e.out[i] = true }
func (e *elems) Evicted(i int) bool            { return e.out[i] }
func (e *elems) Value(i int) float64           { return e.v[i] }

func newElems(ts ...int64) *elems {
	e := &elems{ts: ts, out: make([]bool, len(ts))}
	for _, t := range ts {
		e.v = append(e.v, float64(t))
	}
	return e
}

func TestEvictors(t *testing.T) {
	e := newElems(1, 2, 3, 4, 5)
	CountEvictor(3).EvictBefore(e, 5, nil)
	if !slices.Equal(e.out, []bool{true, true, false, false, false}) {
		t.Fatalf("count: %v", e.out)
	}
	e = newElems(1, 2, 3)
	CountEvictor(2, true).EvictBefore(e, 3, nil)
	if slices.Contains(e.out, true) {
		t.Fatal("after-evictor evicted before")
	}
	CountEvictor(2, true).EvictAfter(e, 3, nil)
	if !e.out[0] || e.out[1] {
		t.Fatal("after-evictor")
	}
	e = newElems(9, 1, 5, 7)
	TimeEvictor(ms(3)).EvictBefore(e, 4, nil) // max 9, cutoff 6: evict <= 6
	if !slices.Equal(e.out, []bool{false, true, true, false}) {
		t.Fatalf("time: %v", e.out)
	}
	e = newElems(math.MinInt64, 1)
	TimeEvictor(ms(3)).EvictBefore(e, 2, nil)
	if slices.Contains(e.out, true) {
		t.Fatal("time evictor without timestamps must do nothing")
	}
	e = newElems(1, 8, 2, 10)
	DeltaEvictor(5, func(a, b float64) float64 { return math.Abs(a - b) }).EvictBefore(e, 4, nil)
	if !slices.Equal(e.out, []bool{true, false, true, false}) {
		t.Fatalf("delta: %v", e.out)
	}
}
