package weir_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/connector"
)

// memSink is a connector.Sink keeping each subtask's records.
type memSink struct {
	mu      sync.Mutex
	got     []int64
	opened  []int
	closed  int
	invalid error
}

func (s *memSink) NewWriter(info connector.SubtaskInfo) (connector.SinkWriter[int64], error) {
	s.mu.Lock()
	s.opened = append(s.opened, info.Subtask)
	s.mu.Unlock()
	return memWriter{s}, nil
}

func (s *memSink) Validate(context.Context) error { return s.invalid }

type memWriter struct{ s *memSink }

func (w memWriter) Write(v int64, _ int64) error {
	w.s.mu.Lock()
	w.s.got = append(w.s.got, v)
	w.s.mu.Unlock()
	return nil
}

func (w memWriter) Close() error {
	w.s.mu.Lock()
	w.s.closed++
	w.s.mu.Unlock()
	return nil
}

func TestToSinkWritesThroughPublicSink(t *testing.T) {
	env := weir.NewEnvironment(weir.WithParallelism(2))
	s := &memSink{}
	weir.ToSink(weir.Generate(env, 100, 0, func(i int64) int64 { return i }, weir.NoWatermarks[int64]()), s, "mem")
	mustRun(t, env)
	if got := sorted(s.got); !slices.Equal(got, seq(0, 100)) {
		t.Fatalf("got %v", got)
	}
	if slices.Sort(s.opened); !slices.Equal(s.opened, []int{0, 1}) || s.closed != 2 {
		t.Fatalf("opened %v, closed %d; want both subtasks opened and closed", s.opened, s.closed)
	}
}

func TestToSinkValidatesAtBuild(t *testing.T) {
	env := weir.NewEnvironment()
	weir.ToSink(weir.FromSlice(env, []int64{1}), &memSink{invalid: errors.New("no such bucket")}, "mem")
	err := env.Execute(t.Context(), "invalid-sink")
	if err == nil || !strings.Contains(err.Error(), "no such bucket") {
		t.Fatalf("err %v, want the sink's validation error", err)
	}
}

// TestFromSourceRunsPublicSource checks a connector.Source written
// against the public API alone runs and resumes as the built-in ones.
func TestFromSourceNilFailsAtBuild(t *testing.T) {
	env := weir.NewEnvironment()
	weir.Collect(weir.FromSource[int](env, nil, weir.NoWatermarks[int](), "none"))
	if err := env.Execute(t.Context(), "nil-source"); err == nil || !strings.Contains(err.Error(), `source "none"`) {
		t.Fatalf("err %v, want a build error naming the source", err)
	}
	env = weir.NewEnvironment()
	weir.Collect(weir.FromDynamicSource[int](env, nil, weir.NoWatermarks[int](), "none"))
	if err := env.Execute(t.Context(), "nil-source"); err == nil || !strings.Contains(err.Error(), `source "none"`) {
		t.Fatalf("err %v, want a build error naming the source", err)
	}
}
