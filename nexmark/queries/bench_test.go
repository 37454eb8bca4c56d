package queries

import (
	"context"
	"flag"
	"testing"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/nexmark"
)

var benchEvents = flag.Int64("nexmark.events", 2_000_000, "events per run of BenchmarkQuery")

// BenchmarkQuery runs each query (and the generator baseline) on
// -nexmark.events events at parallelism 2 per iteration, as `weir nexmark`
// does; profile one with
//
//	go test -run x -bench 'Query/q11$' -benchtime 1x -cpuprofile cpu.out ./nexmark/queries
func BenchmarkQuery(b *testing.B) {
	for _, q := range append([]Query{Generator}, All...) {
		b.Run(q.Name, func(b *testing.B) {
			var results int64
			for b.Loop() {
				env := weir.NewEnvironment(weir.WithParallelism(2))
				q.Build(nexmark.Events(env, nexmark.Config{Events: *benchEvents}))
				h, err := env.ExecuteAsync(context.Background(), q.Name)
				if err != nil {
					b.Fatal(err)
				}
				if err := h.Wait(); err != nil {
					b.Fatal(err)
				}
				results = Results(h)
			}
			b.ReportMetric(float64(*benchEvents)*float64(b.N)/b.Elapsed().Seconds(), "events/s")
			b.ReportMetric(float64(results), "results")
		})
	}
}
