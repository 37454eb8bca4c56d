package conformance

import (
	"fmt"
	"maps"
	"strings"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/internal/scenario"
	"github.com/weirstream/weir/weirtest"
	"github.com/weirstream/weir/window"
)

// joinParams parses the window parameters of a window-join or cogroup op
// line (the window op's, without fn).
func joinParams(s scenario.Spec) (windowParams, error) {
	if s.Has("fn") {
		return windowParams{}, fmt.Errorf("parameter fn does not apply to %s", s.Op)
	}
	s2 := s
	s2.Params = maps.Clone(s.Params)
	s2.Params["fn"] = "list"
	return parseWindowParams(s2)
}

// newWindowJoin is the `window-join` op: weir.Join over the scenario's
// windows, one output per pair "(left,right)".
func newWindowJoin(s scenario.Spec) (scenario.Driver, error) {
	return newJoinDriver(s, false)
}

// newCoGroup is the `cogroup` op: weir.CoGroup, one output per key and
// firing "<window>:[lefts]:[rights]".
func newCoGroup(s scenario.Spec) (scenario.Driver, error) {
	return newJoinDriver(s, true)
}

// newJoinDriver builds the window join or coGroup as Flink lays it out:
// Flink tags each input and unions them, so the window operator has one
// watermark valve over the channels of both inputs (input 1's, then input
// 2's), the taggers being chained to the operators upstream. The driver
// feeds one task of 2C channels, which splits the records by side and
// goes on into weir.WindowJoin: the split and the tag maps are chained
// into that task, whose valve is the union's, and the window task behind
// it has that task as its only upstream subtask.
func newJoinDriver(s scenario.Spec, cogroup bool) (scenario.Driver, error) {
	p, err := joinParams(s)
	if err != nil {
		return nil, err
	}
	split := func(in weir.DataStream[sided]) (weir.KeyedStream[string, Rec], weir.KeyedStream[string, Rec]) {
		right := weir.NewOutputTag[Rec]("right")
		left := weir.ProcessStreamFunc(in, func(r sided, ctx weir.Context, out weir.Collector[Rec]) error {
			if r.left {
				out.Collect(r.rec)
			} else {
				weir.Output(ctx, right, r.rec)
			}
			return nil
		}).Name("split")
		return weir.KeyBy(left, recKey), weir.KeyBy(weir.SideOutput(left, right), recKey)
	}
	var h *weirtest.OneInput[sided, Rec]
	chans := weirtest.Channels(2*p.channels, 0)
	switch a := p.assignerOf().(type) {
	case window.Assigner[window.GlobalWindow]:
		h, err = weirtest.NewOneInput(func(in weir.DataStream[sided]) weir.DataStream[Rec] {
			l, r := split(in)
			return joined(weir.WindowJoin(l, r, a), p, a.DefaultTrigger(), cogroup)
		}, chans)
	case window.Assigner[window.TimeWindow]:
		h, err = weirtest.NewOneInput(func(in weir.DataStream[sided]) weir.DataStream[Rec] {
			l, r := split(in)
			return joined(weir.WindowJoin(l, r, a), p, a.DefaultTrigger(), cogroup)
		}, chans)
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", s.Op, err)
	}
	return &unionInput{h: h, c: p.channels}, nil
}

// sided is a record of the join's input 1 (left) or 2.
type sided struct {
	left bool
	rec  Rec
}

// unionInput drives the union of a join's two inputs of c channels each:
// input 1's channel i is the union's channel i, input 2's is c+i.
type unionInput struct {
	h *weirtest.OneInput[sided, Rec]
	c int
}

func (d *unionInput) channel(input, ch int) int {
	if input == 2 {
		return d.c + ch
	}
	return ch
}

func (d *unionInput) Record(input, ch int, key string, ts int64, value string) error {
	if ch < 0 || ch >= d.c {
		return fmt.Errorf("input %d has no channel %d", input, ch)
	}
	return d.h.ProcessElementOn(d.channel(input, ch), sided{left: input == 1, rec: Rec{Key: key, Value: value}}, ts)
}

func (d *unionInput) Watermark(input, ch int, ts int64) error {
	if ch < 0 || ch >= d.c {
		return fmt.Errorf("input %d has no channel %d", input, ch)
	}
	return d.h.ProcessWatermarkOn(d.channel(input, ch), ts)
}

func (d *unionInput) Status(input, ch int, idle bool) error {
	if ch < 0 || ch >= d.c {
		return fmt.Errorf("input %d has no channel %d", input, ch)
	}
	return d.h.SetIdle(d.channel(input, ch), idle)
}

func (d *unionInput) ProcessingTime(t int64) error { return d.h.SetProcessingTime(t) }
func (d *unionInput) End() error                   { return d.h.EndInput() }
func (d *unionInput) Outputs() []string            { return format(d.h.TakeEvents(), plainValue) }

func joined[W interface {
	window.Window
	String() string
}](j weir.JoinedWindows[string, Rec, Rec, W], p windowParams, def window.Trigger, cogroup bool) weir.DataStream[Rec] {
	if t := p.triggerOf(def); t != nil {
		j = j.Trigger(t)
	}
	if p.lateness != 0 {
		j = j.AllowedLateness(ms(p.lateness))
	}
	if !cogroup {
		return weir.Join(j, func(l, r Rec) Rec { return Rec{Key: l.Key, Value: "(" + l.Value + "," + r.Value + ")"} })
	}
	return weir.CoGroup(j, weir.CoGroupFunction[string, Rec, Rec, Rec, W](func(key string, w W, ls, rs []Rec, out weir.Collector[Rec]) error {
		out.Collect(Rec{Key: key, Value: w.String() + ":[" + values(ls) + "]:[" + values(rs) + "]"})
		return nil
	}))
}

func values(rs []Rec) string {
	vs := make([]string, len(rs))
	for i, r := range rs {
		vs[i] = r.Value
	}
	return strings.Join(vs, ",")
}
