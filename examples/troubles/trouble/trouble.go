// Package trouble builds the small jobs of examples/troubles: each shows
// one of the five failures of the field guide to two-stream jobs, a
// failure of operations (checkpoints that expire, state growing in bytes,
// a crash loop, a key that turns hot late), something that looks like a
// failure but is by design (a watermark gap the declared bounds make,
// watermark alignment holding a source back), or none, so that a person
// can watch it in the dashboard and `weir doctor` can be tested against
// it.
package trouble

import (
	"fmt"
	"strings"
	"time"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/state"
)

// Failures lists the failures Build knows, and "healthy".
var Failures = []string{"watermark-gap", "alignment", "state-growth", "hot-key", "inverted-bounds",
	"checkpoint-timeout", "state-bytes", "crash-loop", "late-hot-key", "gap-by-design", "watermark-alignment", "healthy"}

// EnvOptions returns the environment options the job of failure needs
// beyond a REST server (nil for most).
func EnvOptions(failure string) []weir.Option {
	switch failure {
	case "alignment":
		return []weir.Option{weir.WithParallelism(1), weir.WithBufferSize(128)}
	case "checkpoint-timeout":
		return []weir.Option{weir.WithParallelism(1)}
	case "crash-loop":
		return []weir.Option{weir.WithRestartStrategy(weir.FixedDelayRestart(1_000_000, 100*time.Millisecond))}
	}
	return nil
}

// Event is the jobs' record: a key and an event timestamp.
type Event struct {
	Key int64
	TS  int64
}

func withTS(d time.Duration) weir.WatermarkStrategy[Event] {
	return weir.ForBoundedOutOfOrderness[Event](d).WithTimestampAssigner(func(e Event, _ int64) int64 { return e.TS })
}

func key(e Event) int64 { return e.Key }

func pairs(l, r Event, _ weir.JoinContext, out weir.Collector[int64]) error {
	out.Collect(l.Key)
	return nil
}

func join(left, right weir.DataStream[Event], b weir.IntervalBounds) {
	weir.Discard(weir.IntervalJoinFunc(weir.KeyBy(left, key), weir.KeyBy(right, key), b, pairs).Name("join"))
}

// Options are what Build needs beyond the failure.
type Options struct {
	// Rate is each source's records per second (0: the failure's default).
	Rate float64
}

// Build adds the job of failure to env (whose parallelism should be at
// least 2 for hot-key). The sources never end.
func Build(env *weir.Environment, failure string, o Options) error {
	rate := func(def float64) float64 {
		if o.Rate > 0 {
			return o.Rate
		}
		return def
	}
	gen := func(name string, r float64, f func(i int64) Event, s weir.WatermarkStrategy[Event]) weir.DataStream[Event] {
		return weir.Generate(env, -1, rate(r), f, s).Name(name)
	}
	switch failure {
	case "watermark-gap":
		// Payments' events are a minute older than the orders': the
		// join's watermark is the payments' and its results wait.
		orders := gen("orders", 10_000, func(i int64) Event { return Event{i % 100, 1_000_000 + i} }, withTS(0))
		payments := gen("payments", 10_000, func(i int64) Event { return Event{i % 100, 940_000 + i} }, withTS(0))
		join(orders, payments, weir.Between(0, time.Second))
	case "alignment":
		// A slow stage queues records ahead of the barriers on the join's
		// second input; checkpoints wait for them (run at parallelism 1
		// with small buffers, and checkpoints enabled).
		fast := gen("fast", 2_000, func(i int64) Event { return Event{i % 10, i} }, withTS(0))
		slow := gen("slow", 2_000, func(i int64) Event { return Event{i % 10, i} }, withTS(0))
		slowed := weir.Map(slow, func(e Event) Event { time.Sleep(4 * time.Millisecond); return e }).Name("slow-map").DisableChaining()
		join(fast, slowed, weir.Between(0, time.Second))
	case "state-growth":
		// No watermarks: the cleanup timers of the per-key state never fire.
		src := gen("events", 5_000, func(i int64) Event { return Event{i, i} }, weir.NoWatermarks[Event]())
		weir.Discard(weir.Process(weir.KeyBy(src, key), &holder{}).Name("holder"))
	case "hot-key":
		// Nine records in ten carry the key "acme".
		src := gen("clicks", 20_000, func(i int64) Event { return Event{i, i} }, weir.NoWatermarks[Event]())
		customer := func(e Event) string {
			if e.Key%10 != 0 {
				return "acme"
			}
			return fmt.Sprint("user-", e.Key%50)
		}
		weir.Discard(weir.Process(weir.KeyBy(src, customer), &counter{}).Name("per-customer"))
	case "inverted-bounds":
		// Each payment comes 3 s after its order, but the bounds are those
		// for the payments as the base stream.
		orders := gen("orders", 10_000, func(i int64) Event { return Event{i, i * 10} }, withTS(5*time.Second))
		payments := gen("payments", 10_000, func(i int64) Event { return Event{i, i*10 + 3000} }, withTS(5*time.Second))
		join(orders, payments, weir.Between(-5*time.Second, 0))
	case "checkpoint-timeout":
		// A sink that takes 2 ms a record back-pressures the source; the
		// barriers of aligned checkpoints queue behind the full buffers
		// and do not get through within the 1 s timeout.
		env.EnableCheckpointing(300*time.Millisecond, weir.CheckpointTimeout(time.Second), weir.TolerableCheckpointFailures(1_000_000))
		src := gen("events", 20_000, func(i int64) Event { return Event{i % 100, i} }, weir.NoWatermarks[Event]())
		slow := weir.Map(weir.Rebalance(src), func(e Event) Event { time.Sleep(2 * time.Millisecond); return e }).Name("slow-writer")
		weir.Discard(slow)
	case "state-bytes":
		// Fifty keys, each a list appended to forever (no TTL): the entries
		// stand still, the bytes and the checkpoints grow.
		env.EnableCheckpointing(200 * time.Millisecond)
		src := gen("events", 5_000, func(i int64) Event { return Event{i % 50, i} }, weir.NoWatermarks[Event]())
		weir.Discard(weir.Process(weir.KeyBy(src, key), &appender{}).Name("appender"))
	case "crash-loop":
		// Record 500 fails the parser in every attempt; the restart
		// strategy (EnvOptions) restarts the job again and again.
		src := gen("events", 5_000, func(i int64) Event { return Event{i % 10, i} }, weir.NoWatermarks[Event]())
		weir.Discard(weir.Process(weir.KeyBy(src, key), &parser{}).Name("parser"))
	case "late-hot-key":
		// Uniform keys for the first 60 000 records (3 s), then nine
		// records in ten on "acme".
		src := gen("clicks", 20_000, func(i int64) Event { return Event{i, i} }, weir.NoWatermarks[Event]())
		customer := func(e Event) string {
			if e.Key >= 60_000 && e.Key%10 != 0 {
				return "acme"
			}
			return fmt.Sprint("user-", e.Key%50)
		}
		weir.Discard(weir.Process(weir.KeyBy(src, customer), &counter{}).Name("per-customer"))
	case "gap-by-design":
		// The payments declare 23.5 minutes of out-of-orderness and their
		// events are 15 minutes ahead of the orders': their watermark is
		// 8.5 minutes behind, as declared.
		orders := gen("orders", 200, func(i int64) Event { return Event{i % 100, 100_000_000 + i} }, withTS(0))
		payments := gen("payments", 200, func(i int64) Event { return Event{i % 100, 100_000_000 + 15*60_000 + i} }, withTS(23*time.Minute+30*time.Second))
		join(orders, payments, weir.Between(0, time.Second))
	case "watermark-alignment":
		// Two sources aligned with a drift of 1 s: the "replay" source's
		// event time stands still (all its events have one timestamp), so
		// the "live" one, ahead, is paused, and the co-process function's
		// timers (one per key) wait.
		aligned := func() weir.WatermarkStrategy[Event] {
			return withTS(0).WithWatermarkAlignment("feeds", time.Second, 50*time.Millisecond)
		}
		replay := gen("replay", 2_000, func(i int64) Event { return Event{i, 1_000_000} }, aligned())
		live := gen("live", 2_000, func(i int64) Event { return Event{i, 1_000_000 + 10*i} }, aligned())
		weir.Discard(weir.KeyedCoProcess(weir.ConnectKeyed(weir.KeyBy(replay, key), weir.KeyBy(live, key)), &pending{}).Name("matcher"))
	case "healthy":
		orders := gen("orders", 5_000, func(i int64) Event { return Event{i % 1000, i * 10} }, withTS(time.Second))
		payments := gen("payments", 5_000, func(i int64) Event { return Event{i % 1000, i*10 + 500} }, withTS(time.Second))
		join(orders, payments, weir.Between(0, 2*time.Second))
	default:
		return fmt.Errorf("unknown failure %q (one of %s)", failure, strings.Join(Failures, ", "))
	}
	return nil
}

// holder keeps a value per key and registers an event-time timer that
// would clear it.
type holder struct{ v state.ValueState[int64] }

func (f *holder) Open(ctx weir.KeyedRuntimeContext[int64]) (err error) {
	f.v, err = weir.GetValueState(ctx, state.Value[int64]("v"))
	return err
}

func (f *holder) ProcessElement(e Event, ctx weir.KeyedContext[int64], out weir.Collector[int64]) error {
	f.v.Update(e.TS)
	ctx.TimerService().RegisterEventTimeTimer(e.TS + 1000)
	return nil
}

func (f *holder) OnTimer(ts int64, ctx weir.OnTimerContext[int64], out weir.Collector[int64]) error {
	f.v.Clear()
	return nil
}

// counter counts records per key, without timers or TTL.
type counter struct{ n state.ValueState[int64] }

func (f *counter) Open(ctx weir.KeyedRuntimeContext[string]) (err error) {
	f.n, err = weir.GetValueState(ctx, state.Value[int64]("n"))
	return err
}

func (f *counter) ProcessElement(e Event, _ weir.KeyedContext[string], out weir.Collector[int64]) error {
	n, _ := f.n.Value()
	f.n.Update(n + 1)
	return nil
}

func (f *counter) OnTimer(int64, weir.OnTimerContext[string], weir.Collector[int64]) error {
	return nil
}

// appender appends every event to its key's list, without TTL.
type appender struct{ l state.ListState[Event] }

func (f *appender) Open(ctx weir.KeyedRuntimeContext[int64]) (err error) {
	f.l, err = weir.GetListState(ctx, state.List[Event]("seen"))
	return err
}

func (f *appender) ProcessElement(e Event, _ weir.KeyedContext[int64], _ weir.Collector[int64]) error {
	f.l.Add(e)
	return nil
}

func (f *appender) OnTimer(int64, weir.OnTimerContext[int64], weir.Collector[int64]) error {
	return nil
}

// parser fails on event 500.
type parser struct{}

func (parser) ProcessElement(e Event, _ weir.KeyedContext[int64], out weir.Collector[int64]) error {
	if e.TS == 500 {
		return fmt.Errorf("cannot parse event %d", e.TS)
	}
	out.Collect(e.Key)
	return nil
}

func (parser) OnTimer(int64, weir.OnTimerContext[int64], weir.Collector[int64]) error { return nil }

// pending keeps each event of either input until an event-time timer
// after it fires.
type pending struct{ v state.ValueState[int64] }

func (f *pending) Open(ctx weir.KeyedRuntimeContext[int64]) (err error) {
	f.v, err = weir.GetValueState(ctx, state.Value[int64]("v"))
	return err
}

func (f *pending) hold(e Event, ctx weir.KeyedContext[int64]) error {
	f.v.Update(e.TS)
	ctx.TimerService().RegisterEventTimeTimer(e.TS + 1000)
	return nil
}

func (f *pending) ProcessElement1(e Event, ctx weir.KeyedContext[int64], _ weir.Collector[int64]) error {
	return f.hold(e, ctx)
}

func (f *pending) ProcessElement2(e Event, ctx weir.KeyedContext[int64], _ weir.Collector[int64]) error {
	return f.hold(e, ctx)
}

func (f *pending) OnTimer(int64, weir.OnTimerContext[int64], weir.Collector[int64]) error {
	f.v.Clear()
	return nil
}
