package weir_test

import (
	"context"
	"io"
	"log/slog"
	"strconv"
	"strings"
	"testing"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/connector"
)

// This file holds helpers shared by the api_*_test.go and harness_*_test.go
// files: a source the test feeds by hand, and channel waits that fail the
// test instead of hanging when the job dies.

// chanSource is a Source with one split per channel; a split's reader
// delivers each batch sent on its channel as one read, and ends when the
// channel is closed. Tests use it to control exactly what a source emits
// and when.
type chanSource[T any] struct {
	chans []chan []weir.Record[T]
}

// newChanSource returns a source with the given number of splits.
func newChanSource[T any](splits int) *chanSource[T] {
	s := &chanSource[T]{}
	for range splits {
		s.chans = append(s.chans, make(chan []weir.Record[T]))
	}
	return s
}

type chanSplit int

func (s chanSplit) SplitID() string { return "chan-" + strconv.Itoa(int(s)) }

func (s *chanSource[T]) Splits(int) ([]connector.Split, error) {
	out := make([]connector.Split, len(s.chans))
	for i := range s.chans {
		out[i] = chanSplit(i)
	}
	return out, nil
}

func (s *chanSource[T]) Reader(sp connector.Split) (connector.SplitReader[T], error) {
	return &chanReader[T]{ch: s.chans[sp.(chanSplit)]}, nil
}

// send hands one batch to split i's reader (blocking until it takes it) or
// fails the test if the job has ended.
func (s *chanSource[T]) send(t *testing.T, h *weir.JobHandle, split int, recs ...weir.Record[T]) {
	t.Helper()
	select {
	case s.chans[split] <- recs:
	case <-h.Done():
		t.Fatalf("job ended while sending to split %d: %v", split, h.Wait())
	}
}

// close ends every split.
func (s *chanSource[T]) close() {
	for _, c := range s.chans {
		close(c)
	}
}

type chanReader[T any] struct {
	ch chan []weir.Record[T]
}

func (r *chanReader[T]) Read(ctx context.Context, buf []weir.Record[T]) ([]weir.Record[T], error) {
	select {
	case b, ok := <-r.ch:
		if !ok {
			return buf, io.EOF
		}
		return append(buf, b...), nil
	case <-ctx.Done():
		return buf, ctx.Err()
	}
}

func (r *chanReader[T]) Close() error { return nil }

// rec is a record with a timestamp.
func rec[T any](v T, ts int64) weir.Record[T] { return weir.Record[T]{Value: v, TS: ts} }

// recv waits for a value on ch; it fails the test if the job ends first.
// It has no deadline of its own: a slow machine may take long, and a real
// hang ends at go test's -timeout with every goroutine's stack.
func recv[T any](t *testing.T, h *weir.JobHandle, ch <-chan T) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-h.Done():
		select {
		case v := <-ch:
			return v
		default:
		}
		t.Fatalf("job ended while waiting: %v", h.Wait())
	}
	panic("unreachable")
}

// wait waits for the job to end.
func wait(t *testing.T, h *weir.JobHandle) error {
	t.Helper()
	return h.Wait()
}

// start runs env's job asynchronously and cancels it when the test ends.
func start(t *testing.T, env *weir.Environment) *weir.JobHandle {
	t.Helper()
	h, err := env.ExecuteAsync(context.Background(), t.Name())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		h.Cancel()
		<-h.Done()
	})
	return h
}

// run executes env's job.
func run(t *testing.T, env *weir.Environment) error {
	t.Helper()
	return env.Execute(t.Context(), t.Name())
}

// mustRun executes env's job and fails the test on error.
func mustRun(t *testing.T, env *weir.Environment) {
	t.Helper()
	if err := run(t, env); err != nil {
		t.Fatal(err)
	}
}

// subtaskOf is a ProcessFunction that tags each value with the index of the
// subtask that saw it.
type subtaskOf[T any] struct{ sub int }

func (s *subtaskOf[T]) Open(ctx weir.RuntimeContext) error {
	s.sub = ctx.Subtask()
	return nil
}

func (s *subtaskOf[T]) ProcessElement(v T, _ weir.Context, out weir.Collector[At[T]]) error {
	out.Collect(At[T]{Sub: s.sub, V: v})
	return nil
}

// At is a value seen by a subtask.
type At[T any] struct {
	Sub int
	V   T
}

// tagSubtasks applies subtaskOf at parallelism p.
func tagSubtasks[T any](ds weir.DataStream[T], p int) weir.DataStream[At[T]] {
	return weir.ProcessStream(ds, &subtaskOf[T]{}).SetParallelism(p)
}

// quiet is an option that drops the job's log (for jobs meant to fail).
func quiet() weir.Option {
	return weir.WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil)))
}

// contains reports whether s contains every one of subs.
func contains(s string, subs ...string) bool {
	for _, sub := range subs {
		if !strings.Contains(s, sub) {
			return false
		}
	}
	return true
}
