package weir

import (
	"fmt"

	"github.com/weirstream/weir/connector"
	"github.com/weirstream/weir/internal/engine"
	"github.com/weirstream/weir/internal/sinkop"
)

// Sink is the end of a stream; it can be named and sized like an operator.
type Sink struct {
	node *engine.Node
	env  *Environment
}

// Name sets the sink's name.
func (s Sink) Name(n string) Sink { s.node.Name = n; return s }

// UID sets the sink's stable id, under which its state (the pending
// transactions of an exactly-once sink) is kept in checkpoints and
// savepoints, so a changed job still restores it. Without one the id is
// derived from the order in which the job was built.
func (s Sink) UID(uid string) Sink { s.node.UID = uid; return s }

// SetParallelism sets the sink's parallelism.
func (s Sink) SetParallelism(p int) Sink {
	s.node.Parallelism = p
	if p < 1 {
		s.env.fail(fmt.Errorf("sink %q: parallelism must be at least 1, got %d", s.node.Name, p))
	}
	return s
}

func addSink[T any](ds DataStream[T], name string, mk func(bc *engine.BuildContext) (func(T, int64) error, func() error, error)) Sink {
	n := newNode[struct{}](ds.env, name, engine.KindOneInput, ds.env.cfg.parallelism,
		func(bc *engine.BuildContext, _ *engine.Output[struct{}]) (engine.Built, error) {
			f, closeFn, err := mk(bc)
			if err != nil {
				return engine.Built{}, err
			}
			b := base(bc)
			o := &sinkop.Op[T]{Catch: b.catch, F: f, CloseFn: closeFn}
			return engine.Built{Inputs: []any{engine.Input[T](o)}, Life: o}, nil
		})
	if n.Parallelism < 1 {
		n.Parallelism = ds.env.cfg.parallelism
	}
	n.Sink = true
	ds.connect(n, 0)
	return Sink{node: n, env: ds.env}
}

// SinkFunc calls f with every record; an error fails the job. Calls within
// one subtask are serial; subtasks call f concurrently.
func SinkFunc[T any](ds DataStream[T], f func(v T) error) Sink {
	if f == nil {
		ds.env.fail(fmt.Errorf("sink %q: %w", "SinkFunc", nilFnError("sink function")))
	}
	return addSink(ds, "SinkFunc", func(*engine.BuildContext) (func(T, int64) error, func() error, error) {
		return func(v T, _ int64) error { return f(v) }, nil, nil
	})
}

// Discard drops every record (for benchmarks).
func Discard[T any](ds DataStream[T]) Sink {
	n := newNode[struct{}](ds.env, "Discard", engine.KindOneInput, ds.env.cfg.parallelism,
		func(*engine.BuildContext, *engine.Output[struct{}]) (engine.Built, error) {
			return engine.Built{Inputs: []any{engine.Input[T](&sinkop.Discard[T]{})}}, nil
		})
	n.Sink = true
	ds.connect(n, 0)
	return Sink{node: n, env: ds.env}
}

// Print writes every record to the environment's stdout with fmt's %v, one
// per line, prefixed "N> " (N = subtask+1) when the sink runs with
// parallelism above 1, as Flink's print sink.
func Print[T any](ds DataStream[T]) Sink {
	lw := sinkop.NewLockedWriter(ds.env.cfg.stdout)
	return addSink(ds, "Print", func(bc *engine.BuildContext) (func(T, int64) error, func() error, error) {
		return sinkop.Printer[T](lw, bc.Subtask, bc.Parallelism), nil, nil
	})
}

// Collected gathers a stream's records in memory (for tests and
// embedding); read it after the job has ended.
type Collected[T any] struct{ buf sinkop.Buffer[T] }

// Values returns the collected values in arrival order (per subtask).
func (c *Collected[T]) Values() []T { return c.buf.Values() }

// Records returns the collected records with their timestamps.
func (c *Collected[T]) Records() []Record[T] { return c.buf.Records() }

// Len returns the number of records collected so far.
func (c *Collected[T]) Len() int { return c.buf.Len() }

// Collect gathers every record of ds in memory.
func Collect[T any](ds DataStream[T]) *Collected[T] {
	c := &Collected[T]{}
	addSink(ds, "Collect", func(*engine.BuildContext) (func(T, int64) error, func() error, error) {
		return c.buf.Add, nil, nil
	})
	return c
}

// ToSink writes every record of ds through sink (connector.Sink): each
// subtask writes through a writer of its own, at least once with
// checkpointing (a restored job writes again what followed the
// checkpoint). A sink implementing connector.Validator is checked when
// the job is built.
func ToSink[T any](ds DataStream[T], sink connector.Sink[T], name string) Sink {
	if sink == nil {
		ds.env.fail(fmt.Errorf("sink %q: %w", name, nilFnError("sink")))
	} else if v, ok := sink.(connector.Validator); ok {
		ds.env.validators = append(ds.env.validators, v.Validate)
	}
	return addSink(ds, name, func(bc *engine.BuildContext) (func(T, int64) error, func() error, error) {
		return sinkop.Writer(sink, name, bc)
	})
}
