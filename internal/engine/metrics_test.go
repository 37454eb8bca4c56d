package engine

import (
	"context"
	"testing"
	"time"

	"github.com/weirstream/weir/internal/clock"
)

// testGaugeOp is an operator that publishes gauges and state gauges.
type testGaugeOp struct {
	sink[int]
	reported int
}

func (g *testGaugeOp) Open() error  { return nil }
func (g *testGaugeOp) Close() error { return nil }
func (g *testGaugeOp) Gauges() []Gauge {
	return []Gauge{{Name: "lag", Labels: map[string]string{"partition": "3"}, Value: 7}}
}
func (g *testGaugeOp) ReportState(s *StateGauges) {
	g.reported++
	s.StateEntries.Store(int64(len(g.recs)))
}

// TestOperatorMetricsWiring builds a one-operator plan behind an external
// input and checks that the task wires the operator's gauges, publishes
// its state gauges and counts its input in its IO counters.
func TestOperatorMetricsWiring(t *testing.T) {
	op := &testGaugeOp{}
	ext := &Node{ID: 1, Name: "in", Kind: KindExternal, Parallelism: 1, Channels: 1}
	n := &Node{ID: 2, Name: "op", Kind: KindOneInput, Parallelism: 1,
		NewOutput: func(bs int) OutputPort { return NewOutput[int](bs) },
		Build:     func(*BuildContext) (Built, error) { return Built{Inputs: []any{Input[int](op)}, Life: op}, nil }}
	NewEdge[int](ext, "", n, 0, PartitionForward, nil)
	p, err := BuildPlan(context.Background(), []*Node{ext, n}, Config{MaxParallelism: 8, BatchSize: 4, Credits: 2, Chaining: true, Clock: clock.NewManual(0)})
	if err != nil {
		t.Fatal(err)
	}
	task := p.Tasks[0]
	om := task.Metrics.Operators[0]
	if om.Gauges == nil || om.State == nil || om.UID != UIDOf(n) || om.UID == "" {
		t.Fatalf("operator metrics not wired: %+v", om)
	}
	if g := om.Gauges(); len(g) != 1 || g[0].Value != 7 || g[0].Labels["partition"] != "3" {
		t.Fatalf("gauges %+v", g)
	}
	gate := p.External[0].Gate.(*Gate[int])
	must(t, task.Do(func() error {
		return gate.Records(0, []Record[int]{{Value: 1, TS: 1}, {Value: 2, TS: 2}, {Value: 3, TS: 3}})
	}))
	task.refresh(time.Now(), true)
	if op.reported != 1 || om.State.StateEntries.Load() != 3 {
		t.Fatalf("state gauges: reported %d, entries %d", op.reported, om.State.StateEntries.Load())
	}
	task.refresh(time.Now(), false) // within refreshEvery: not again
	if op.reported != 1 {
		t.Fatalf("refreshed again at once")
	}
	if in, b := task.Metrics.IO.RecordsIn.Load(), task.Metrics.IO.BytesIn.Load(); in != 3 || b != 3*recordSize[int]() {
		t.Fatalf("IO in: %d records, %d bytes", in, b)
	}
	if rs := om.InputRecords(); len(rs) != 1 || rs[0] != 3 {
		t.Fatalf("input records %v", rs)
	}
	if idle := om.InputIdle(); len(idle) != 1 || idle[0] {
		t.Fatalf("input idle %v", idle)
	}
	must(t, task.Do(func() error { return gate.Status(0, true) }))
	if idle := om.InputIdle(); !idle[0] {
		t.Fatalf("input not idle after an idle status")
	}
	if vs := p.Vertices; len(vs) != 1 || vs[0].UID != UIDOf(n) || vs[0].Operators[0].Kind != "one-input" {
		t.Fatalf("vertices %+v", vs)
	}
}

// TestLiveTimes checks that a task's busy and idle stretches in progress
// count before the task accounts them.
func TestLiveTimes(t *testing.T) {
	m := &TaskMetrics{live: liveTimes{base: time.Now().Add(-time.Second)}}
	m.live.mark(time.Now().Add(-500*time.Millisecond), true)
	_, idle, _ := m.Times()
	if idle < 400*time.Millisecond {
		t.Fatalf("idle in progress %v", idle)
	}
	m.live.bpSince.Store(m.live.at(time.Now().Add(-300 * time.Millisecond)))
	if _, _, bp := m.Times(); bp < 250*time.Millisecond {
		t.Fatalf("back-pressure in progress %v", bp)
	}
}
