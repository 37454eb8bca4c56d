// Package statetest is a backend-agnostic test suite of Weir's keyed-state
// backends: Run drives a backend through the public state interfaces
// (value, list, map, reducing and aggregating state, namespaces, TTL on a
// manual clock, per-key-group snapshots restored into backends with other
// key-group ranges) and checks the semantics every backend must share. The
// heap backend (internal/state) and the Pebble backend
// (internal/state/kvstate) both run it.
//
// The suite uses string keys; a backend is adapted to it by a Factory whose
// functions return the backend's handles as the public interfaces.
package statetest

import (
	"fmt"
	"hash/fnv"
	"reflect"
	"testing"

	"github.com/weirstream/weir/internal/clock"
	"github.com/weirstream/weir/state"
)

// Backend is the part of a keyed-state backend with string keys that the
// suite drives directly.
type Backend interface {
	SetCurrentKey(key string, keyGroup int)
	SnapshotKeyGroup(kg int) ([]byte, error)
	RestoreKeyGroup(kg int, data []byte) error
}

// NamespacedValue is a value state whose namespace can be set.
type NamespacedValue interface {
	state.ValueState[int64]
	SetNamespace(ns int64)
}

// NamespacedList is a list state whose namespace can be set.
type NamespacedList interface {
	state.ListState[string]
	SetNamespace(ns int64)
}

// NamespacedMap is a map state whose namespace can be set.
type NamespacedMap interface {
	state.MapState[string, int64]
	SetNamespace(ns int64)
}

// Avg is the accumulator of the suite's aggregating state.
type Avg struct {
	Sum, N int64
}

// AvgFunction averages int64 values; it is the suite's aggregate function.
type AvgFunction struct{}

// CreateAccumulator implements state.AggregateFunction.
func (AvgFunction) CreateAccumulator() Avg { return Avg{} }

// Add implements state.AggregateFunction.
func (AvgFunction) Add(v int64, a Avg) Avg { return Avg{a.Sum + v, a.N + 1} }

// GetResult implements state.AggregateFunction.
func (AvgFunction) GetResult(a Avg) float64 {
	if a.N == 0 {
		return 0
	}
	return float64(a.Sum) / float64(a.N)
}

// Merge implements state.AggregateFunction.
func (AvgFunction) Merge(a, b Avg) Avg { return Avg{a.Sum + b.Sum, a.N + b.N} }

// Factory makes the backends of the suite and their handles. Every
// function must be set. Handles use the namespace type struct{} except the
// Namespaced ones, which use int64.
type Factory struct {
	// New returns an empty backend for the key groups first..last
	// (inclusive) that reads TTL time from clk; resources are released
	// with t.Cleanup.
	New func(t testing.TB, first, last int, clk *clock.Manual) Backend

	// Value registers (or looks up) a value state of int64 and returns
	// its handle; the other functions do the same for their kinds.
	Value func(Backend, state.ValueDescriptor[int64]) (state.ValueState[int64], error)
	// StringValue returns a value state of string.
	StringValue func(Backend, state.ValueDescriptor[string]) (state.ValueState[string], error)
	// List returns a list state of string.
	List func(Backend, state.ListDescriptor[string]) (state.ListState[string], error)
	// Map returns a map state from string to int64.
	Map func(Backend, state.MapDescriptor[string, int64]) (state.MapState[string, int64], error)
	// Reducing returns a reducing state of int64.
	Reducing func(Backend, state.ReducingDescriptor[int64]) (state.ReducingState[int64], error)
	// Aggregating returns an aggregating state averaging int64 values.
	Aggregating func(Backend, state.AggregatingDescriptor[int64, Avg, float64]) (state.AggregatingState[int64, float64], error)
	// NamespacedValue returns a value state with int64 namespaces.
	NamespacedValue func(Backend, state.ValueDescriptor[int64]) (NamespacedValue, error)
	// NamespacedList returns a list state with int64 namespaces.
	NamespacedList func(Backend, state.ListDescriptor[string]) (NamespacedList, error)
	// NamespacedMap returns a map state with int64 namespaces.
	NamespacedMap func(Backend, state.MapDescriptor[string, int64]) (NamespacedMap, error)
}

// Handle converts a backend's typed handle and its registration error into
// the interface S that a Factory returns: a handle with an error becomes
// the zero S, so no typed nil leaks into an interface.
func Handle[S, H any](h H, err error) (S, error) {
	var zero S
	if err != nil {
		return zero, err
	}
	s, ok := any(h).(S)
	if !ok {
		panic(fmt.Sprintf("statetest: %T does not implement %v", h, reflect.TypeFor[S]()))
	}
	return s, nil
}

// KeyGroups is the number of key groups the suite spreads its keys over
// (0..KeyGroups-1).
const KeyGroups = 8

// KeyGroupOf is the key group of key in the suite.
func KeyGroupOf(key string) int {
	h := fnv.New32a()
	h.Write([]byte(key))
	return int(h.Sum32() % KeyGroups)
}

// Run runs the suite against the backends of f.
func Run(t *testing.T, f Factory) {
	s := &suite{f: f}
	run(t, "Value", s.testValue)
	run(t, "List", s.testList)
	run(t, "Map", s.testMap)
	run(t, "MapModifyDuringIteration", s.testMapModify)
	run(t, "Reducing", s.testReducing)
	run(t, "Aggregating", s.testAggregating)
	run(t, "KeyIsolation", s.testKeyIsolation)
	run(t, "Registration", s.testRegistration)
	run(t, "Namespaces", s.testNamespaces)
	run(t, "KeyGroupRange", s.testKeyGroupRange)
	run(t, "TTLValue", s.testTTLValue)
	run(t, "TTLValueReadAndWrite", s.testTTLValueReadAndWrite)
	run(t, "TTLReturnExpired", s.testTTLReturnExpired)
	run(t, "TTLList", s.testTTLList)
	run(t, "TTLMap", s.testTTLMap)
	run(t, "TTLReducingAggregating", s.testTTLFold)
	run(t, "SnapshotRestoreRescale", s.testSnapshotRescale)
	run(t, "RestoreBeforeAndAfterRegistration", s.testRestoreRegistrationOrder)
	run(t, "SnapshotTTL", s.testSnapshotTTL)
	run(t, "RestoreErrors", s.testRestoreErrors)
	run(t, "ManyKeys", s.testManyKeys)
}

func run(t *testing.T, name string, f func(*testing.T)) {
	t.Run(name, func(t *testing.T) {
		defer catch(t)
		f(t)
	})
}
