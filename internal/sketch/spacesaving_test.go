package sketch

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"pgregory.net/rapid"
)

func TestSpaceSavingFindsHeavyHitters(t *testing.T) {
	s := NewSpaceSaving(16)
	r := rand.New(rand.NewPCG(1, 2))
	for i := range 100_000 {
		switch {
		case i%4 == 0:
			s.Offer("hot", 3) // 25%
		case i%10 == 1:
			s.Offer("warm", 1) // 10%
		default:
			s.Offer(fmt.Sprint("k", r.IntN(10_000)), 0)
		}
	}
	top, total := s.Top(2)
	if total != 100_000 || len(top) != 2 || top[0].Key != "hot" || top[1].Key != "warm" || top[0].Tag != 3 {
		t.Fatalf("top = %+v, total %d", top, total)
	}
	if lo := top[0].Count - top[0].Error; lo > 25_000 || top[0].Count < 25_000 {
		t.Fatalf("hot count %d error %d do not bound 25000", top[0].Count, top[0].Error)
	}
}

// TestSpaceSavingBounds holds the sketch against exact counts: every
// count bounds the true count from above and Count-Error from below, and
// every item offered more than n/m times is present.
func TestSpaceSavingBounds(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		m := rapid.IntRange(1, 8).Draw(t, "m")
		keys := rapid.SliceOf(rapid.IntRange(0, 20)).Draw(t, "keys")
		s := NewSpaceSaving(m)
		exact := map[string]int64{}
		for _, k := range keys {
			key := fmt.Sprint(k)
			exact[key]++
			s.Offer(key, k)
		}
		top, total := s.Top(m)
		if total != int64(len(keys)) {
			t.Fatalf("total %d, want %d", total, len(keys))
		}
		seen := map[string]bool{}
		for _, it := range top {
			seen[it.Key] = true
			if it.Count < exact[it.Key] || it.Count-it.Error > exact[it.Key] {
				t.Fatalf("%s: count %d error %d, exact %d", it.Key, it.Count, it.Error, exact[it.Key])
			}
		}
		for k, c := range exact {
			if c*int64(m) > int64(len(keys)) && !seen[k] {
				t.Fatalf("%s offered %d of %d times (m=%d) but missing", k, c, len(keys), m)
			}
		}
	})
}

func TestMerge(t *testing.T) {
	a := []Item{{Key: "x", Count: 5, Tag: 1}, {Key: "y", Count: 2}}
	b := []Item{{Key: "x", Count: 3, Error: 1, Tag: 1}, {Key: "z", Count: 4}}
	got := Merge(2, a, b)
	if len(got) != 2 || got[0] != (Item{Key: "x", Count: 8, Error: 1, Tag: 1}) || got[1].Key != "z" {
		t.Fatalf("merge = %+v", got)
	}
}
