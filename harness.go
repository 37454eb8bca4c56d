package weir

import (
	"context"
	"fmt"

	"github.com/weirstream/weir/internal/runtime"
)

// HarnessEventKind tells what a harness output event is.
type HarnessEventKind int

const (
	// HarnessRecord is a record on the main output.
	HarnessRecord HarnessEventKind = iota
	// HarnessSide is a record on a side output.
	HarnessSide
	// HarnessWatermark is a watermark forwarded on the main output.
	HarnessWatermark
	// HarnessStatus is a watermark-status change on the main output.
	HarnessStatus
)

// HarnessEvent is one thing the operator under test emitted.
type HarnessEvent struct {
	Kind  HarnessEventKind
	Tag   string // side output id
	Value any
	TS    int64 // record timestamp or watermark
	Idle  bool  // status
}

// String formats the event as the harness tests compare it: "side TAG
// v@ts", "v@ts", "wm N", "status idle" or "status active".
func (e HarnessEvent) String() string {
	switch e.Kind {
	case HarnessSide:
		return fmt.Sprintf("side %s %v@%d", e.Tag, e.Value, e.TS)
	case HarnessWatermark:
		return fmt.Sprintf("wm %d", e.TS)
	case HarnessStatus:
		if e.Idle {
			return "status idle"
		}
		return "status active"
	}
	return fmt.Sprintf("%v@%d", e.Value, e.TS)
}

// HarnessOption configures a test harness.
type HarnessOption func(*harnessConfig)

type harnessConfig struct {
	channels [2]int
	sides    []sideCapture
	opts     []Option
	start    int64
}

// HarnessChannels sets the number of input channels of input 1 and 2
// (default 1 each); each channel has its own watermark and status, merged by
// the operator's real watermark valve.
func HarnessChannels(input1, input2 int) HarnessOption {
	return func(c *harnessConfig) { c.channels = [2]int{input1, input2} }
}

// HarnessSideOutputs captures the side outputs with these tags.
func HarnessSideOutputs(tags ...sideCapture) HarnessOption {
	return func(c *harnessConfig) { c.sides = append(c.sides, tags...) }
}

// HarnessEnvOptions passes options to the harness's environment
// (parallelism and clock are the harness's own).
func HarnessEnvOptions(opts ...Option) HarnessOption {
	return func(c *harnessConfig) { c.opts = append(c.opts, opts...) }
}

// sideCapture is implemented by OutputTag.
type sideCapture interface {
	SideTag
	capture(env *Environment, n *runtime.Node, rec *recorder)
}

func (t OutputTag[T]) capture(env *Environment, n *runtime.Node, rec *recorder) {
	ds := DataStream[T]{env: env, origins: []origin[T]{{node: n, tag: t.id}}}
	captureSink(ds, rec, t.id)
}

// recorder collects the events of the main and side outputs in order.
type recorder struct{ events []HarnessEvent }

type captureOp[T any] struct {
	rec *recorder
	tag string
}

func (c *captureOp[T]) ProcessBatch(recs []runtime.Record[T]) error {
	kind := HarnessRecord
	if c.tag != "" {
		kind = HarnessSide
	}
	for _, r := range recs {
		c.rec.events = append(c.rec.events, HarnessEvent{Kind: kind, Tag: c.tag, Value: r.Value, TS: r.TS})
	}
	return nil
}

func (c *captureOp[T]) ProcessWatermark(wm int64) error {
	if c.tag == "" {
		c.rec.events = append(c.rec.events, HarnessEvent{Kind: HarnessWatermark, TS: wm})
	}
	return nil
}

func (c *captureOp[T]) ProcessStatus(idle bool) error {
	if c.tag == "" {
		c.rec.events = append(c.rec.events, HarnessEvent{Kind: HarnessStatus, Idle: idle})
	}
	return nil
}

func (c *captureOp[T]) EndInput() error { return nil }

func captureSink[T any](ds DataStream[T], rec *recorder, tag string) {
	n := newNode[struct{}](ds.env, "HarnessOutput", runtime.KindOneInput, 1,
		func(*runtime.BuildContext, *runtime.Output[struct{}]) (runtime.Built, error) {
			return runtime.Built{Inputs: []any{runtime.Input[T](&captureOp[T]{rec: rec, tag: tag})}}, nil
		})
	n.Sink = true
	ds.connect(n, 0)
}

func externalInput[T any](env *Environment, name string, channels int) DataStream[T] {
	n := &runtime.Node{ID: len(env.nodes) + 1, Name: name, Kind: runtime.KindExternal, Parallelism: 1, Channels: channels}
	env.nodes = append(env.nodes, n)
	return streamOf[T](env, n)
}

// harness is the shared machinery of the one- and two-input harnesses: a
// one-task plan at parallelism 1 with a manual clock, driven step by step on
// the caller's goroutine, exactly as a task goroutine drives it.
type harness struct {
	env    *Environment
	clock  *ManualClock
	tasks  []*runtime.Task
	rec    *recorder
	gates  [2]any
	owner  [2]*runtime.Task
	chans  [2]int
	inputs int
	closed bool
}

func newHarness(cfg harnessConfig, inputs int, build func(env *Environment, rec *recorder) (*runtime.Node, error)) (*harness, error) {
	clk := NewManualClock(cfg.start)
	opts := append(append([]Option(nil), cfg.opts...), WithParallelism(1), WithClock(clk), WithBufferCredits(1<<12))
	env := NewEnvironment(opts...)
	h := &harness{env: env, clock: clk, rec: &recorder{}, inputs: inputs}
	for i := range cfg.channels {
		h.chans[i] = max(cfg.channels[i], 1)
	}
	out, err := build(env, h.rec)
	if err != nil {
		return nil, err
	}
	if out == nil {
		return nil, fmt.Errorf("harness: the build function returned no operator stream")
	}
	for _, s := range cfg.sides {
		s.capture(env, out, h.rec)
	}
	plan, err := env.plan(context.Background())
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
func (h *harness) Events() []HarnessEvent { return append([]HarnessEvent(nil), h.rec.events...) }

// TakeEvents returns the output events since the last call and forgets them.
func (h *harness) TakeEvents() []HarnessEvent {
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

func gateOf[T any](h *harness, input int) (*runtime.Gate[T], error) {
	g, ok := h.gates[input].(*runtime.Gate[T])
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
	return h.do(input, func() error { return g.Records(ch, []runtime.Record[T]{{Value: v, TS: ts}}) })
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
			if err := g.WatermarkOn(ch, MaxWatermark); err != nil {
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

// OneInputHarness drives the operators that build puts after one input,
// like Flink's OneInputStreamOperatorTestHarness: records, watermarks,
// statuses per channel and processing-time steps in; main output, side
// outputs, watermarks and statuses out. Keyed operators are tested by
// keying the input inside build.
type OneInputHarness[IN, OUT any] struct {
	*harness
}

// NewOneInputHarness builds the operators under test.
func NewOneInputHarness[IN, OUT any](build func(in DataStream[IN]) DataStream[OUT], opts ...HarnessOption) (*OneInputHarness[IN, OUT], error) {
	var cfg harnessConfig
	for _, o := range opts {
		o(&cfg)
	}
	h, err := newHarness(cfg, 1, func(env *Environment, rec *recorder) (*runtime.Node, error) {
		in := externalInput[IN](env, "HarnessInput", max(cfg.channels[0], 1))
		out := build(in)
		if out.env != env {
			return nil, fmt.Errorf("harness: build must derive its result from the given input")
		}
		captureSink(out, rec, "")
		return out.single("harness"), nil
	})
	if err != nil {
		return nil, err
	}
	return &OneInputHarness[IN, OUT]{h}, nil
}

// ProcessElement feeds a record on channel 0.
func (h *OneInputHarness[IN, OUT]) ProcessElement(v IN, ts int64) error {
	return harnessRecord(h.harness, 0, 0, v, ts)
}

// ProcessElementOn feeds a record on a channel.
func (h *OneInputHarness[IN, OUT]) ProcessElementOn(ch int, v IN, ts int64) error {
	return harnessRecord(h.harness, 0, ch, v, ts)
}

// ProcessWatermark feeds a watermark on channel 0.
func (h *OneInputHarness[IN, OUT]) ProcessWatermark(wm int64) error {
	return harnessWatermark[IN](h.harness, 0, 0, wm)
}

// ProcessWatermarkOn feeds a watermark on a channel.
func (h *OneInputHarness[IN, OUT]) ProcessWatermarkOn(ch int, wm int64) error {
	return harnessWatermark[IN](h.harness, 0, ch, wm)
}

// SetIdle marks a channel idle or active.
func (h *OneInputHarness[IN, OUT]) SetIdle(ch int, idle bool) error {
	return harnessStatus[IN](h.harness, 0, ch, idle)
}

// EndInput sends the maximum watermark on every channel, then ends them.
func (h *OneInputHarness[IN, OUT]) EndInput() error {
	if err := harnessEndWatermarks[IN](h.harness, 0); err != nil {
		return err
	}
	return harnessEndChannels[IN](h.harness, 0)
}

// Output returns the main output records so far.
func (h *OneInputHarness[IN, OUT]) Output() []Record[OUT] { return recordsOf[OUT](h.rec.events) }

func recordsOf[OUT any](events []HarnessEvent) []Record[OUT] {
	var out []Record[OUT]
	for _, e := range events {
		if e.Kind == HarnessRecord {
			out = append(out, Record[OUT]{Value: e.Value.(OUT), TS: e.TS})
		}
	}
	return out
}

// SideOutputOf returns the records emitted so far to a captured side output.
func SideOutputOf[T any](events []HarnessEvent, tag OutputTag[T]) []Record[T] {
	var out []Record[T]
	for _, e := range events {
		if e.Kind == HarnessSide && e.Tag == tag.id {
			out = append(out, Record[T]{Value: e.Value.(T), TS: e.TS})
		}
	}
	return out
}

// TwoInputHarness drives a two-input operator (connect + co-process, joins).
type TwoInputHarness[A, B, OUT any] struct {
	*harness
}

// NewTwoInputHarness builds the operators under test from two inputs.
func NewTwoInputHarness[A, B, OUT any](build func(a DataStream[A], b DataStream[B]) DataStream[OUT], opts ...HarnessOption) (*TwoInputHarness[A, B, OUT], error) {
	var cfg harnessConfig
	for _, o := range opts {
		o(&cfg)
	}
	h, err := newHarness(cfg, 2, func(env *Environment, rec *recorder) (*runtime.Node, error) {
		a := externalInput[A](env, "HarnessInput1", max(cfg.channels[0], 1))
		b := externalInput[B](env, "HarnessInput2", max(cfg.channels[1], 1))
		out := build(a, b)
		if out.env != env {
			return nil, fmt.Errorf("harness: build must derive its result from the given inputs")
		}
		captureSink(out, rec, "")
		return out.single("harness"), nil
	})
	if err != nil {
		return nil, err
	}
	return &TwoInputHarness[A, B, OUT]{h}, nil
}

// ProcessElement1 feeds a record on input 1, channel ch.
func (h *TwoInputHarness[A, B, OUT]) ProcessElement1(ch int, v A, ts int64) error {
	return harnessRecord(h.harness, 0, ch, v, ts)
}

// ProcessElement2 feeds a record on input 2, channel ch.
func (h *TwoInputHarness[A, B, OUT]) ProcessElement2(ch int, v B, ts int64) error {
	return harnessRecord(h.harness, 1, ch, v, ts)
}

// ProcessWatermark1 feeds a watermark on input 1, channel ch.
func (h *TwoInputHarness[A, B, OUT]) ProcessWatermark1(ch int, wm int64) error {
	return harnessWatermark[A](h.harness, 0, ch, wm)
}

// ProcessWatermark2 feeds a watermark on input 2, channel ch.
func (h *TwoInputHarness[A, B, OUT]) ProcessWatermark2(ch int, wm int64) error {
	return harnessWatermark[B](h.harness, 1, ch, wm)
}

// SetIdle1 marks a channel of input 1 idle or active.
func (h *TwoInputHarness[A, B, OUT]) SetIdle1(ch int, idle bool) error {
	return harnessStatus[A](h.harness, 0, ch, idle)
}

// SetIdle2 marks a channel of input 2 idle or active.
func (h *TwoInputHarness[A, B, OUT]) SetIdle2(ch int, idle bool) error {
	return harnessStatus[B](h.harness, 1, ch, idle)
}

// EndInput sends the maximum watermark on every channel of input 1 (in
// channel order), then of input 2, then ends both inputs.
func (h *TwoInputHarness[A, B, OUT]) EndInput() error {
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
func (h *TwoInputHarness[A, B, OUT]) Output() []Record[OUT] { return recordsOf[OUT](h.rec.events) }
