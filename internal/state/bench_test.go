package state

import (
	"math/rand/v2"
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

// randomKeys returns n distinct pseudo-random int64 keys (a fixed seed) and
// their key groups in 0..127.
func randomKeys(n int) ([]int64, []int) {
	r := rand.New(rand.NewPCG(1, 2))
	seen := make(map[int64]bool, n)
	keys := make([]int64, 0, n)
	for len(keys) < n {
		k := r.Int64N(1 << 40)
		if !seen[k] {
			seen[k] = true
			keys = append(keys, k)
		}
	}
	groups := make([]int, n)
	for i, k := range keys {
		groups[i] = keyGroupOf(k, 0, 127)
	}
	return keys, groups
}

// benchWindow is a window-like namespace (two int64s, as
// window.TimeWindow).
type benchWindow struct{ Start, End int64 }

// BenchmarkValueStateRandomKeys measures the state lookup and insert of
// 1e5 random int64 keys in random order: lookup reads (and writes back) the
// existing value of each key; insert adds each key to an empty table (the
// table is refilled from empty every 1e5 inserts, its clearing untimed);
// the window variants use a two-int64 namespace.
func BenchmarkValueStateRandomKeys(b *testing.B) {
	const n = 100_000
	keys, groups := randomKeys(n)
	b.Run("lookup", func(b *testing.B) {
		be := NewBackend[int64](0, 127, clock.NewManual(0))
		v, err := GetValue[int64, struct{}](be, state.Value[int64]("count"))
		if err != nil {
			b.Fatal(err)
		}
		for i, k := range keys {
			be.SetCurrentKey(k, groups[i])
			v.Update(1)
		}
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			be.SetCurrentKey(keys[i], groups[i])
			c, _ := v.Value()
			v.Update(c + 1)
			if i++; i == n {
				i = 0
			}
		}
	})
	b.Run("insert", func(b *testing.B) {
		be := NewBackend[int64](0, 127, clock.NewManual(0))
		v, err := GetValue[int64, struct{}](be, state.Value[int64]("count"))
		if err != nil {
			b.Fatal(err)
		}
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			be.SetCurrentKey(keys[i], groups[i])
			v.Update(1)
			if i++; i == n {
				b.StopTimer()
				for j, k := range keys {
					be.SetCurrentKey(k, groups[j])
					v.Clear()
				}
				i = 0
				b.StartTimer()
			}
		}
	})
	b.Run("window-lookup", func(b *testing.B) {
		be := NewBackend[int64](0, 127, clock.NewManual(0))
		v, err := GetValue[int64, benchWindow](be, state.Value[int64]("count"))
		if err != nil {
			b.Fatal(err)
		}
		for i, k := range keys {
			be.SetCurrentKey(k, groups[i])
			v.SetNamespace(benchWindow{int64(i % 4 * 10), int64(i%4*10 + 10)})
			v.Update(1)
		}
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			be.SetCurrentKey(keys[i], groups[i])
			v.SetNamespace(benchWindow{int64(i % 4 * 10), int64(i%4*10 + 10)})
			c, _ := v.Value()
			v.Update(c + 1)
			if i++; i == n {
				i = 0
			}
		}
	})
}
