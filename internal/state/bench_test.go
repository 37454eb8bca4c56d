package state

import (
	"testing"

	"github.com/weirstream/weir/internal/clock"
	"github.com/weirstream/weir/state"
)

// keyGroupOf is a stand-in key-group assignment for tests (the real one
// lives in internal/keygroup).
func keyGroupOf(key int64, first, last int) int {
	n := int64(last - first + 1)
	g := key % n
	if g < 0 {
		g += n
	}
	return first + int(g)
}

func TestValueStateSteadyStateAllocatesNothing(t *testing.T) {
	b := NewBackend[int64](0, 127, clock.NewManual(0))
	v, err := GetValue[int64, struct{}](b, state.Value[int64]("count"))
	if err != nil {
		t.Fatal(err)
	}
	const keys = 1000
	for k := int64(0); k < keys; k++ {
		b.SetCurrentKey(k, keyGroupOf(k, 0, 127))
		v.Update(0)
	}
	k := int64(0)
	allocs := testing.AllocsPerRun(10000, func() {
		b.SetCurrentKey(k, keyGroupOf(k, 0, 127))
		n, _ := v.Value()
		v.Update(n + 1)
		k = (k + 1) % keys
	})
	if allocs != 0 {
		t.Fatalf("Value+Update of an existing key: %v allocs per run, want 0", allocs)
	}
	var total int64
	for k := int64(0); k < keys; k++ {
		b.SetCurrentKey(k, keyGroupOf(k, 0, 127))
		n, ok := v.Value()
		if !ok {
			t.Fatalf("key %d: no value", k)
		}
		total += n
	}
	if total != 10001 { // AllocsPerRun runs the function once more as a warm-up
		t.Fatalf("sum of counts = %d, want 10001", total)
	}
}

func TestTTLValueStateSteadyStateAllocatesNothing(t *testing.T) {
	clk := clock.NewManual(0)
	b := NewBackend[int64](0, 127, clk)
	v, err := GetValue[int64, struct{}](b, state.Value[int64]("count", state.WithTTL(state.TTL(1<<40))))
	if err != nil {
		t.Fatal(err)
	}
	for k := int64(0); k < 100; k++ {
		b.SetCurrentKey(k, keyGroupOf(k, 0, 127))
		v.Update(0)
	}
	k := int64(0)
	allocs := testing.AllocsPerRun(1000, func() {
		b.SetCurrentKey(k, keyGroupOf(k, 0, 127))
		n, _ := v.Value()
		v.Update(n + 1)
		k = (k + 1) % 100
	})
	if allocs != 0 {
		t.Fatalf("TTL Value+Update of an existing key: %v allocs per run, want 0", allocs)
	}
}

// BenchmarkValueStateCount is the keyed-count hot path: set the current key,
// read the count, write it back incremented, over 10k keys.
func BenchmarkValueStateCount(b *testing.B) {
	be := NewBackend[int64](0, 127, clock.NewManual(0))
	v, err := GetValue[int64, struct{}](be, state.Value[int64]("count"))
	if err != nil {
		b.Fatal(err)
	}
	const keys = 10000
	groups := make([]int, keys)
	for k := range groups {
		groups[k] = keyGroupOf(int64(k), 0, 127)
	}
	b.ReportAllocs()
	b.ResetTimer()
	k := 0
	for b.Loop() {
		be.SetCurrentKey(int64(k), groups[k])
		n, _ := v.Value()
		v.Update(n + 1)
		k++
		if k == keys {
			k = 0
		}
	}
}

// BenchmarkValueStateCountTTL is BenchmarkValueStateCount with TTL and the
// default incremental cleanup.
func BenchmarkValueStateCountTTL(b *testing.B) {
	be := NewBackend[int64](0, 127, clock.NewManual(0))
	v, err := GetValue[int64, struct{}](be, state.Value[int64]("count", state.WithTTL(state.TTL(1<<40))))
	if err != nil {
		b.Fatal(err)
	}
	const keys = 10000
	groups := make([]int, keys)
	for k := range groups {
		groups[k] = keyGroupOf(int64(k), 0, 127)
	}
	b.ReportAllocs()
	b.ResetTimer()
	k := 0
	for b.Loop() {
		be.SetCurrentKey(int64(k), groups[k])
		n, _ := v.Value()
		v.Update(n + 1)
		k++
		if k == keys {
			k = 0
		}
	}
}

// BenchmarkValueStateCountStringKey is BenchmarkValueStateCount with string
// keys.
func BenchmarkValueStateCountStringKey(b *testing.B) {
	be := NewBackend[string](0, 127, clock.NewManual(0))
	v, err := GetValue[string, struct{}](be, state.Value[int64]("count"))
	if err != nil {
		b.Fatal(err)
	}
	const keys = 10000
	names := make([]string, keys)
	for k := range names {
		names[k] = "key-" + string(rune('a'+k%26)) + string(rune('a'+k/26%26)) + string(rune('a'+k/676%26))
	}
	b.ReportAllocs()
	b.ResetTimer()
	k := 0
	for b.Loop() {
		be.SetCurrentKey(names[k], k%128)
		n, _ := v.Value()
		v.Update(n + 1)
		k++
		if k == keys {
			k = 0
		}
	}
}
