package watermark

import (
	"testing"
	"time"

	"github.com/weirstream/weir/internal/clock"
)

type punctuated struct{}

func (punctuated) OnEvent(_ int, ts int64, out Output) { out.EmitWatermark(ts) }
func (punctuated) OnPeriodicEmit(Output)               {}

// Only generators that cannot emit on events let a source hand batches on
// before showing the generator their events.
func TestIsPeriodicOnly(t *testing.T) {
	clk := clock.NewManual(0)
	for _, c := range []struct {
		name string
		g    Generator[int]
		want bool
	}{
		{"bounded", BoundedOutOfOrderness[int](time.Second), true},
		{"monotonous", Monotonous[int](), true},
		{"none", None[int](), true},
		{"bounded with idleness", WithIdleness(BoundedOutOfOrderness[int](0), time.Second, clk), true},
		{"punctuated", punctuated{}, false},
		{"punctuated with idleness", WithIdleness[int](punctuated{}, time.Second, clk), false},
	} {
		if got := IsPeriodicOnly(c.g); got != c.want {
			t.Errorf("%s: %v, want %v", c.name, got, c.want)
		}
	}
}
