// Package trouble builds the small jobs of examples/troubles: each shows
// one of the five failures of the field guide to two-stream jobs (or none)
// so that a person can watch it in the dashboard and `weir doctor` can be
// tested against it.
package trouble

import (
	"fmt"
	"strings"
	"time"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/state"
)

// Failures lists the failures Build knows, and "healthy".
var Failures = []string{"watermark-gap", "alignment", "state-growth", "hot-key", "inverted-bounds", "healthy"}

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
