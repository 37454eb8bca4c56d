package conformance

import (
	"fmt"
	"time"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/internal/scenario"
	"github.com/weirstream/weir/weirtest"
)

// joined is an interval-join result: the pair's key and "(left,right)".
func joinPair(l, r *Rec, _ weir.JoinContext, out weir.Collector[Rec]) error {
	out.Collect(Rec{Key: l.Key, Value: "(" + l.Value + "," + r.Value + ")"})
	return nil
}

// twoInput drives a TwoInputHarness over scenario records.
type twoInput struct {
	h *weirtest.TwoInput[Rec, Rec, Rec]
}

func (d *twoInput) Record(input, ch int, key string, ts int64, value string) error {
	r := Rec{Key: key, Value: value}
	if input == 1 {
		return d.h.ProcessElement1(ch, r, ts)
	}
	return d.h.ProcessElement2(ch, r, ts)
}

func (d *twoInput) Watermark(input, ch int, ts int64) error {
	if input == 1 {
		return d.h.ProcessWatermark1(ch, ts)
	}
	return d.h.ProcessWatermark2(ch, ts)
}

func (d *twoInput) Status(input, ch int, idle bool) error {
	if input == 1 {
		return d.h.SetIdle1(ch, idle)
	}
	return d.h.SetIdle2(ch, idle)
}

func (d *twoInput) ProcessingTime(t int64) error { return d.h.SetProcessingTime(t) }
func (d *twoInput) End() error                   { return d.h.EndInput() }
func (d *twoInput) Outputs() []string            { return format(d.h.TakeEvents(), plainValue) }

func key(r Rec) string { return r.Key }

// newIntervalJoin is the `interval-join` op: weir.IntervalJoin with the
// scenario's bounds, late data routed to late-left and late-right.
func newIntervalJoin(s scenario.Spec) (scenario.Driver, error) {
	if err := s.CheckKnown([]string{"lower", "upper", "channels"}, []string{"lower-exclusive", "upper-exclusive"}); err != nil {
		return nil, err
	}
	if err := s.Require("lower", "upper"); err != nil {
		return nil, err
	}
	if err := durationParams(s, "lower", "upper"); err != nil {
		return nil, err
	}
	lower, err := s.Int64("lower", 0)
	if err != nil {
		return nil, err
	}
	upper, err := s.Int64("upper", 0)
	if err != nil {
		return nil, err
	}
	channels, err := channelsOf(s)
	if err != nil {
		return nil, err
	}
	lateL, lateR := weir.NewOutputTag[Rec]("late-left"), weir.NewOutputTag[Rec]("late-right")
	opts := []weir.IntervalJoinOption{weir.SideOutputLeftLateData(lateL), weir.SideOutputRightLateData(lateR)}
	if s.Flag("lower-exclusive") {
		opts = append(opts, weir.LowerBoundExclusive())
	}
	if s.Flag("upper-exclusive") {
		opts = append(opts, weir.UpperBoundExclusive())
	}
	h, err := weirtest.NewTwoInput(func(a, b weir.DataStream[Rec]) weir.DataStream[Rec] {
		return weir.IntervalJoinFunc(weir.KeyBy(a, key), weir.KeyBy(b, key),
			weir.Between(time.Duration(lower)*time.Millisecond, time.Duration(upper)*time.Millisecond),
			func(l, r Rec, ctx weir.JoinContext, out weir.Collector[Rec]) error {
				return joinPair(&l, &r, ctx, out)
			}, opts...)
	}, weirtest.SideOutputs(lateL, lateR), weirtest.Channels(channels, channels))
	if err != nil {
		return nil, fmt.Errorf("interval-join: %w", err)
	}
	return &twoInput{h: h}, nil
}
