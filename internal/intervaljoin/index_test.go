package intervaljoin

import (
	"testing"

	"pgregory.net/rapid"
)

// TestIJIndexModel holds the join's key index against a Go map, with a
// hash that collides a lot (long probe runs, wrap-around, backward shifts).
func TestIJIndexModel(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		mod := rapid.Int32Range(1, 40).Draw(t, "mod")
		x := newIJIndex(func(k int) int32 { return int32(k) % mod })
		model := map[int]int32{}
		next := int32(0)
		for range rapid.IntRange(0, 400).Draw(t, "ops") {
			k := rapid.IntRange(0, 120).Draw(t, "key")
			switch rapid.IntRange(0, 2).Draw(t, "op") {
			case 0:
				got := x.getOrPut(k, func(int) int32 { next++; return next })
				if want, ok := model[k]; ok && got != want {
					t.Fatalf("getOrPut(%d) = %d, want %d", k, got, want)
				} else if !ok {
					if got != next {
						t.Fatalf("getOrPut(%d) = %d, want the new slot %d", k, got, next)
					}
					model[k] = got
				}
			case 1:
				x.delete(k)
				delete(model, k)
			}
			got, ok := x.get(k)
			if want, wok := model[k]; ok != wok || got != want {
				t.Fatalf("get(%d) = %d %v, want %d %v", k, got, ok, want, wok)
			}
			if x.len() != len(model) {
				t.Fatalf("len %d, want %d", x.len(), len(model))
			}
		}
		n := 0
		x.all(func(k int, s int32) {
			n++
			if model[k] != s {
				t.Fatalf("all: %d -> %d, want %d", k, s, model[k])
			}
		})
		for k, s := range model {
			if got, ok := x.get(k); !ok || got != s {
				t.Fatalf("get(%d) = %d %v at the end, want %d", k, got, ok, s)
			}
		}
		if n != len(model) {
			t.Fatalf("all yielded %d keys, want %d", n, len(model))
		}
	})
}
