package weir_test

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/connector/file"
	"github.com/weirstream/weir/window"
)

// cwEv is an event of the window checkpoint test.
type cwEv struct {
	K  int64
	TS int64
	V  int64
}

// cwCount counts and sums an Aggregate's elements.
type cwCount struct{}

type cwAcc struct{ N, Sum int64 }

func (cwCount) CreateAccumulator() cwAcc { return cwAcc{} }
func (cwCount) Add(e cwEv, a cwAcc) cwAcc {
	return cwAcc{a.N + 1, a.Sum + e.V}
}
func (cwCount) GetResult(a cwAcc) cwAcc { return a }
func (cwCount) Merge(a, b cwAcc) cwAcc  { return cwAcc{a.N + b.N, a.Sum + b.Sum} }
func cwKey(e cwEv) int64                { return e.K }
func cwStamp(e cwEv, _ int64) int64     { return e.TS }
func cwLine(kind string, v any) string  { return fmt.Sprint(kind, " ", v) }
func cwWin(w window.TimeWindow) string  { return fmt.Sprintf("[%d,%d)", w.Start, w.End) }
func cwMS(n int64) time.Duration        { return time.Duration(n) * time.Millisecond }
func cwSessions(e cwEv) int64           { return e.K % 7 }
func cwJoinKey(e cwEv) int64            { return e.K % 5 }
func cwStrategy() weir.WatermarkStrategy[cwEv] {
	return weir.ForMonotonousTimestamps[cwEv]().WithTimestampAssigner(cwStamp)
}

// cwSession lists a session's size and sum.
type cwSession struct{}

func (cwSession) Process(key int64, ctx weir.ProcessWindowContext[window.TimeWindow], elems []cwEv, out weir.Collector[string]) error {
	var sum int64
	for _, e := range elems {
		sum += e.V
	}
	out.Collect(fmt.Sprintf("session k=%d %s n=%d sum=%d", key, cwWin(ctx.Window()), len(elems), sum))
	return nil
}

// TestWindowStateSurvivesFailure runs event-time windows of every engine
// (tumbling and sliding Aggregate, the sliced path included; sessions with
// a process function; a count trigger with trigger state; a window join) with checkpoints, fails once after a checkpoint, resumes at
// another parallelism from the directory store, and checks that the
// committed output equals that of a run without failure, line for line.
func TestWindowStateSurvivesFailure(t *testing.T) {
	const n, keys = 12000, 20
	const half = n / 2
	run := func(out, cps string, p int, fail bool) (bool, error) {
		st, err := weir.NewDirCheckpointStore(cps)
		if err != nil {
			t.Fatal(err)
		}
		env := weir.NewEnvironment(weir.WithParallelism(p), weir.WithBufferSize(32))
		env.EnableCheckpointing(2*time.Millisecond, weir.CheckpointStoreIn(st), weir.RestoreFromLatest())
		// Both generator splits move through event time together: the
		// timestamp is the position within the split. Keys come in bursts
		// of 3, so sessions (gap 25 ms) close and reopen. The source has a
		// UID: at parallelism 2 it is chained to the filters, at 3 not,
		// which changes its automatic id and those after it (as in Flink).
		// The failing run's generator holds in the middle until a
		// checkpoint has completed; it fails right after.
		var gate *ckGate
		if fail {
			gate = newCkGate(st, nil)
		}
		src := heldGenerate(env, n, func(i int64) cwEv {
			pos := i % half
			return cwEv{K: (pos / 3) % keys, TS: pos, V: i}
		}, gate, cwStrategy()).SetParallelism(2).UID("source")
		ks := weir.KeyBy(src, cwKey)
		tumble := weir.Map(weir.Aggregate(weir.Window(ks, window.TumblingEventTime(cwMS(100))), cwCount{}),
			func(a cwAcc) string { return cwLine("tumble", a) })
		slide := weir.Map(weir.Aggregate(weir.Window(ks, window.SlidingEventTime(cwMS(300), cwMS(100))), cwCount{}),
			func(a cwAcc) string { return cwLine("slide", a) })
		// A count trigger keeps its count in trigger state. Early firings
		// depend on arrival order, which is fixed only within a split: key
		// by split here.
		bySplit := weir.KeyBy(src, func(e cwEv) int64 { return e.V/half*100 + e.K })
		counted := weir.Map(weir.Aggregate(weir.Window(bySplit, window.TumblingEventTime(cwMS(400))).
			Trigger(window.CountTrigger(7)), cwCount{}),
			func(a cwAcc) string { return cwLine("count", a) })
		sess := weir.ProcessWindow(weir.Window(weir.KeyBy(src, cwSessions), window.EventTimeSessions(cwMS(25))), cwSession{})
		left := weir.KeyBy(weir.Filter(src, func(e cwEv) bool { return e.V%2 == 0 }), cwJoinKey)
		right := weir.KeyBy(weir.Filter(src, func(e cwEv) bool { return e.V%3 == 0 }), cwJoinKey)
		joined := weir.Join(weir.WindowJoin(left, right, window.TumblingEventTime(cwMS(50))),
			func(a, b cwEv) string { return fmt.Sprintf("join %d-%d", a.V, b.V) })
		check, failed := failAfterGate[string](gate, fail)
		all := weir.Map(weir.Union(tumble, slide, counted, sess, joined), check)
		file.Sink(all, out, func(s string) []byte { return []byte(s) })
		err = env.Execute(t.Context(), "windows")
		return failed.Load(), err
	}
	refOut := t.TempDir()
	if _, err := run(refOut, t.TempDir(), 2, false); err != nil {
		t.Fatal(err)
	}
	want, err := file.ReadCommittedLines(refOut)
	if err != nil {
		t.Fatal(err)
	}
	out, cps := t.TempDir(), t.TempDir()
	failed, err := run(out, cps, 2, true)
	if err == nil || !failed {
		t.Fatalf("the first run should fail after a checkpoint (err %v)", err)
	}
	if _, err := run(out, cps, 3, false); err != nil {
		t.Fatal(err)
	}
	got, err := file.ReadCommittedLines(out)
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(want)
	slices.Sort(got)
	if len(want) < 1000 {
		t.Fatalf("the reference run committed only %d lines", len(want))
	}
	if !slices.Equal(got, want) {
		missing, extra := diffLines(want, got)
		t.Fatalf("after failure and restore: %d lines, want %d; missing %v, extra %v", len(got), len(want), head(missing), head(extra))
	}
}
