package queries

import (
	"context"
	"flag"
	"path/filepath"
	"testing"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/nexmark"
)

var (
	benchEvents = flag.Int64("nexmark.events", 2_000_000, "events per run of BenchmarkQuery")
	benchSource = flag.String("nexmark.source", "memory", "BenchmarkQuery's source: memory (events generated before the timer starts) or generator")
)

// BenchmarkQuery runs each query (and the source alone, gen) on
// -nexmark.events events at parallelism 2 per iteration, as `weir nexmark`
// does, replaying events generated into memory before the timer starts
// (-nexmark.source memory, the default) or generating them in the source
// (-nexmark.source generator); profile one with
//
//	go test -run x -bench 'Query/q11$' -benchtime 1x -cpuprofile cpu.out ./nexmark/queries
func BenchmarkQuery(b *testing.B) {
	var mem *nexmark.Memory
	cfg := nexmark.Config{Events: *benchEvents}
	if *benchSource == "memory" {
		var err error
		if mem, err = nexmark.NewMemory(cfg, 2); err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { mem.Close() })
	}
	dir := b.TempDir()
	side := filepath.Join(dir, "side_input.txt")
	if err := WriteSideInput(side, SideInputRows); err != nil {
		b.Fatal(err)
	}
	for i, q := range append([]Query{Generator}, All...) {
		b.Run(q.Name, func(b *testing.B) {
			var results int64
			for n := 0; b.Loop(); n++ {
				env := weir.NewEnvironment(weir.WithParallelism(2))
				var events weir.DataStream[nexmark.Event]
				if mem != nil {
					events = mem.Source().Events(env)
				} else {
					events = nexmark.Events(env, cfg)
				}
				q.Build(events, Options{SideInput: side, OutputDir: filepath.Join(dir, "out", q.Name, string(rune('a'+i)), string(rune('a'+n%26)))})
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
