// Package conformance plugs Weir's operators into the scenario runner
// (internal/scenario): each driver builds the real operator through the
// public test harness, feeds it the scenario's steps and prints what it
// emits. It holds no operator logic of its own.
package conformance

import (
	"fmt"
	"strconv"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/internal/scenario"
	"github.com/weirstream/weir/weirtest"
)

// Rec is a scenario record: a key and a value, both tokens.
type Rec struct {
	Key, Value string
}

// Runner returns a scenario runner with every operator this build has.
func Runner() *scenario.Runner {
	return &scenario.Runner{
		Ops: map[string]scenario.Factory{
			"watermarks":    newWatermarks,
			"interval-join": newIntervalJoin,
			"window":        newWindow,
			"window-join":   newWindowJoin,
			"cogroup":       newCoGroup,
		},
		Unavailable: map[string]string{},
	}
}

// format renders harness events as scenario output lines.
func format(events []weirtest.Event, value func(any) string) []string {
	out := make([]string, 0, len(events))
	for _, e := range events {
		switch e.Kind {
		case weirtest.KindRecord:
			r := e.Value.(Rec)
			out = append(out, fmt.Sprintf("out %s %d %s", r.Key, e.TS, value(e.Value)))
		case weirtest.KindSide:
			r := e.Value.(Rec)
			out = append(out, fmt.Sprintf("side %s %s %d %s", e.Tag, r.Key, e.TS, value(e.Value)))
		case weirtest.KindWatermark:
			out = append(out, "wm "+strconv.FormatInt(e.TS, 10))
		case weirtest.KindStatus:
			if e.Idle {
				out = append(out, "status idle")
			} else {
				out = append(out, "status active")
			}
		}
	}
	return out
}

func plainValue(v any) string { return v.(Rec).Value }

// identityCo passes both inputs through unchanged.
type identityCo struct{}

func (identityCo) ProcessElement1(v Rec, _ weir.Context, out weir.Collector[Rec]) error {
	out.Collect(v)
	return nil
}

func (identityCo) ProcessElement2(v Rec, _ weir.Context, out weir.Collector[Rec]) error {
	out.Collect(v)
	return nil
}

// watermarks is the `watermarks` op: an identity operator behind the real
// per-input channel valves and, with two inputs, the two-input combiner.
type watermarks struct {
	one *weirtest.OneInput[Rec, Rec]
	two *weirtest.TwoInput[Rec, Rec, Rec]
	h   interface{ TakeEvents() []weirtest.Event }
}

func newWatermarks(s scenario.Spec) (scenario.Driver, error) {
	if err := s.CheckKnown([]string{"inputs", "channels"}, nil); err != nil {
		return nil, err
	}
	inputs, err := s.Int64("inputs", 1)
	if err != nil {
		return nil, err
	}
	c, err := channelsOf(s)
	if err != nil {
		return nil, err
	}
	d := &watermarks{}
	switch inputs {
	case 1:
		d.one, err = weirtest.NewOneInput(func(in weir.DataStream[Rec]) weir.DataStream[Rec] {
			return weir.Map(in, func(r Rec) Rec { return r }).Name("identity")
		}, weirtest.Channels(c, c))
		d.h = d.one
	case 2:
		d.two, err = weirtest.NewTwoInput(func(a, b weir.DataStream[Rec]) weir.DataStream[Rec] {
			return weir.CoProcess(weir.Connect(a, b), identityCo{}).Name("identity")
		}, weirtest.Channels(c, c))
		d.h = d.two
	default:
		return nil, fmt.Errorf("inputs must be 1 or 2, got %d", inputs)
	}
	if err != nil {
		return nil, err
	}
	return d, nil
}

func (d *watermarks) Record(input, ch int, key string, ts int64, value string) error {
	r := Rec{Key: key, Value: value}
	if d.one != nil {
		if input != 1 {
			return fmt.Errorf("input %d: the operator has one input", input)
		}
		return d.one.ProcessElementOn(ch, r, ts)
	}
	if input == 1 {
		return d.two.ProcessElement1(ch, r, ts)
	}
	return d.two.ProcessElement2(ch, r, ts)
}

func (d *watermarks) Watermark(input, ch int, ts int64) error {
	if d.one != nil {
		if input != 1 {
			return fmt.Errorf("input %d: the operator has one input", input)
		}
		return d.one.ProcessWatermarkOn(ch, ts)
	}
	if input == 1 {
		return d.two.ProcessWatermark1(ch, ts)
	}
	return d.two.ProcessWatermark2(ch, ts)
}

func (d *watermarks) Status(input, ch int, idle bool) error {
	if d.one != nil {
		if input != 1 {
			return fmt.Errorf("input %d: the operator has one input", input)
		}
		return d.one.SetIdle(ch, idle)
	}
	if input == 1 {
		return d.two.SetIdle1(ch, idle)
	}
	return d.two.SetIdle2(ch, idle)
}

func (d *watermarks) ProcessingTime(t int64) error {
	if d.one != nil {
		return d.one.SetProcessingTime(t)
	}
	return d.two.SetProcessingTime(t)
}

func (d *watermarks) End() error {
	if d.one != nil {
		return d.one.EndInput()
	}
	return d.two.EndInput()
}

func (d *watermarks) Outputs() []string { return format(d.h.TakeEvents(), plainValue) }
