// Package clock is the processing-time source of a job. Every reading of
// processing time in Weir goes through a Clock, so tests can replace the wall
// clock with a Manual one and move time by hand.
package clock

import (
	"container/heap"
	"context"
	"sync"
	"time"
)

// Clock tells processing time in milliseconds since the Unix epoch and
// schedules callbacks on it.
type Clock interface {
	// NowMillis returns the current processing time in milliseconds.
	NowMillis() int64
	// AfterFunc calls f, on a goroutine of the clock's choosing, once the
	// clock has reached at (milliseconds). The returned function cancels the
	// call if it has not happened yet and reports whether it did cancel it.
	AfterFunc(at int64, f func()) (stop func() bool)
}

// System is the wall clock.
type System struct{}

// NowMillis returns the wall-clock time in milliseconds.
func (System) NowMillis() int64 { return time.Now().UnixMilli() }

// AfterFunc schedules f at wall-clock time at.
func (System) AfterFunc(at int64, f func()) func() bool {
	d := time.Duration(at-time.Now().UnixMilli()) * time.Millisecond
	if d < 0 {
		d = 0
	}
	t := time.AfterFunc(d, f)
	return t.Stop
}

// Manual is a clock that moves only when told to. Callbacks that become due
// run synchronously inside Set or Advance, in time order. It is safe for
// concurrent use.
type Manual struct {
	mu  sync.Mutex
	now int64
	q   callbacks
	seq uint64
}

// NewManual returns a manual clock standing at start milliseconds.
func NewManual(start int64) *Manual { return &Manual{now: start} }

// NowMillis returns the clock's current time.
func (m *Manual) NowMillis() int64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.now
}

// AfterFunc registers f to run when the clock reaches at. A callback that is
// already due runs on a new goroutine, as a timer of the system clock would.
func (m *Manual) AfterFunc(at int64, f func()) func() bool {
	m.mu.Lock()
	if at <= m.now {
		m.mu.Unlock()
		go f()
		return func() bool { return false }
	}
	m.seq++
	cb := &callback{at: at, seq: m.seq, f: f}
	heap.Push(&m.q, cb)
	m.mu.Unlock()
	return func() bool {
		m.mu.Lock()
		defer m.mu.Unlock()
		if cb.index < 0 {
			return false
		}
		heap.Remove(&m.q, cb.index)
		return true
	}
}

// Set moves the clock to t (never backwards) and runs every callback due by then.
func (m *Manual) Set(t int64) {
	m.mu.Lock()
	if t > m.now {
		m.now = t
	}
	var due []*callback
	for m.q.Len() > 0 && m.q[0].at <= m.now {
		due = append(due, heap.Pop(&m.q).(*callback))
	}
	m.mu.Unlock()
	for _, cb := range due {
		cb.f()
	}
}

// Advance moves the clock forward by d milliseconds.
func (m *Manual) Advance(d int64) { m.Set(m.NowMillis() + d) }

type callback struct {
	at    int64
	seq   uint64
	index int
	f     func()
}

type callbacks []*callback

func (q callbacks) Len() int { return len(q) }
func (q callbacks) Less(i, j int) bool {
	if q[i].at != q[j].at {
		return q[i].at < q[j].at
	}
	return q[i].seq < q[j].seq
}
func (q callbacks) Swap(i, j int) {
	q[i], q[j] = q[j], q[i]
	q[i].index = i
	q[j].index = j
}
func (q *callbacks) Push(x any) {
	cb := x.(*callback)
	cb.index = len(*q)
	*q = append(*q, cb)
}
func (q *callbacks) Pop() any {
	old := *q
	cb := old[len(old)-1]
	old[len(old)-1] = nil
	cb.index = -1
	*q = old[:len(old)-1]
	return cb
}

// Sleep waits until clk reaches until or ctx ends (then it returns ctx's
// error).
func Sleep(ctx context.Context, clk Clock, until int64) error {
	ch := make(chan struct{})
	stop := clk.AfterFunc(until, func() { close(ch) })
	defer stop()
	select {
	case <-ch:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
