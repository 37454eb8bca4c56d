package conformance

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/internal/scenario"
	"github.com/weirstream/weir/weirtest"
	"github.com/weirstream/weir/window"
)

// windowDriver is the `window` op: the engine's window operator keyed by
// the record key, configured from the op line, with late data routed to the
// side output `late`.
type windowDriver struct {
	h       *weirtest.OneInput[Rec, Rec]
	numeric bool
}

var lateTag = weir.NewOutputTag[Rec]("late")

func ms(v int64) time.Duration { return time.Duration(v) * time.Millisecond }

// maxMillis is the most milliseconds a time.Duration holds (about 292
// years).
const maxMillis = math.MaxInt64 / int64(time.Millisecond)

// durationParams refuses a duration parameter that a time.Duration cannot
// hold: Flink takes any long of milliseconds, Weir's API takes
// time.Duration, and ms would wrap it.
func durationParams(s scenario.Spec, names ...string) error {
	for _, n := range names {
		v, err := s.Int64(n, 0)
		if err != nil {
			return err
		}
		if v > maxMillis || v < -maxMillis {
			return fmt.Errorf("%s=%d ms is beyond what Weir's durations (Go's time.Duration) hold, ±%d ms (about 292 years)", n, v, maxMillis)
		}
	}
	return nil
}

// windowParams are the parsed window parameters of an op line.
type windowParams struct {
	assigner, timeDomain, trigger, fn string
	size, slide, offset, gap          int64
	n, interval, lateness             int64
	purging                           bool
	channels                          int
}

func parseWindowParams(s scenario.Spec) (windowParams, error) {
	var p windowParams
	if err := s.CheckKnown([]string{"assigner", "size", "slide", "offset", "gap", "time", "trigger", "n", "interval", "lateness", "fn", "channels"}, []string{"purging"}); err != nil {
		return p, err
	}
	if err := s.Require("assigner", "fn"); err != nil {
		return p, err
	}
	var err error
	if p.assigner, err = s.OneOf("assigner", "", "tumbling", "sliding", "session", "global"); err != nil {
		return p, err
	}
	if p.timeDomain, err = s.OneOf("time", "event", "event", "processing"); err != nil {
		return p, err
	}
	if p.trigger, err = s.OneOf("trigger", "default", "default", "count", "continuous"); err != nil {
		return p, err
	}
	if p.fn, err = s.OneOf("fn", "", "count", "sum", "min", "max", "list"); err != nil {
		return p, err
	}
	p.purging = s.Flag("purging")
	ints := []struct {
		name string
		dst  *int64
	}{{"size", &p.size}, {"slide", &p.slide}, {"offset", &p.offset}, {"gap", &p.gap}, {"n", &p.n}, {"interval", &p.interval}, {"lateness", &p.lateness}}
	for _, it := range ints {
		if *it.dst, err = s.Int64(it.name, 0); err != nil {
			return p, err
		}
	}
	if err := durationParams(s, "size", "slide", "offset", "gap", "interval", "lateness"); err != nil {
		return p, err
	}
	need := map[string][]string{"tumbling": {"size"}, "sliding": {"size", "slide"}, "session": {"gap"}, "global": nil}[p.assigner]
	allowed := map[string]bool{"offset": p.assigner == "tumbling" || p.assigner == "sliding"}
	for _, n := range need {
		allowed[n] = true
	}
	switch p.trigger {
	case "count":
		need = append(need, "n")
		allowed["n"] = true
	case "continuous":
		need = append(need, "interval")
		allowed["interval"] = true
	}
	if err := s.Require(need...); err != nil {
		return p, err
	}
	for _, name := range []string{"size", "slide", "offset", "gap", "n", "interval"} {
		if s.Has(name) && !allowed[name] {
			return p, fmt.Errorf("parameter %s does not apply to assigner=%s trigger=%s", name, p.assigner, p.trigger)
		}
	}
	if p.channels, err = channelsOf(s); err != nil {
		return p, err
	}
	return p, nil
}

// channelsOf parses the `channels=C` parameter every op takes: the number
// of upstream channels per input (default 1).
func channelsOf(s scenario.Spec) (int, error) {
	c, err := s.Int64("channels", 1)
	if err != nil {
		return 0, err
	}
	if c < 1 || c > 1024 {
		return 0, fmt.Errorf("channels must be in [1, 1024], got %d", c)
	}
	return int(c), nil
}

func (p windowParams) assignerOf() any {
	event := p.timeDomain == "event"
	switch p.assigner {
	case "tumbling":
		if event {
			return window.TumblingEventTime(ms(p.size)).WithOffset(ms(p.offset))
		}
		return window.TumblingProcessingTime(ms(p.size)).WithOffset(ms(p.offset))
	case "sliding":
		if event {
			return window.SlidingEventTime(ms(p.size), ms(p.slide)).WithOffset(ms(p.offset))
		}
		return window.SlidingProcessingTime(ms(p.size), ms(p.slide)).WithOffset(ms(p.offset))
	case "session":
		if event {
			return window.EventTimeSessions(ms(p.gap))
		}
		return window.ProcessingTimeSessions(ms(p.gap))
	}
	return window.Global()
}

func (p windowParams) triggerOf(def window.Trigger) window.Trigger {
	var t window.Trigger
	switch p.trigger {
	case "count":
		t = window.CountTrigger(p.n)
	case "continuous":
		if p.timeDomain == "processing" {
			t = window.ContinuousProcessingTimeTrigger(ms(p.interval))
		} else {
			t = window.ContinuousEventTimeTrigger(ms(p.interval))
		}
	default:
		if !p.purging {
			return nil
		}
		t = def
	}
	if p.purging {
		t = window.PurgingTrigger(t)
	}
	return t
}

func newWindow(s scenario.Spec) (scenario.Driver, error) {
	p, err := parseWindowParams(s)
	if err != nil {
		return nil, err
	}
	d := &windowDriver{numeric: p.fn == "sum" || p.fn == "min" || p.fn == "max"}
	opts := []weirtest.Option{weirtest.SideOutputs(lateTag), weirtest.Channels(p.channels, p.channels)}
	switch a := p.assignerOf().(type) {
	case window.Assigner[window.GlobalWindow]:
		d.h, err = weirtest.NewOneInput(func(in weir.DataStream[Rec]) weir.DataStream[Rec] {
			return windowed(weir.Window(weir.KeyBy(in, recKey), a), p, a.DefaultTrigger())
		}, opts...)
	case window.Assigner[window.TimeWindow]:
		d.h, err = weirtest.NewOneInput(func(in weir.DataStream[Rec]) weir.DataStream[Rec] {
			return windowed(weir.Window(weir.KeyBy(in, recKey), a), p, a.DefaultTrigger())
		}, opts...)
	}
	if err != nil {
		return nil, err
	}
	return d, nil
}

func recKey(r Rec) string { return r.Key }

// windowed applies the trigger, lateness, late output and function.
func windowed[W interface {
	window.Window
	String() string
}](ws weir.WindowedStream[string, Rec, W], p windowParams, def window.Trigger) weir.DataStream[Rec] {
	if t := p.triggerOf(def); t != nil {
		ws = ws.Trigger(t)
	}
	if p.lateness != 0 {
		ws = ws.AllowedLateness(ms(p.lateness))
	}
	ws = ws.SideOutputLateData(lateTag)
	if p.fn == "list" {
		return weir.ProcessWindowFunc(ws,
			func(key string, ctx weir.ProcessWindowContext[W], elems []Rec, out weir.Collector[Rec]) error {
				vals := make([]string, len(elems))
				for i, e := range elems {
					vals[i] = e.Value
				}
				out.Collect(Rec{Key: key, Value: ctx.Window().String() + ":[" + strings.Join(vals, ",") + "]"})
				return nil
			})
	}
	return weir.AggregateWithProcessFunc(ws, aggregate{fn: p.fn},
		func(key string, ctx weir.ProcessWindowContext[W], res []int64, out weir.Collector[Rec]) error {
			out.Collect(Rec{Key: key, Value: ctx.Window().String() + ":" + strconv.FormatInt(res[0], 10)})
			return nil
		})
}

// acc is the accumulator of the count, sum, min and max functions.
type acc struct {
	v   int64
	set bool
}

// aggregate implements fn=count|sum|min|max.
type aggregate struct{ fn string }

func (a aggregate) CreateAccumulator() acc { return acc{} }

func (a aggregate) Add(r Rec, c acc) acc {
	if a.fn == "count" {
		return acc{v: c.v + 1, set: true}
	}
	v, err := strconv.ParseInt(r.Value, 10, 64)
	if err != nil {
		panic(fmt.Sprintf("value %q is not an int64", r.Value))
	}
	return a.combine(c, acc{v: v, set: true})
}

func (a aggregate) combine(x, y acc) acc {
	switch {
	case !x.set:
		return y
	case !y.set:
		return x
	}
	switch a.fn {
	case "min":
		return acc{v: min(x.v, y.v), set: true}
	case "max":
		return acc{v: max(x.v, y.v), set: true}
	}
	return acc{v: x.v + y.v, set: true}
}

func (a aggregate) GetResult(c acc) int64 { return c.v }

func (a aggregate) Merge(x, y acc) acc { return a.combine(x, y) }

func (d *windowDriver) Record(input, ch int, key string, ts int64, value string) error {
	if input != 1 {
		return fmt.Errorf("input %d: the window operator has one input", input)
	}
	if d.numeric {
		if _, err := strconv.ParseInt(value, 10, 64); err != nil {
			return fmt.Errorf("value %q is not an int64", value)
		}
	}
	return d.h.ProcessElementOn(ch, Rec{Key: key, Value: value}, ts)
}

func (d *windowDriver) Watermark(input, ch int, ts int64) error {
	if input != 1 {
		return fmt.Errorf("input %d: the window operator has one input", input)
	}
	return d.h.ProcessWatermarkOn(ch, ts)
}

func (d *windowDriver) Status(input, ch int, idle bool) error {
	if input != 1 {
		return fmt.Errorf("input %d: the window operator has one input", input)
	}
	return d.h.SetIdle(ch, idle)
}

func (d *windowDriver) ProcessingTime(t int64) error { return d.h.SetProcessingTime(t) }

func (d *windowDriver) End() error { return d.h.EndInput() }

func (d *windowDriver) Outputs() []string { return format(d.h.TakeEvents(), plainValue) }
