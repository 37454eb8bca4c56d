package hashfn

import (
	"hash/maphash"
	"reflect"
	"testing"
)

// TestFor: equal values hash alike, and the integer-memory fast path is
// taken only for types whose equality is their memory's.
func TestFor(t *testing.T) {
	type pair struct{ A, B int64 }
	type padded struct {
		A int8
		B int64
	}
	type blank struct {
		A int32
		_ int32
	}
	if !IntegerMemory(reflect.TypeFor[pair]()) || !IntegerMemory(reflect.TypeFor[[2]int32]()) {
		t.Fatal("pair and [2]int32 are integer memory")
	}
	for _, ty := range []any{padded{}, blank{}, 1.5, "s", struct{ S string }{}} {
		if IntegerMemory(reflect.TypeOf(ty)) {
			t.Fatalf("%T is not integer memory", ty)
		}
	}
	hp, _ := For[pair](maphash.MakeSeed())
	if hp(pair{1, 2}) != hp(pair{1, 2}) || hp(pair{1, 2}) == hp(pair{2, 1}) {
		t.Fatal("pair hash")
	}
	hs, _ := For[string](maphash.MakeSeed())
	a, b := "ab", string([]byte{'a', 'b'})
	if hs(a) != hs(b) {
		t.Fatal("string hash")
	}
	hf, _ := For[float64](maphash.MakeSeed())
	if hf(0.0) != hf(negZero()) {
		t.Fatal("float hash: -0 and +0 are equal")
	}
	if _, zero := For[struct{}](maphash.MakeSeed()); !zero {
		t.Fatal("struct{} is zero-size")
	}
	// Two seeds give two hash functions.
	h1, _ := For[int64](maphash.MakeSeed())
	h2, _ := For[int64](maphash.MakeSeed())
	if h1(1) == h2(1) && h1(2) == h2(2) {
		t.Fatal("the seed does not change the hash")
	}
}

func negZero() float64 { z := 0.0; return -z }
