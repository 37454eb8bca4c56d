package watermark

import (
	"math/rand/v2"
	"reflect"
	"testing"
)

// A valve restored from its state behaves exactly as the original from
// then on: random inputs, a snapshot at a random point, then the same
// inputs to both.
func TestValveStateRoundTrip(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for trial := 0; trial < 300; trial++ {
		n := 1 + r.IntN(5)
		feed := func(v *Valve, ch int, kind int, wm int64) []Event {
			switch kind {
			case 0:
				return v.Watermark(ch, wm, nil)
			case 1:
				return v.Status(ch, true, nil)
			default:
				return v.Status(ch, false, nil)
			}
		}
		type step struct {
			ch, kind int
			wm       int64
		}
		steps := make([]step, 40)
		for i := range steps {
			steps[i] = step{r.IntN(n), r.IntN(3), int64(r.IntN(100))}
		}
		cut := r.IntN(len(steps))
		a := NewValve(n)
		for _, s := range steps[:cut] {
			feed(a, s.ch, s.kind, s.wm)
		}
		b := RestoreValve(a.State())
		if !reflect.DeepEqual(a.State(), b.State()) {
			t.Fatalf("trial %d: restored state %+v, want %+v", trial, b.State(), a.State())
		}
		for i, s := range steps[cut:] {
			ea, eb := feed(a, s.ch, s.kind, s.wm), feed(b, s.ch, s.kind, s.wm)
			if !reflect.DeepEqual(ea, eb) {
				t.Fatalf("trial %d step %d: original emitted %v, restored %v", trial, cut+i, ea, eb)
			}
		}
	}
}
