package weir

import (
	istate "github.com/weirstream/weir/internal/state"
	"github.com/weirstream/weir/internal/windowing"
	"github.com/weirstream/weir/state"
	"github.com/weirstream/weir/window"
)

// sliceConfig is what the sliced engine needs from the operator.
type sliceConfig[K comparable, T, OUT any, W window.Window] struct {
	assigner window.Sliding
	lateness int64
	backend  *istate.Backend[K]
	hash     func(K) int32
	maxP     int
	late     func(v T, ts int64)
	ctx      *winCtx[K, OUT, W]
}

func slicedConfig[K comparable, T, ACC, OUT any, W window.Window](cfg sliceConfig[K, T, OUT, W]) windowing.SlicedConfig[K, T, ACC] {
	return windowing.SlicedConfig[K, T, ACC]{
		Size: cfg.assigner.Size(), Slide: cfg.assigner.Slide(), Offset: cfg.assigner.Offset(), Lateness: cfg.lateness,
		Backend: cfg.backend, Hash: cfg.hash, MaxParallelism: cfg.maxP, Late: cfg.late,
	}
}

// sliceReduce builds the sliced engine of Reduce: one reduced partial per
// slice, reduced in slice order at firing.
func sliceReduce[K comparable, T any, W window.Window](f func(a, b T) T) func(cfg sliceConfig[K, T, T, W]) (windowEngine[K, T], error) {
	return func(cfg sliceConfig[K, T, T, W]) (windowEngine[K, T], error) {
		sc := slicedConfig[K, T, T](cfg)
		sc.Add = func(v, acc T, has bool) T {
			if has {
				return f(acc, v)
			}
			return v
		}
		sc.Merge = f
		out := cfg.ctx.out
		sc.Emit = func(_ K, w window.TimeWindow, acc T) error {
			out.Collect(acc, w.MaxTimestamp())
			return nil
		}
		eng, err := windowing.NewSliced(sc)
		if err != nil {
			return nil, err
		}
		cfg.ctx.wmFn = eng.CurrentWatermark
		return eng, nil
	}
}

// sliceAggregate builds the sliced engine of Aggregate: one accumulator per
// slice, merged with Merge at firing.
func sliceAggregate[K comparable, T, ACC, R any, W window.Window](agg state.AggregateFunction[T, ACC, R]) func(cfg sliceConfig[K, T, R, W]) (windowEngine[K, T], error) {
	return func(cfg sliceConfig[K, T, R, W]) (windowEngine[K, T], error) {
		sc := slicedConfig[K, T, ACC](cfg)
		sc.Add = func(v T, acc ACC, has bool) ACC {
			if !has {
				acc = agg.CreateAccumulator()
			}
			return agg.Add(v, acc)
		}
		sc.Merge = agg.Merge
		out := cfg.ctx.out
		sc.Emit = func(_ K, w window.TimeWindow, acc ACC) error {
			out.Collect(agg.GetResult(acc), w.MaxTimestamp())
			return nil
		}
		eng, err := windowing.NewSliced(sc)
		if err != nil {
			return nil, err
		}
		cfg.ctx.wmFn = eng.CurrentWatermark
		return eng, nil
	}
}
