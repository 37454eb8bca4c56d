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

func newJoinDriver(s scenario.Spec, cogroup bool) (scenario.Driver, error) {
	p, err := joinParams(s)
	if err != nil {
		return nil, err
	}
	var h *weirtest.TwoInput[Rec, Rec, Rec]
	chans := weirtest.Channels(p.channels, p.channels)
	switch a := p.assignerOf().(type) {
	case window.Assigner[window.GlobalWindow]:
		h, err = weirtest.NewTwoInput(func(l, r weir.DataStream[Rec]) weir.DataStream[Rec] {
			return joined(weir.WindowJoin(weir.KeyBy(l, recKey), weir.KeyBy(r, recKey), a), p, a.DefaultTrigger(), cogroup)
		}, chans)
	case window.Assigner[window.TimeWindow]:
		h, err = weirtest.NewTwoInput(func(l, r weir.DataStream[Rec]) weir.DataStream[Rec] {
			return joined(weir.WindowJoin(weir.KeyBy(l, recKey), weir.KeyBy(r, recKey), a), p, a.DefaultTrigger(), cogroup)
		}, chans)
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", s.Op, err)
	}
	return &twoInput{h: h}, nil
}

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
