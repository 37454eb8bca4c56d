package weir_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/state"
)

// kv is a keyed test record.
type kv struct{ K string }

// coEvents is a KeyedCoProcessFunction that reports everything it does on
// ch: each element (except "sync" markers) is added to a ListState and
// registers an event-time timer at ts+10; a timer reports the key, the
// watermark and the list, and emits it.
type coEvents struct {
	ch     chan<- string
	seen   state.ListState[string]
	active int // calls in progress: must never exceed 1
}

func (f *coEvents) Open(ctx weir.KeyedRuntimeContext[string]) (err error) {
	f.seen, err = weir.GetListState(ctx, state.List[string]("seen"))
	return err
}

func (f *coEvents) enter() error {
	f.active++
	if f.active != 1 {
		return fmt.Errorf("%d concurrent calls", f.active)
	}
	return nil
}

func (f *coEvents) element(input int, v kv, ctx weir.KeyedContext[string]) error {
	defer func() { f.active-- }()
	if err := f.enter(); err != nil {
		return err
	}
	ts, ok := ctx.Timestamp()
	if !ok {
		return fmt.Errorf("element %v without timestamp", v)
	}
	if ctx.CurrentKey() != v.K {
		return fmt.Errorf("current key %q for %v", ctx.CurrentKey(), v)
	}
	f.ch <- fmt.Sprintf("%d:%s@%d", input, v.K, ts)
	if v.K != "sync" {
		f.seen.Add(fmt.Sprintf("%d@%d", input, ts))
		ctx.TimerService().RegisterEventTimeTimer(ts + 10)
	}
	return nil
}

func (f *coEvents) ProcessElement1(v kv, ctx weir.KeyedContext[string], _ weir.Collector[string]) error {
	return f.element(1, v, ctx)
}

func (f *coEvents) ProcessElement2(v kv, ctx weir.KeyedContext[string], _ weir.Collector[string]) error {
	return f.element(2, v, ctx)
}

func (f *coEvents) OnTimer(ts int64, ctx weir.OnTimerContext[string], out weir.Collector[string]) error {
	defer func() { f.active-- }()
	if err := f.enter(); err != nil {
		return err
	}
	if ctx.TimeDomain() != weir.EventTime {
		return fmt.Errorf("timer in %v", ctx.TimeDomain())
	}
	if got, ok := ctx.Timestamp(); !ok || got != ts {
		return fmt.Errorf("timer context timestamp %d, %v; want %d", got, ok, ts)
	}
	e := fmt.Sprintf("timer %s@%d %v", ctx.CurrentKey(), ts, f.seen.Get())
	f.ch <- fmt.Sprintf("%s wm=%d", e, ctx.CurrentWatermark())
	out.Collect(e)
	return nil
}

// TestKeyedCoProcessTimersFollowCombinedWatermark drives two sources by
// hand (punctuated watermarks: each timestamp is the source's watermark)
// and checks, step by step, that the keyed co-process function's timers
// fire exactly when the minimum of the two inputs' watermarks passes them,
// before anything that follows on the input, with state per key shared by
// both inputs.
func TestKeyedCoProcessTimersFollowCombinedWatermark(t *testing.T) {
	env := weir.NewEnvironment(weir.WithParallelism(1), weir.WithAutoWatermarkInterval(0))
	srcA, srcB := newChanSource[kv](1), newChanSource[kv](1)
	a := weir.FromSource[kv](env, srcA, punctuatedStrategy[kv](), "A")
	b := weir.FromSource[kv](env, srcB, punctuatedStrategy[kv](), "B")
	key := func(v kv) string { return v.K }
	ch := make(chan string, 1000)
	out := weir.KeyedCoProcess(weir.ConnectKeyed(weir.KeyBy(a, key), weir.KeyBy(b, key)),
		&coEvents{ch: ch})
	res := weir.Collect(out)
	h := start(t, env)

	steps := []struct {
		src  int // 1: A, 2: B
		k    string
		ts   int64
		want []string // events after the element, up to its sync marker
	}{
		{1, "k", 5, nil},
		{1, "j", 100, nil}, // combined watermark: MIN (B has none)
		{2, "k", 8, nil},   // combined 8
		{2, "x", 16, []string{"timer k@15 [1@5 2@8] wm=16"}},
		{2, "y", 200, []string{"timer k@18 [1@5 2@8] wm=100", "timer x@26 [2@16] wm=100"}},
		{1, "z", 1000, []string{"timer j@110 [1@100] wm=200"}},
	}
	for i, s := range steps {
		src := srcA
		if s.src == 2 {
			src = srcB
		}
		src.send(t, h, 0, rec(kv{s.k}, s.ts))
		src.send(t, h, 0, rec(kv{"sync"}, s.ts)) // same timestamp: no new watermark
		want := append(append([]string{fmt.Sprintf("%d:%s@%d", s.src, s.k, s.ts)}, s.want...), fmt.Sprintf("%d:sync@%d", s.src, s.ts))
		var got []string
		for range want {
			got = append(got, recv(t, h, ch))
		}
		if !slices.Equal(got, want) {
			t.Fatalf("step %d: events\n%s\nwant\n%s", i, strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
	}
	srcA.close()
	srcB.close()
	if err := wait(t, h); err != nil {
		t.Fatal(err)
	}
	// At the end, the remaining timers fire in timestamp order.
	var rest []string
	for len(ch) > 0 {
		e := <-ch
		rest = append(rest, e[:strings.Index(e, " wm=")])
	}
	if want := []string{"timer y@210 [2@200]", "timer z@1010 [1@1000]"}; !slices.Equal(rest, want) {
		t.Fatalf("timers at the end: %v, want %v", rest, want)
	}
	// Timer output carries the timer's timestamp.
	for _, r := range res.Records() {
		if !strings.Contains(r.Value, fmt.Sprintf("@%d ", r.TS)) {
			t.Errorf("output %q has timestamp %d", r.Value, r.TS)
		}
	}
	if res.Len() != 6 {
		t.Errorf("%d timer outputs, want 6", res.Len())
	}
}

// TestKeyedCoProcessParallel runs the keyed co-process function at
// parallelism 3 on generated inputs and checks every key's timers fired
// with both inputs' elements in state (and, under -race, that the three
// methods never ran concurrently on one instance).
func TestKeyedCoProcessParallel(t *testing.T) {
	env := weir.NewEnvironment(weir.WithParallelism(3), weir.WithBufferSize(16))
	strat := weir.ForMonotonousTimestamps[kv]().WithTimestampAssigner(func(_ kv, ts int64) int64 { return ts })
	gen := func(prefix string) weir.DataStream[kv] {
		recs := make([]weir.Record[kv], 0, 300)
		for i := range int64(300) {
			recs = append(recs, rec(kv{fmt.Sprintf("key%d", i%30)}, i))
		}
		return weir.FromRecords(env, recs, strat).Name(prefix)
	}
	ch := make(chan string, 1000)
	key := func(v kv) string { return v.K }
	out := weir.KeyedCoProcess(weir.ConnectKeyed(weir.KeyBy(gen("left"), key), weir.KeyBy(gen("right"), key)),
		&coEvents{ch: ch})
	res := weir.Collect(out)
	mustRun(t, env)
	// Key k = i%30 has elements at k, k+30, ..., k+270 on both inputs, so
	// 10 timers (registered twice each, de-duplicated). When the timer at
	// k+30j+10 fires, both inputs' watermarks have passed every element
	// before it: the list holds at least 2(j+1) elements, the last all 20.
	if res.Len() != 300 {
		t.Fatalf("%d timers fired, want 300", res.Len())
	}
	maxSeen := map[string]int{}
	for _, v := range res.Values() {
		var k, ts int
		if _, err := fmt.Sscanf(v, "timer key%d@%d", &k, &ts); err != nil {
			t.Fatalf("output %q: %v", v, err)
		}
		n := len(strings.Fields(v[strings.Index(v, "["):]))
		if j := (ts - 10 - k) / 30; n < 2*(j+1) {
			t.Errorf("timer %d of key%d saw %d elements, want at least %d: %s", ts, k, n, 2*(j+1), v)
		}
		maxSeen[fmt.Sprint(k)] = max(maxSeen[fmt.Sprint(k)], n)
	}
	for k := range 30 {
		if n := maxSeen[fmt.Sprint(k)]; n != 20 {
			t.Errorf("key%d: last timer saw %d elements, want 20", k, n)
		}
	}
}

// TestCoProcessNonKeyed connects two streams of different types.
func TestCoProcessNonKeyed(t *testing.T) {
	env := weir.NewEnvironment(weir.WithParallelism(2))
	a := weir.FromRecords(env, []weir.Record[string]{rec("a", 1), rec("b", 2)}, weir.NoWatermarks[string]())
	b := weir.FromSlice(env, []int{7, 8, 9})
	out := weir.CoProcess(weir.Connect(a, b), coFn{})
	res := weir.Collect(out)
	mustRun(t, env)
	got := sortRecords(res.Records())
	want := []weir.Record[string]{rec("1:a", 1), rec("1:b", 2), rec("2:7", weir.NoTimestamp), rec("2:8", weir.NoTimestamp), rec("2:9", weir.NoTimestamp)}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("got %v, want %v", got, want)
	}
}

type coFn struct{}

func (coFn) ProcessElement1(v string, ctx weir.Context, out weir.Collector[string]) error {
	if _, ok := ctx.Timestamp(); !ok {
		return fmt.Errorf("no timestamp on %q", v)
	}
	out.Collect("1:" + v)
	return nil
}

func (coFn) ProcessElement2(v int, ctx weir.Context, out weir.Collector[string]) error {
	if _, ok := ctx.Timestamp(); ok {
		return fmt.Errorf("timestamp on %d", v)
	}
	out.Collect(fmt.Sprintf("2:%d", v))
	return nil
}

// tagInput tags each element with its input.
type tagInput struct{}

func (tagInput) ProcessElement1(v int64, _ weir.KeyedContext[int64], out weir.Collector[string]) error {
	out.Collect(fmt.Sprintf("1:%d", v))
	return nil
}

func (tagInput) ProcessElement2(v int64, _ weir.KeyedContext[int64], out weir.Collector[string]) error {
	out.Collect(fmt.Sprintf("2:%d", v))
	return nil
}

func (tagInput) OnTimer(int64, weir.OnTimerContext[int64], weir.Collector[string]) error { return nil }

// TestKeyedCoProcessUnionAndSameSource connects a union (a source and a map
// of it) with the same source again: every path delivers every record once.
func TestKeyedCoProcessUnionAndSameSource(t *testing.T) {
	for _, p := range []int{1, 2} {
		env := weir.NewEnvironment(weir.WithParallelism(p))
		src := weir.Generate(env, 10, 0, func(i int64) int64 { return i }, weir.NoWatermarks[int64]())
		first := weir.KeyBy(weir.Union(src, weir.Map(src, func(v int64) int64 { return v + 100 })), func(v int64) int64 { return v % 3 })
		second := weir.KeyBy(src, func(v int64) int64 { return v % 3 })
		res := weir.Collect(weir.KeyedCoProcess(weir.ConnectKeyed(first, second), tagInput{}))
		mustRun(t, env)
		var want []string
		for i := range 10 {
			want = append(want, fmt.Sprintf("1:%d", i), fmt.Sprintf("1:%d", i+100), fmt.Sprintf("2:%d", i))
		}
		if got := sorted(res.Values()); !slices.Equal(got, sorted(want)) {
			t.Fatalf("p=%d: got %v, want %v", p, got, sorted(want))
		}
	}
}
