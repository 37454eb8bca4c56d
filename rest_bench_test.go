package weir_test

import (
	"context"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/rest"
)

// BenchmarkChainedPipelineObserved is BenchmarkChainedPipeline with the
// REST server on and scraped (/metrics and the job's snapshot every
// 100 ms), for BENCHMARKS.md's before/after comparison of the metrics'
// cost.
func BenchmarkChainedPipelineObserved(b *testing.B) {
	srv := rest.New("127.0.0.1:0")
	b.Cleanup(func() { srv.Close() })
	env := weir.NewEnvironment(weir.WithParallelism(1), weir.WithPlugin(srv))
	src := weir.Generate(env, int64(b.N), 0, func(i int64) int64 { return i }, weir.NoWatermarks[int64]())
	m := weir.Map(src, func(v int64) int64 { return v * 3 })
	f := weir.Filter(m, func(v int64) bool { return v&1 == 0 })
	weir.Discard(f)
	b.ReportAllocs()
	b.ResetTimer()
	h, err := env.ExecuteAsync(context.Background(), "bench")
	if err != nil {
		b.Fatal(err)
	}
	go func() {
		t := time.NewTicker(100 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-h.Done():
				return
			case <-t.C:
				for _, p := range []string{"/metrics", "/weir/jobs/" + h.ID() + "/snapshot"} {
					if resp, err := http.Get("http://" + srv.Addr() + p); err == nil {
						io.Copy(io.Discard, resp.Body)
						resp.Body.Close()
					}
				}
			}
		}
	}()
	if err := h.Wait(); err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds()/1e6, "Mrec/s")
}
