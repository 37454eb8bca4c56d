package keygroup

import (
	"math"
	"strings"
	"testing"

	"pgregory.net/rapid"
)

type userID string
type seqNo int64
type small int8
type flag bool
type word uint32
type ratio float64

// pair mirrors a Flink Tuple2<String, Long>.
type pair struct {
	F0 string
	F1 int64
}

type withBlank struct {
	A int32
	_ int32
	B int32
}

// custom hashes through its own method.
type custom struct{ n int }

func (c custom) HashCode() int32 { return int32(c.n * 7) }

type holder struct {
	C custom
	S string
}

type ifaceHolder struct {
	H Hashable
	N int32
}

type ptrRecv struct{ n int }

func (p *ptrRecv) HashCode() int32 { return int32(p.n) }

func mustHasher[K comparable](t *testing.T) func(K) int32 {
	t.Helper()
	h, err := HasherFor[K]()
	if err != nil {
		t.Fatalf("HasherFor: %v", err)
	}
	return h
}

func TestHasherForScalars(t *testing.T) {
	check := func(name string, got, want int32) {
		t.Helper()
		if got != want {
			t.Errorf("%s: got %d, want %d", name, got, want)
		}
	}
	check("string", mustHasher[string](t)("hello"), 99162322)
	check("named string", mustHasher[userID](t)("日本"), 835047)
	check("int64", mustHasher[int64](t)(123456789012345), -2045923535)
	check("named int64", mustHasher[seqNo](t)(-1), 0)
	check("int", mustHasher[int](t)(1<<32), 1)
	check("int32", mustHasher[int32](t)(-42), -42)
	check("int16", mustHasher[int16](t)(-300), -300)
	check("int8", mustHasher[int8](t)(-5), -5)
	check("named int8", mustHasher[small](t)(-5), -5)
	check("uint8", mustHasher[uint8](t)(200), 200)
	check("uint16", mustHasher[uint16](t)(65535), 65535)
	check("uint32", mustHasher[uint32](t)(0xFFFFFFFF), -1)
	check("named uint32", mustHasher[word](t)(0xFFFFFFFF), -1)
	check("uint64", mustHasher[uint64](t)(math.MaxUint64), 0)
	check("uint", mustHasher[uint](t)(1<<32), 1)
	check("uintptr", mustHasher[uintptr](t)(42), 42)
	check("bool", mustHasher[bool](t)(true), 1231)
	check("named bool", mustHasher[flag](t)(false), 1237)
	check("float64", mustHasher[float64](t)(1.5), 1073217536)
	check("named float64", mustHasher[ratio](t)(-3.25), -1073086464)
	check("float32", mustHasher[float32](t)(1.5), 1069547520)
}

func TestHasherForNamedMatchesBase(t *testing.T) {
	hs, hu := mustHasher[string](t), mustHasher[userID](t)
	hi, hn := mustHasher[int64](t), mustHasher[seqNo](t)
	rapid.Check(t, func(t *rapid.T) {
		s := rapid.String().Draw(t, "s")
		if hs(s) != hu(userID(s)) || hs(s) != HashString(s) {
			t.Fatalf("string hashers disagree on %q", s)
		}
		v := rapid.Int64().Draw(t, "v")
		if hi(v) != hn(seqNo(v)) || hi(v) != HashInt64(v) {
			t.Fatalf("int64 hashers disagree on %d", v)
		}
	})
}

func TestHasherForComposite(t *testing.T) {
	// Tuple2<String, Long>("key", 42L).hashCode() in Java.
	if got := mustHasher[pair](t)(pair{"key", 42}); got != 3288491 {
		t.Errorf("pair = %d, want 3288491", got)
	}
	// Tuple rule over array elements: ((0*31+1)*31+2)*31+3.
	if got := mustHasher[[3]int32](t)([3]int32{1, 2, 3}); got != 1026 {
		t.Errorf("array = %d, want 1026", got)
	}
	if got := mustHasher[[0]int32](t)([0]int32{}); got != 0 {
		t.Errorf("empty array = %d, want 0", got)
	}
	if got := mustHasher[struct{}](t)(struct{}{}); got != 0 {
		t.Errorf("empty struct = %d, want 0", got)
	}
	// Blank fields are skipped.
	if got := mustHasher[withBlank](t)(withBlank{A: 2, B: 3}); got != 2*31+3 {
		t.Errorf("withBlank = %d, want %d", got, 2*31+3)
	}
	// Nested: struct{[2]pair; bool}.
	type nested struct {
		P [2]pair
		B bool
	}
	hp := HashString("a")*31 + HashInt64(1)
	hq := HashString("b")*31 + HashInt64(2)
	want := (hp*31+hq)*31 + 1231
	if got := mustHasher[nested](t)(nested{P: [2]pair{{"a", 1}, {"b", 2}}, B: true}); got != want {
		t.Errorf("nested = %d, want %d", got, want)
	}
}

func TestHasherForHashable(t *testing.T) {
	if got := mustHasher[custom](t)(custom{n: 6}); got != 42 {
		t.Errorf("custom = %d, want 42", got)
	}
	if got := mustHasher[holder](t)(holder{C: custom{n: 2}, S: "a"}); got != 14*31+97 {
		t.Errorf("holder = %d, want %d", got, 14*31+97)
	}
	hi := mustHasher[Hashable](t)
	if got := hi(custom{n: 3}); got != 21 {
		t.Errorf("interface = %d, want 21", got)
	}
	if got := hi(nil); got != 0 {
		t.Errorf("nil interface = %d, want 0", got)
	}
	hf := mustHasher[ifaceHolder](t)
	if got := hf(ifaceHolder{H: custom{n: 1}, N: 5}); got != 7*31+5 {
		t.Errorf("ifaceHolder = %d, want %d", got, 7*31+5)
	}
	if got := hf(ifaceHolder{N: 5}); got != 5 {
		t.Errorf("ifaceHolder nil = %d, want 5", got)
	}
	// A pointer type whose element has value-receiver HashCode implements it.
	if got := mustHasher[*custom](t)(&custom{n: 1}); got != 7 {
		t.Errorf("*custom = %d, want 7", got)
	}
}

func TestHasherForErrors(t *testing.T) {
	expectErr := func(name string, err error, mention string) {
		t.Helper()
		if err == nil {
			t.Errorf("%s: no error", name)
			return
		}
		if !strings.Contains(err.Error(), mention) {
			t.Errorf("%s: error %q does not mention %q", name, err, mention)
		}
	}
	_, err := HasherFor[*int]()
	expectErr("pointer", err, "*int")
	_, err = HasherFor[any]()
	expectErr("interface", err, "interface {}")
	_, err = HasherFor[chan int]()
	expectErr("chan", err, "chan int")
	_, err = HasherFor[complex128]()
	expectErr("complex", err, "complex128")
	_, err = HasherFor[struct{ P *int }]()
	expectErr("struct with pointer", err, "field P")
	_, err = HasherFor[[2]any]()
	expectErr("array of interface", err, "interface {}")
	_, err = HasherFor[ptrRecv]()
	expectErr("pointer receiver", err, "pointer receiver")
	_, err = HasherFor[struct{ R ptrRecv }]()
	expectErr("nested pointer receiver", err, "pointer receiver")
}

func TestHasherForNoAllocs(t *testing.T) {
	var sink int32
	allocs := func(name string, f func()) {
		t.Helper()
		if n := testing.AllocsPerRun(100, f); n != 0 {
			t.Errorf("%s: %v allocs per call, want 0", name, n)
		}
	}
	hi := mustHasher[int64](t)
	allocs("int64", func() { sink += hi(1 << 40) })
	hs := mustHasher[string](t)
	s := strings.Repeat("x", 40) + "é"
	allocs("string", func() { sink += hs(s) })
	hu := mustHasher[userID](t)
	allocs("named string", func() { sink += hu(userID(s)) })
	hn := mustHasher[seqNo](t)
	allocs("named int64", func() { sink += hn(1 << 40) })
	hf := mustHasher[float64](t)
	allocs("float64", func() { sink += hf(2.5) })
	hp := mustHasher[pair](t)
	allocs("pair", func() { sink += hp(pair{s, 1 << 40}) })
	ha := mustHasher[[4]int64](t)
	allocs("array", func() { sink += ha([4]int64{1, 2, 3, 1 << 40}) })
	hc := mustHasher[custom](t)
	allocs("Hashable", func() { sink += hc(custom{n: 1 << 20}) })
	_ = sink
}

func BenchmarkHasherForInt64(b *testing.B) {
	h, _ := HasherFor[int64]()
	var sink int32
	for i := range b.N {
		sink += h(int64(i))
	}
	_ = sink
}

func BenchmarkHasherForString(b *testing.B) {
	h, _ := HasherFor[string]()
	keys := []string{"user-000001", "user-000002", "session:abcdef", "日本語のキー"}
	var sink int32
	for i := range b.N {
		sink += h(keys[i%len(keys)])
	}
	_ = sink
}

func BenchmarkHasherForPair(b *testing.B) {
	h, _ := HasherFor[pair]()
	var sink int32
	for i := range b.N {
		sink += h(pair{"user-000001", int64(i)})
	}
	_ = sink
}
