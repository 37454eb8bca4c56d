package weir_test

import (
	"context"
	"fmt"
	"log"
	"time"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/window"
)

// Click is a user's click on a page, with its event time (ms).
type Click struct {
	User string
	At   int64
}

func clicks(env *weir.Environment, cs ...Click) weir.DataStream[Click] {
	recs := make([]weir.Record[Click], len(cs))
	for i, c := range cs {
		recs[i] = weir.Record[Click]{Value: c, TS: c.At}
	}
	return weir.FromRecords(env, recs, weir.ForMonotonousTimestamps[Click]())
}

// A tumbling event-time window per key, reduced incrementally: a window
// fires when the watermark passes its end (here, at the end of the
// bounded input), and its result carries the window's last millisecond.
func ExampleWindow() {
	env := weir.NewEnvironment(weir.WithParallelism(1))
	byUser := weir.KeyBy(clicks(env, Click{"ann", 1_000}, Click{"ann", 4_000}, Click{"ann", 12_000}),
		func(c Click) string { return c.User })
	perTen := weir.Window(byUser, window.TumblingEventTime(10*time.Second))
	counts := weir.ProcessWindowFunc(perTen, func(user string, ctx weir.ProcessWindowContext[window.TimeWindow], cs []Click, out weir.Collector[string]) error {
		w := ctx.Window()
		out.Collect(fmt.Sprintf("%s: %d clicks in [%d, %d)", user, len(cs), w.Start, w.End))
		return nil
	})
	weir.Print(counts)
	if err := env.Execute(context.Background(), "windows"); err != nil {
		log.Fatal(err)
	}
	// Output:
	// ann: 2 clicks in [0, 10000)
	// ann: 1 clicks in [10000, 20000)
}

// A trigger decides when a window fires: here a global window per key
// fires and is purged every two elements (Flink's countWindow(2)).
func ExampleWindowedStream_Trigger() {
	env := weir.NewEnvironment(weir.WithParallelism(1))
	byParity := weir.KeyBy(weir.FromSlice(env, []int{1, 2, 3, 4, 5, 7}), func(v int) bool { return v%2 == 0 })
	pairs := weir.Window(byParity, window.Global()).Trigger(window.PurgingTrigger(window.CountTrigger(2)))
	weir.Print(weir.Reduce(pairs, func(a, b int) int { return a + b }))
	if err := env.Execute(context.Background(), "pairs"); err != nil {
		log.Fatal(err)
	}
	// Output:
	// 4
	// 6
	// 12
}

// An interval join pairs each left record with the right records of the
// same key whose timestamps lie within the bounds: right - left in
// [lower, upper].
func ExampleIntervalJoinFunc() {
	env := weir.NewEnvironment(weir.WithParallelism(1))
	views := weir.KeyBy(clicks(env, Click{"ann", 1_000}, Click{"bob", 2_000}), func(c Click) string { return c.User })
	buys := weir.KeyBy(clicks(env, Click{"ann", 3_000}, Click{"bob", 9_000}), func(c Click) string { return c.User })
	joined := weir.IntervalJoinFunc(views, buys, weir.Between(0, 5*time.Second),
		func(v, b Click, _ weir.JoinContext, out weir.Collector[string]) error {
			out.Collect(fmt.Sprintf("%s viewed at %d, bought at %d", v.User, v.At, b.At))
			return nil
		})
	weir.Print(joined)
	if err := env.Execute(context.Background(), "conversions"); err != nil {
		log.Fatal(err)
	}
	// Output:
	// ann viewed at 1000, bought at 3000
}

// A window join pairs the records of two keyed streams with the same key
// in the same window; CoGroup sees both sides of each window, matched or
// not.
func ExampleCoGroup() {
	env := weir.NewEnvironment(weir.WithParallelism(1))
	views := weir.KeyBy(clicks(env, Click{"ann", 1_000}, Click{"ann", 2_000}, Click{"bob", 3_000}), func(c Click) string { return c.User })
	buys := weir.KeyBy(clicks(env, Click{"ann", 4_000}), func(c Click) string { return c.User })
	both := weir.WindowJoin(views, buys, window.TumblingEventTime(10*time.Second))
	weir.Print(weir.Join(both, func(v, b Click) string { return fmt.Sprintf("join: %s %d-%d", v.User, v.At, b.At) }))
	weir.Print(weir.CoGroup(both, func(user string, _ window.TimeWindow, vs, bs []Click, out weir.Collector[string]) error {
		out.Collect(fmt.Sprintf("coGroup: %s %d views, %d buys", user, len(vs), len(bs)))
		return nil
	}))
	if err := env.Execute(context.Background(), "funnel"); err != nil {
		log.Fatal(err)
	}
	// Unordered output:
	// join: ann 1000-4000
	// join: ann 2000-4000
	// coGroup: ann 2 views, 1 buys
	// coGroup: bob 1 views, 0 buys
}
