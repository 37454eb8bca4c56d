package engine

import (
	"slices"
	"time"
)

// Vertex describes one chain of operators of a plan, run as one task per
// subtask (Flink's job vertex): its head node's UID identifies it.
type Vertex struct {
	// UID is the head operator's state id (UIDOf).
	UID string
	// Name is the chain's name as its tasks carry it ("a -> b -> c").
	Name        string
	Parallelism int
	// Operators lists the chained operators, head first.
	Operators []VertexOperator
	// Inputs lists the network edges into the head, by input.
	Inputs []VertexInput
}

// VertexOperator is one operator of a vertex.
type VertexOperator struct {
	Name string
	UID  string
	// Kind is "source", "one-input" or "two-input".
	Kind string
	// Watermarks is the watermark strategy the operator declares (a
	// source, or AssignTimestampsAndWatermarks); nil if none.
	Watermarks *WatermarkDecl
}

// WatermarkDecl is what a watermark strategy declares, as the monitor
// shows it: its out-of-orderness bound, idleness timeout and alignment.
type WatermarkDecl struct {
	// OutOfOrderness is the bound in ms (0 for monotonous timestamps); -1
	// if the strategy declares none (no watermarks, a custom generator).
	OutOfOrderness int64
	// Idleness is the idleness timeout in ms (0: none).
	Idleness int64
	// Alignment is the watermark alignment, nil if none.
	Alignment *Alignment
}

// DeclareWatermarks describes a strategy: bound is its out-of-orderness
// bound (nil: none declared), idle its idleness timeout, align its
// alignment (nil: none).
func DeclareWatermarks(bound *time.Duration, idle time.Duration, align *Alignment) *WatermarkDecl {
	d := &WatermarkDecl{OutOfOrderness: -1, Idleness: idle.Milliseconds()}
	if bound != nil {
		d.OutOfOrderness = bound.Milliseconds()
	}
	if align != nil {
		a := *align
		d.Alignment = &a
	}
	return d
}

// VertexInput is one network edge into a vertex.
type VertexInput struct {
	// From is the producing vertex's UID.
	From string
	// Input is the head operator's input the edge feeds (0 or 1).
	Input     int
	Partition Partitioning
	// Side is the side-output tag the edge reads ("" for the main output).
	Side string
}

func kindName(k NodeKind) string {
	switch k {
	case KindSource:
		return "source"
	case KindTwoInput:
		return "two-input"
	}
	return "one-input"
}

// describeVertices describes the chains of a plan.
func describeVertices(heads []*Node, members map[*Node][]*Node, head map[*Node]*Node, chained func(*Edge) bool) []Vertex {
	out := make([]Vertex, 0, len(heads))
	for _, h := range heads {
		v := Vertex{UID: UIDOf(h), Name: h.Name, Parallelism: h.Parallelism}
		for i, n := range members[h] {
			if i > 0 {
				v.Name += " -> " + n.Name
			}
			v.Operators = append(v.Operators, VertexOperator{Name: n.Name, UID: UIDOf(n), Kind: kindName(n.Kind), Watermarks: n.Watermarks})
		}
		for _, e := range h.Inputs {
			if e.From.Kind == KindExternal || chained(e) {
				continue
			}
			from := e.From
			if hf, ok := head[from]; ok {
				from = hf
			}
			v.Inputs = append(v.Inputs, VertexInput{From: UIDOf(from), Input: e.Input, Partition: e.Partition, Side: e.Tag})
		}
		slices.SortStableFunc(v.Inputs, func(a, b VertexInput) int { return a.Input - b.Input })
		out = append(out, v)
	}
	return out
}

// watchOperator wires an operator's optional metrics: state gauges,
// source splits, join samples.
func (t *Task) watchOperator(om *OperatorMetrics, n *Node, b Built) {
	om.UID = UIDOf(n)
	if g, ok := b.Life.(StateReporter); ok {
		om.State = new(StateGauges)
		t.gauges.ops = append(t.gauges.ops, gaugeOp{g, om.State})
	}
	for _, x := range []any{b.Life, b.Source} {
		if r, ok := x.(SplitReporter); ok && om.Splits == nil {
			om.Splits = r.SplitMetrics
		}
		if j, ok := x.(JoinSampler); ok && om.Join == nil {
			om.Join = j.JoinSample
		}
	}
}

// watchGates makes a task's input gates count into io and publishes their
// idleness and record counts on the head operator's metrics.
func watchGates(om *OperatorMetrics, gates []gate, io *IOCounters) {
	for _, g := range gates {
		g.countInto(io)
	}
	om.InputIdle = func() []bool {
		out := make([]bool, len(gates))
		for i, g := range gates {
			out[i] = g.Idle()
		}
		return out
	}
	om.InputRecords = func() []int64 {
		out := make([]int64, len(gates))
		for i, g := range gates {
			out[i] = g.RecordsIn()
		}
		return out
	}
}
