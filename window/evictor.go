package window

import (
	"math"
	"time"
)

// Elements are the contents of a window handed to an evictor: the elements
// not evicted so far, in insertion order. Evict marks one for removal; the
// operator drops the marked ones after the call.
type Elements interface {
	// Len returns the number of elements.
	Len() int
	// Timestamp returns element i's timestamp and whether it has one.
	Timestamp(i int) (int64, bool)
	// Evict marks element i for removal.
	Evict(i int)
	// Evicted reports whether element i is marked for removal.
	Evicted(i int) bool
}

// TypedElements gives an evictor the values of the elements; the window
// operator's Elements implement it for the stream's element type.
type TypedElements[T any] interface {
	Elements
	// Value returns element i.
	Value(i int) T
}

// EvictorContext is what an evictor sees of the operator.
type EvictorContext interface {
	// CurrentProcessingTime returns the processing-time clock in ms.
	CurrentProcessingTime() int64
	// CurrentWatermark returns the operator's current watermark.
	CurrentWatermark() int64
	// Window returns the window being fired, boxed.
	Window() any
}

// Evictor removes elements from a window before and/or after the window
// function runs, as Flink's Evictor. With an evictor the operator keeps
// every element (no incremental aggregation) and applies the function to
// what is left at each firing.
type Evictor interface {
	// EvictBefore runs before the window function; size is Len().
	EvictBefore(elems Elements, size int, ctx EvictorContext)
	// EvictAfter runs after the window function.
	EvictAfter(elems Elements, size int, ctx EvictorContext)
}

// countEvictor is the evictor returned by CountEvictor.
type countEvictor struct {
	max   int64
	after bool
}

// CountEvictor keeps at most n elements, evicting from the front, before
// the window function (or after it, with after = true).
func CountEvictor(n int64, after ...bool) Evictor {
	return &countEvictor{max: n, after: len(after) > 0 && after[0]}
}

// Validate checks n >= 0.
func (c *countEvictor) Validate() error {
	if c.max < 0 {
		return errorf("count evictor needs n >= 0, got %d", c.max)
	}
	return nil
}

func (c *countEvictor) evict(elems Elements, size int) {
	if int64(size) <= c.max {
		return
	}
	drop := int64(size) - c.max
	for i := 0; i < elems.Len() && drop > 0; i++ {
		elems.Evict(i)
		drop--
	}
}

// EvictBefore implements Evictor.
func (c *countEvictor) EvictBefore(elems Elements, size int, _ EvictorContext) {
	if !c.after {
		c.evict(elems, size)
	}
}

// EvictAfter implements Evictor.
func (c *countEvictor) EvictAfter(elems Elements, size int, _ EvictorContext) {
	if c.after {
		c.evict(elems, size)
	}
}

// timeEvictor is the evictor returned by TimeEvictor.
type timeEvictor struct {
	keep  int64
	after bool
	given
}

// TimeEvictor keeps the elements of the last keep: those with a timestamp
// greater than the largest timestamp in the window minus keep. It does
// nothing if the first element has no timestamp.
func TimeEvictor(keep time.Duration, after ...bool) Evictor {
	return &timeEvictor{keep: millis(keep), after: len(after) > 0 && after[0], given: given{}.set("time evictor's keep", keep)}
}

// Validate checks that keep is not below 1 ms (unless 0).
func (t *timeEvictor) Validate() error { return t.check() }

func (t *timeEvictor) evict(elems Elements) {
	if elems.Len() == 0 {
		return
	}
	if _, ok := elems.Timestamp(0); !ok {
		return
	}
	cur := int64(math.MinInt64)
	for i := 0; i < elems.Len(); i++ {
		if ts, _ := elems.Timestamp(i); ts > cur {
			cur = ts
		}
	}
	cutoff := cur - t.keep
	for i := 0; i < elems.Len(); i++ {
		if ts, _ := elems.Timestamp(i); ts <= cutoff {
			elems.Evict(i)
		}
	}
}

// EvictBefore implements Evictor.
func (t *timeEvictor) EvictBefore(elems Elements, _ int, _ EvictorContext) {
	if !t.after {
		t.evict(elems)
	}
}

// EvictAfter implements Evictor.
func (t *timeEvictor) EvictAfter(elems Elements, _ int, _ EvictorContext) {
	if t.after {
		t.evict(elems)
	}
}

// deltaEvictor is the evictor returned by DeltaEvictor.
type deltaEvictor[T any] struct {
	threshold float64
	delta     func(a, b T) float64
	after     bool
}

// DeltaEvictor evicts every element whose delta to the last element is at
// least threshold, before the window function (or after it, with after =
// true).
func DeltaEvictor[T any](threshold float64, delta func(a, b T) float64, after ...bool) Evictor {
	return &deltaEvictor[T]{threshold: threshold, delta: delta, after: len(after) > 0 && after[0]}
}

// Validate checks that the delta function is set.
func (d *deltaEvictor[T]) Validate() error {
	if d.delta == nil {
		return errorf("delta evictor: delta function is nil")
	}
	return nil
}

func (d *deltaEvictor[T]) evict(elems Elements) {
	te, ok := elems.(TypedElements[T])
	if !ok || te.Len() == 0 {
		return
	}
	last := te.Value(te.Len() - 1)
	for i := 0; i < te.Len(); i++ {
		if d.delta(te.Value(i), last) >= d.threshold {
			te.Evict(i)
		}
	}
}

// EvictBefore implements Evictor.
func (d *deltaEvictor[T]) EvictBefore(elems Elements, _ int, _ EvictorContext) {
	if !d.after {
		d.evict(elems)
	}
}

// EvictAfter implements Evictor.
func (d *deltaEvictor[T]) EvictAfter(elems Elements, _ int, _ EvictorContext) {
	if d.after {
		d.evict(elems)
	}
}
