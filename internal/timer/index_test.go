package timer

import (
	"testing"

	"pgregory.net/rapid"
)

// TestIndexModel checks the queue's index against a Go map under random
// adds, lookups, deletes, polls and growth. The hash comes from a test
// hash with few values (so that probe runs collide, wrap around the cell
// array and are shifted back on deletion, and equal hash bits make find
// compare timers) or from the real hash.
func TestIndexModel(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		type id struct {
			ts      int64
			key, ns int
		}
		buckets := rapid.SampledFrom([]uint64{1, 3, 8, 64, 0}).Draw(t, "buckets")
		spread := rapid.SampledFrom([]uint64{1, 7, 1 << 40, 1<<32 - 1}).Draw(t, "spread")
		q := NewQueue[int, int]()
		if buckets != 0 {
			q.hash = func(ts int64, key, ns int) uint64 {
				return uint64(ts+int64(key)+3*int64(ns)) % buckets * spread
			}
		}
		model := map[id]bool{}
		draw := func(t *rapid.T) id {
			return id{rapid.Int64Range(0, 30).Draw(t, "ts"), rapid.IntRange(0, 5).Draw(t, "key"), rapid.IntRange(0, 2).Draw(t, "ns")}
		}
		t.Repeat(map[string]func(*rapid.T){
			"add": func(t *rapid.T) {
				k := draw(t)
				if got := q.Add(Timer[int, int]{Timestamp: k.ts, Key: k.key, Namespace: k.ns}); got == model[k] {
					t.Fatalf("Add %v = %v, model present %v", k, got, model[k])
				}
				model[k] = true
			},
			"contains": func(t *rapid.T) {
				k := draw(t)
				if got := q.Contains(k.ts, k.key, k.ns); got != model[k] {
					t.Fatalf("Contains %v = %v, model %v", k, got, model[k])
				}
			},
			"delete": func(t *rapid.T) {
				k := draw(t)
				if got := q.Delete(k.ts, k.key, k.ns); got != model[k] {
					t.Fatalf("Delete %v = %v, model %v", k, got, model[k])
				}
				delete(model, k)
			},
			"poll": func(t *rapid.T) {
				tm, ok := q.Poll()
				k := id{tm.Timestamp, tm.Key, tm.Namespace}
				if ok != (len(model) > 0) || ok && !model[k] {
					t.Fatalf("Poll = %v %v, model holds %d", k, ok, len(model))
				}
				delete(model, k)
			},
			"": func(t *rapid.T) {
				if q.Len() != len(model) || q.ix.n != len(model) {
					t.Fatalf("length %d, indexed %d, model %d", q.Len(), q.ix.n, len(model))
				}
				cells := 0
				for _, c := range q.ix.cells {
					if c != 0 {
						cells++
						tm := q.slots[cellSlot(c)].timer
						if !model[id{tm.Timestamp, tm.Key, tm.Namespace}] {
							t.Fatalf("cell names %v, not in the model", tm)
						}
					}
				}
				if cells != len(model) || len(q.ix.cells) > 0 && cells*4 > len(q.ix.cells)*3 {
					t.Fatalf("%d cells of %d full, model %d", cells, len(q.ix.cells), len(model))
				}
				for k := range model {
					if !q.Contains(k.ts, k.key, k.ns) {
						t.Fatalf("%v not found", k)
					}
				}
			},
		})
	})
}
