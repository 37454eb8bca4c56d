package weir_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/connector/file"
)

// flip147Job builds a bounded job of two uneven sources (a short one that
// finishes at once, a long rate-limited one) whose records go through a
// rebalance to an exactly-once file sink, with a short checkpoint interval
// and a directory checkpoint store (restored from when restore is set).
func flip147Job(t *testing.T, out, cps string, log *captured, restore bool) *weir.Environment {
	t.Helper()
	st, err := weir.NewDirCheckpointStore(cps)
	if err != nil {
		t.Fatal(err)
	}
	env := weir.NewEnvironment(weir.WithParallelism(2), weir.WithBufferSize(16), weir.WithLogger(log.logger()))
	opts := []weir.CheckpointOption{weir.CheckpointStoreIn(st)}
	if restore {
		opts = append(opts, weir.RestoreFromLatest())
	}
	env.EnableCheckpointing(2*time.Millisecond, opts...)
	short := weir.Generate(env, flip147Short, 0, func(i int64) string { return "s" + strconv.FormatInt(i, 10) }, weir.NoWatermarks[string]())
	long := weir.Generate(env, flip147Long, 6000, func(i int64) string { return "l" + strconv.FormatInt(i, 10) }, weir.NoWatermarks[string]())
	all := weir.Map(weir.Rebalance(weir.Union(short, long)), strings.ToUpper)
	file.Sink(all, out, func(s string) []byte { return []byte(s) })
	return env
}

const (
	flip147Short = 40
	flip147Long  = 1500
)

// checkFlip147Output checks that dir's committed lines are every record
// of flip147Job exactly once.
func checkFlip147Output(t *testing.T, dir string) {
	t.Helper()
	lines, err := file.ReadCommittedLines(dir)
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for i := range flip147Short {
		want = append(want, "S"+strconv.Itoa(i))
	}
	for i := range flip147Long {
		want = append(want, "L"+strconv.Itoa(i))
	}
	slices.Sort(want)
	slices.Sort(lines)
	if slices.Equal(lines, want) {
		return
	}
	seen := map[string]int{}
	for _, l := range lines {
		seen[l]++
	}
	var missing, repeated []string
	for _, w := range want {
		switch n := seen[w]; {
		case n == 0:
			missing = append(missing, w)
		case n > 1:
			repeated = append(repeated, fmt.Sprintf("%s x%d", w, n))
		}
	}
	t.Fatalf("%d lines committed, want %d: missing %d %v, repeated %d %v", len(lines), len(want),
		len(missing), missing[:min(len(missing), 10)], len(repeated), repeated[:min(len(repeated), 10)])
}

// completedCheckpoints returns the INFO "completed checkpoint" records.
func completedCheckpoints(log *captured) []capturedRecord {
	var out []capturedRecord
	for _, r := range log.all() {
		if r.msg == "completed checkpoint" && r.level == "INFO" {
			out = append(out, r)
		}
	}
	return out
}

// TestCheckpointsAfterTasksFinish runs a bounded job whose sources finish
// unevenly, with a 2 ms checkpoint interval: checkpoints complete after
// the short source's tasks have finished (they count with their final
// state), the job ends with a final checkpoint that commits the sink's
// last transactions, every record is committed exactly once, and a
// restore of the finished job from its latest checkpoint (as a restarted
// process with RestoreFromLatest) commits nothing more.
func TestCheckpointsAfterTasksFinish(t *testing.T) {
	out, cps := t.TempDir(), t.TempDir()
	log := &captured{}
	if err := flip147Job(t, out, cps, log, false).Execute(t.Context(), "flip147"); err != nil {
		t.Fatal(err)
	}
	checkFlip147Output(t, out)
	done := completedCheckpoints(log)
	if len(done) == 0 {
		t.Fatal("no completed checkpoint was logged")
	}
	afterFinish := 0
	for _, r := range done {
		if v := r.attr("finished_tasks"); len(v) == 1 && v[0] != "0" {
			afterFinish++
		}
	}
	if afterFinish == 0 {
		t.Fatalf("no checkpoint completed after a task had finished; completed: %v", done)
	}

	// The finished job again, from its latest checkpoint: the final one.
	log2 := &captured{}
	if err := flip147Job(t, out, cps, log2, true).Execute(t.Context(), "flip147"); err != nil {
		t.Fatal(err)
	}
	checkFlip147Output(t, out)
	restored := false
	for _, r := range log2.all() {
		if strings.Contains(r.msg, "restor") {
			restored = true
		}
	}
	if !restored {
		t.Fatalf("the second run did not log a restore: %v", log2.all())
	}
}

// failingStore fails the first fails saves, then saves in its inner store.
type failingStore struct {
	weir.CheckpointStore
	fails atomic.Int64
}

func (f *failingStore) Save(ctx context.Context, cp *weir.Checkpoint) error {
	if f.fails.Add(-1) >= 0 {
		return errors.New("disk on fire")
	}
	return f.CheckpointStore.Save(ctx, cp)
}

// TestCheckpointLogLines checks the checkpoint log entries: one INFO
// "completed checkpoint" per completed checkpoint with its id, size and
// duration, and one WARN "checkpoint failed" per failed checkpoint with
// its cause.
func TestCheckpointLogLines(t *testing.T) {
	log := &captured{}
	st := &failingStore{CheckpointStore: weir.NewMemoryCheckpointStore()}
	st.fails.Store(2)
	env := weir.NewEnvironment(weir.WithParallelism(1), weir.WithLogger(log.logger()))
	env.EnableCheckpointing(2*time.Millisecond, weir.CheckpointStoreIn(st), weir.TolerableCheckpointFailures(10))
	src := weir.Generate(env, 300, 3000, func(i int64) int64 { return i }, weir.NoWatermarks[int64]())
	weir.AddTwoPhaseCommitSink[int64](src, &memTxnSink{})
	if err := env.Execute(t.Context(), "logged"); err != nil {
		t.Fatal(err)
	}
	var failed []capturedRecord
	for _, r := range log.all() {
		if r.msg == "checkpoint failed" {
			failed = append(failed, r)
		}
	}
	if len(failed) != 2 {
		t.Fatalf("%d checkpoint failures logged, want 2: %v", len(failed), log.all())
	}
	for _, r := range failed {
		if r.level != "WARN" || !strings.Contains(r.text, "disk on fire") || len(r.attr("checkpoint")) != 1 || len(r.attr("job")) != 1 {
			t.Fatalf("failure entry %v: want WARN with the checkpoint, the job and the cause", r)
		}
	}
	done := completedCheckpoints(log)
	if len(done) == 0 {
		t.Fatal("no completed checkpoint was logged")
	}
	ids := map[string]bool{}
	for _, r := range done {
		id, size, dur := r.attr("checkpoint"), r.attr("bytes"), r.attr("duration_ms")
		if len(id) != 1 || len(size) != 1 || len(dur) != 1 || len(r.attr("job")) != 1 {
			t.Fatalf("completed entry %v lacks the checkpoint, bytes, duration_ms or job", r)
		}
		if n, err := strconv.Atoi(size[0]); err != nil || n <= 0 {
			t.Fatalf("completed entry %v: size %q, want a positive byte count", r, size[0])
		}
		if ids[id[0]] {
			t.Fatalf("checkpoint %s logged as completed twice", id[0])
		}
		ids[id[0]] = true
	}
	if got := st.CheckpointStore.(*weir.MemoryCheckpointStore).IDs(); len(got) != 1 || !ids[strconv.FormatInt(got[0], 10)] {
		t.Fatalf("the stored checkpoint %v was not logged as completed (logged %v)", got, ids)
	}
}

// memTxnSink is a two-phase-commit sink into memory.
type memTxnSink struct{ committed atomic.Int64 }

func (s *memTxnSink) BeginTransaction(int) (*memTxn, error) { return &memTxn{}, nil }
func (s *memTxnSink) Write(txn *memTxn, v int64, _ int64) error {
	txn.Values = append(txn.Values, v)
	return nil
}
func (s *memTxnSink) PreCommit(*memTxn) error { return nil }
func (s *memTxnSink) Commit(txn *memTxn) error {
	s.committed.Add(int64(len(txn.Values)))
	return nil
}
func (s *memTxnSink) Abort(*memTxn) error { return nil }

type memTxn struct{ Values []int64 }
