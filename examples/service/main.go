// Command service counts records per key as a long-running service that
// keeps its state across restarts and deploys, with weir's RunService:
// on start it resumes from the newest savepoint or checkpoint in -dir, on
// SIGTERM (or Ctrl-C) it stops the job with a savepoint there and exits
// 0, and when its input ends it prints each key's final count.
//
// The input is a generator of -n records at -rate per second, record i of
// key i mod -keys; each key's count is kept in an event-time window that
// ends only with the input, so the counts are printed once, at the end,
// and each is exactly n/keys however often the service was stopped and
// started again:
//
//	go run ./examples/service -dir /tmp/counts    # Ctrl-C, then again:
//	go run ./examples/service -dir /tmp/counts
//
// See docs/operations.md.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"time"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/window"
)

// Event is one generated record: its key and its event time (ms).
type Event struct {
	Key int64
	TS  int64
}

// KeyCount is a key's count.
type KeyCount struct {
	Key   int64
	Count int64
}

// Build adds the job to env: n records (at rate per second) over keys
// keys, counted per key in one event-time window that closes when the
// input ends; every final count is written to out as "key K: N".
func Build(env *weir.Environment, n, keys int64, rate float64, out io.Writer) {
	wm := weir.ForMonotonousTimestamps[Event]().WithTimestampAssigner(func(e Event, _ int64) int64 { return e.TS })
	events := weir.Generate(env, n, rate, func(i int64) Event { return Event{Key: i % keys, TS: i} }, wm).UID("events")
	ones := weir.Map(events, func(e Event) KeyCount { return KeyCount{Key: e.Key, Count: 1} }).UID("ones")
	// One window of 100 years holds every record: it fires at the end
	// of the input (the maximum watermark), never before.
	windows := weir.Window(weir.KeyBy(ones, func(c KeyCount) int64 { return c.Key }), window.TumblingEventTime(100*365*24*time.Hour))
	counts := weir.Reduce(windows, func(a, b KeyCount) KeyCount { return KeyCount{Key: a.Key, Count: a.Count + b.Count} }).UID("counts")
	var mu sync.Mutex
	weir.SinkFunc(counts, func(c KeyCount) error {
		mu.Lock()
		defer mu.Unlock()
		_, err := fmt.Fprintf(out, "key %d: %d\n", c.Key, c.Count)
		return err
	})
}

func main() {
	dir := flag.String("dir", "service-state", "directory of the job's savepoints and checkpoints")
	n := flag.Int64("n", 10_000, "records to count")
	keys := flag.Int64("keys", 10, "number of keys")
	rate := flag.Float64("rate", 1000, "records per second (0: as fast as possible)")
	parallelism := flag.Int("parallelism", 2, "parallelism")
	flag.Parse()
	if *n < 0 || *keys < 1 || *rate < 0 || *parallelism < 1 {
		fmt.Fprintln(os.Stderr, "service: -n, -rate must not be negative, -keys and -parallelism must be at least 1")
		os.Exit(2)
	}

	// recipe:begin
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	env := weir.NewEnvironment(weir.WithParallelism(*parallelism))
	env.EnableCheckpointing(time.Second) // checkpoints go to dir/checkpoints
	Build(env, *n, *keys, *rate, os.Stdout)
	res, err := env.RunService(ctx, "counts", *dir, weir.OnServiceStart(func(h *weir.JobHandle) {
		log.Printf("running job %s", h.ID())
	}))
	if err != nil {
		log.Fatal(err)
	}
	switch res.Status {
	case weir.JobStoppedWithSavepoint:
		log.Printf("stopped with savepoint %s", res.Savepoint) // the next start resumes from it
	default:
		log.Printf("job %s", res.Status) // FINISHED: every count was printed
	}
	// recipe:end
}
