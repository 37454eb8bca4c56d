package weir_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/weirstream/weir"
)

// BenchmarkKeyedCountCheckpointed is the keyed count of BenchmarkKeyedCount
// over 1M keys at parallelism 2, without checkpoints and with a checkpoint
// every second into a directory store (issue 6: the checkpointed run keeps
// >= 90% of the throughput). Run it with enough records to span several
// checkpoints, e.g. -benchtime 100000000x. With checkpoints it also reports
// the time a keyed subtask's goroutine spends per checkpoint in the
// synchronous part of its snapshot (ms/sync-snapshot: processing stops
// for it) and the time of the asynchronous part (ms/async-snapshot, on
// another goroutine), averaged over the keyed subtasks' checkpoints.
func BenchmarkKeyedCountCheckpointed(b *testing.B) {
	for _, every := range []time.Duration{0, time.Second} {
		name := "checkpoints=off"
		if every > 0 {
			name = "checkpoints=" + every.String()
		}
		b.Run(name, func(b *testing.B) {
			env := weir.NewEnvironment(weir.WithParallelism(2))
			if every > 0 {
				st, err := weir.NewDirCheckpointStore(b.TempDir())
				if err != nil {
					b.Fatal(err)
				}
				env.EnableCheckpointing(every, weir.CheckpointStoreIn(st), weir.RetainCheckpoints(2))
			}
			src := weir.Generate(env, int64(b.N), 0, func(i int64) int64 { return i % 1_000_000 }, weir.NoWatermarks[int64]())
			weir.Discard(weir.Process(weir.KeyBy(src, func(v int64) int64 { return v }), &benchCount{}))
			b.ResetTimer()
			cpu0 := cpuTime(b)
			h, err := env.ExecuteAsync(context.Background(), "bench")
			if err != nil {
				b.Fatal(err)
			}
			if err := h.Wait(); err != nil {
				b.Fatal(err)
			}
			reportThroughput(b, int64(b.N), cpuTime(b)-cpu0)
			if every > 0 {
				var n int64
				var sync, async time.Duration
				for _, m := range h.Metrics() {
					if strings.HasPrefix(m.Task, "KeyedProcess") {
						n += m.Checkpoints
						sync += m.CheckpointSync
						async += m.CheckpointAsync
					}
				}
				if n > 0 {
					b.ReportMetric(float64(sync.Microseconds())/1e3/float64(n), "ms/sync-snapshot")
					b.ReportMetric(float64(async.Microseconds())/1e3/float64(n), "ms/async-snapshot")
				}
			}
		})
	}
}
