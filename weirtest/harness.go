// Package weirtest holds Weir's test utilities, as Flink's test harnesses:
// OneInput and TwoInput drive the operators a build function puts after
// their inputs synchronously, on the test's goroutine, with a manual
// processing-time clock; ManualClock is that clock for whole jobs.
package weirtest

import (
	"fmt"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/internal/engine"
	"github.com/weirstream/weir/internal/hooks"
)

// EventKind tells what a harness output event is.
type EventKind int

const (
	// KindRecord is a record on the main output.
	KindRecord EventKind = iota
	// KindSide is a record on a side output.
	KindSide
	// KindWatermark is a watermark forwarded on the main output.
	KindWatermark
	// KindStatus is a watermark-status change on the main output.
	KindStatus
)

// Event is one thing the operator under test emitted.
type Event struct {
	Kind  EventKind
	Tag   string // side output id
	Value any
	TS    int64 // record timestamp or watermark
	Idle  bool  // status
}

// String formats the event as the harness tests compare it: "side TAG
// v@ts", "v@ts", "wm N", "status idle" or "status active".
func (e Event) String() string {
	switch e.Kind {
	case KindSide:
		return fmt.Sprintf("side %s %v@%d", e.Tag, e.Value, e.TS)
	case KindWatermark:
		return fmt.Sprintf("wm %d", e.TS)
	case KindStatus:
		if e.Idle {
			return "status idle"
		}
		return "status active"
	}
	return fmt.Sprintf("%v@%d", e.Value, e.TS)
}

// Option configures a test harness.
type Option func(*harnessConfig)

type harnessConfig struct {
	channels [2]int
	sides    []weir.SideTag
	opts     []weir.Option
	start    int64
}

// Channels sets the number of input channels of input 1 and 2
// (default 1 each); each channel has its own watermark and status, merged by
// the operator's real watermark valve.
func Channels(input1, input2 int) Option {
	return func(c *harnessConfig) { c.channels = [2]int{input1, input2} }
}

// SideOutputs captures the side outputs with these tags.
func SideOutputs(tags ...weir.SideTag) Option {
	return func(c *harnessConfig) { c.sides = append(c.sides, tags...) }
}

// EnvOptions passes options to the harness's environment
// (parallelism and clock are the harness's own).
func EnvOptions(opts ...weir.Option) Option {
	return func(c *harnessConfig) { c.opts = append(c.opts, opts...) }
}

// recorder collects the events of the main and side outputs in order.
type recorder struct{ events []Event }

func (r *recorder) add(e hooks.HarnessEvent) {
	r.events = append(r.events, Event{Kind: EventKind(e.Kind), Tag: e.Tag, Value: e.Value, TS: e.TS, Idle: e.Idle})
}

// harness is the shared machinery of the one- and two-input harnesses: a
// one-task plan at parallelism 1 with a manual clock, driven step by step on
// the caller's goroutine, exactly as a task goroutine drives it.
type harness struct {
	clock  *harnessClock
	tasks  []*engine.Task
	rec    *recorder
	gates  [2]any
	owner  [2]*engine.Task
	chans  [2]int
	inputs int
	closed bool
}

func newHarness(cfg harnessConfig, inputs int, build func(env hooks.HarnessEnv, rec *recorder) (out any, err error)) (*harness, error) {
	clk := &harnessClock{ManualClock: NewManualClock(cfg.start)}
	opts := append(append([]weir.Option(nil), cfg.opts...), weir.WithParallelism(1), weir.WithClock(clk), weir.WithBufferCredits(1<<12))
	weir.NewEnvironment(opts...)
	env := clk.env
	if env == nil {
		return nil, fmt.Errorf("harness: the environment did not take the harness clock")
	}
	h := &harness{clock: clk, rec: &recorder{}, inputs: inputs}
	for i := range cfg.channels {
		h.chans[i] = max(cfg.channels[i], 1)
	}
	out, err := build(env, h.rec)
	if err != nil {
		return nil, err
	}
	for _, s := range cfg.sides {
		if err := env.CaptureSide(out, s, h.rec.add); err != nil {
			return nil, err
		}
	}
	plan, err := env.Plan()
	if err != nil {
		return nil, err
	}
	for _, x := range plan.External {
		in := 0
		if x.Node.Name == "HarnessInput2" {
			in = 1
		}
		if h.owner[in] != nil {
			return nil, fmt.Errorf("harness: input %d feeds more than one operator", in+1)
		}
		h.gates[in], h.owner[in] = x.Gate, x.Task
	}
	h.tasks = plan.Tasks
	for i := len(h.tasks) - 1; i >= 0; i-- {
		if err := h.tasks[i].Open(); err != nil {
			return nil, err
		}
	}
	return h, h.settle()
}

// settle flushes every task and delivers what they sent each other, in
// topological order, until nothing moves: the harness runs a whole plan on
// the caller's goroutine.
func (h *harness) settle() error {
	for {
		moved := 0
		for _, t := range h.tasks {
			if err := t.Flush(); err != nil {
				return err
			}
			n, err := t.Drain()
			if err != nil {
				return err
			}
			moved += n
		}
		if moved == 0 {
			return nil
		}
	}
}

func (h *harness) do(input int, f func() error) error {
	if h.closed {
		return fmt.Errorf("harness: closed")
	}
	if err := h.owner[input].Do(f); err != nil {
		return err
	}
	return h.settle()
}

// SetProcessingTime moves the processing-time clock to t (never back) and
// fires every processing-time timer due by then.
func (h *harness) SetProcessingTime(t int64) error {
	if h.closed {
		return fmt.Errorf("harness: closed")
	}
	h.clock.Set(t)
	now := h.clock.NowMillis()
	for _, task := range h.tasks {
		if err := task.Do(func() error { return task.AdvanceProcessingTime(now) }); err != nil {
			return err
		}
		if err := h.settle(); err != nil {
			return err
		}
	}
	return nil
}

// ProcessingTime returns the harness clock.
func (h *harness) ProcessingTime() int64 { return h.clock.NowMillis() }

// Events returns every output event so far, in order.
func (h *harness) Events() []Event { return append([]Event(nil), h.rec.events...) }

// TakeEvents returns the output events since the last call and forgets them.
func (h *harness) TakeEvents() []Event {
	ev := h.rec.events
	h.rec.events = nil
	return ev
}

// Close closes the operators.
func (h *harness) Close() error {
	if h.closed {
		return nil
	}
	h.closed = true
	var first error
	for _, t := range h.tasks {
		if err := t.Close(); err != nil && first == nil {
			first = err
		}
	}
	return first
}

func gateOf[T any](h *harness, input int) (*engine.Gate[T], error) {
	g, ok := h.gates[input].(*engine.Gate[T])
	if !ok {
		return nil, fmt.Errorf("harness: input %d is not connected to the operator under test", input+1)
	}
	return g, nil
}

func (h *harness) checkChannel(input, ch int) error {
	if input < 0 || input >= h.inputs || ch < 0 || ch >= h.chans[input] {
		return fmt.Errorf("harness: no channel %d on input %d", ch, input+1)
	}
	return nil
}

func harnessRecord[T any](h *harness, input, ch int, v T, ts int64) error {
	if err := h.checkChannel(input, ch); err != nil {
		return err
	}
	g, err := gateOf[T](h, input)
	if err != nil {
		return err
	}
	return h.do(input, func() error { return g.Records(ch, []engine.Record[T]{{Value: v, TS: ts}}) })
}

func harnessWatermark[T any](h *harness, input, ch int, wm int64) error {
	if err := h.checkChannel(input, ch); err != nil {
		return err
	}
	g, err := gateOf[T](h, input)
	if err != nil {
		return err
	}
	return h.do(input, func() error { return g.WatermarkOn(ch, wm) })
}

func harnessStatus[T any](h *harness, input, ch int, idle bool) error {
	if err := h.checkChannel(input, ch); err != nil {
		return err
	}
	g, err := gateOf[T](h, input)
	if err != nil {
		return err
	}
	return h.do(input, func() error { return g.Status(ch, idle) })
}

func harnessEndWatermarks[T any](h *harness, input int) error {
	g, err := gateOf[T](h, input)
	if err != nil {
		return err
	}
	return h.do(input, func() error {
		for ch := 0; ch < h.chans[input]; ch++ {
			if err := g.WatermarkOn(ch, weir.MaxWatermark); err != nil {
				return err
			}
		}
		return nil
	})
}

func harnessEndChannels[T any](h *harness, input int) error {
	g, err := gateOf[T](h, input)
	if err != nil {
		return err
	}
	return h.do(input, func() error {
		for ch := 0; ch < h.chans[input]; ch++ {
			if err := g.End(ch); err != nil {
				return err
			}
		}
		return nil
	})
}

// OneInput drives the operators that build puts after one input,
// like Flink's OneInputStreamOperatorTestHarness: records, watermarks,
// statuses per channel and processing-time steps in; main output, side
// outputs, watermarks and statuses out. Keyed operators are tested by
// keying the input inside build.
type OneInput[IN, OUT any] struct {
	*harness
}

// NewOneInput builds the operators under test.
func NewOneInput[IN, OUT any](build func(in weir.DataStream[IN]) weir.DataStream[OUT], opts ...Option) (*OneInput[IN, OUT], error) {
	var cfg harnessConfig
	for _, o := range opts {
		o(&cfg)
	}
	h, err := newHarness(cfg, 1, func(env hooks.HarnessEnv, rec *recorder) (any, error) {
		var in weir.DataStream[IN]
		if err := env.ExternalInput(&in, "HarnessInput", max(cfg.channels[0], 1)); err != nil {
			return nil, err
		}
		out := build(in)
		return out, env.Capture(out, rec.add)
	})
	if err != nil {
		return nil, err
	}
	return &OneInput[IN, OUT]{h}, nil
}

// ProcessElement feeds a record on channel 0.
func (h *OneInput[IN, OUT]) ProcessElement(v IN, ts int64) error {
	return harnessRecord(h.harness, 0, 0, v, ts)
}

// ProcessElementOn feeds a record on a channel.
func (h *OneInput[IN, OUT]) ProcessElementOn(ch int, v IN, ts int64) error {
	return harnessRecord(h.harness, 0, ch, v, ts)
}

// ProcessWatermark feeds a watermark on channel 0.
func (h *OneInput[IN, OUT]) ProcessWatermark(wm int64) error {
	return harnessWatermark[IN](h.harness, 0, 0, wm)
}

// ProcessWatermarkOn feeds a watermark on a channel.
func (h *OneInput[IN, OUT]) ProcessWatermarkOn(ch int, wm int64) error {
	return harnessWatermark[IN](h.harness, 0, ch, wm)
}

// SetIdle marks a channel idle or active.
func (h *OneInput[IN, OUT]) SetIdle(ch int, idle bool) error {
	return harnessStatus[IN](h.harness, 0, ch, idle)
}

// EndInput sends the maximum watermark on every channel, then ends them.
func (h *OneInput[IN, OUT]) EndInput() error {
	if err := harnessEndWatermarks[IN](h.harness, 0); err != nil {
		return err
	}
	return harnessEndChannels[IN](h.harness, 0)
}

// Output returns the main output records so far.
func (h *OneInput[IN, OUT]) Output() []weir.Record[OUT] { return recordsOf[OUT](h.rec.events) }

func recordsOf[OUT any](events []Event) []weir.Record[OUT] {
	var out []weir.Record[OUT]
	for _, e := range events {
		if e.Kind == KindRecord {
			out = append(out, weir.Record[OUT]{Value: e.Value.(OUT), TS: e.TS})
		}
	}
	return out
}

// SideOutputOf returns the records emitted so far to a captured side output.
func SideOutputOf[T any](events []Event, tag weir.OutputTag[T]) []weir.Record[T] {
	var out []weir.Record[T]
	for _, e := range events {
		if e.Kind == KindSide && e.Tag == tag.TagID() {
			out = append(out, weir.Record[T]{Value: e.Value.(T), TS: e.TS})
		}
	}
	return out
}

// TwoInput drives a two-input operator (connect + co-process, joins).
type TwoInput[A, B, OUT any] struct {
	*harness
}

// NewTwoInput builds the operators under test from two inputs.
func NewTwoInput[A, B, OUT any](build func(a weir.DataStream[A], b weir.DataStream[B]) weir.DataStream[OUT], opts ...Option) (*TwoInput[A, B, OUT], error) {
	var cfg harnessConfig
	for _, o := range opts {
		o(&cfg)
	}
	h, err := newHarness(cfg, 2, func(env hooks.HarnessEnv, rec *recorder) (any, error) {
		var a weir.DataStream[A]
		var b weir.DataStream[B]
		if err := env.ExternalInput(&a, "HarnessInput1", max(cfg.channels[0], 1)); err != nil {
			return nil, err
		}
		if err := env.ExternalInput(&b, "HarnessInput2", max(cfg.channels[1], 1)); err != nil {
			return nil, err
		}
		out := build(a, b)
		return out, env.Capture(out, rec.add)
	})
	if err != nil {
		return nil, err
	}
	return &TwoInput[A, B, OUT]{h}, nil
}

// ProcessElement1 feeds a record on input 1, channel ch.
func (h *TwoInput[A, B, OUT]) ProcessElement1(ch int, v A, ts int64) error {
	return harnessRecord(h.harness, 0, ch, v, ts)
}

// ProcessElement2 feeds a record on input 2, channel ch.
func (h *TwoInput[A, B, OUT]) ProcessElement2(ch int, v B, ts int64) error {
	return harnessRecord(h.harness, 1, ch, v, ts)
}

// ProcessWatermark1 feeds a watermark on input 1, channel ch.
func (h *TwoInput[A, B, OUT]) ProcessWatermark1(ch int, wm int64) error {
	return harnessWatermark[A](h.harness, 0, ch, wm)
}

// ProcessWatermark2 feeds a watermark on input 2, channel ch.
func (h *TwoInput[A, B, OUT]) ProcessWatermark2(ch int, wm int64) error {
	return harnessWatermark[B](h.harness, 1, ch, wm)
}

// SetIdle1 marks a channel of input 1 idle or active.
func (h *TwoInput[A, B, OUT]) SetIdle1(ch int, idle bool) error {
	return harnessStatus[A](h.harness, 0, ch, idle)
}

// SetIdle2 marks a channel of input 2 idle or active.
func (h *TwoInput[A, B, OUT]) SetIdle2(ch int, idle bool) error {
	return harnessStatus[B](h.harness, 1, ch, idle)
}

// EndInput sends the maximum watermark on every channel of input 1 (in
// channel order), then of input 2, then ends both inputs.
func (h *TwoInput[A, B, OUT]) EndInput() error {
	if err := harnessEndWatermarks[A](h.harness, 0); err != nil {
		return err
	}
	if err := harnessEndWatermarks[B](h.harness, 1); err != nil {
		return err
	}
	if err := harnessEndChannels[A](h.harness, 0); err != nil {
		return err
	}
	return harnessEndChannels[B](h.harness, 1)
}

// Output returns the main output records so far.
func (h *TwoInput[A, B, OUT]) Output() []weir.Record[OUT] { return recordsOf[OUT](h.rec.events) }

// ProcessMail runs what other goroutines have posted to the tasks under
// test (the answers of async requests, given through a ResultFuture) and
// delivers what the operators emit.
func (h *harness) ProcessMail() error {
	if h.closed {
		return fmt.Errorf("harness: closed")
	}
	return h.settle()
}
