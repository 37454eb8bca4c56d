package state_test

import (
	"testing"

	"github.com/weirstream/weir/internal/clock"
	istate "github.com/weirstream/weir/internal/state"
	"github.com/weirstream/weir/internal/state/statetest"
	"github.com/weirstream/weir/state"
)

// heapFactory adapts the heap backend to the shared state test suite.
func heapFactory() statetest.Factory {
	hb := func(b statetest.Backend) *istate.Backend[string] { return b.(*istate.Backend[string]) }
	return statetest.Factory{
		New: func(t testing.TB, first, last int, clk *clock.Manual) statetest.Backend {
			return istate.NewBackend[string](first, last, clk)
		},
		Value: func(b statetest.Backend, d state.ValueDescriptor[int64]) (state.ValueState[int64], error) {
			return statetest.Handle[state.ValueState[int64]](istate.GetValue[string, struct{}](hb(b), d))
		},
		StringValue: func(b statetest.Backend, d state.ValueDescriptor[string]) (state.ValueState[string], error) {
			return statetest.Handle[state.ValueState[string]](istate.GetValue[string, struct{}](hb(b), d))
		},
		List: func(b statetest.Backend, d state.ListDescriptor[string]) (state.ListState[string], error) {
			return statetest.Handle[state.ListState[string]](istate.GetList[string, struct{}](hb(b), d))
		},
		Map: func(b statetest.Backend, d state.MapDescriptor[string, int64]) (state.MapState[string, int64], error) {
			return statetest.Handle[state.MapState[string, int64]](istate.GetMap[string, struct{}](hb(b), d))
		},
		Reducing: func(b statetest.Backend, d state.ReducingDescriptor[int64]) (state.ReducingState[int64], error) {
			return statetest.Handle[state.ReducingState[int64]](istate.GetReducing[string, struct{}](hb(b), d))
		},
		Aggregating: func(b statetest.Backend, d state.AggregatingDescriptor[int64, statetest.Avg, float64]) (state.AggregatingState[int64, float64], error) {
			return statetest.Handle[state.AggregatingState[int64, float64]](istate.GetAggregating[string, struct{}](hb(b), d))
		},
		NamespacedValue: func(b statetest.Backend, d state.ValueDescriptor[int64]) (statetest.NamespacedValue, error) {
			return statetest.Handle[statetest.NamespacedValue](istate.GetValue[string, int64](hb(b), d))
		},
		NamespacedList: func(b statetest.Backend, d state.ListDescriptor[string]) (statetest.NamespacedList, error) {
			return statetest.Handle[statetest.NamespacedList](istate.GetList[string, int64](hb(b), d))
		},
		NamespacedMap: func(b statetest.Backend, d state.MapDescriptor[string, int64]) (statetest.NamespacedMap, error) {
			return statetest.Handle[statetest.NamespacedMap](istate.GetMap[string, int64](hb(b), d))
		},
	}
}

// TestSharedSuite runs the backend-agnostic state test suite against the
// heap backend.
func TestSharedSuite(t *testing.T) { statetest.Run(t, heapFactory()) }
