package weir_test

import (
	"context"
	"testing"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/state"
)

// BenchmarkChainedPipeline runs generator -> map -> filter -> discard at
// parallelism 1, all chained into one task; one op is one record.
func BenchmarkChainedPipeline(b *testing.B) {
	env := weir.NewEnvironment(weir.WithParallelism(1))
	src := weir.Generate(env, int64(b.N), 0, func(i int64) int64 { return i }, weir.NoWatermarks[int64]())
	m := weir.Map(src, func(v int64) int64 { return v * 3 })
	f := weir.Filter(m, func(v int64) bool { return v&1 == 0 })
	weir.Discard(f)
	b.ReportAllocs()
	b.ResetTimer()
	if err := env.Execute(context.Background(), "bench"); err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds()/1e6, "Mrec/s")
}

type benchCount struct {
	count state.ValueState[int64]
}

func (c *benchCount) Open(ctx weir.KeyedRuntimeContext[int64]) error {
	var err error
	c.count, err = weir.GetValueState(ctx, state.Value[int64]("count"))
	return err
}

func (c *benchCount) ProcessElement(v int64, _ weir.KeyedContext[int64], _ weir.Collector[int64]) error {
	n, _ := c.count.Value()
	c.count.Update(n + 1)
	return nil
}

func (c *benchCount) OnTimer(int64, weir.OnTimerContext[int64], weir.Collector[int64]) error {
	return nil
}

// BenchmarkKeyedCount runs generator -> keyBy -> ValueState count over 10k
// keys; records cross the hash exchange.
func BenchmarkKeyedCount(b *testing.B) {
	for _, p := range []int{1, 2} {
		b.Run("p="+string(rune('0'+p)), func(b *testing.B) {
			env := weir.NewEnvironment(weir.WithParallelism(p))
			src := weir.Generate(env, int64(b.N), 0, func(i int64) int64 { return i % 10000 }, weir.NoWatermarks[int64]())
			counts := weir.Process(weir.KeyBy(src, func(v int64) int64 { return v }), &benchCount{})
			weir.Discard(counts)
			b.ReportAllocs()
			b.ResetTimer()
			if err := env.Execute(context.Background(), "bench"); err != nil {
				b.Fatal(err)
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds()/1e6, "Mrec/s")
		})
	}
}
