package weir

import (
	"testing"

	"github.com/weirstream/weir/internal/clock"
	"github.com/weirstream/weir/internal/keyedsnap"
	istate "github.com/weirstream/weir/internal/state"
	"github.com/weirstream/weir/internal/timer"
	"github.com/weirstream/weir/state"
)

// TestJoinBufferSurvivesSnapshot snapshots a join buffer with its cleanup
// timers and restores it into a fresh backend: buckets, arrival order and
// the joined flags come back.
func TestJoinBufferSurvivesSnapshot(t *testing.T) {
	b := istate.NewBackend[string](0, 127, clock.NewManual(0))
	tm := timer.NewService[string, int8]()
	v, err := istate.GetValue[string, void](b, state.Value[*tsBuffer[benchRec]]("LEFT_BUFFER"))
	if err != nil {
		t.Fatal(err)
	}
	b.SetCurrentKey("k", 7)
	buf := &tsBuffer[benchRec]{}
	buf.add(5, benchRec{1, 1}, true)
	buf.add(3, benchRec{1, 2}, false)
	buf.add(5, benchRec{1, 3}, false)
	v.Update(buf)
	tm.RegisterEventTime("k", 7, nsLeft, 9)
	kgs, err := keyedsnap.Snapshot(b, tm)
	if err != nil {
		t.Fatal(err)
	}
	b2 := istate.NewBackend[string](0, 127, clock.NewManual(0))
	tm2 := timer.NewService[string, int8]()
	if err := keyedsnap.Restore(b2, tm2, kgs); err != nil {
		t.Fatal(err)
	}
	v2, err := istate.GetValue[string, void](b2, state.Value[*tsBuffer[benchRec]]("LEFT_BUFFER"))
	if err != nil {
		t.Fatal(err)
	}
	b2.SetCurrentKey("k", 7)
	got, ok := v2.Value()
	if !ok || len(got.buckets) != 2 || got.buckets[0].ts != 3 || len(got.buckets[1].entries) != 2 ||
		got.buckets[1].entries[1].v.V != 3 || !got.buckets[1].entries[0].joined || got.buckets[1].entries[1].joined {
		t.Fatalf("restored buffer %+v", got)
	}
	if n, ok := tm2.EventTimers().Peek(); !ok || n.Timestamp != 9 || n.Namespace != nsLeft {
		t.Fatalf("restored timer %+v %v", n, ok)
	}
}
