package weir_test

import (
	"context"
	"testing"
	"time"

	"github.com/weirstream/weir"
)

// BenchmarkKeyedCountCheckpointed is the keyed count of BenchmarkKeyedCount
// over 1M keys at parallelism 2, without checkpoints and with a checkpoint
// every second into a directory store (issue 6: the checkpointed run keeps
// >= 90% of the throughput). Run it with enough records to span several
// checkpoints, e.g. -benchtime 100000000x.
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
				env.EnableCheckpointing(every, weir.WithCheckpointStore(st), weir.RetainCheckpoints(2))
			}
			src := weir.Generate(env, int64(b.N), 0, func(i int64) int64 { return i % 1_000_000 }, weir.NoWatermarks[int64]())
			weir.Discard(weir.Process(weir.KeyBy(src, func(v int64) int64 { return v }), &benchCount{}))
			b.ResetTimer()
			cpu0 := cpuTime(b)
			if err := env.Execute(context.Background(), "bench"); err != nil {
				b.Fatal(err)
			}
			reportThroughput(b, int64(b.N), cpuTime(b)-cpu0)
		})
	}
}
