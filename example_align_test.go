package weir_test

import (
	"context"
	"fmt"
	"log"
	"time"

	"github.com/weirstream/weir"
)

// Two sources in one watermark alignment group: neither reads more than
// 100 ms of event time ahead of the other's watermark (checked every 10
// ms), so the interval join between them buffers at most about the drift's
// worth of the faster one. Alignment changes what is held, never what is
// emitted.
func ExampleWatermarkStrategy_WithWatermarkAlignment() {
	env := weir.NewEnvironment(weir.WithParallelism(1))
	strategy := weir.ForMonotonousTimestamps[int64]().
		WithTimestampAssigner(func(v int64, _ int64) int64 { return v }).
		WithWatermarkAlignment("orders-and-payments", 100*time.Millisecond, 10*time.Millisecond)
	orders := weir.Generate(env, 1000, 0, func(i int64) int64 { return i * 10 }, strategy) // 10 ms apart
	payments := weir.Generate(env, 10000, 0, func(i int64) int64 { return i }, strategy)   // 1 ms apart
	key := func(int64) int { return 0 }
	pairs := weir.IntervalJoinFunc(weir.KeyBy(orders, key), weir.KeyBy(payments, key), weir.Between(0, 0),
		func(o, p int64, _ weir.JoinContext, out weir.Collector[int]) error {
			out.Collect(1)
			return nil
		})
	n := weir.Collect(pairs)
	if err := env.Execute(context.Background(), "aligned"); err != nil {
		log.Fatal(err)
	}
	fmt.Println(n.Len(), "pairs")
	// Output: 1000 pairs
}
