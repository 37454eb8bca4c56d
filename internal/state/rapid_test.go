package state

import (
	"maps"
	"slices"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/weirstream/weir/internal/clock"
	"github.com/weirstream/weir/state"
)

// modelKey addresses a (key, namespace) of the model.
type modelKey struct {
	key int
	ns  string
}

const (
	rapidFirstKG = 2
	rapidLastKG  = 5
)

func rapidKG(key int) int { return rapidFirstKG + key%(rapidLastKG-rapidFirstKG+1) }

var (
	rapidKeys = rapid.IntRange(0, 7)
	rapidNS   = rapid.SampledFrom([]string{"", "w1", "w2"})
	rapidVals = rapid.IntRange(-3, 20)
)

// TestRapidAgainstModel runs random operations on value, list and map state
// over random keys and namespaces and compares the whole state with a plain
// Go map model after every step.
func TestRapidAgainstModel(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		b := NewBackend[int](rapidFirstKG, rapidLastKG, clock.NewManual(0))
		// Two handles of the same value state, each with its own namespace,
		// exercise the handle caches against each other.
		vd := state.Value[int]("v")
		v1, err := GetValue[int, string](b, vd)
		if err != nil {
			t.Fatal(err)
		}
		v2, _ := GetValue[int, string](b, vd)
		l, _ := GetList[int, string](b, state.List[int]("l"))
		m, _ := GetMap[int, string](b, state.Map[int, int]("m"))
		// Checker handles, used only by the invariant check.
		cv, _ := GetValue[int, string](b, vd)
		cl, _ := GetList[int, string](b, state.List[int]("l"))
		cm, _ := GetMap[int, string](b, state.Map[int, int]("m"))

		values := map[modelKey]int{}
		lists := map[modelKey][]int{}
		mapsM := map[modelKey]map[int]int{}
		key := 0
		b.SetCurrentKey(0, rapidKG(0))
		vns := [2]string{}
		lns, mns := "", ""
		valueHandle := func(t *rapid.T) (*Value[int, string, int], modelKey) {
			i := rapid.IntRange(0, 1).Draw(t, "handle")
			return []*Value[int, string, int]{v1, v2}[i], modelKey{key, vns[i]}
		}

		t.Repeat(map[string]func(*rapid.T){
			"setKey": func(t *rapid.T) {
				key = rapidKeys.Draw(t, "key")
				b.SetCurrentKey(key, rapidKG(key))
			},
			"setNamespace": func(t *rapid.T) {
				ns := rapidNS.Draw(t, "ns")
				switch rapid.IntRange(0, 3).Draw(t, "which") {
				case 0:
					v1.SetNamespace(ns)
					vns[0] = ns
				case 1:
					v2.SetNamespace(ns)
					vns[1] = ns
				case 2:
					l.SetNamespace(ns)
					lns = ns
				case 3:
					m.SetNamespace(ns)
					mns = ns
				}
			},
			"value.Value": func(t *rapid.T) {
				h, mk := valueHandle(t)
				got, ok := h.Value()
				want, wantOK := values[mk]
				if got != want || ok != wantOK {
					t.Fatalf("Value() = (%d, %v), want (%d, %v)", got, ok, want, wantOK)
				}
			},
			"value.Update": func(t *rapid.T) {
				h, mk := valueHandle(t)
				x := rapidVals.Draw(t, "v")
				h.Update(x)
				values[mk] = x
			},
			"value.Clear": func(t *rapid.T) {
				h, mk := valueHandle(t)
				h.Clear()
				delete(values, mk)
			},
			"list.Get": func(t *rapid.T) {
				want := lists[modelKey{key, lns}]
				if got := l.Get(); !slices.Equal(got, want) {
					t.Fatalf("Get() = %v, want %v", got, want)
				}
				if got := slices.Collect(l.All()); !slices.Equal(got, want) {
					t.Fatalf("All() = %v, want %v", got, want)
				}
			},
			"list.Add": func(t *rapid.T) {
				x := rapidVals.Draw(t, "v")
				l.Add(x)
				mk := modelKey{key, lns}
				lists[mk] = append(lists[mk], x)
			},
			"list.AddAll": func(t *rapid.T) {
				xs := rapid.SliceOfN(rapidVals, 0, 3).Draw(t, "vs")
				l.AddAll(xs)
				if len(xs) > 0 {
					mk := modelKey{key, lns}
					lists[mk] = append(slices.Clone(lists[mk]), xs...)
				}
			},
			"list.Update": func(t *rapid.T) {
				xs := rapid.SliceOfN(rapidVals, 0, 3).Draw(t, "vs")
				l.Update(xs)
				mk := modelKey{key, lns}
				if len(xs) == 0 {
					delete(lists, mk)
				} else {
					lists[mk] = slices.Clone(xs)
				}
				if len(xs) > 0 {
					xs[0] = 999 // the state must hold a copy
				}
			},
			"list.Clear": func(t *rapid.T) {
				l.Clear()
				delete(lists, modelKey{key, lns})
			},
			"list.MergeNamespaces": func(t *rapid.T) {
				target := rapidNS.Draw(t, "target")
				sources := rapid.SliceOfNDistinct(rapidNS, 0, 3, func(s string) string { return s }).Draw(t, "sources")
				l.MergeNamespaces(target, sources)
				var merged []int
				have := false
				for _, ns := range sources {
					mk := modelKey{key, ns}
					if xs, ok := lists[mk]; ok {
						merged = append(merged, xs...)
						have = true
						delete(lists, mk)
					}
				}
				if have {
					tk := modelKey{key, target}
					lists[tk] = append(slices.Clone(lists[tk]), merged...)
				}
			},
			"map.Get": func(t *rapid.T) {
				k := rapidVals.Draw(t, "k")
				got, ok := m.Get(k)
				want, wantOK := mapsM[modelKey{key, mns}][k]
				if got != want || ok != wantOK {
					t.Fatalf("Get(%d) = (%d, %v), want (%d, %v)", k, got, ok, want, wantOK)
				}
				if m.Contains(k) != wantOK {
					t.Fatalf("Contains(%d) != %v", k, wantOK)
				}
			},
			"map.Put": func(t *rapid.T) {
				k, x := rapidVals.Draw(t, "k"), rapidVals.Draw(t, "v")
				m.Put(k, x)
				mk := modelKey{key, mns}
				if mapsM[mk] == nil {
					mapsM[mk] = map[int]int{}
				}
				mapsM[mk][k] = x
			},
			"map.PutAll": func(t *rapid.T) {
				in := rapid.MapOfN(rapidVals, rapidVals, 0, 3).Draw(t, "m")
				m.PutAll(in)
				if len(in) > 0 {
					mk := modelKey{key, mns}
					if mapsM[mk] == nil {
						mapsM[mk] = map[int]int{}
					}
					maps.Copy(mapsM[mk], in)
				}
			},
			"map.Remove": func(t *rapid.T) {
				k := rapidVals.Draw(t, "k")
				m.Remove(k)
				mk := modelKey{key, mns}
				delete(mapsM[mk], k)
				if len(mapsM[mk]) == 0 {
					delete(mapsM, mk)
				}
			},
			"map.RemoveWhileIterating": func(t *rapid.T) {
				mk := modelKey{key, mns}
				for k, x := range m.All() {
					if x%2 == 0 {
						m.Remove(k)
						delete(mapsM[mk], k)
					}
				}
				if len(mapsM[mk]) == 0 {
					delete(mapsM, mk)
				}
			},
			"map.Clear": func(t *rapid.T) {
				m.Clear()
				delete(mapsM, modelKey{key, mns})
			},
			"": func(t *rapid.T) {
				checkInvariants(t, v1.t)
				checkInvariants(t, l.t)
				checkInvariants(t, m.t)
				count := 0
				keysWith := map[string]map[int]bool{"v": {}, "l": {}, "m": {}}
				for k := range 8 {
					b.SetCurrentKey(k, rapidKG(k))
					for _, ns := range []string{"", "w1", "w2"} {
						mk := modelKey{k, ns}
						cv.SetNamespace(ns)
						cl.SetNamespace(ns)
						cm.SetNamespace(ns)
						got, ok := cv.Value()
						want, wantOK := values[mk]
						if got != want || ok != wantOK {
							t.Fatalf("value %v = (%d, %v), want (%d, %v)", mk, got, ok, want, wantOK)
						}
						if gotL := cl.Get(); !slices.Equal(gotL, lists[mk]) {
							t.Fatalf("list %v = %v, want %v", mk, gotL, lists[mk])
						}
						gotM := maps.Collect(cm.All())
						if !maps.Equal(gotM, mapsM[mk]) {
							t.Fatalf("map %v = %v, want %v", mk, gotM, mapsM[mk])
						}
						if cm.IsEmpty() != (len(mapsM[mk]) == 0) {
							t.Fatalf("map %v IsEmpty wrong", mk)
						}
						if gotK := slices.Sorted(cm.Keys()); !slices.Equal(gotK, slices.Sorted(maps.Keys(mapsM[mk]))) {
							t.Fatalf("map %v Keys = %v", mk, gotK)
						}
						if gotV := slices.Sorted(cm.Values()); !slices.Equal(gotV, slices.Sorted(maps.Values(mapsM[mk]))) {
							t.Fatalf("map %v Values = %v", mk, gotV)
						}
						if wantOK {
							count++
							keysWith["v"][k] = true
						}
						if len(lists[mk]) > 0 {
							count++
							keysWith["l"][k] = true
						}
						if len(mapsM[mk]) > 0 {
							count++
							keysWith["m"][k] = true
						}
					}
				}
				if n := b.KeyCount(); n != count {
					t.Fatalf("KeyCount = %d, want %d", n, count)
				}
				for name, want := range keysWith {
					got := slices.Sorted(b.Keys(name))
					if !slices.Equal(got, slices.Sorted(maps.Keys(want))) {
						t.Fatalf("Keys(%s) = %v, want %v", name, got, slices.Sorted(maps.Keys(want)))
					}
				}
				b.SetCurrentKey(key, rapidKG(key))
			},
		})
	})
}

// ttlModelEntry is a value of the TTL model with its last-access time.
type ttlModelEntry struct {
	v  int
	ts int64
}

// TestRapidTTLValueAgainstModel runs random operations and clock moves on a
// TTL value state and checks every read, and the stored entries after every
// step, against a model that applies Flink's expiry rule.
func TestRapidTTLValueAgainstModel(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		const ttlMs = 10
		cfg := state.TTL(ttlMs * time.Millisecond)
		cfg.Update = rapid.SampledFrom([]state.UpdateType{state.UpdateOnCreateAndWrite, state.UpdateOnReadAndWrite}).Draw(t, "update")
		cfg.Visibility = rapid.SampledFrom([]state.Visibility{state.NeverReturnExpired, state.ReturnExpiredIfNotCleanedUp}).Draw(t, "visibility")
		cfg.CleanupEntries = rapid.IntRange(0, 4).Draw(t, "cleanupEntries")
		cfg.CleanupEveryRecord = rapid.Bool().Draw(t, "everyRecord")
		cleanup := cfg.IncrementalCleanup()
		updateOnRead := cfg.Update == state.UpdateOnReadAndWrite
		returnExpired := cfg.Visibility == state.ReturnExpiredIfNotCleanedUp

		start := rapid.Int64Range(-50, 50).Draw(t, "start")
		clk := clock.NewManual(start)
		b := NewBackend[int](rapidFirstKG, rapidLastKG, clk)
		v, err := GetValue[int, struct{}](b, state.Value[int]("v", state.WithTTL(cfg)))
		if err != nil {
			t.Fatal(err)
		}
		model := map[int]ttlModelEntry{}
		key := 0
		b.SetCurrentKey(0, rapidKG(0))
		now := func() int64 { return clk.NowMillis() }
		expired := func(e ttlModelEntry) bool { return e.ts+ttlMs <= now() }
		// With incremental cleanup, any expired entry may be gone after an
		// access (or, with everyRecord, after setting the key).
		forgetCleaned := func() {
			if !cleanup {
				return
			}
			for k, e := range model {
				if expired(e) {
					if v.t.get(rapidKG(k)-rapidFirstKG, entryKey[int, struct{}]{key: k}) == nil {
						delete(model, k)
					}
				}
			}
		}

		t.Repeat(map[string]func(*rapid.T){
			"advance": func(t *rapid.T) {
				clk.Advance(rapid.Int64Range(0, 12).Draw(t, "ms"))
			},
			"setKey": func(t *rapid.T) {
				key = rapidKeys.Draw(t, "key")
				b.SetCurrentKey(key, rapidKG(key))
				forgetCleaned()
			},
			"update": func(t *rapid.T) {
				x := rapidVals.Draw(t, "v")
				v.Update(x)
				forgetCleaned()
				model[key] = ttlModelEntry{x, now()}
			},
			"clear": func(t *rapid.T) {
				v.Clear()
				forgetCleaned()
				delete(model, key)
			},
			"value": func(t *rapid.T) {
				got, ok := v.Value()
				e, present := model[key]
				switch {
				case !present:
					if ok {
						t.Fatalf("absent key read (%d, true)", got)
					}
				case expired(e):
					delete(model, key)
					switch {
					case !returnExpired:
						if ok {
							t.Fatalf("expired value returned: %d", got)
						}
					case ok:
						if got != e.v {
							t.Fatalf("expired value read %d, want %d", got, e.v)
						}
					case !cleanup:
						t.Fatalf("expired, not cleaned up value not returned")
					}
				default:
					if !ok || got != e.v {
						t.Fatalf("live value read (%d, %v), want (%d, true)", got, ok, e.v)
					}
					if updateOnRead {
						model[key] = ttlModelEntry{e.v, now()}
					}
				}
				forgetCleaned()
			},
			"": func(t *rapid.T) {
				checkInvariants(t, v.t)
				if n := b.KeyCount(); n != len(model) {
					t.Fatalf("KeyCount = %d, model has %d", n, len(model))
				}
				for k, e := range model {
					c := v.t.get(rapidKG(k)-rapidFirstKG, entryKey[int, struct{}]{key: k})
					if c == nil || c.v != e.v || c.ts != e.ts {
						t.Fatalf("key %d stored %+v, model %+v", k, c, e)
					}
				}
			},
		})
	})
}
