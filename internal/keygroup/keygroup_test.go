package keygroup

import (
	"math"
	"testing"

	"pgregory.net/rapid"
)

// v14 is vector V14 of the Flink semantics reference (maxParallelism 128).
var v14 = []struct {
	name                 string
	hash                 int32
	murmur               int32
	keyGroup             int
	subtask2, sub3, sub4 int
}{
	{"Integer 0", 0, 593689054, 94, 1, 2, 2},
	{"Integer 1", 1, 68075478, 86, 1, 2, 2},
	{"Integer 2", 2, 1085422463, 127, 1, 2, 3},
	{"Integer 3", 3, 847579505, 113, 1, 2, 3},
	{"Integer 42", 42, 1134849565, 29, 0, 0, 0},
	{"Integer -1", -1, 1982413648, 80, 1, 1, 2},
	{"Integer MAX", math.MaxInt32, 1653689534, 62, 0, 1, 1},
	{"Integer MIN", math.MinInt32, 1718298732, 108, 1, 2, 3},
	{"String a", HashString("a"), 1455541201, 81, 1, 1, 2},
	{"String b", HashString("b"), 516420758, 22, 0, 0, 0},
	{"String key", HashString("key"), 801471432, 72, 1, 1, 2},
	{"String hello", HashString("hello"), 1715862179, 35, 0, 0, 1},
	{"String empty", HashString(""), 593689054, 94, 1, 2, 2},
	{"Long 0", HashInt64(0), 593689054, 94, 1, 2, 2},
	{"Long 42", HashInt64(42), 1134849565, 29, 0, 0, 0},
}

func TestV14(t *testing.T) {
	wantHash := map[string]int32{
		"String a": 97, "String b": 98, "String key": 106079, "String hello": 99162322,
		"String empty": 0, "Long 0": 0, "Long 42": 42,
	}
	for _, r := range v14 {
		if w, ok := wantHash[r.name]; ok && r.hash != w {
			t.Errorf("%s: hashCode = %d, want %d", r.name, r.hash, w)
		}
		if got := Murmur(r.hash); got != r.murmur {
			t.Errorf("%s: Murmur(%d) = %d, want %d", r.name, r.hash, got, r.murmur)
		}
		kg := Of(r.hash, 128)
		if kg != r.keyGroup {
			t.Errorf("%s: Of = %d, want %d", r.name, kg, r.keyGroup)
		}
		for _, c := range []struct{ p, want int }{{2, r.subtask2}, {3, r.sub3}, {4, r.sub4}} {
			if got := OperatorIndex(kg, c.p, 128); got != c.want {
				t.Errorf("%s: OperatorIndex(%d, p=%d) = %d, want %d", r.name, kg, c.p, got, c.want)
			}
			if !RangeFor(128, c.p, c.want).Contains(kg) {
				t.Errorf("%s: RangeFor(128, %d, %d) does not contain %d", r.name, c.p, c.want, kg)
			}
		}
	}
}

func TestMurmurMoreVectors(t *testing.T) {
	// Computed with Flink's MathUtils.murmurHash in Java.
	for _, c := range []struct {
		in, murmur    int32
		kg128, kg4096 int
	}{
		{7, 1343918321, 113, 241},
		{100, 616682048, 64, 576},
		{-100, 359108696, 88, 88},
		{123456789, 1088346449, 81, 2385},
		{-987654321, 1314828554, 10, 266},
		{2147418112, 1260750601, 9, 1801},
		{31, 1168509563, 123, 2683},
		{1048576, 480706890, 74, 330},
	} {
		if got := Murmur(c.in); got != c.murmur {
			t.Errorf("Murmur(%d) = %d, want %d", c.in, got, c.murmur)
		}
		if got := Of(c.in, 128); got != c.kg128 {
			t.Errorf("Of(%d, 128) = %d, want %d", c.in, got, c.kg128)
		}
		if got := Of(c.in, 4096); got != c.kg4096 {
			t.Errorf("Of(%d, 4096) = %d, want %d", c.in, got, c.kg4096)
		}
	}
}

func TestMurmurNonNegative(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		h := rapid.Int32().Draw(t, "h")
		if m := Murmur(h); m < 0 {
			t.Fatalf("Murmur(%d) = %d < 0", h, m)
		}
	})
}

func TestRanges(t *testing.T) {
	for _, c := range []struct {
		p    int
		want []Range
	}{
		{3, []Range{{0, 42}, {43, 85}, {86, 127}}},
		{4, []Range{{0, 31}, {32, 63}, {64, 95}, {96, 127}}},
		{1, []Range{{0, 127}}},
	} {
		for i, w := range c.want {
			if got := RangeFor(128, c.p, i); got != w {
				t.Errorf("RangeFor(128, %d, %d) = %v, want %v", c.p, i, got, w)
			}
		}
	}
	r := Range{Start: 43, End: 85}
	if r.Len() != 43 || !r.Contains(43) || !r.Contains(85) || r.Contains(42) || r.Contains(86) {
		t.Errorf("Range %v: Len/Contains wrong", r)
	}
	if (Range{Start: 5, End: 4}).Len() != 0 {
		t.Error("empty range has non-zero Len")
	}
	if s := r.String(); s != "[43, 85]" {
		t.Errorf("String = %q", s)
	}
}

func TestRangeForPanics(t *testing.T) {
	for _, c := range []struct{ maxP, p, i int }{
		{0, 1, 0}, {MaxParallelismLimit + 1, 1, 0}, {128, 0, 0}, {128, 129, 0}, {128, 4, 4}, {128, 4, -1},
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("RangeFor(%d, %d, %d) did not panic", c.maxP, c.p, c.i)
				}
			}()
			RangeFor(c.maxP, c.p, c.i)
		}()
	}
}

func TestRangesPartitionProperty(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		maxP := rapid.IntRange(1, MaxParallelismLimit).Draw(t, "maxP")
		p := rapid.IntRange(1, min(maxP, 300)).Draw(t, "p")
		next := 0
		for i := range p {
			r := RangeFor(maxP, p, i)
			if r.Start != next {
				t.Fatalf("range %d = %v starts at %d, want %d", i, r, r.Start, next)
			}
			if r.Len() < 1 {
				t.Fatalf("range %d = %v is empty", i, r)
			}
			next = r.End + 1
		}
		if next != maxP {
			t.Fatalf("ranges end at %d, want %d", next-1, maxP-1)
		}
		// OperatorIndex(kg) == i iff RangeFor(..., i).Contains(kg).
		for range 20 {
			kg := rapid.IntRange(0, maxP-1).Draw(t, "kg")
			i := rapid.IntRange(0, p-1).Draw(t, "i")
			if (OperatorIndex(kg, p, maxP) == i) != RangeFor(maxP, p, i).Contains(kg) {
				t.Fatalf("kg %d, i %d: OperatorIndex = %d, range %v", kg, i, OperatorIndex(kg, p, maxP), RangeFor(maxP, p, i))
			}
		}
	})
}

func TestDefaultMaxParallelism(t *testing.T) {
	for _, c := range []struct{ p, want int }{
		{1, 128}, {2, 128}, {85, 128}, {86, 256}, {100, 256}, {170, 256}, {171, 256}, {172, 512},
		{1000, 2048}, {21845, 32768}, {30000, 32768}, {MaxParallelismLimit, 32768},
	} {
		if got := DefaultMaxParallelism(c.p); got != c.want {
			t.Errorf("DefaultMaxParallelism(%d) = %d, want %d", c.p, got, c.want)
		}
	}
	for _, p := range []int{0, -1, MaxParallelismLimit + 1} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("DefaultMaxParallelism(%d) did not panic", p)
				}
			}()
			DefaultMaxParallelism(p)
		}()
	}
}
