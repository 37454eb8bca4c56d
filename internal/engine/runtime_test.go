package engine

import (
	"context"
	"errors"
	"reflect"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/weirstream/weir/internal/clock"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// sink records what reaches an Input.
type sink[T any] struct {
	recs  []Record[T]
	wms   []int64
	stats []bool
	ended int
}

func (s *sink[T]) ProcessBatch(r []Record[T]) error { s.recs = append(s.recs, r...); return nil }
func (s *sink[T]) ProcessWatermark(wm int64) error  { s.wms = append(s.wms, wm); return nil }
func (s *sink[T]) ProcessStatus(idle bool) error    { s.stats = append(s.stats, idle); return nil }
func (s *sink[T]) EndInput() error                  { s.ended++; return nil }

func TestOutputDropsWatermarksWhileIdle(t *testing.T) {
	o := NewOutput[int](4)
	s := &sink[int]{}
	side := NewOutput[int](4)
	ss := &sink[int]{}
	if err := o.AddTarget(s); err != nil {
		t.Fatal(err)
	}
	if err := side.AddTarget(ss); err != nil {
		t.Fatal(err)
	}
	o.AddSibling(side)
	o.Collect(1, 10)
	must(t, o.EmitWatermark(5))
	must(t, o.EmitStatus(true))
	must(t, o.EmitStatus(true)) // no change: not forwarded
	must(t, o.EmitWatermark(6)) // dropped while idle
	must(t, o.EmitStatus(false))
	must(t, o.EmitWatermark(7))
	must(t, o.End())
	if len(s.recs) != 1 || s.recs[0] != (Record[int]{Value: 1, TS: 10}) {
		t.Fatalf("records %v", s.recs)
	}
	if got := s.wms; len(got) != 2 || got[0] != 5 || got[1] != 7 {
		t.Fatalf("watermarks %v", got)
	}
	if got := s.stats; len(got) != 2 || !got[0] || got[1] {
		t.Fatalf("statuses %v", got)
	}
	if len(ss.wms) != 2 || len(ss.stats) != 2 || ss.ended != 1 || s.ended != 1 {
		t.Fatalf("side output did not follow the main output: %+v", ss)
	}
}

func TestOutputFlushesWhenFull(t *testing.T) {
	o := NewOutput[int](3)
	s := &sink[int]{}
	must(t, o.AddTarget(s))
	for i := range 7 {
		o.Collect(i, int64(i))
	}
	if len(s.recs) != 6 {
		t.Fatalf("after 7 collects with batch 3, %d records delivered", len(s.recs))
	}
	must(t, o.Flush())
	if len(s.recs) != 7 {
		t.Fatalf("after flush %d", len(s.recs))
	}
	if o.Counted() != 7 {
		t.Fatalf("counted %d", o.Counted())
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func TestExchangeHashRoutingAndControlOrder(t *testing.T) {
	ctx := context.Background()
	route := func(v *int) int { return *v % 3 }
	x, err := NewExchange(PartitionHash, route, 2, 3, ExchangeConfig{BatchSize: 2, Credits: 10})
	must(t, err)
	inbox := make(chan message, 100)
	sinks := make([]*sink[int], 3)
	gates := make([]*Gate[int], 3)
	for i := range sinks {
		sinks[i] = &sink[int]{}
		gates[i] = NewGate[int](2, sinks[i])
		x.Attach(i, gates[i], 0, inbox)
	}
	w0, w1 := x.Writer(ctx, 0, nil), x.Writer(ctx, 1, nil)
	must(t, w0.ProcessBatch([]Record[int]{{Value: 0, TS: 1}, {Value: 1, TS: 1}, {Value: 2, TS: 1}, {Value: 3, TS: 1}, {Value: 4, TS: 1}}))
	must(t, w0.ProcessWatermark(10))
	must(t, w1.ProcessBatch([]Record[int]{{Value: 5, TS: 1}}))
	must(t, w1.ProcessWatermark(20))
	must(t, w0.EndInput())
	must(t, w1.EndInput())
	close(inbox)
	for m := range inbox {
		must(t, m.process())
	}
	for i, s := range sinks {
		for _, r := range s.recs {
			if r.Value%3 != i {
				t.Fatalf("record %d reached consumer %d", r.Value, i)
			}
		}
		if len(s.wms) != 1 || s.wms[0] != 10 { // the valve takes the minimum of both channels
			t.Fatalf("consumer %d watermarks %v", i, s.wms)
		}
		if s.ended != 1 || !gates[i].Ended() {
			t.Fatalf("consumer %d not ended", i)
		}
	}
	if n := len(sinks[0].recs) + len(sinks[1].recs) + len(sinks[2].recs); n != 6 {
		t.Fatalf("%d records delivered, want 6", n)
	}
}

func TestExchangeBackpressureBlocksSender(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	x, err := NewExchange[int](PartitionForward, nil, 1, 1, ExchangeConfig{BatchSize: 1, Credits: 2})
	must(t, err)
	inbox := make(chan message, 10)
	s := &sink[int]{}
	x.Attach(0, NewGate[int](1, s), 0, inbox)
	m := &TaskMetrics{}
	w := x.Writer(ctx, 0, m)
	must(t, w.ProcessBatch([]Record[int]{{Value: 1, TS: 0}, {Value: 2, TS: 0}})) // uses both credits
	done := make(chan error, 1)
	go func() { done <- w.ProcessBatch([]Record[int]{{Value: 3, TS: 0}}) }()
	select {
	case <-done:
		t.Fatal("sender was not blocked with no credits left")
	case <-time.After(50 * time.Millisecond):
	}
	must(t, (<-inbox).process()) // consumer frees a credit
	must(t, <-done)
	if len(inbox) != 2 {
		t.Fatalf("inbox holds %d batches, want 2", len(inbox))
	}
	// A cancelled context releases a blocked sender.
	go func() { done <- w.ProcessBatch([]Record[int]{{Value: 4, TS: 0}}) }()
	cancel()
	if err := <-done; err == nil {
		t.Fatal("blocked sender did not see the cancellation")
	}
}

func TestForwardNeedsEqualParallelism(t *testing.T) {
	if _, err := NewExchange[int](PartitionForward, nil, 2, 3, ExchangeConfig{}); err == nil {
		t.Fatal("forward 2 -> 3 accepted")
	}
}

func TestTaskProcessingTimeCallbacksInOrder(t *testing.T) {
	clk := clock.NewManual(0)
	task := NewTask("t", 0, clk)
	var got []int64
	for _, at := range []int64{30, 10, 20} {
		task.Schedule(at, func(at int64) error {
			got = append(got, at)
			if at == 10 {
				task.Schedule(15, func(at int64) error { got = append(got, at); return nil })
			}
			return nil
		})
	}
	must(t, task.AdvanceProcessingTime(20))
	if len(got) != 3 || got[0] != 10 || got[1] != 15 || got[2] != 20 {
		t.Fatalf("fired %v", got)
	}
	if next, ok := task.NextProcessingTime(); !ok || next != 30 {
		t.Fatalf("next %d %v", next, ok)
	}
}

func TestTaskGuardNamesPanics(t *testing.T) {
	task := NewTask("chain", 3, clock.NewManual(0))
	err := task.Do(func() error { panic("kaput") })
	oe, ok := err.(*OperatorError)
	if !ok || oe.Subtask != 3 || oe.Stack == "" || oe.Operator != "chain" {
		t.Fatalf("got %#v", err)
	}
}

func TestHasPointers(t *testing.T) {
	type flat struct {
		A int64
		B [2]float64
	}
	type ptr struct {
		A int64
		S string
	}
	cases := map[reflect.Type]bool{
		reflect.TypeFor[int64]():       false,
		reflect.TypeFor[flat]():        false,
		reflect.TypeFor[[3]flat]():     false,
		reflect.TypeFor[string]():      true,
		reflect.TypeFor[ptr]():         true,
		reflect.TypeFor[[]int]():       true,
		reflect.TypeFor[*int]():        true,
		reflect.TypeFor[any]():         true,
		reflect.TypeFor[Record[ptr]](): true,
	}
	for typ, want := range cases {
		if got := hasPointers(typ); got != want {
			t.Errorf("hasPointers(%v) = %v, want %v", typ, got, want)
		}
	}
}

func TestForwardKeepsSubtasksApart(t *testing.T) {
	x, err := NewExchange[int](PartitionForward, nil, 2, 2, ExchangeConfig{BatchSize: 4, Credits: 4})
	must(t, err)
	if x.Channels(0) != 1 {
		t.Fatalf("a forward consumer has %d channels, want 1", x.Channels(0))
	}
	inbox := make(chan message, 16)
	s0, s1 := &sink[int]{}, &sink[int]{}
	x.Attach(0, NewGate[int](1, s0), 0, inbox)
	x.Attach(1, NewGate[int](1, s1), 0, inbox)
	ctx := context.Background()
	w0, w1 := x.Writer(ctx, 0, nil), x.Writer(ctx, 1, nil)
	must(t, w0.ProcessWatermark(5))
	must(t, w1.ProcessBatch([]Record[int]{{Value: 7, TS: 1}}))
	must(t, w1.ProcessWatermark(9))
	close(inbox)
	for m := range inbox {
		must(t, m.process())
	}
	if len(s0.wms) != 1 || s0.wms[0] != 5 || len(s0.recs) != 0 {
		t.Fatalf("subtask 0 saw %v / %v, want only its producer's watermark 5", s0.wms, s0.recs)
	}
	if len(s1.wms) != 1 || s1.wms[0] != 9 || len(s1.recs) != 1 {
		t.Fatalf("subtask 1 saw %v / %v", s1.wms, s1.recs)
	}
}

// TestTaskFailStopsAnIdleTask fails a running task from another goroutine
// while it waits for input (a state backend failing on a goroutine of its
// own): Run returns the failure, and a task driven step by step returns
// it from its next step.
func TestTaskFailStopsAnIdleTask(t *testing.T) {
	task := NewTask("t", 0, clock.NewManual(0))
	task.SetInbox(make(chan message, 1))
	task.SetDone(func() bool { return false })
	done := make(chan error, 1)
	go func() { done <- task.Run(context.Background()) }()
	failure := errors.New("database failed")
	task.Fail(failure)
	task.Fail(errors.New("a later failure")) // the first one wins
	if err := <-done; !errors.Is(err, failure) {
		t.Fatalf("Run returned %v, want the failure", err)
	}

	stepped := NewTask("s", 0, clock.NewManual(0))
	stepped.Fail(failure)
	ran := false
	if err := stepped.Do(func() error { ran = true; return nil }); !errors.Is(err, failure) || ran {
		t.Fatalf("Do after Fail: err %v, ran %v", err, ran)
	}
}
