// Command continuous-count counts the lines read from a TCP socket in
// 200-second processing-time windows and reports the count so far every 5
// seconds, the example of Flink's continuous-trigger walkthrough:
//
//	text.windowAll(TumblingProcessingTimeWindows.of(Time.seconds(200)))
//	    .trigger(ContinuousProcessingTimeTrigger.of(Time.seconds(5)))
//	    .process(count)
//	    .print()
//
// Start a text server, then the job, and type lines into the server:
//
//	nc -lk 9999
//	go run ./examples/continuous-count -port 9999
//
// Every line is one element. weir.WindowAll puts all of them in one subtask;
// window.TumblingProcessingTime assigns each to the 200-second window
// (aligned to the epoch) that contains the processing time at which it
// arrives; window.ContinuousProcessingTimeTrigger fires that window at every
// multiple of 5 seconds after its first element and once more at its last
// millisecond. The contents are never purged, so each firing reports the
// cumulative count, also when no line arrived since the previous firing,
// and a window that received nothing prints nothing. The count is an
// incremental aggregate (one int64 per window, not the lines); a
// ProcessWindowFunction adds the window and the firing time. See docs/windows.md
// for a session.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"time"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/connector/socket"
	"github.com/weirstream/weir/window"
)

// Defaults of the walkthrough.
const (
	DefaultSize     = 200 * time.Second // window size
	DefaultInterval = 5 * time.Second   // continuous trigger interval
)

// WindowCount is one firing of a window: the number of lines the window has
// received so far.
type WindowCount struct {
	At    int64 // processing time of the firing, ms since the Unix epoch
	Start int64 // first millisecond of the window
	End   int64 // first millisecond after the window
	Count int64
}

// String formats the firing as
// "00:00:05 count 2 in window [00:00:00, 00:03:20)": the time of day in UTC
// of the firing (to the second: a firing runs a few ms after its due time)
// and of the window's bounds (with milliseconds when they are not zero).
func (c WindowCount) String() string {
	return fmt.Sprintf("%s count %d in window [%s, %s)", utc(c.At, "15:04:05"), c.Count,
		utc(c.Start, "15:04:05.999"), utc(c.End, "15:04:05.999"))
}

// utc formats ms since the epoch as a UTC time of day.
func utc(ms int64, layout string) string { return time.UnixMilli(ms).UTC().Format(layout) }

// Count is the AggregateFunction that counts elements: the accumulator is
// the count itself.
type Count struct{}

// CreateAccumulator returns 0.
func (Count) CreateAccumulator() int64 { return 0 }

// Add counts one line.
func (Count) Add(_ string, n int64) int64 { return n + 1 }

// GetResult returns the count.
func (Count) GetResult(n int64) int64 { return n }

// Merge adds two counts.
func (Count) Merge(a, b int64) int64 { return a + b }

// describe is the ProcessWindowFunction that turns the count of a firing
// into a WindowCount.
func describe(_ weir.NoKey, ctx weir.ProcessWindowContext[window.TimeWindow], counts []int64, out weir.Collector[WindowCount]) error {
	w := ctx.Window()
	out.Collect(WindowCount{At: ctx.CurrentProcessingTime(), Start: w.Start, End: w.End, Count: counts[0]})
	return nil
}

// Build adds the windowed count of lines to the job: all lines in
// processing-time tumbling windows of size, fired every interval by a
// continuous processing-time trigger. Each firing emits the count so far
// (timestamped with the window's last millisecond).
func Build(lines weir.DataStream[string], size, interval time.Duration) weir.DataStream[WindowCount] {
	windowed := weir.WindowAll(lines, window.TumblingProcessingTime(size)).
		Trigger(window.ContinuousProcessingTimeTrigger(interval))
	return weir.AggregateWithProcessFunc(windowed, Count{}, describe).Name("count")
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "continuous-count:", err)
		os.Exit(1)
	}
}

// run parses the flags and runs the job until the server closes the
// connection (after -retries reconnects) or ctx ends.
func run(ctx context.Context, args []string, stdout io.Writer, opts ...weir.Option) error {
	job, err := start(ctx, args, stdout, opts...)
	if err != nil {
		return err
	}
	err = job.Wait()
	if errors.Is(err, context.Canceled) {
		return nil // interrupted
	}
	return err
}

// start parses the flags and starts the job; opts are added to the
// environment's (a manual clock in tests).
func start(ctx context.Context, args []string, stdout io.Writer, opts ...weir.Option) (*weir.JobHandle, error) {
	fs := flag.NewFlagSet("continuous-count", flag.ContinueOnError)
	host := fs.String("host", "localhost", "host of the text server")
	port := fs.Int("port", 9999, "port of the text server")
	size := fs.Duration("size", DefaultSize, "window size (processing time, aligned to the epoch)")
	interval := fs.Duration("interval", DefaultInterval, "how often a window reports its count so far")
	retries := fs.Int("retries", 0, "reconnects after the server closes the connection (-1: forever)")
	delay := fs.Duration("retry-delay", 500*time.Millisecond, "pause before a reconnect")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	env := weir.NewEnvironment(append([]weir.Option{weir.WithParallelism(1), weir.WithStdout(stdout)}, opts...)...)
	lines := socket.TextStream(env, *host, *port, socket.Options{MaxRetries: *retries, RetryDelay: *delay})
	weir.Print(Build(lines, *size, *interval))
	return env.ExecuteAsync(ctx, "continuous-count")
}
