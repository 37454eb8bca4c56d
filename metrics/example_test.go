package metrics_test

import (
	"fmt"

	"github.com/weirstream/weir/metrics"
)

// A function registers its metrics from RuntimeContext.Metrics() in
// Open; a test can give it a group of its own and read the values back.
func ExampleGroup() {
	g := metrics.NewGroup("enrich")
	seen := g.Counter("seen")
	latency := g.Histogram("latency_ms")
	queued := 3.0
	g.Gauge("queued", func() float64 { return queued })

	for i := int64(1); i <= 100; i++ {
		seen.Inc()
		latency.Update(i)
	}
	for _, m := range g.Values() {
		if m.Histogram != nil {
			fmt.Printf("%s %s count=%v max=%d p50=%.1f\n", m.Name, m.Kind, m.Value, m.Histogram.Max, m.Histogram.P50)
			continue
		}
		fmt.Printf("%s %s %v\n", m.Name, m.Kind, m.Value)
	}
	// Output:
	// latency_ms histogram count=100 max=100 p50=50.5
	// queued gauge 3
	// seen counter 100
}
