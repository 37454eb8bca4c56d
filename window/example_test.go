package window_test

import (
	"context"
	"fmt"
	"io"
	"log"
	"time"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/connector"
	"github.com/weirstream/weir/weirtest"
	"github.com/weirstream/weir/window"
)

// Reading is a sensor's reading with its event time (ms).
type Reading struct {
	Sensor string
	Value  int
	At     int64
}

// readings makes a bounded stream with a watermark after every reading
// (its time - 1 ms), so that event-time triggers fire between readings.
func readings(env *weir.Environment, rs ...Reading) weir.KeyedStream[string, Reading] {
	recs := make([]weir.Record[Reading], len(rs))
	for i, r := range rs {
		recs[i] = weir.Record[Reading]{Value: r, TS: r.At}
	}
	src := weir.FromRecords(env, recs, weir.ForGenerator(func() weir.WatermarkGenerator[Reading] { return afterEach{} }))
	return weir.KeyBy(src, func(r Reading) string { return r.Sensor })
}

type afterEach struct{}

func (afterEach) OnEvent(_ Reading, ts int64, out weir.WatermarkOutput) { out.EmitWatermark(ts - 1) }
func (afterEach) OnPeriodicEmit(weir.WatermarkOutput)                   {}

// report prints each firing: the window, and the sum and count of its
// contents at that moment.
func report(ws weir.WindowedStream[string, Reading, window.TimeWindow]) {
	weir.Print(weir.ProcessWindowFunc(ws, func(s string, ctx weir.ProcessWindowContext[window.TimeWindow], rs []Reading, out weir.Collector[string]) error {
		sum := 0
		for _, r := range rs {
			sum += r.Value
		}
		w := ctx.Window()
		out.Collect(fmt.Sprintf("%s [%d, %d) at watermark %d: sum %d of %d", s, w.Start, w.End, ctx.CurrentWatermark(), sum, len(rs)))
		return nil
	}))
}

// A continuous event-time trigger fires a window early, every interval
// of event time, and again when the watermark passes its end: here a
// 10 s window reports every 2 s. The trigger does not purge, so each
// firing sees all the window's contents so far.
func ExampleContinuousEventTimeTrigger() {
	env := weir.NewEnvironment(weir.WithParallelism(1))
	in := readings(env, Reading{"s1", 1, 1_000}, Reading{"s1", 2, 3_500}, Reading{"s1", 3, 5_000}, Reading{"s1", 4, 9_000})
	report(weir.Window(in, window.TumblingEventTime(10*time.Second)).Trigger(window.ContinuousEventTimeTrigger(2 * time.Second)))
	if err := env.Execute(context.Background(), "early results"); err != nil {
		log.Fatal(err)
	}
	// The timers at 2 s, 4 s, 6 s and 8 s fire as the watermark passes them
	// (6 s and 8 s together), the window's end at the end of the input.

	// Output:
	// s1 [0, 10000) at watermark 3499: sum 3 of 2
	// s1 [0, 10000) at watermark 4999: sum 6 of 3
	// s1 [0, 10000) at watermark 8999: sum 10 of 4
	// s1 [0, 10000) at watermark 8999: sum 10 of 4
	// s1 [0, 10000) at watermark 9223372036854775807: sum 10 of 4
}

// A count trigger fires a window every n elements. On a global window
// (one window per key, for all time) without purging, each firing sees
// every element so far; PurgingTrigger(CountTrigger(n)) would clear the
// window at each firing instead (Flink's countWindow(n)).
func ExampleCountTrigger() {
	env := weir.NewEnvironment(weir.WithParallelism(1))
	in := readings(env, Reading{"s1", 1, 1_000}, Reading{"s1", 2, 2_000}, Reading{"s1", 3, 3_000}, Reading{"s1", 4, 4_000}, Reading{"s1", 5, 5_000})
	every2 := weir.Window(in, window.Global()).Trigger(window.CountTrigger(2))
	weir.Print(weir.Reduce(every2, func(a, b Reading) Reading { return Reading{a.Sensor, a.Value + b.Value, b.At} }))
	if err := env.Execute(context.Background(), "every two"); err != nil {
		log.Fatal(err)
	}
	// Output:
	// {s1 3 2000}
	// {s1 10 4000}
}

// The event-time trigger (the default of event-time windows) fires once
// when the watermark passes the window's end; with allowed lateness the
// window is kept that much longer, and each late element fires it again
// with the late element added. Elements later than that go to the late
// data side output.
func ExampleEventTimeTrigger() {
	env := weir.NewEnvironment(weir.WithParallelism(1))
	late := weir.NewOutputTag[Reading]("too late")
	in := readings(env,
		Reading{"s1", 1, 1_000}, Reading{"s1", 2, 4_000},
		Reading{"s1", 3, 11_000}, // the watermark passes 10 s: [0, 10 s) fires
		Reading{"s1", 4, 9_000},  // late, within the allowed 5 s: fires again
		Reading{"s1", 5, 16_000}, // the watermark passes 15 s: [0, 10 s) is dropped
		Reading{"s1", 6, 8_000},  // too late: side output
	)
	ws := weir.Window(in, window.TumblingEventTime(10*time.Second)).Trigger(window.EventTimeTrigger()).
		AllowedLateness(5 * time.Second).SideOutputLateData(late)
	sums := weir.ReduceWithProcessFunc(ws, func(a, b Reading) Reading { return Reading{a.Sensor, a.Value + b.Value, b.At} },
		func(s string, ctx weir.ProcessWindowContext[window.TimeWindow], sum []Reading, out weir.Collector[string]) error {
			w := ctx.Window()
			out.Collect(fmt.Sprintf("%s [%d, %d) at watermark %d: sum %d", s, w.Start, w.End, ctx.CurrentWatermark(), sum[0].Value))
			return nil
		})
	weir.Print(sums)
	weir.Print(weir.Map(weir.SideOutput(sums, late), func(r Reading) string { return fmt.Sprintf("too late: %v", r) }))
	if err := env.Execute(context.Background(), "lateness"); err != nil {
		log.Fatal(err)
	}
	// Unordered output:
	// s1 [0, 10000) at watermark 10999: sum 3
	// s1 [0, 10000) at watermark 10999: sum 7
	// too late: {s1 6 8000}
	// s1 [10000, 20000) at watermark 9223372036854775807: sum 8
}

// pacedSource is one split of readings, each read at its At on a manual
// clock: before a reading it sets the clock to the reading's time and
// waits until the window operator has added the previous reading; after
// the last one it moves the clock to end, waits until firing windows
// have fired, then ends. A test drives processing time the same way.
type pacedSource struct {
	clk    *weirtest.ManualClock
	rs     []Reading
	end    int64
	firing int
	added  chan struct{}
	fired  chan struct{}
}

type onlySplit struct{}

func (onlySplit) SplitID() string { return "readings" }

func (p *pacedSource) Splits(int) ([]connector.Split, error) {
	return []connector.Split{onlySplit{}}, nil
}

func (p *pacedSource) Reader(connector.Split) (connector.SplitReader[Reading], error) {
	return &pacedReader{p: p}, nil
}

type pacedReader struct {
	p *pacedSource
	i int
}

func (r *pacedReader) Read(ctx context.Context, buf []weir.Record[Reading]) ([]weir.Record[Reading], error) {
	p := r.p
	if r.i > 0 {
		select {
		case <-p.added:
		case <-ctx.Done():
			return buf, ctx.Err()
		}
	}
	if r.i == len(p.rs) {
		p.clk.Set(p.end)
		for range p.firing {
			select {
			case <-p.fired:
			case <-ctx.Done():
				return buf, ctx.Err()
			}
		}
		return buf, io.EOF
	}
	rd := p.rs[r.i]
	r.i++
	p.clk.Set(rd.At)
	return append(buf, weir.Record[Reading]{Value: rd, TS: weir.NoTimestamp}), nil
}

func (r *pacedReader) Close() error { return nil }

// sumOf adds up readings and tells the source each time it added one.
type sumOf struct{ added chan<- struct{} }

func (s sumOf) CreateAccumulator() int     { return 0 }
func (s sumOf) Add(r Reading, acc int) int { s.added <- struct{}{}; return acc + r.Value }
func (s sumOf) GetResult(acc int) int      { return acc }
func (s sumOf) Merge(a, b int) int         { return a + b }

// The processing-time trigger (the default of processing-time windows)
// fires a window when the machine's clock passes its end; elements go to
// the window of the time they arrive, whatever their timestamps. Here
// the clock is a manual one, moved by the source, so that the example is
// deterministic: readings arrive at 1 s, 4 s and 12 s; moving the clock to
// 12 s fires [0, 10 s), moving it to 25 s fires [10 s, 20 s).
func ExampleProcessingTimeTrigger() {
	clk := weirtest.NewManualClock(0)
	env := weir.NewEnvironment(weir.WithParallelism(1), weir.WithClock(clk))
	src := &pacedSource{clk: clk, end: 25_000, firing: 2, added: make(chan struct{}, 1), fired: make(chan struct{}, 2),
		rs: []Reading{{"s1", 1, 1_000}, {"s1", 2, 4_000}, {"s1", 3, 12_000}}}
	in := weir.KeyBy(weir.FromSource[Reading](env, src, weir.NoWatermarks[Reading](), "readings"), func(r Reading) string { return r.Sensor })
	ws := weir.Window(in, window.TumblingProcessingTime(10*time.Second)).Trigger(window.ProcessingTimeTrigger())
	sums := weir.AggregateWithProcessFunc(ws, sumOf{src.added},
		func(s string, ctx weir.ProcessWindowContext[window.TimeWindow], sum []int, out weir.Collector[string]) error {
			w := ctx.Window()
			out.Collect(fmt.Sprintf("%s [%d, %d) at %d: sum %d", s, w.Start, w.End, ctx.CurrentProcessingTime(), sum[0]))
			src.fired <- struct{}{}
			return nil
		})
	weir.Print(sums)
	if err := env.Execute(context.Background(), "processing time"); err != nil {
		log.Fatal(err)
	}
	// Output:
	// s1 [0, 10000) at 12000: sum 3
	// s1 [10000, 20000) at 25000: sum 3
}
