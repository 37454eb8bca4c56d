// Package sinkop holds the operators of the root package's simple sinks:
// a function per record, a discarding sink and Print's writer.
package sinkop

import (
	"fmt"
	"io"
	"slices"
	"strconv"
	"sync"

	"github.com/weirstream/weir/connector"
	"github.com/weirstream/weir/internal/engine"
)

// Op calls a function per record; control elements end here.
type Op[T any] struct {
	// Catch is deferred around the calls of F: it reports an error or a
	// panic against the sink.
	Catch func(err *error)
	F     func(v T, ts int64) error
	// CloseFn closes the sink's writer (nil: nothing to close).
	CloseFn func() error
}

// ProcessBatch implements engine.Input.
func (o *Op[T]) ProcessBatch(recs []engine.Record[T]) (err error) {
	defer o.Catch(&err)
	for i := range recs {
		if err := o.F(recs[i].Value, recs[i].TS); err != nil {
			return err
		}
	}
	return nil
}

// ProcessWatermark implements engine.Input.
func (o *Op[T]) ProcessWatermark(int64) error { return nil }

// ProcessStatus implements engine.Input.
func (o *Op[T]) ProcessStatus(bool) error { return nil }

// EndInput implements engine.Input.
func (o *Op[T]) EndInput() error { return nil }

// Open implements engine.Lifecycle.
func (o *Op[T]) Open() error { return nil }

// Close implements engine.Lifecycle.
func (o *Op[T]) Close() error {
	if o.CloseFn != nil {
		return o.CloseFn()
	}
	return nil
}

// Discard counts and drops records.
type Discard[T any] struct{ n int64 }

// ProcessBatch implements engine.Input.
func (d *Discard[T]) ProcessBatch(recs []engine.Record[T]) error {
	d.n += int64(len(recs))
	return nil
}

// ProcessWatermark implements engine.Input.
func (d *Discard[T]) ProcessWatermark(int64) error { return nil }

// ProcessStatus implements engine.Input.
func (d *Discard[T]) ProcessStatus(bool) error { return nil }

// EndInput implements engine.Input.
func (d *Discard[T]) EndInput() error { return nil }

// LockedWriter serialises whole batches of lines from parallel subtasks.
type LockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

// NewLockedWriter returns a LockedWriter writing to w.
func NewLockedWriter(w io.Writer) *LockedWriter { return &LockedWriter{w: w} }

// Printer returns the write function of Print's subtask of a sink with
// parallelism par: each record with fmt's %v, one per line, prefixed
// "N> " (N = subtask+1) when par is above 1.
func Printer[T any](lw *LockedWriter, subtask, par int) func(v T, ts int64) error {
	prefix := ""
	if par > 1 {
		prefix = strconv.Itoa(subtask+1) + "> "
	}
	var buf []byte
	return func(v T, _ int64) error {
		buf = append(buf[:0], prefix...)
		buf = fmt.Append(buf, v)
		buf = append(buf, '\n')
		lw.mu.Lock()
		_, err := lw.w.Write(buf)
		lw.mu.Unlock()
		return err
	}
}

// Buffer gathers records in memory, from any goroutine.
type Buffer[T any] struct {
	mu   sync.Mutex
	recs []connector.Record[T]
}

// Add appends v at ts.
func (b *Buffer[T]) Add(v T, ts int64) error {
	b.mu.Lock()
	b.recs = append(b.recs, connector.Record[T]{Value: v, TS: ts})
	b.mu.Unlock()
	return nil
}

// Values returns the values in arrival order.
func (b *Buffer[T]) Values() []T {
	b.mu.Lock()
	defer b.mu.Unlock()
	out := make([]T, len(b.recs))
	for i, r := range b.recs {
		out[i] = r.Value
	}
	return out
}

// Records returns a copy of the records.
func (b *Buffer[T]) Records() []connector.Record[T] {
	b.mu.Lock()
	defer b.mu.Unlock()
	return slices.Clone(b.recs)
}

// Len returns the number of records.
func (b *Buffer[T]) Len() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.recs)
}

// Writer returns the write and close functions of the writer sink makes
// for the subtask bc builds of the sink named name.
func Writer[T any](sink connector.Sink[T], name string, bc *engine.BuildContext) (func(T, int64) error, func() error, error) {
	w, err := sink.NewWriter(connector.SubtaskInfo{Name: bc.Name, Subtask: bc.Subtask, Parallelism: bc.Parallelism, Partition: -1})
	if err != nil {
		return nil, nil, fmt.Errorf("sink %q: %w", name, err)
	}
	if w == nil {
		return nil, nil, fmt.Errorf("sink %q: NewWriter returned no writer", name)
	}
	return w.Write, w.Close, nil
}
