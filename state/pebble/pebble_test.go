package pebble_test

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/weirstream/weir/internal/clock"
	istate "github.com/weirstream/weir/internal/state"
	"github.com/weirstream/weir/internal/state/kvstate"
	"github.com/weirstream/weir/internal/state/statetest"
	"github.com/weirstream/weir/state"
	"github.com/weirstream/weir/state/pebble"
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
	pv := must[*kvstate.Value[string, struct{}, int64]](t)(kvstate.GetValue[string, struct{}](peb, state.Value[int64]("v", ttl)))
	pl := must[*kvstate.List[string, struct{}, string]](t)(kvstate.GetList[string, struct{}](peb, state.List[string]("l")))
	pm := must[*kvstate.Map[string, struct{}, string, float64]](t)(kvstate.GetMap[string, struct{}](peb, state.Map[string, float64]("m", ttl)))
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
	type pv = *kvstate.Value[string, struct{}, int64]
	type pm = *kvstate.Map[string, struct{}, int64, string]
	lv := must[pv](t)(kvstate.GetValue[string, struct{}](lo, state.Value[int64]("v")))
	lm := must[pm](t)(kvstate.GetMap[string, struct{}](lo, state.Map[int64, string]("m")))
	hiv := must[pv](t)(kvstate.GetValue[string, struct{}](hi, state.Value[int64]("v")))
	him := must[pm](t)(kvstate.GetMap[string, struct{}](hi, state.Map[int64, string]("m")))
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
	b := must[*kvstate.Backend[string]](t)(kvstate.Open[string](dir, 0, statetest.KeyGroups-1, clk, kvstate.Options{Store: pebble.New("")}))
	v := must[*kvstate.Value[string, struct{}, int64]](t)(kvstate.GetValue[string, struct{}](b, state.Value[int64]("v")))
	keys := []string{"a", "b", "c", "d", "e", "f", "g", "h"}
	for i, k := range keys {
		b.SetCurrentKey(k, statetest.KeyGroupOf(k))
		v.Update(int64(i))
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := kvstate.Open[int64](dir, 0, statetest.KeyGroups-1, clk, kvstate.Options{Store: pebble.New("")}); err == nil {
		t.Fatal("opened a database of string keys with int64 keys")
	}
	b = must[*kvstate.Backend[string]](t)(kvstate.Open[string](dir, 0, 3, clk, kvstate.Options{Store: pebble.New("")}))
	defer b.Close()
	if _, err := kvstate.GetList[string, struct{}](b, state.List[int64]("v")); err == nil {
		t.Fatal("a stored value state registered as a list state")
	}
	v = must[*kvstate.Value[string, struct{}, int64]](t)(kvstate.GetValue[string, struct{}](b, state.Value[int64]("v")))
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

// stageClaimed stages checkpoint id of b and claims it, as the uploader of
// a job checkpoint does, so that it stays until released (at the latest
// when the test ends).
func stageClaimed(t *testing.T, b *kvstate.Backend[string], id int64) *kvstate.Staged {
	t.Helper()
	s := must[*kvstate.Staged](t)(b.Stage(id))
	if !s.Claim() {
		t.Fatalf("claim of staged checkpoint %d failed", id)
	}
	t.Cleanup(func() { _ = s.Release() })
	return s
}

// sharedFiles returns the immutable files of s by name, and checks that
// s.Files describes the staging directory: the same names and sizes, and a
// shared name exactly for the SST and blob files.
func sharedFiles(t *testing.T, s *kvstate.Staged) map[string]kvstate.StagedFile {
	t.Helper()
	entries, err := os.ReadDir(s.Dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	out := map[string]kvstate.StagedFile{}
	var listed []string
	for _, f := range s.Files {
		listed = append(listed, f.Name)
		info, err := os.Stat(s.Path(f))
		if err != nil || info.Size() != f.Size {
			t.Fatalf("staged file %+v: %v, %v", f, info, err)
		}
		imm := strings.HasSuffix(f.Name, ".sst") || strings.HasSuffix(f.Name, ".blob")
		if imm != (f.Shared != "") {
			t.Fatalf("staged file %+v: shared name for an immutable file %v", f, imm)
		}
		if imm {
			out[f.Name] = f
		}
	}
	if !slices.Equal(names, listed) {
		t.Fatalf("staged checkpoint %d lists %v, its directory holds %v", s.ID, listed, names)
	}
	return out
}

// noLeftovers checks that no staging or merge directory is left in root.
func noLeftovers(t *testing.T, root string) {
	t.Helper()
	entries, err := os.ReadDir(root)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if strings.Contains(e.Name(), ".chk-") || strings.Contains(e.Name(), ".merge-") {
			t.Fatalf("%s left in %s", e.Name(), root)
		}
	}
}

// TestIncrementalCheckpoint checks that a second staged checkpoint after a
// small change has only one shared file more, a small new SST (so a store
// uploads only that), that both checkpoints restore through their Images,
// that a restored backend's next checkpoint keeps the shared names of the
// restored files and names its new files apart, a restore into a narrower
// key-group range, and the errors of RestoreImages.
func TestIncrementalCheckpoint(t *testing.T) {
	root := t.TempDir()
	clk := clock.NewManual(0)
	b := must[*kvstate.Backend[string]](t)(kvstate.Open[string](filepath.Join(root, "db"), 0, statetest.KeyGroups-1, clk, kvstate.Options{Store: pebble.New("")}))
	defer b.Close()
	v := must[*kvstate.Value[string, struct{}, string]](t)(kvstate.GetValue[string, struct{}](b, state.Value[string]("v")))
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
	// would legitimately add its output as new files.
	if err := b.Compact(); err != nil {
		t.Fatal(err)
	}
	s1 := stageClaimed(t, b, 1)
	sh1 := sharedFiles(t, s1)
	if len(sh1) == 0 {
		t.Fatalf("first checkpoint has no shared files: %+v", s1.Files)
	}
	stored := map[string]bool{} // shared names a store would hold
	var total int64
	for _, f := range sh1 {
		if stored[f.Shared] {
			t.Fatalf("two files of checkpoint 1 share the name %s", f.Shared)
		}
		stored[f.Shared] = true
		total += f.Size
	}
	b.SetCurrentKey("changed", statetest.KeyGroupOf("changed"))
	v.Update("new")
	s2 := stageClaimed(t, b, 2)
	sh2 := sharedFiles(t, s2)
	var added []kvstate.StagedFile
	for name, f := range sh2 {
		if old, ok := sh1[name]; ok && (old.Shared != f.Shared || old.Size != f.Size) {
			t.Fatalf("file %s: shared as %+v, then as %+v", name, old, f)
		}
		if !stored[f.Shared] {
			added = append(added, f)
		}
	}
	if len(added) != 1 || len(sh2) != len(sh1)+1 {
		t.Fatalf("second checkpoint: new shared files %+v of %d (first had %d)", added, len(sh2), len(sh1))
	}
	if added[0].Size*10 > total {
		t.Fatalf("second checkpoint added a %d-byte SST of %d bytes in all", added[0].Size, total)
	}
	t.Logf("checkpoint 1: %d SSTs, %d bytes; checkpoint 2: %d SSTs, one new of %d bytes",
		len(sh1), total, len(sh2), added[0].Size)
	for _, f := range sh2 {
		stored[f.Shared] = true
	}

	// Restore both; checkpoint 1 lacks the change.
	for _, c := range []struct {
		s      *kvstate.Staged
		hasNew bool
	}{{s1, false}, {s2, true}} {
		img := c.s.Image()
		if img.FirstKeyGroup != 0 || img.LastKeyGroup != statetest.KeyGroups-1 || len(img.Shared) != len(sharedFiles(t, c.s)) {
			t.Fatalf("image of checkpoint %d: [%d, %d], %d shared files", c.s.ID, img.FirstKeyGroup, img.LastKeyGroup, len(img.Shared))
		}
		r := must[*kvstate.Backend[string]](t)(kvstate.RestoreImages[string]([]kvstate.Image{img}, filepath.Join(root, fmt.Sprint("restored", c.s.ID)), 0, statetest.KeyGroups-1, clk, kvstate.Options{Store: pebble.New("")}))
		rv := must[*kvstate.Value[string, struct{}, string]](t)(kvstate.GetValue[string, struct{}](r, state.Value[string]("v")))
		for _, i := range []int{0, 1, 2, n / 2, n - 1} {
			k := fmt.Sprint(i)
			r.SetCurrentKey(k, statetest.KeyGroupOf(k))
			if got, ok := rv.Value(); !ok || got != val+k {
				t.Fatalf("checkpoint %d: value of %s = %q, %v", c.s.ID, k, got, ok)
			}
		}
		r.SetCurrentKey("changed", statetest.KeyGroupOf("changed"))
		if _, ok := rv.Value(); ok != c.hasNew {
			t.Fatalf("checkpoint %d: changed key present %v", c.s.ID, ok)
		}
		// The restored backend's next checkpoint has new shared files
		// only for the files written since the restore (a compaction
		// after the restore may have replaced old ones).
		r.SetCurrentKey("after", statetest.KeyGroupOf("after"))
		rv.Update("x")
		s := stageClaimed(t, r, 10+c.s.ID)
		reused, fresh := 0, 0
		for name, f := range sharedFiles(t, s) {
			if old, ok := img.Shared[name]; ok {
				if old != f.Shared {
					t.Fatalf("checkpoint after restoring %d names %s %s, restored as %s", c.s.ID, name, f.Shared, old)
				}
				reused++
				continue
			}
			if stored[f.Shared] {
				t.Fatalf("checkpoint after restoring %d gives the new file %s the stored name %s", c.s.ID, name, f.Shared)
			}
			fresh++
		}
		if fresh == 0 {
			t.Fatalf("checkpoint after restoring %d has no new file", c.s.ID)
		}
		if c.s.ID == 1 && reused == 0 {
			t.Fatalf("checkpoint after restoring %d reused no file: %+v", c.s.ID, s.Files)
		}
		if err := s.Release(); err != nil {
			t.Fatal(err)
		}
		if err := r.Close(); err != nil {
			t.Fatal(err)
		}
	}
	// Restore into a smaller range: the other key groups are gone.
	r := must[*kvstate.Backend[string]](t)(kvstate.RestoreImages[string]([]kvstate.Image{s2.Image()}, filepath.Join(root, "half"), 0, 3, clk, kvstate.Options{Store: pebble.New("")}))
	defer r.Close()
	rv := must[*kvstate.Value[string, struct{}, string]](t)(kvstate.GetValue[string, struct{}](r, state.Value[string]("v")))
	seen := 0
	for i := range 100 {
		k := fmt.Sprint(i)
		if kg := statetest.KeyGroupOf(k); kg <= 3 {
			r.SetCurrentKey(k, kg)
			if got, ok := rv.Value(); !ok || got != val+k {
				t.Fatalf("key %s = %q, %v after a restore into a smaller range", k, got, ok)
			}
			seen++
		}
	}
	if seen == 0 || seen == 100 {
		t.Fatalf("%d of 100 keys in range", seen)
	}
	// Its checkpoint restored at the full range holds only its key groups.
	narrow := stageClaimed(t, r, 20)
	if img := narrow.Image(); img.FirstKeyGroup != 0 || img.LastKeyGroup != 3 {
		t.Fatalf("image of the narrower backend: [%d, %d]", img.FirstKeyGroup, img.LastKeyGroup)
	}
	wide := must[*kvstate.Backend[string]](t)(kvstate.RestoreImages[string]([]kvstate.Image{narrow.Image()}, filepath.Join(root, "wide"), 0, statetest.KeyGroups-1, clk, kvstate.Options{Store: pebble.New("")}))
	wv := must[*kvstate.Value[string, struct{}, string]](t)(kvstate.GetValue[string, struct{}](wide, state.Value[string]("v")))
	for i := range 100 {
		k := fmt.Sprint(i)
		kg := statetest.KeyGroupOf(k)
		wide.SetCurrentKey(k, kg)
		if _, ok := wv.Value(); ok != (kg <= 3) {
			t.Fatalf("key %s of key group %d present %v after restoring [0, 3]", k, kg, ok)
		}
	}
	if err := wide.Close(); err != nil {
		t.Fatal(err)
	}
	occupied := filepath.Join(root, "occupied")
	if err := os.MkdirAll(occupied, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(occupied, "stray"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := kvstate.RestoreImages[string]([]kvstate.Image{s2.Image()}, occupied, 0, 3, clk, kvstate.Options{Store: pebble.New("")}); err == nil {
		t.Fatal("restored into a non-empty directory")
	}
	// A checkpoint whose files are gone does not restore.
	gone := stageClaimed(t, b, 3)
	img := gone.Image()
	if err := gone.Release(); err != nil {
		t.Fatal(err)
	}
	if _, err := kvstate.RestoreImages[string]([]kvstate.Image{img}, filepath.Join(root, "none"), 0, 3, clk, kvstate.Options{Store: pebble.New("")}); err == nil {
		t.Fatal("restored a checkpoint that does not exist")
	}
	// Released checkpoints leave nothing behind.
	for _, s := range []*kvstate.Staged{s1, s2, narrow} {
		if err := s.Release(); err != nil {
			t.Fatal(err)
		}
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	noLeftovers(t, root)
}

// TestUnsupportedTTLChange checks that a state stored with TTL timestamps
// by an incremental checkpoint cannot be registered without TTL.
func TestUnsupportedTTLChange(t *testing.T) {
	root := t.TempDir()
	clk := clock.NewManual(0)
	b := must[*kvstate.Backend[string]](t)(kvstate.Open[string](filepath.Join(root, "db"), 0, 0, clk, kvstate.Options{Store: pebble.New("")}))
	v := must[*kvstate.Value[string, struct{}, int64]](t)(kvstate.GetValue[string, struct{}](b, state.Value[int64]("v", state.WithTTL(state.TTL(time.Second)))))
	b.SetCurrentKey("a", 0)
	v.Update(1)
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	b = must[*kvstate.Backend[string]](t)(kvstate.Open[string](filepath.Join(root, "db"), 0, 0, clk, kvstate.Options{Store: pebble.New("")}))
	defer b.Close()
	if _, err := kvstate.GetValue[string, struct{}](b, state.Value[int64]("v")); err == nil {
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
	v := must[*kvstate.Value[string, struct{}, int64]](t)(kvstate.GetValue[string, struct{}](b, state.Value[int64]("v")))
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
	b := openTest[int64](t, kvstate.MaxKeyGroup-1, kvstate.MaxKeyGroup, clk)
	v := must[*kvstate.Value[int64, struct{}, int64]](t)(kvstate.GetValue[int64, struct{}](b, state.Value[int64]("v")))
	b.SetCurrentKey(1, kvstate.MaxKeyGroup)
	v.Update(3)
	s := must[[]byte](t)(b.SnapshotKeyGroup(kvstate.MaxKeyGroup))
	b2 := openTest[int64](t, 0, kvstate.MaxKeyGroup, clk)
	if err := b2.RestoreKeyGroup(kvstate.MaxKeyGroup, s); err != nil {
		t.Fatal(err)
	}
	v2 := must[*kvstate.Value[int64, struct{}, int64]](t)(kvstate.GetValue[int64, struct{}](b2, state.Value[int64]("v")))
	b2.SetCurrentKey(1, kvstate.MaxKeyGroup)
	if got, ok := v2.Value(); !ok || got != 3 {
		t.Fatalf("value in the last key group = %d, %v", got, ok)
	}
	if _, err := kvstate.Open[int64](t.TempDir(), 0, kvstate.MaxKeyGroup+1, clk, kvstate.Options{Store: pebble.New("")}); err == nil {
		t.Fatal("opened a backend beyond the last key group")
	}
}

// TestRestoreImagesMerged stages checkpoints of two backends with halves
// of the key groups, whose states got different ids and one of which holds
// a restored, not yet registered state, and restores one backend for all
// key groups from both (a scale-in), one for a range inside one half (the
// other image is not laid out), and one for a range spanning both unevenly
// (the larger part becomes the database, the other is merged into it).
func TestRestoreImagesMerged(t *testing.T) {
	root := t.TempDir()
	clk := clock.NewManual(0)
	mid := statetest.KeyGroups / 2
	keys := make([]string, 200)
	for i := range keys {
		keys[i] = fmt.Sprint("k", i)
	}
	type handles struct {
		v *kvstate.Value[string, struct{}, int64]
		l *kvstate.List[string, struct{}, string]
		m *kvstate.Map[string, struct{}, string, int64]
	}
	get := func(b *kvstate.Backend[string], reverse bool) handles {
		var h handles
		reg := []func(){
			func() {
				h.v = must[*kvstate.Value[string, struct{}, int64]](t)(kvstate.GetValue[string, struct{}](b, state.Value[int64]("v")))
			},
			func() {
				h.l = must[*kvstate.List[string, struct{}, string]](t)(kvstate.GetList[string, struct{}](b, state.List[string]("l")))
			},
			func() {
				h.m = must[*kvstate.Map[string, struct{}, string, int64]](t)(kvstate.GetMap[string, struct{}](b, state.Map[string, int64]("m")))
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
	var staged []*kvstate.Staged
	var images []kvstate.Image
	laidOut := make([]int, 2) // Layout calls per image
	for i, rng := range [][2]int{{0, mid - 1}, {mid, statetest.KeyGroups - 1}} {
		b := must[*kvstate.Backend[string]](t)(kvstate.Open[string](filepath.Join(root, fmt.Sprint("db", i)), rng[0], rng[1], clk, kvstate.Options{Store: pebble.New("")}))
		h := get(b, i == 1)
		if i == 1 {
			// A restored, not yet registered state travels along too.
			other := openTest[string](t, 0, statetest.KeyGroups-1, clk)
			pv := must[*kvstate.Value[string, struct{}, string]](t)(kvstate.GetValue[string, struct{}](other, state.Value[string]("pending")))
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
		s := stageClaimed(t, b, int64(i+1))
		staged = append(staged, s)
		img := s.Image()
		layout := img.Layout
		img.Layout = func(dir string) error {
			laidOut[i]++
			return layout(dir)
		}
		images = append(images, img)
		// The staged checkpoint outlives its backend.
		if err := b.Close(); err != nil {
			t.Fatal(err)
		}
	}
	check := func(name string, first, last int, wantLaidOut []int) {
		t.Helper()
		clear(laidOut)
		b := must[*kvstate.Backend[string]](t)(kvstate.RestoreImages[string](images, filepath.Join(root, name), first, last, clk, kvstate.Options{Store: pebble.New("")}))
		defer b.Close()
		if !slices.Equal(laidOut, wantLaidOut) {
			t.Fatalf("%s: images laid out %v times, want %v", name, laidOut, wantLaidOut)
		}
		h := get(b, first >= mid)
		seen := 0
		for j, k := range keys {
			kg := statetest.KeyGroupOf(k)
			if kg < first || kg > last {
				continue
			}
			seen++
			b.SetCurrentKey(k, kg)
			if got, ok := h.v.Value(); !ok || got != int64(j) {
				t.Fatalf("%s: value of %s = %d, %v", name, k, got, ok)
			}
			if got := h.l.Get(); !slices.Equal(got, []string{k, "x"}) {
				t.Fatalf("%s: list of %s = %q", name, k, got)
			}
			if got, ok := h.m.Get(k); !ok || got != int64(j) || h.m.Contains("x") {
				t.Fatalf("%s: map of %s = %d, %v", name, k, got, ok)
			}
		}
		if seen == 0 {
			t.Fatalf("%s: no key in range", name)
		}
		pv := must[*kvstate.Value[string, struct{}, string]](t)(kvstate.GetValue[string, struct{}](b, state.Value[string]("pending")))
		b.SetCurrentKey(pendingKey, statetest.KeyGroupOf(pendingKey))
		if got, ok := pv.Value(); !ok || got != "p" {
			t.Fatalf("%s: pending restored state = %q, %v", name, got, ok)
		}
	}
	check("merged", 0, statetest.KeyGroups-1, []int{1, 1})
	// A range inside one image needs only that one.
	check("half", mid, statetest.KeyGroups-1, []int{0, 1})
	// Two key groups of the first image are merged into the second.
	check("uneven", mid-2, statetest.KeyGroups-1, []int{1, 1})
	// Overlapping images are refused.
	if _, err := kvstate.RestoreImages[string]([]kvstate.Image{images[1], images[1]}, filepath.Join(root, "bad"), 0, statetest.KeyGroups-1, clk, kvstate.Options{Store: pebble.New("")}); err == nil {
		t.Fatal("merged an image with itself")
	}
	for _, s := range staged {
		if err := s.Release(); err != nil {
			t.Fatal(err)
		}
	}
	noLeftovers(t, root)
}
