package weir_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"os"
	"sync"
	"time"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/window"
)

// A watermark strategy for out-of-order events: the watermark trails the
// largest timestamp seen by the bound, so a window waits for events up to
// that late. The event at 9 s arrives after the one at 11 s, within the
// 5 s bound, and still counts in the first window.
func ExampleForBoundedOutOfOrderness() {
	env := weir.NewEnvironment(weir.WithParallelism(1))
	type reading struct {
		Sensor string
		At     int64 // ms
	}
	var recs []weir.Record[reading]
	for _, r := range []reading{{"s1", 1_000}, {"s1", 11_000}, {"s1", 9_000}, {"s1", 21_000}} {
		recs = append(recs, weir.Record[reading]{Value: r, TS: r.At})
	}
	readings := weir.FromRecords(env, recs, weir.ForBoundedOutOfOrderness[reading](5*time.Second))
	perTen := weir.Window(weir.KeyBy(readings, func(r reading) string { return r.Sensor }), window.TumblingEventTime(10*time.Second))
	weir.Print(weir.ApplyFunc(perTen, func(s string, w window.TimeWindow, rs []reading, out weir.Collector[string]) error {
		out.Collect(fmt.Sprintf("%s [%d, %d): %d readings", s, w.Start, w.End, len(rs)))
		return nil
	}))
	if err := env.Execute(context.Background(), "readings"); err != nil {
		log.Fatal(err)
	}
	// Output:
	// s1 [0, 10000): 2 readings
	// s1 [10000, 20000): 1 readings
	// s1 [20000, 30000): 1 readings
}

// A window join pairs the elements of two keyed streams that fall into
// the same window: every pair of the key in the window, as Flink's
// join(...).where(...).equalTo(...).window(...).apply(...).
func ExampleWindowJoin() {
	env := weir.NewEnvironment(weir.WithParallelism(1))
	views := weir.KeyBy(clicks(env, Click{"ann", 1_000}, Click{"ann", 12_000}), func(c Click) string { return c.User })
	buys := weir.KeyBy(clicks(env, Click{"ann", 8_000}, Click{"ann", 25_000}), func(c Click) string { return c.User })
	joined := weir.Join(weir.WindowJoin(views, buys, window.TumblingEventTime(10*time.Second)), func(v, b Click) string {
		return fmt.Sprintf("%s viewed at %d, bought at %d", v.User, v.At, b.At)
	})
	weir.Print(joined)
	if err := env.Execute(context.Background(), "same window"); err != nil {
		log.Fatal(err)
	}
	// Output:
	// ann viewed at 1000, bought at 8000
}

// Checkpoints and savepoints: a job stopped with a savepoint resumes from
// it in a new run (here at another source rate), its keyed state intact,
// so the running sums end where one uninterrupted run would.
func ExampleJobHandle_StopWithSavepoint() {
	dir, err := os.MkdirTemp("", "weir-example-")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	const n = 1000
	// job builds the pipeline: n numbers, summed per parity; started is
	// closed when the first number reaches the sums.
	job := func(env *weir.Environment, rate float64, started chan struct{}) *weir.Collected[[2]int64] {
		nums := weir.Generate(env, n, rate, func(i int64) [2]int64 { return [2]int64{i % 2, i} }, weir.NoWatermarks[[2]int64]()).UID("numbers")
		var once sync.Once
		seen := weir.Map(nums, func(v [2]int64) [2]int64 {
			if started != nil {
				once.Do(func() { close(started) })
			}
			return v
		}).UID("seen")
		sums := weir.Sum(weir.KeyBy(seen, func(v [2]int64) int64 { return v[0] }),
			func(v [2]int64) int64 { return v[1] }, func(v *[2]int64, s int64) { v[1] = s })
		return weir.Collect(sums.UID("sums"))
	}

	// The first run reads slowly and is stopped with a savepoint.
	env := weir.NewEnvironment(weir.WithParallelism(1))
	env.EnableCheckpointing(time.Hour, weir.CheckpointStorage(dir+"/checkpoints"))
	started := make(chan struct{})
	job(env, 100, started)
	h, err := env.ExecuteAsync(context.Background(), "sums")
	if err != nil {
		log.Fatal(err)
	}
	<-started
	path, err := h.StopWithSavepoint(context.Background(), dir+"/savepoints")
	if err != nil {
		log.Fatal(err)
	}
	if err := h.Wait(); !errors.Is(err, weir.ErrStopped) {
		log.Fatal(err)
	}

	// The second run starts from the savepoint and reads the rest.
	env = weir.NewEnvironment(weir.WithParallelism(1), weir.RestoreFromSavepoint(path))
	out := job(env, 0, nil)
	if err := env.Execute(context.Background(), "sums"); err != nil {
		log.Fatal(err)
	}
	last := map[int64]int64{}
	for _, v := range out.Values() {
		last[v[0]] = v[1]
	}
	fmt.Println("even:", last[0], "odd:", last[1])
	// Output:
	// even: 249500 odd: 250000
}
