package pebblestate_test

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/weirstream/weir/internal/clock"
	istate "github.com/weirstream/weir/internal/state"
	"github.com/weirstream/weir/internal/state/pebblestate"
	"github.com/weirstream/weir/internal/state/statetest"
	"github.com/weirstream/weir/state"
)

func must[T any](t testing.TB) func(T, error) T {
	return func(v T, err error) T {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
}

// TestSameBytesAsHeap writes the same state into both backends, one entry
// per state per key group, and checks that their key-group snapshots are
// byte for byte the same (with more entries only their order may differ).
func TestSameBytesAsHeap(t *testing.T) {
	clk := clock.NewManual(1000)
	heap := istate.NewBackend[string](0, statetest.KeyGroups-1, clk)
	peb := openTest[string](t, 0, statetest.KeyGroups-1, clk)
	ttl := state.WithTTL(state.TTL(time.Hour))
	hv := must[*istate.Value[string, struct{}, int64]](t)(istate.GetValue[string, struct{}](heap, state.Value[int64]("v", ttl)))
	hl := must[*istate.List[string, struct{}, string]](t)(istate.GetList[string, struct{}](heap, state.List[string]("l")))
	hm := must[*istate.Map[string, struct{}, string, float64]](t)(istate.GetMap[string, struct{}](heap, state.Map[string, float64]("m", ttl)))
	pv := must[*pebblestate.Value[string, struct{}, int64]](t)(pebblestate.GetValue[string, struct{}](peb, state.Value[int64]("v", ttl)))
	pl := must[*pebblestate.List[string, struct{}, string]](t)(pebblestate.GetList[string, struct{}](peb, state.List[string]("l")))
	pm := must[*pebblestate.Map[string, struct{}, string, float64]](t)(pebblestate.GetMap[string, struct{}](peb, state.Map[string, float64]("m", ttl)))
	key := "k"
	kg := statetest.KeyGroupOf(key)
	heap.SetCurrentKey(key, kg)
	peb.SetCurrentKey(key, kg)
	hv.Update(-7)
	pv.Update(-7)
	hl.AddAll([]string{"a", "bc"})
	pl.Add("a")
	pl.Add("bc")
	hm.Put("x", 1.5)
	pm.Put("x", 1.5)
	hs := must[[]byte](t)(heap.SnapshotKeyGroup(kg))
	ps := must[[]byte](t)(peb.SnapshotKeyGroup(kg))
	if !bytes.Equal(hs, ps) {
		t.Fatalf("snapshots differ:\nheap   %x\npebble %x", hs, ps)
	}
	empty := (kg + 1) % statetest.KeyGroups
	if !bytes.Equal(must[[]byte](t)(heap.SnapshotKeyGroup(empty)), must[[]byte](t)(peb.SnapshotKeyGroup(empty))) {
		t.Fatal("snapshots of an empty key group differ")
	}
}

// TestCrossBackendRestore restores the heap backend's snapshots into the
// Pebble backend and the other way round.
func TestCrossBackendRestore(t *testing.T) {
	clk := clock.NewManual(0)
	const n = 300
	heap := istate.NewBackend[string](0, statetest.KeyGroups-1, clk)
	hv := must[*istate.Value[string, struct{}, int64]](t)(istate.GetValue[string, struct{}](heap, state.Value[int64]("v")))
	hm := must[*istate.Map[string, struct{}, int64, string]](t)(istate.GetMap[string, struct{}](heap, state.Map[int64, string]("m")))
	for i := range n {
		k := fmt.Sprint(i)
		heap.SetCurrentKey(k, statetest.KeyGroupOf(k))
		hv.Update(int64(i))
		for j := range i % 4 {
			hm.Put(int64(j), k)
		}
	}
	// heap -> pebble, split over two backends
	lo := openTest[string](t, 0, 3, clk)
	hi := openTest[string](t, 4, statetest.KeyGroups-1, clk)
	for kg := range statetest.KeyGroups {
		dst := lo
		if kg > 3 {
			dst = hi
		}
		if err := dst.RestoreKeyGroup(kg, must[[]byte](t)(heap.SnapshotKeyGroup(kg))); err != nil {
			t.Fatal(err)
		}
	}
	check := func(what string, get func(kg int) (func(k string, kg int), func() (int64, bool), func() map[int64]string)) {
		t.Helper()
		for i := range n {
			k := fmt.Sprint(i)
			kg := statetest.KeyGroupOf(k)
			set, value, all := get(kg)
			set(k, kg)
			if v, ok := value(); !ok || v != int64(i) {
				t.Fatalf("%s: value of %s = %d, %v", what, k, v, ok)
			}
			m := all()
			if len(m) != i%4 {
				t.Fatalf("%s: map of %s = %v", what, k, m)
			}
			for j := range i % 4 {
				if m[int64(j)] != k {
					t.Fatalf("%s: map of %s = %v", what, k, m)
				}
			}
		}
	}
	type pv = *pebblestate.Value[string, struct{}, int64]
	type pm = *pebblestate.Map[string, struct{}, int64, string]
	lv := must[pv](t)(pebblestate.GetValue[string, struct{}](lo, state.Value[int64]("v")))
	lm := must[pm](t)(pebblestate.GetMap[string, struct{}](lo, state.Map[int64, string]("m")))
	hiv := must[pv](t)(pebblestate.GetValue[string, struct{}](hi, state.Value[int64]("v")))
	him := must[pm](t)(pebblestate.GetMap[string, struct{}](hi, state.Map[int64, string]("m")))
	check("pebble", func(kg int) (func(string, int), func() (int64, bool), func() map[int64]string) {
		b, v, m := lo, lv, lm
		if kg > 3 {
			b, v, m = hi, hiv, him
		}
		return b.SetCurrentKey, v.Value, func() map[int64]string { return collect(m.All()) }
	})
	// pebble -> heap
	heap2 := istate.NewBackend[string](0, statetest.KeyGroups-1, clk)
	for kg := range statetest.KeyGroups {
		src := lo
		if kg > 3 {
			src = hi
		}
		if err := heap2.RestoreKeyGroup(kg, must[[]byte](t)(src.SnapshotKeyGroup(kg))); err != nil {
			t.Fatal(err)
		}
	}
	h2v := must[*istate.Value[string, struct{}, int64]](t)(istate.GetValue[string, struct{}](heap2, state.Value[int64]("v")))
	h2m := must[*istate.Map[string, struct{}, int64, string]](t)(istate.GetMap[string, struct{}](heap2, state.Map[int64, string]("m")))
	check("heap", func(int) (func(string, int), func() (int64, bool), func() map[int64]string) {
		return heap2.SetCurrentKey, h2v.Value, func() map[int64]string { return collect(h2m.All()) }
	})
}

func collect[K comparable, V any](seq func(func(K, V) bool)) map[K]V {
	m := map[K]V{}
	for k, v := range seq {
		m[k] = v
	}
	return m
}

// TestReopen closes a backend and opens its directory again: the state and
// its metadata are still there, and a backend with another key type or a
// smaller key-group range sees what it should.
func TestReopen(t *testing.T) {
	dir := t.TempDir()
	clk := clock.NewManual(0)
	b := must[*pebblestate.Backend[string]](t)(pebblestate.Open[string](dir, 0, statetest.KeyGroups-1, clk, pebblestate.Options{}))
	v := must[*pebblestate.Value[string, struct{}, int64]](t)(pebblestate.GetValue[string, struct{}](b, state.Value[int64]("v")))
	keys := []string{"a", "b", "c", "d", "e", "f", "g", "h"}
	for i, k := range keys {
		b.SetCurrentKey(k, statetest.KeyGroupOf(k))
		v.Update(int64(i))
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := pebblestate.Open[int64](dir, 0, statetest.KeyGroups-1, clk, pebblestate.Options{}); err == nil {
		t.Fatal("opened a database of string keys with int64 keys")
	}
	b = must[*pebblestate.Backend[string]](t)(pebblestate.Open[string](dir, 0, 3, clk, pebblestate.Options{}))
	defer b.Close()
	if _, err := pebblestate.GetList[string, struct{}](b, state.List[int64]("v")); err == nil {
		t.Fatal("a stored value state registered as a list state")
	}
	v = must[*pebblestate.Value[string, struct{}, int64]](t)(pebblestate.GetValue[string, struct{}](b, state.Value[int64]("v")))
	inRange := 0
	for i, k := range keys {
		kg := statetest.KeyGroupOf(k)
		if kg > 3 {
			continue
		}
		inRange++
		b.SetCurrentKey(k, kg)
		if got, ok := v.Value(); !ok || got != int64(i) {
			t.Fatalf("value of %s after reopening = %d, %v", k, got, ok)
		}
	}
	if inRange == 0 || inRange == len(keys) {
		t.Fatalf("%d of %d keys in range: pick other keys", inRange, len(keys))
	}
	for kg := 4; kg < statetest.KeyGroups; kg++ {
		if _, err := b.SnapshotKeyGroup(kg); err == nil {
			t.Fatal("snapshot outside the range")
		}
	}
}

// TestIncrementalCheckpoint checks that a second checkpoint after a small
// change copies only the new SST file, and that both checkpoints restore.
func TestIncrementalCheckpoint(t *testing.T) {
	root := t.TempDir()
	cdir := filepath.Join(root, "checkpoints")
	clk := clock.NewManual(0)
	b := must[*pebblestate.Backend[string]](t)(pebblestate.Open[string](filepath.Join(root, "db"), 0, statetest.KeyGroups-1, clk, pebblestate.Options{}))
	defer b.Close()
	v := must[*pebblestate.Value[string, struct{}, string]](t)(pebblestate.GetValue[string, struct{}](b, state.Value[string]("v")))
	const n = 20000
	val := string(bytes.Repeat([]byte("x"), 100))
	for round := range 3 { // three flushes: several SST files
		for i := round; i < n; i += 3 {
			k := fmt.Sprint(i)
			b.SetCurrentKey(k, statetest.KeyGroupOf(k))
			v.Update(val + k)
		}
		if err := b.Flush(); err != nil {
			t.Fatal(err)
		}
	}
	// Settle the files: a background compaction between the checkpoints
	// would legitimately copy its output again.
	if err := b.Compact(); err != nil {
		t.Fatal(err)
	}
	m1 := must[pebblestate.Manifest](t)(b.CheckpointIncremental(cdir, 1))
	if len(m1.Shared) == 0 || len(m1.Uploaded) != len(m1.Shared) {
		t.Fatalf("first checkpoint: %d shared files, %d uploaded", len(m1.Shared), len(m1.Uploaded))
	}
	var total int64
	for _, s := range m1.Shared {
		total += s.Size
	}
	b.SetCurrentKey("changed", statetest.KeyGroupOf("changed"))
	v.Update("new")
	m2 := must[pebblestate.Manifest](t)(b.CheckpointIncremental(cdir, 2))
	if len(m2.Uploaded) != 1 || len(m2.Shared) != len(m1.Shared)+1 {
		t.Fatalf("second checkpoint: uploaded %v of %d shared files (first had %d)", m2.Uploaded, len(m2.Shared), len(m1.Shared))
	}
	var sst2 int64
	for _, s := range m2.Shared {
		if s.Name == m2.Uploaded[0] {
			sst2 = s.Size
		}
	}
	if sst2*10 > total {
		t.Fatalf("second checkpoint copied a %d-byte SST of %d bytes in all", sst2, total)
	}
	t.Logf("checkpoint 1: %d SSTs, %d bytes copied; checkpoint 2: %d SSTs, %d bytes copied (SST %d bytes)",
		len(m1.Shared), m1.UploadedBytes, len(m2.Shared), m2.UploadedBytes, sst2)
	if _, err := b.CheckpointIncremental(cdir, 2); err == nil {
		t.Fatal("a checkpoint id was reused")
	}

	// Restore both; checkpoint 1 lacks the change.
	for _, c := range []struct {
		id     int64
		hasNew bool
	}{{1, false}, {2, true}} {
		r := must[*pebblestate.Backend[string]](t)(pebblestate.RestoreIncremental[string](cdir, c.id, filepath.Join(root, fmt.Sprint("restored", c.id)), 0, statetest.KeyGroups-1, clk, pebblestate.Options{}))
		rv := must[*pebblestate.Value[string, struct{}, string]](t)(pebblestate.GetValue[string, struct{}](r, state.Value[string]("v")))
		for _, i := range []int{0, 1, 2, n / 2, n - 1} {
			k := fmt.Sprint(i)
			r.SetCurrentKey(k, statetest.KeyGroupOf(k))
			if got, ok := rv.Value(); !ok || got != val+k {
				t.Fatalf("checkpoint %d: value of %s = %q, %v", c.id, k, got, ok)
			}
		}
		r.SetCurrentKey("changed", statetest.KeyGroupOf("changed"))
		if _, ok := rv.Value(); ok != c.hasNew {
			t.Fatalf("checkpoint %d: changed key present %v", c.id, ok)
		}
		// The restored backend's next checkpoint copies only new files
		// (a compaction after the restore may have replaced old ones).
		restored := map[string]string{}
		for _, s := range must[pebblestate.Manifest](t)(pebblestate.ReadManifest(cdir, c.id)).Shared {
			restored[s.Local] = s.Name
		}
		r.SetCurrentKey("after", statetest.KeyGroupOf("after"))
		rv.Update("x")
		m := must[pebblestate.Manifest](t)(r.CheckpointIncremental(cdir, 10+c.id))
		if len(m.Uploaded) == 0 {
			t.Fatalf("checkpoint after restoring %d uploaded nothing", c.id)
		}
		reused := 0
		for _, s := range m.Shared {
			if old, ok := restored[s.Local]; ok {
				if old != s.Name {
					t.Fatalf("checkpoint after restoring %d copied %s again as %s", c.id, old, s.Name)
				}
				reused++
			}
		}
		if c.id == 1 && reused == 0 {
			t.Fatalf("checkpoint after restoring %d reused no file: %+v", c.id, m)
		}
		if err := r.Close(); err != nil {
			t.Fatal(err)
		}
	}
	// Restore into a smaller range: the other key groups are gone.
	r := must[*pebblestate.Backend[string]](t)(pebblestate.RestoreIncremental[string](cdir, 2, filepath.Join(root, "half"), 0, 3, clk, pebblestate.Options{}))
	defer r.Close()
	rv := must[*pebblestate.Value[string, struct{}, string]](t)(pebblestate.GetValue[string, struct{}](r, state.Value[string]("v")))
	seen := 0
	for i := range 100 {
		k := fmt.Sprint(i)
		if kg := statetest.KeyGroupOf(k); kg <= 3 {
			r.SetCurrentKey(k, kg)
			if _, ok := rv.Value(); !ok {
				t.Fatalf("key %s missing after a restore into a smaller range", k)
			}
			seen++
		}
	}
	if seen == 0 {
		t.Fatal("no key in range")
	}
	if _, err := pebblestate.RestoreIncremental[string](cdir, 2, filepath.Join(root, "half"), 0, 3, clk, pebblestate.Options{}); err == nil {
		t.Fatal("restored into a non-empty directory")
	}
	if _, err := pebblestate.RestoreIncremental[string](cdir, 99, filepath.Join(root, "none"), 0, 3, clk, pebblestate.Options{}); err == nil {
		t.Fatal("restored a checkpoint that does not exist")
	}
	// Only complete checkpoints are visible.
	entries, err := os.ReadDir(cdir)
	if err != nil {
		t.Fatal(err)
	}
	names := []string{}
	for _, e := range entries {
		names = append(names, e.Name())
	}
	slices.Sort(names)
	if want := []string{"chk-1", "chk-11", "chk-12", "chk-2", "shared"}; !slices.Equal(names, want) {
		t.Fatalf("checkpoint directory holds %v, want %v", names, want)
	}
}

// TestUnsupportedTTLChange checks that a state stored with TTL timestamps
// by an incremental checkpoint cannot be registered without TTL.
func TestUnsupportedTTLChange(t *testing.T) {
	root := t.TempDir()
	clk := clock.NewManual(0)
	b := must[*pebblestate.Backend[string]](t)(pebblestate.Open[string](filepath.Join(root, "db"), 0, 0, clk, pebblestate.Options{}))
	v := must[*pebblestate.Value[string, struct{}, int64]](t)(pebblestate.GetValue[string, struct{}](b, state.Value[int64]("v", state.WithTTL(state.TTL(time.Second)))))
	b.SetCurrentKey("a", 0)
	v.Update(1)
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	b = must[*pebblestate.Backend[string]](t)(pebblestate.Open[string](filepath.Join(root, "db"), 0, 0, clk, pebblestate.Options{}))
	defer b.Close()
	if _, err := pebblestate.GetValue[string, struct{}](b, state.Value[int64]("v")); err == nil {
		t.Fatal("a state stored with TTL was registered without")
	}
	if _, err := b.SnapshotKeyGroup(0); err != nil {
		t.Fatal(err) // an unregistered value state can still be snapshotted
	}
}

// TestCorruptRestoreWrapsErrCorrupt checks the error of a corrupt snapshot.
func TestCorruptRestoreWrapsErrCorrupt(t *testing.T) {
	clk := clock.NewManual(0)
	b := openTest[string](t, 0, 0, clk)
	v := must[*pebblestate.Value[string, struct{}, int64]](t)(pebblestate.GetValue[string, struct{}](b, state.Value[int64]("v")))
	b.SetCurrentKey("a", 0)
	v.Update(1)
	s := must[[]byte](t)(b.SnapshotKeyGroup(0))
	s[len(s)-1] ^= 1
	b2 := openTest[string](t, 0, 0, clk)
	if err := b2.RestoreKeyGroup(0, s); !errors.Is(err, istate.ErrCorrupt) {
		t.Fatalf("restore of a corrupt snapshot: %v", err)
	}
}

// TestKeyGroupBounds opens backends at the edges of the key-group space
// and rejects ranges beyond it.
func TestKeyGroupBounds(t *testing.T) {
	clk := clock.NewManual(0)
	b := openTest[int64](t, pebblestate.MaxKeyGroup-1, pebblestate.MaxKeyGroup, clk)
	v := must[*pebblestate.Value[int64, struct{}, int64]](t)(pebblestate.GetValue[int64, struct{}](b, state.Value[int64]("v")))
	b.SetCurrentKey(1, pebblestate.MaxKeyGroup)
	v.Update(3)
	s := must[[]byte](t)(b.SnapshotKeyGroup(pebblestate.MaxKeyGroup))
	b2 := openTest[int64](t, 0, pebblestate.MaxKeyGroup, clk)
	if err := b2.RestoreKeyGroup(pebblestate.MaxKeyGroup, s); err != nil {
		t.Fatal(err)
	}
	v2 := must[*pebblestate.Value[int64, struct{}, int64]](t)(pebblestate.GetValue[int64, struct{}](b2, state.Value[int64]("v")))
	b2.SetCurrentKey(1, pebblestate.MaxKeyGroup)
	if got, ok := v2.Value(); !ok || got != 3 {
		t.Fatalf("value in the last key group = %d, %v", got, ok)
	}
	if _, err := pebblestate.Open[int64](t.TempDir(), 0, pebblestate.MaxKeyGroup+1, clk, pebblestate.Options{}); err == nil {
		t.Fatal("opened a backend beyond the last key group")
	}
}

// TestRestoreIncrementalMerged checkpoints two backends with halves of the
// key groups, whose states got different ids, and restores one backend
// for all key groups from both checkpoints (a scale-in).
func TestRestoreIncrementalMerged(t *testing.T) {
	root := t.TempDir()
	clk := clock.NewManual(0)
	cdir := filepath.Join(root, "checkpoints")
	mid := statetest.KeyGroups / 2
	keys := make([]string, 200)
	for i := range keys {
		keys[i] = fmt.Sprint("k", i)
	}
	type handles struct {
		v *pebblestate.Value[string, struct{}, int64]
		l *pebblestate.List[string, struct{}, string]
		m *pebblestate.Map[string, struct{}, string, int64]
	}
	get := func(b *pebblestate.Backend[string], reverse bool) handles {
		var h handles
		reg := []func(){
			func() {
				h.v = must[*pebblestate.Value[string, struct{}, int64]](t)(pebblestate.GetValue[string, struct{}](b, state.Value[int64]("v")))
			},
			func() {
				h.l = must[*pebblestate.List[string, struct{}, string]](t)(pebblestate.GetList[string, struct{}](b, state.List[string]("l")))
			},
			func() {
				h.m = must[*pebblestate.Map[string, struct{}, string, int64]](t)(pebblestate.GetMap[string, struct{}](b, state.Map[string, int64]("m")))
			},
		}
		if reverse { // another registration order: other state ids
			slices.Reverse(reg)
		}
		for _, r := range reg {
			r()
		}
		return h
	}
	pendingKey := ""
	for i := 0; pendingKey == ""; i++ {
		if k := fmt.Sprint("p", i); statetest.KeyGroupOf(k) >= mid {
			pendingKey = k
		}
	}
	var refs []pebblestate.CheckpointRef
	for i, rng := range [][2]int{{0, mid - 1}, {mid, statetest.KeyGroups - 1}} {
		b := must[*pebblestate.Backend[string]](t)(pebblestate.Open[string](filepath.Join(root, fmt.Sprint("db", i)), rng[0], rng[1], clk, pebblestate.Options{}))
		h := get(b, i == 1)
		if i == 1 {
			// A restored, not yet registered state travels along too.
			other := openTest[string](t, 0, statetest.KeyGroups-1, clk)
			pv := must[*pebblestate.Value[string, struct{}, string]](t)(pebblestate.GetValue[string, struct{}](other, state.Value[string]("pending")))
			other.SetCurrentKey(pendingKey, statetest.KeyGroupOf(pendingKey))
			pv.Update("p")
			kg := statetest.KeyGroupOf(pendingKey)
			if err := b.RestoreKeyGroup(kg, must[[]byte](t)(other.SnapshotKeyGroup(kg))); err != nil {
				t.Fatal(err)
			}
		}
		for j, k := range keys {
			kg := statetest.KeyGroupOf(k)
			if kg < rng[0] || kg > rng[1] {
				continue
			}
			b.SetCurrentKey(k, kg)
			h.v.Update(int64(j))
			h.l.Add(k)
			h.l.Add("x")
			h.m.Put(k, int64(j))
		}
		id := int64(i + 1)
		must[pebblestate.Manifest](t)(b.CheckpointIncremental(cdir, id))
		refs = append(refs, pebblestate.CheckpointRef{Dir: cdir, ID: id})
		if err := b.Close(); err != nil {
			t.Fatal(err)
		}
	}
	b := must[*pebblestate.Backend[string]](t)(pebblestate.RestoreIncrementalMerged[string](refs, filepath.Join(root, "merged"), 0, statetest.KeyGroups-1, clk, pebblestate.Options{}))
	defer b.Close()
	h := get(b, false)
	for j, k := range keys {
		b.SetCurrentKey(k, statetest.KeyGroupOf(k))
		if got, ok := h.v.Value(); !ok || got != int64(j) {
			t.Fatalf("value of %s = %d, %v", k, got, ok)
		}
		if got := h.l.Get(); !slices.Equal(got, []string{k, "x"}) {
			t.Fatalf("list of %s = %q", k, got)
		}
		if got, ok := h.m.Get(k); !ok || got != int64(j) || h.m.Contains("x") {
			t.Fatalf("map of %s = %d, %v", k, got, ok)
		}
	}
	pv := must[*pebblestate.Value[string, struct{}, string]](t)(pebblestate.GetValue[string, struct{}](b, state.Value[string]("pending")))
	b.SetCurrentKey(pendingKey, statetest.KeyGroupOf(pendingKey))
	if got, ok := pv.Value(); !ok || got != "p" {
		t.Fatalf("pending restored state after the merge = %q, %v", got, ok)
	}
	// Overlapping checkpoints are refused.
	if _, err := pebblestate.RestoreIncrementalMerged[string]([]pebblestate.CheckpointRef{refs[0], refs[0]}, filepath.Join(root, "bad"), 0, statetest.KeyGroups-1, clk, pebblestate.Options{}); err == nil {
		t.Fatal("merged a checkpoint with itself")
	}
	// A range inside one checkpoint needs only that one.
	half := must[*pebblestate.Backend[string]](t)(pebblestate.RestoreIncrementalMerged[string](refs, filepath.Join(root, "half"), mid, statetest.KeyGroups-1, clk, pebblestate.Options{}))
	defer half.Close()
	hh := get(half, true)
	for j, k := range keys {
		if kg := statetest.KeyGroupOf(k); kg >= mid {
			half.SetCurrentKey(k, kg)
			if got, ok := hh.v.Value(); !ok || got != int64(j) {
				t.Fatalf("half: value of %s = %d, %v", k, got, ok)
			}
		}
	}
}
