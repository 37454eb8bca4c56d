package weir_test

import (
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/connector/file"
)

// TestIntervalJoinSurvivesFailure runs a full outer interval join with
// checkpoints into an exactly-once file sink, fails once after a
// checkpoint and resumes at another parallelism from the latest one: the
// committed output is exactly the output of an uninterrupted run (every
// pair and every unmatched record once), so the buffers, joined flags and
// pending cleanups came back by key group. Both generators of the failing
// run hold in the middle until a checkpoint has completed.
func TestIntervalJoinSurvivesFailure(t *testing.T) {
	const n = 20000
	type rec struct{ K, ID, TS int64 }
	strategy := weir.ForMonotonousTimestamps[rec]().WithTimestampAssigner(func(r rec, _ int64) int64 { return r.TS })
	job := func(env *weir.Environment, gate *ckGate) weir.DataStream[string] {
		// The generators' splits depend on their parallelism: keep it at 2.
		left := heldGenerate(env, n, func(i int64) rec { return rec{i % 50, i, i / 4} }, gate, strategy).SetParallelism(2)
		right := heldGenerate(env, n, func(i int64) rec {
			if i%5 == 0 {
				return rec{1000 + i%7, -i, i / 4} // never matches
			}
			return rec{i % 50, -i, i/4 + 2}
		}, gate, strategy).SetParallelism(2)
		k := func(r rec) int64 { return r.K }
		return weir.IntervalOuterJoinFunc(weir.KeyBy(left, k), weir.KeyBy(right, k), weir.Between(0, 3*time.Millisecond), weir.FullOuter,
			func(l, r *rec, ctx weir.JoinContext, out weir.Collector[string]) error {
				s := "l"
				if l != nil {
					s += fmt.Sprint(l.ID)
				}
				s += " r"
				if r != nil {
					s += fmt.Sprint(r.ID)
				}
				out.Collect(fmt.Sprintf("%s @%d", s, ctx.Timestamp()))
				return nil
			})
	}
	ref := weir.NewEnvironment(weir.WithParallelism(1))
	want := weir.Collect(job(ref, nil))
	if err := ref.Execute(t.Context(), "reference"); err != nil {
		t.Fatal(err)
	}
	out, cps := t.TempDir(), t.TempDir()
	build := func(p int, fail bool) (*weir.Environment, *atomic.Bool) {
		st, err := weir.NewDirCheckpointStore(cps)
		if err != nil {
			t.Fatal(err)
		}
		env := weir.NewEnvironment(weir.WithParallelism(p), weir.WithBufferSize(64))
		env.EnableCheckpointing(2*time.Millisecond, weir.CheckpointStoreIn(st), weir.RestoreFromLatest())
		gate := newCkGate(st, nil)
		check, failed := failAfterGate[string](gate, fail)
		file.Sink(weir.Map(job(env, gate), check), out, func(s string) []byte { return []byte(s) })
		return env, failed
	}
	failThenResume(t, build, 2, 3)
	got, err := file.ReadCommittedLines(out)
	if err != nil {
		t.Fatal(err)
	}
	w := want.Values()
	slices.Sort(w)
	slices.Sort(got)
	if !slices.Equal(got, w) {
		t.Fatalf("committed %d lines, want %d (the uninterrupted output)", len(got), len(w))
	}
	unmatched := 0
	for _, s := range w {
		if strings.HasPrefix(s, "l r") || strings.Contains(s, "r @") {
			unmatched++
		}
	}
	if unmatched == 0 || unmatched == len(w) {
		t.Fatalf("%d of %d outputs unmatched: the test covers nothing", unmatched, len(w))
	}
}
