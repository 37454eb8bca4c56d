package pebble_test

import (
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"testing"

	"pgregory.net/rapid"

	"github.com/weirstream/weir/internal/clock"
	"github.com/weirstream/weir/internal/state/kvstate"
	"github.com/weirstream/weir/internal/state/statetest"
	"github.com/weirstream/weir/state"
	"github.com/weirstream/weir/state/pebble"
)

// model is the expected state of TestRapidModel: per key, a value, a list
// and a map.
type model struct {
	values map[string]int64
	lists  map[string][]string
	maps   map[string]map[string]int64
}

// rapidBackend is the backend under test with its handles.
type rapidBackend struct {
	b *kvstate.Backend[string]
	v *kvstate.Value[string, struct{}, int64]
	l *kvstate.List[string, struct{}, string]
	m *kvstate.Map[string, struct{}, string, int64]
}

func openRapid(t *rapid.T, b *kvstate.Backend[string]) *rapidBackend {
	r := &rapidBackend{b: b}
	var err error
	if r.v, err = kvstate.GetValue[string, struct{}](b, state.Value[int64]("v")); err != nil {
		t.Fatal(err)
	}
	if r.l, err = kvstate.GetList[string, struct{}](b, state.List[string]("l")); err != nil {
		t.Fatal(err)
	}
	if r.m, err = kvstate.GetMap[string, struct{}](b, state.Map[string, int64]("m")); err != nil {
		t.Fatal(err)
	}
	return r
}

// TestRapidModel runs random operations on the Pebble backend and on a
// map model, with full-snapshot restores and restores of staged incremental
// checkpoints (at the same range, or through two halves merged again) in
// between, and compares every read.
func TestRapidModel(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		dir := t.TempDir()
		clk := clock.NewManual(0)
		n := 0
		newDir := func() string { n++; return filepath.Join(dir, fmt.Sprint("db", n)) }
		b, err := kvstate.Open[string](newDir(), 0, statetest.KeyGroups-1, clk, kvstate.Options{Store: pebble.New("")})
		if err != nil {
			rt.Fatal(err)
		}
		r := openRapid(rt, b)
		defer func() { _ = r.b.Close() }()
		m := model{values: map[string]int64{}, lists: map[string][]string{}, maps: map[string]map[string]int64{}}
		keyGen := rapid.SampledFrom([]string{"a", "b", "c", "d", "", "ab"})
		mkGen := rapid.SampledFrom([]string{"x", "y", "z"})
		var key string
		setKey := func(k string) {
			key = k
			r.b.SetCurrentKey(k, statetest.KeyGroupOf(k))
		}
		setKey("a")
		checkpoints := 0
		rt.Repeat(map[string]func(*rapid.T){
			"setKey": func(t *rapid.T) { setKey(keyGen.Draw(t, "key")) },
			"valueUpdate": func(t *rapid.T) {
				v := rapid.Int64().Draw(t, "v")
				r.v.Update(v)
				m.values[key] = v
			},
			"valueClear": func(t *rapid.T) {
				r.v.Clear()
				delete(m.values, key)
			},
			"valueGet": func(t *rapid.T) {
				got, ok := r.v.Value()
				want, wok := m.values[key]
				if got != want || ok != wok {
					t.Fatalf("value of %q = %d, %v; want %d, %v", key, got, ok, want, wok)
				}
			},
			"listAdd": func(t *rapid.T) {
				v := rapid.String().Draw(t, "v")
				r.l.Add(v)
				m.lists[key] = append(m.lists[key], v)
			},
			"listAddAll": func(t *rapid.T) {
				vs := rapid.SliceOfN(rapid.String(), 0, 4).Draw(t, "vs")
				r.l.AddAll(vs)
				if len(vs) > 0 {
					m.lists[key] = append(slices.Clone(m.lists[key]), vs...)
				}
			},
			"listUpdate": func(t *rapid.T) {
				vs := rapid.SliceOfN(rapid.String(), 0, 4).Draw(t, "vs")
				r.l.Update(vs)
				if len(vs) == 0 {
					delete(m.lists, key)
				} else {
					m.lists[key] = slices.Clone(vs)
				}
			},
			"listClear": func(t *rapid.T) {
				r.l.Clear()
				delete(m.lists, key)
			},
			"listGet": func(t *rapid.T) {
				got, want := r.l.Get(), m.lists[key]
				if !slices.Equal(got, want) || got == nil {
					t.Fatalf("list of %q = %q, want %q", key, got, want)
				}
			},
			"mapPut": func(t *rapid.T) {
				k, v := mkGen.Draw(t, "k"), rapid.Int64().Draw(t, "v")
				r.m.Put(k, v)
				if m.maps[key] == nil {
					m.maps[key] = map[string]int64{}
				}
				m.maps[key][k] = v
			},
			"mapRemove": func(t *rapid.T) {
				k := mkGen.Draw(t, "k")
				r.m.Remove(k)
				delete(m.maps[key], k)
			},
			"mapClear": func(t *rapid.T) {
				r.m.Clear()
				delete(m.maps, key)
			},
			"mapGet": func(t *rapid.T) {
				k := mkGen.Draw(t, "k")
				got, ok := r.m.Get(k)
				want, wok := m.maps[key][k]
				if got != want || ok != wok || r.m.Contains(k) != wok {
					t.Fatalf("map of %q [%q] = %d, %v; want %d, %v", key, k, got, ok, want, wok)
				}
			},
			"mapAll": func(t *rapid.T) {
				got := maps.Collect(r.m.All())
				want := m.maps[key]
				if !maps.Equal(got, want) || r.m.IsEmpty() != (len(want) == 0) {
					t.Fatalf("map of %q = %v, want %v", key, got, want)
				}
			},
			"snapshotRestore": func(t *rapid.T) {
				if rapid.IntRange(0, 3).Draw(t, "skip") != 0 {
					return // restores are slow: do one in four
				}
				snaps := map[int][]byte{}
				for kg := range statetest.KeyGroups {
					s, err := r.b.SnapshotKeyGroup(kg)
					if err != nil {
						t.Fatal(err)
					}
					snaps[kg] = s
				}
				nb, err := kvstate.Open[string](newDir(), 0, statetest.KeyGroups-1, clk, kvstate.Options{Store: pebble.New("")})
				if err != nil {
					t.Fatal(err)
				}
				for kg, s := range snaps {
					if err := nb.RestoreKeyGroup(kg, s); err != nil {
						_ = nb.Close()
						t.Fatal(err)
					}
				}
				_ = r.b.Close()
				r = openRapid(t, nb)
				setKey(key)
			},
			"incrementalRestore": func(t *rapid.T) {
				if rapid.IntRange(0, 3).Draw(t, "skip") != 0 {
					return
				}
				checkpoints++
				s, err := r.b.Stage(int64(checkpoints))
				if err != nil {
					t.Fatal(err)
				}
				if !s.Claim() {
					t.Fatal("claim of a fresh staged checkpoint failed")
				}
				defer func() { _ = s.Release() }()
				images := []kvstate.Image{s.Image()}
				if rapid.Bool().Draw(t, "rescale") {
					// Scale out to two backends, then back in.
					images = nil
					mid := statetest.KeyGroups / 2
					for _, rng := range [][2]int{{0, mid - 1}, {mid, statetest.KeyGroups - 1}} {
						hb, err := kvstate.RestoreImages[string]([]kvstate.Image{s.Image()}, newDir(), rng[0], rng[1], clk, kvstate.Options{Store: pebble.New("")})
						if err != nil {
							t.Fatal(err)
						}
						hs, err := hb.Stage(int64(checkpoints))
						if err == nil && !hs.Claim() {
							err = fmt.Errorf("claim of staged checkpoint %d failed", hs.ID)
						}
						_ = hb.Close()
						if err != nil {
							t.Fatal(err)
						}
						defer func() { _ = hs.Release() }()
						images = append(images, hs.Image())
					}
				}
				nb, err := kvstate.RestoreImages[string](images, newDir(), 0, statetest.KeyGroups-1, clk, kvstate.Options{Store: pebble.New("")})
				if err != nil {
					t.Fatal(err)
				}
				_ = r.b.Close()
				r = openRapid(t, nb)
				setKey(key)
			},
		})
	})
}
