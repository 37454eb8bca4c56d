package pebble_test

import (
	"testing"

	"go.uber.org/goleak"

	"github.com/weirstream/weir/internal/clock"
	"github.com/weirstream/weir/internal/state/kvstate"
	"github.com/weirstream/weir/internal/state/statetest"
	"github.com/weirstream/weir/state"
	"github.com/weirstream/weir/state/pebble"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// openTest opens a backend in a temporary directory, closed at the end of
// the test.
func openTest[K comparable](t testing.TB, first, last int, clk clock.Clock) *kvstate.Backend[K] {
	t.Helper()
	b, err := kvstate.Open[K](t.TempDir(), first, last, clk, kvstate.Options{Store: pebble.New("")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := b.Close(); err != nil {
			t.Error(err)
		}
	})
	return b
}

// pebbleFactory adapts the Pebble backend to the shared state test suite.
func pebbleFactory() statetest.Factory {
	pb := func(b statetest.Backend) *kvstate.Backend[string] { return b.(*kvstate.Backend[string]) }
	return statetest.Factory{
		New: func(t testing.TB, first, last int, clk *clock.Manual) statetest.Backend {
			return openTest[string](t, first, last, clk)
		},
		Value: func(b statetest.Backend, d state.ValueDescriptor[int64]) (state.ValueState[int64], error) {
			return statetest.Handle[state.ValueState[int64]](kvstate.GetValue[string, struct{}](pb(b), d))
		},
		StringValue: func(b statetest.Backend, d state.ValueDescriptor[string]) (state.ValueState[string], error) {
			return statetest.Handle[state.ValueState[string]](kvstate.GetValue[string, struct{}](pb(b), d))
		},
		List: func(b statetest.Backend, d state.ListDescriptor[string]) (state.ListState[string], error) {
			return statetest.Handle[state.ListState[string]](kvstate.GetList[string, struct{}](pb(b), d))
		},
		Map: func(b statetest.Backend, d state.MapDescriptor[string, int64]) (state.MapState[string, int64], error) {
			return statetest.Handle[state.MapState[string, int64]](kvstate.GetMap[string, struct{}](pb(b), d))
		},
		Reducing: func(b statetest.Backend, d state.ReducingDescriptor[int64]) (state.ReducingState[int64], error) {
			return statetest.Handle[state.ReducingState[int64]](kvstate.GetReducing[string, struct{}](pb(b), d))
		},
		Aggregating: func(b statetest.Backend, d state.AggregatingDescriptor[int64, statetest.Avg, float64]) (state.AggregatingState[int64, float64], error) {
			return statetest.Handle[state.AggregatingState[int64, float64]](kvstate.GetAggregating[string, struct{}](pb(b), d))
		},
		NamespacedValue: func(b statetest.Backend, d state.ValueDescriptor[int64]) (statetest.NamespacedValue, error) {
			return statetest.Handle[statetest.NamespacedValue](kvstate.GetValue[string, int64](pb(b), d))
		},
		NamespacedList: func(b statetest.Backend, d state.ListDescriptor[string]) (statetest.NamespacedList, error) {
			return statetest.Handle[statetest.NamespacedList](kvstate.GetList[string, int64](pb(b), d))
		},
		NamespacedMap: func(b statetest.Backend, d state.MapDescriptor[string, int64]) (statetest.NamespacedMap, error) {
			return statetest.Handle[statetest.NamespacedMap](kvstate.GetMap[string, int64](pb(b), d))
		},
	}
}

// TestSharedSuite runs the backend-agnostic state test suite against the
// Pebble backend.
func TestSharedSuite(t *testing.T) { statetest.Run(t, pebbleFactory()) }
