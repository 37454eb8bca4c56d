package pebble_test

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/weirstream/weir/internal/clock"
	"github.com/weirstream/weir/internal/state/kvstate"
	"github.com/weirstream/weir/internal/state/statetest"
	"github.com/weirstream/weir/state"
	"github.com/weirstream/weir/state/pebble"
)

// TestStageAndRestoreImages stages checkpoints of two backends, checks
// that an unchanged immutable file keeps its shared name across
// checkpoints and restores (so a store uploads it once), that an
// unclaimed staged checkpoint is discarded by the next one, and restores
// the databases at the same range, at a narrower one and merged.
func TestStageAndRestoreImages(t *testing.T) {
	root := t.TempDir()
	clk := clock.NewManual(0)
	mid := statetest.KeyGroups / 2
	write := func(b *kvstate.Backend[string], from, to int) {
		v := must[*kvstate.Value[string, struct{}, int64]](t)(kvstate.GetValue[string, struct{}](b, state.Value[int64]("v")))
		first, last := b.KeyGroupRange()
		for i := from; i < to; i++ {
			k := fmt.Sprint("k", i)
			if kg := statetest.KeyGroupOf(k); kg >= first && kg <= last {
				b.SetCurrentKey(k, kg)
				v.Update(int64(i))
			}
		}
	}
	check := func(b *kvstate.Backend[string], n int) {
		t.Helper()
		v := must[*kvstate.Value[string, struct{}, int64]](t)(kvstate.GetValue[string, struct{}](b, state.Value[int64]("v")))
		first, last := b.KeyGroupRange()
		for i := range n {
			k := fmt.Sprint("k", i)
			kg := statetest.KeyGroupOf(k)
			if kg < first || kg > last {
				continue
			}
			b.SetCurrentKey(k, kg)
			if got, ok := v.Value(); !ok || got != int64(i) {
				t.Fatalf("[%d, %d]: value of %s = %d, %v", first, last, k, got, ok)
			}
		}
	}
	shared := func(s *kvstate.Staged) map[string]string {
		m := map[string]string{}
		for _, f := range s.Files {
			if f.Shared != "" {
				m[f.Name] = f.Shared
			}
		}
		return m
	}
	var images []kvstate.Image
	for i, rng := range [][2]int{{0, mid - 1}, {mid, statetest.KeyGroups - 1}} {
		b := must[*kvstate.Backend[string]](t)(kvstate.Open[string](filepath.Join(root, fmt.Sprint("db", i)), rng[0], rng[1], clk, kvstate.Options{Store: pebble.New("")}))
		write(b, 0, 2000)
		s1 := must[*kvstate.Staged](t)(b.Stage(1))
		if len(shared(s1)) == 0 {
			t.Fatalf("staged checkpoint has no immutable files: %+v", s1.Files)
		}
		// Not claimed: the next Stage discards it. (Compact settles the
		// files, so that the restores below have no compaction to do.)
		write(b, 2000, 2100)
		if err := b.Compact(); err != nil {
			t.Fatal(err)
		}
		s2 := must[*kvstate.Staged](t)(b.Stage(2))
		if _, err := os.Stat(s1.Dir); !os.IsNotExist(err) || s1.Claim() {
			t.Fatalf("unclaimed staged checkpoint 1 still there (%v)", err)
		}
		for name, sh := range shared(s1) {
			if got, ok := shared(s2)[name]; ok && got != sh {
				t.Fatalf("file %s: shared name %s, then %s", name, sh, got)
			}
		}
		if !s2.Claim() {
			t.Fatal("Claim of the newest staged checkpoint failed")
		}
		// Writes after staging do not change the staged files.
		write(b, 2100, 3000)
		if err := b.Compact(); err != nil {
			t.Fatal(err)
		}
		img := s2.Image()
		cp := filepath.Join(root, fmt.Sprint("upload", i))
		if err := os.MkdirAll(cp, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := img.Layout(cp); err != nil {
			t.Fatal(err)
		}
		if err := s2.Release(); err != nil {
			t.Fatal(err)
		}
		if err := b.Discard(); err != nil {
			t.Fatal(err)
		}
		images = append(images, kvstate.Image{FirstKeyGroup: img.FirstKeyGroup, LastKeyGroup: img.LastKeyGroup, Shared: img.Shared,
			Layout: func(dir string) error {
				es, err := os.ReadDir(cp)
				if err != nil {
					return err
				}
				for _, e := range es {
					if err := os.Link(filepath.Join(cp, e.Name()), filepath.Join(dir, e.Name())); err != nil {
						return err
					}
				}
				return nil
			}})
	}
	// Same range: one image; the restored backend keeps the shared names.
	same := must[*kvstate.Backend[string]](t)(kvstate.RestoreImages[string](images, filepath.Join(root, "same"), 0, mid-1, clk, kvstate.Options{Store: pebble.New("")}))
	check(same, 2100)
	s := must[*kvstate.Staged](t)(same.Stage(3))
	for name, sh := range images[0].Shared {
		if got := shared(s)[name]; got != "" && got != sh {
			t.Fatalf("restored file %s staged as %s, was %s", name, got, sh)
		}
	}
	reused := 0
	for _, sh := range shared(s) {
		for _, old := range images[0].Shared {
			if sh == old {
				reused++
			}
		}
	}
	if reused == 0 {
		t.Fatal("the restored backend's checkpoint reuses none of the restored files")
	}
	if err := same.Discard(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(s.Dir); !os.IsNotExist(err) {
		t.Fatal("Discard left an unclaimed staged checkpoint")
	}
	// Narrower (scale up) and merged (scale down).
	for _, rng := range [][2]int{{mid / 2, mid - 1}, {mid / 2, statetest.KeyGroups - 1}, {0, statetest.KeyGroups - 1}} {
		b := must[*kvstate.Backend[string]](t)(kvstate.RestoreImages[string](images, filepath.Join(root, fmt.Sprint("r", rng[0], "-", rng[1])), rng[0], rng[1], clk, kvstate.Options{Store: pebble.New("")}))
		check(b, 2100)
		if err := b.Discard(); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := kvstate.RestoreImages[string]([]kvstate.Image{images[0], images[0]}, filepath.Join(root, "bad"), 0, mid-1, clk, kvstate.Options{Store: pebble.New("")}); err == nil {
		t.Fatal("restored from overlapping images")
	}
}
