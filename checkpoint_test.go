package weir_test

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/connector/file"
	"github.com/weirstream/weir/state"
)

// TestExactlyOnceAfterFailure runs generator -> map -> exactly-once file
// sink with checkpoints, fails the job once midway, restarts it from the
// latest checkpoint, and checks that every record was committed exactly once.
func TestExactlyOnceAfterFailure(t *testing.T) {
	for _, p := range []int{1, 2} {
		t.Run("p="+strconv.Itoa(p), func(t *testing.T) {
			dir := t.TempDir()
			const n = 20000
			store := weir.NewMemoryCheckpointStore()
			env := weir.NewEnvironment(weir.WithParallelism(p), weir.WithBufferSize(64),
				weir.WithRestartStrategy(weir.FixedDelayRestart(2, time.Millisecond)))
			env.EnableCheckpointing(2*time.Millisecond, weir.CheckpointStoreIn(store))
			// The generator holds in the middle until a checkpoint has
			// completed; the map fails once, after that.
			gate := newCkGate(store, nil)
			src := heldGenerate(env, n, func(i int64) int64 { return i }, gate)
			fail, failed := failAfterGate[int64](gate, true)
			m := weir.Map(src, fail)
			file.Sink(weir.Rebalance(m), dir, func(v int64) []byte { return []byte(strconv.FormatInt(v, 10)) })
			if err := env.Execute(t.Context(), "exactly-once"); err != nil {
				t.Fatal(err)
			}
			if !failed.Load() {
				t.Fatal("the job never failed")
			}
			lines, err := file.ReadCommittedLines(dir)
			if err != nil {
				t.Fatal(err)
			}
			got := make([]int, 0, len(lines))
			for _, l := range lines {
				v, _ := strconv.Atoi(l)
				got = append(got, v)
			}
			slices.Sort(got)
			if len(got) != n {
				t.Fatalf("%d records committed, want %d (first ones %v)", len(got), n, got[:min(10, len(got))])
			}
			for i, v := range got {
				if v != i {
					t.Fatalf("record %d missing or repeated (at position %d: %d)", i, i, v)
				}
			}
		})
	}
}

func TestRestartGivesUp(t *testing.T) {
	env := weir.NewEnvironment(weir.WithParallelism(1), weir.WithRestartStrategy(weir.FixedDelayRestart(2, 0)))
	var runs atomic.Int64
	src := weir.FromSlice(env, []int{1, 2, 3})
	weir.SinkFunc(src, func(v int) error {
		if v == 2 {
			runs.Add(1)
			return errors.New("always failing")
		}
		return nil
	})
	err := env.Execute(t.Context(), "give-up")
	if err == nil || runs.Load() != 3 {
		t.Fatalf("err %v after %d runs, want a failure after 3 runs", err, runs.Load())
	}
	if want := fmt.Sprint("giving up after 2 restarts"); !containsStr(err.Error(), want) {
		t.Fatalf("error %q does not say %q", err, want)
	}
}

func containsStr(s, sub string) bool {
	return len(s) >= len(sub) && (s == sub || len(sub) == 0 || indexOf(s, sub) >= 0)
}

func indexOf(s, sub string) int {
	for i := 0; i+len(sub) <= len(s); i++ {
		if s[i:i+len(sub)] == sub {
			return i
		}
	}
	return -1
}

// TestResumeInNewProcessFromDirStore fails a job for good, then starts the
// same job in a new environment from the latest checkpoint in a directory:
// together the two runs commit every record exactly once.
func TestResumeInNewProcessFromDirStore(t *testing.T) {
	out, cps := t.TempDir(), t.TempDir()
	const n = 20000
	build := func(p int, fail bool) (*weir.Environment, *atomic.Bool) {
		st, err := weir.NewDirCheckpointStore(cps)
		if err != nil {
			t.Fatal(err)
		}
		env := weir.NewEnvironment(weir.WithParallelism(p), weir.WithBufferSize(64))
		env.EnableCheckpointing(2*time.Millisecond, weir.CheckpointStoreIn(st), weir.RestoreFromLatest(), weir.RetainCheckpoints(2))
		gate := newCkGate(st, nil)
		src := heldGenerate(env, n, func(i int64) int64 { return i }, gate)
		check, failed := failAfterGate[int64](gate, fail)
		m := weir.Map(src, check)
		file.Sink(m, out, func(v int64) []byte { return []byte(strconv.FormatInt(v, 10)) })
		return env, failed
	}
	failThenResume(t, build, 2, 2)
	lines, err := file.ReadCommittedLines(out)
	if err != nil {
		t.Fatal(err)
	}
	got := make([]int, 0, len(lines))
	for _, l := range lines {
		v, _ := strconv.Atoi(l)
		got = append(got, v)
	}
	slices.Sort(got)
	if len(got) != n {
		t.Fatalf("%d records committed over both runs, want %d", len(got), n)
	}
	for i, v := range got {
		if v != i {
			t.Fatalf("record %d missing or repeated", i)
		}
	}
}

type runningCount struct {
	n state.ValueState[int64]
}

func (c *runningCount) Open(ctx weir.KeyedRuntimeContext[int64]) (err error) {
	c.n, err = weir.GetValueState(ctx, state.Value[int64]("n"))
	return err
}

func (c *runningCount) ProcessElement(v int64, ctx weir.KeyedContext[int64], out weir.Collector[string]) error {
	n, _ := c.n.Value()
	c.n.Update(n + 1)
	out.Collect(fmt.Sprintf("%d:%d", ctx.CurrentKey(), n+1))
	return nil
}

func (c *runningCount) OnTimer(int64, weir.OnTimerContext[int64], weir.Collector[string]) error {
	return nil
}

// TestKeyedStateSurvivesFailure counts per key in ValueState, fails once
// after a checkpoint and restores: the committed output holds every
// running count 1..N of every key exactly once, so the state came back
// exactly as of the checkpoint the sources rewound to. The second run uses
// another parallelism, so key groups move between subtasks.
func TestKeyedStateSurvivesFailure(t *testing.T) {
	out, cps := t.TempDir(), t.TempDir()
	const n, keys = 20000, 50
	build := func(p int, fail bool) (*weir.Environment, *atomic.Bool) {
		st, err := weir.NewDirCheckpointStore(cps)
		if err != nil {
			t.Fatal(err)
		}
		env := weir.NewEnvironment(weir.WithParallelism(p), weir.WithBufferSize(64))
		env.EnableCheckpointing(2*time.Millisecond, weir.CheckpointStoreIn(st), weir.RestoreFromLatest())
		// The generator's splits depend on its parallelism: keep it at 2.
		gate := newCkGate(st, nil)
		src := heldGenerate(env, n, func(i int64) int64 { return i % keys }, gate).SetParallelism(2)
		counted := weir.Process(weir.KeyBy(src, func(v int64) int64 { return v }), &runningCount{})
		check, failed := failAfterGate[string](gate, fail)
		file.Sink(weir.Map(counted, check), out, func(s string) []byte { return []byte(s) })
		return env, failed
	}
	failThenResume(t, build, 2, 3)
	lines, err := file.ReadCommittedLines(out)
	if err != nil {
		t.Fatal(err)
	}
	seenCount := map[string]int{}
	for _, l := range lines {
		seenCount[l]++
	}
	for k := range keys {
		for c := 1; c <= n/keys; c++ {
			if got := seenCount[fmt.Sprintf("%d:%d", k, c)]; got != 1 {
				t.Fatalf("key %d count %d committed %d times", k, c, got)
			}
		}
	}
	if len(lines) != n {
		t.Fatalf("%d lines committed, want %d", len(lines), n)
	}
}
