package state

import (
	"testing"

	"pgregory.net/rapid"

	"github.com/weirstream/weir/internal/hashfn"
)

// TestFlatGroupModel checks flatGroup against a Go map under random adds,
// lookups, removals and growth. Hashes come from a test hash with few
// values (so that probe runs collide, wrap around the slot array and are
// shifted back on deletion) or from the real hash.
func TestFlatGroupModel(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		type ek = entryKey[int, int]
		buckets := rapid.SampledFrom([]uint64{1, 3, 8, 64, 0}).Draw(t, "buckets")
		spread := rapid.SampledFrom([]uint64{1, 7, 1 << 40}).Draw(t, "spread")
		hash := func(k ek) uint64 {
			if buckets == 0 {
				return hashfn.Combine(hashfn.Mix64(uint64(k.key)), hashfn.Mix64(uint64(k.ns)))
			}
			return uint64(k.key+3*k.ns) % buckets * spread
		}
		keys := rapid.IntRange(0, 40)
		var g flatGroup[int, int, int]
		model := map[ek]*cell[int]{}
		check := func() {
			if g.len() != len(model) {
				t.Fatalf("len %d, model %d", g.len(), len(model))
			}
			if len(g.slots) > 0 && g.len()*4 > len(g.slots)*3 {
				t.Fatalf("load %d/%d over 3/4", g.len(), len(g.slots))
			}
			seen := 0
			for k, c := range g.all {
				seen++
				if model[k] != c {
					t.Fatalf("entry %v holds %p, model %p", k, c, model[k])
				}
			}
			if seen != len(model) {
				t.Fatalf("iterated %d entries, model %d", seen, len(model))
			}
			for k, c := range model {
				if got := g.get(hash(k), k); got != c {
					t.Fatalf("get %v = %p, model %p", k, got, c)
				}
			}
		}
		t.Repeat(map[string]func(*rapid.T){
			"add": func(t *rapid.T) {
				k := ek{key: keys.Draw(t, "key"), ns: rapid.IntRange(0, 2).Draw(t, "ns")}
				if model[k] != nil {
					t.Skip("present")
				}
				c := &cell[int]{v: k.key}
				g.add(hash(k), k, c, hash)
				model[k] = c
			},
			"get": func(t *rapid.T) {
				k := ek{key: keys.Draw(t, "key"), ns: rapid.IntRange(0, 2).Draw(t, "ns")}
				if got := g.get(hash(k), k); got != model[k] {
					t.Fatalf("get %v = %p, model %p", k, got, model[k])
				}
				i := g.find(hash(k), k)
				if (i >= 0) != (model[k] != nil) {
					t.Fatalf("find %v = %d, model present %v", k, i, model[k] != nil)
				}
			},
			"remove": func(t *rapid.T) {
				k := ek{key: keys.Draw(t, "key"), ns: rapid.IntRange(0, 2).Draw(t, "ns")}
				i := g.find(hash(k), k)
				if i < 0 {
					if model[k] != nil {
						t.Fatalf("%v not found", k)
					}
					return
				}
				g.deleteAt(i, hash)
				delete(model, k)
			},
			"clone": func(t *rapid.T) {
				old := g
				g = g.clone()
				// Changing the clone leaves the original alone.
				if old.len() > 0 {
					n := old.len()
					for k := range g.all {
						g.deleteAt(g.find(hash(k), k), hash)
						delete(model, k)
						break
					}
					if old.len() != n {
						t.Fatal("clone shares its count")
					}
				}
			},
			"": func(t *rapid.T) { check() },
		})
	})
}
