package weir_test

import (
	"context"
	"fmt"
	"log"
	"log/slog"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/weirstream/weir"
)

// memoryTable stands for an outside system with transactions: records
// written in a transaction become visible (committed) only at Commit.
// The transaction is its id, a string, as TXN must encode with gob.
type memoryTable struct {
	mu        sync.Mutex
	next      int
	pending   map[string][]string
	committed []string
	done      map[string]bool
}

func (m *memoryTable) BeginTransaction(subtask int) (string, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.next++
	return strconv.Itoa(subtask) + "-" + strconv.Itoa(m.next), nil
}

func (m *memoryTable) Write(txn string, v string, _ int64) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.pending[txn] = append(m.pending[txn], v)
	return nil
}

func (m *memoryTable) PreCommit(string) error { return nil }

// Commit is idempotent: a restored checkpoint's transactions are
// committed again.
func (m *memoryTable) Commit(txn string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if !m.done[txn] {
		m.committed = append(m.committed, m.pending[txn]...)
		m.done[txn] = true
	}
	return nil
}

func (m *memoryTable) Abort(txn string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.pending, txn)
	return nil
}

// Checkpoints make a failure invisible in the results: every 20 ms the
// job snapshots the source's position and the running sums; a panic in
// the middle of the input fails the job, the restart strategy restarts
// it from the latest completed checkpoint, and the two-phase-commit sink
// commits each checkpoint's output only when the checkpoint completes,
// so the results of the records read again after the restart are not
// repeated and none are lost.
func ExampleEnvironment_EnableCheckpointing() {
	const n = 1000
	env := weir.NewEnvironment(weir.WithParallelism(1), weir.WithRestartStrategy(weir.FixedDelayRestart(3, 0)),
		weir.WithLogger(slog.New(slog.DiscardHandler))) // the failure and the restart are logged at WARN and INFO

	env.EnableCheckpointing(20 * time.Millisecond)
	var failed atomic.Bool
	nums := weir.Generate(env, n, 2_000, func(i int64) int64 { return i }, weir.NoWatermarks[int64]())
	checked := weir.Map(nums, func(i int64) int64 {
		if i == 600 && !failed.Swap(true) {
			panic("a transient fault at record 600")
		}
		return i
	})
	sums := weir.Sum(weir.KeyBy(checked, func(i int64) int64 { return i % 2 }),
		func(i int64) int64 { return i }, func(v *int64, s int64) { *v = s })
	table := &memoryTable{pending: map[string][]string{}, done: map[string]bool{}}
	weir.AddTwoPhaseCommitSink(weir.Map(sums, func(s int64) string { return strconv.FormatInt(s, 10) }), table)
	if err := env.Execute(context.Background(), "sums"); err != nil {
		log.Fatal(err)
	}
	fmt.Println("failed once:", failed.Load())
	fmt.Println("results:", len(table.committed))
	fmt.Println("distinct:", len(slices.Compact(slices.Sorted(slices.Values(table.committed)))))
	fmt.Println("last two:", table.committed[n-2:])
	// Output:
	// failed once: true
	// results: 1000
	// distinct: 1000
	// last two: [249500 250000]
}
