package weir

import (
	"fmt"

	"github.com/weirstream/weir/connector"
	"github.com/weirstream/weir/internal/builtinsrc"
	"github.com/weirstream/weir/internal/engine"
)

// FromSource adds a source whose splits are made when the job is built
// (connector.Source), with a watermark strategy applied per split. The
// source runs as it is: its readers' batches are the engine's batches.
// Sources implementing connector.Validator are checked when the job is
// built.
func FromSource[T any](env *Environment, src connector.Source[T], strategy WatermarkStrategy[T], name string) DataStream[T] {
	return addSource(env, src, strategy, name) // a nil src is a nil any
}

// FromDynamicSource adds a source whose subtasks discover their splits
// while the job runs (connector.DynamicSource, such as Kafka's), with a
// watermark strategy applied per split.
func FromDynamicSource[T any](env *Environment, src connector.DynamicSource[T], strategy WatermarkStrategy[T], name string) DataStream[T] {
	return addSource(env, src, strategy, name) // a nil src is a nil any
}

// addSource adds src, a connector.Source[T] or connector.DynamicSource[T]
// (nil fails the job).
func addSource[T any](env *Environment, src any, strategy WatermarkStrategy[T], name string) DataStream[T] {
	if src == nil {
		env.fail(fmt.Errorf("source %q: %w", name, nilFnError("source")))
	}
	strategy.check(env, fmt.Sprintf("source %q", name))
	if v, ok := src.(connector.Validator); ok {
		env.validators = append(env.validators, v.Validate)
	}
	n := newNode[T](env, name, engine.KindSource, env.cfg.parallelism,
		func(bc *engine.BuildContext, out *engine.Output[T]) (engine.Built, error) {
			op, err := engine.NewSourceOperator(bc, src, strategy.runtime(env), out)
			if err != nil {
				return engine.Built{}, err
			}
			return engine.Built{Life: op, Source: op}, nil
		})
	// The kind is "source " and the Go type of src without type arguments
	// ("source weir.generatorSource"), so that a savepoint's split positions
	// are offered only to a source of the same type.
	n.Operator = "source " + builtinsrc.TypeName(src)
	n.Connector = src
	n.Watermarks = engine.DeclareWatermarks(strategy.bound, strategy.idle, strategy.align)
	return streamOf[T](env, n)
}
