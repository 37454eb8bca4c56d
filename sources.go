package weir

import (
	"fmt"

	"github.com/weirstream/weir/internal/builtinsrc"
)

// sliceSource reads a slice as one split (internal/builtinsrc); its name
// is its kind in savepoints.
type sliceSource[T any] struct{ builtinsrc.Slice[T] }

// generatorSource produces f(i) for i in [0, count), or forever if count
// < 0 (internal/builtinsrc); its name is its kind in savepoints.
type generatorSource[T any] struct{ *builtinsrc.Generator[T] }

// FromSlice is a bounded source of the given values (parallelism 1),
// without timestamps; use AssignTimestampsAndWatermarks for event time.
func FromSlice[T any](env *Environment, values []T) DataStream[T] {
	recs := make([]Record[T], len(values))
	for i, v := range values {
		recs[i] = Record[T]{Value: v, TS: NoTimestamp}
	}
	return FromSource[T](env, sliceSource[T]{builtinsrc.Slice[T]{Recs: recs}}, NoWatermarks[T](), "FromSlice").SetParallelism(1)
}

// FromRecords is a bounded source of values with timestamps (parallelism 1);
// the strategy's generator sees those timestamps.
func FromRecords[T any](env *Environment, recs []Record[T], strategy WatermarkStrategy[T]) DataStream[T] {
	src := sliceSource[T]{builtinsrc.Slice[T]{Recs: append([]Record[T](nil), recs...)}}
	return FromSource[T](env, src, strategy, "FromRecords").SetParallelism(1)
}

// Generate is a parallel source of f(i) for i in [0, count) (split in
// contiguous ranges over the subtasks), or without end if count < 0
// (subtask s of p produces i = s, s+p, s+2p, ...). rate > 0 limits the total
// records per second, measured on the environment's clock.
//
// Its p splits are made when the job first runs, as Flink's
// NumberSequenceSource makes them: a job restored from a checkpoint or
// savepoint, at any parallelism, reads those same splits, each from its
// checkpointed position (split i on subtask i mod the new parallelism, so
// some subtasks have none after a scale-up, and a subtask may read several
// after a scale-down, each at rate/p): a job stopped with a savepoint
// and resumed produces every index exactly once over its two runs. A
// subtask without a split stays open and idle if count < 0, and finishes
// at once otherwise.
func Generate[T any](env *Environment, count int64, rate float64, f func(i int64) T, strategy WatermarkStrategy[T]) DataStream[T] {
	if f == nil {
		env.fail(fmt.Errorf("source %q: %w", "Generator", nilFnError("generator function")))
	}
	if rate < 0 {
		env.fail(fmt.Errorf("source %q: rate must not be negative, got %v", "Generator", rate))
	}
	src := &generatorSource[T]{builtinsrc.NewGenerator(count, rate, f, env.cfg.clock)}
	return FromSource[T](env, src, strategy, "Generator")
}
