package watermark

import (
	"time"

	"github.com/weirstream/weir/internal/clock"
)

// UserGenerator is a job author's generator whose output is O, the API's
// own interface with Output's methods.
type UserGenerator[T, O any] interface {
	OnEvent(event T, ts int64, out O)
	OnPeriodicEmit(out O)
}

// Adapter runs a UserGenerator as a Generator: the runtime's output is
// handed over through one forwarder per generator, made an O once, so
// that no call converts an interface.
type Adapter[T any, O Output] struct {
	g   UserGenerator[T, O]
	fwd forwarder
	out O
}

type forwarder struct{ o Output }

func (f *forwarder) EmitWatermark(wm int64) { f.o.EmitWatermark(wm) }
func (f *forwarder) MarkIdle()              { f.o.MarkIdle() }
func (f *forwarder) MarkActive()            { f.o.MarkActive() }

// Adapt returns the adapter of g; O must be an interface type.
func Adapt[T any, O Output](g UserGenerator[T, O]) *Adapter[T, O] {
	a := &Adapter[T, O]{g: g}
	a.out = any(&a.fwd).(O)
	return a
}

// OnEvent implements Generator.
func (a *Adapter[T, O]) OnEvent(e T, ts int64, out Output) {
	a.fwd.o = out
	a.g.OnEvent(e, ts, a.out)
}

// OnPeriodicEmit implements Generator.
func (a *Adapter[T, O]) OnPeriodicEmit(out Output) {
	a.fwd.o = out
	a.g.OnPeriodicEmit(a.out)
}

// Factory returns the per-split generator factory of gen (nil if gen is
// nil), with idleness after idle (none if 0) measured on the split's
// input-activity clock.
func Factory[T any](gen func() Generator[T], idle time.Duration) func(activity clock.Relative) Generator[T] {
	if gen == nil {
		return nil
	}
	if idle > 0 {
		return func(c clock.Relative) Generator[T] { return WithIdleness(gen(), idle, c) }
	}
	return func(clock.Relative) Generator[T] { return gen() }
}
