package keygroup

import (
	"math"
	"testing"
	"unicode/utf16"
	"unicode/utf8"

	"pgregory.net/rapid"
)

func TestHashString(t *testing.T) {
	// Values from Java's String.hashCode.
	for _, c := range []struct {
		s    string
		want int32
	}{
		{"", 0},
		{"a", 97},
		{"key", 106079},
		{"hello", 99162322},
		{"é", 233},
		{"日本", 835047},
		{"😀", 1772899},
		{"a😀b", 57849694},
		{"Ünïcødé ✓ 𝄞", -347878464},
	} {
		if got := HashString(c.s); got != c.want {
			t.Errorf("HashString(%q) = %d, want %d", c.s, got, c.want)
		}
	}
	// Invalid UTF-8 bytes count as U+FFFD each.
	if got, want := HashString("a\xffb"), HashString("a\uFFFDb"); got != want {
		t.Errorf("HashString(invalid) = %d, want %d", got, want)
	}
}

// javaStringHash is a straightforward reference over utf16.Encode.
func javaStringHash(s string) int32 {
	var h int32
	for _, u := range utf16.Encode([]rune(s)) {
		h = 31*h + int32(u)
	}
	return h
}

func TestHashStringMatchesUTF16Reference(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		s := rapid.String().Draw(t, "s")
		if !utf8.ValidString(s) {
			t.Skip()
		}
		if got, want := HashString(s), javaStringHash(s); got != want {
			t.Fatalf("HashString(%q) = %d, want %d", s, got, want)
		}
	})
}

func TestHashNumbers(t *testing.T) {
	// Values from Java's Long/Double/Float/Boolean.hashCode.
	for _, c := range []struct {
		v    int64
		want int32
	}{
		{0, 0}, {42, 42}, {-1, 0}, {math.MinInt64, math.MinInt32}, {math.MaxInt64, math.MinInt32},
		{1 << 32, 1}, {0xFFFFFFFF, -1}, {123456789012345, -2045923535},
	} {
		if got := HashInt64(c.v); got != c.want {
			t.Errorf("HashInt64(%d) = %d, want %d", c.v, got, c.want)
		}
	}
	for _, c := range []struct {
		v    float64
		want int32
	}{
		{0, 0}, {math.Copysign(0, -1), math.MinInt32}, {1.5, 1073217536}, {-3.25, -1073086464},
		{math.NaN(), 2146959360}, {math.Float64frombits(0x7ff0000000000001), 2146959360},
		{math.Inf(1), 2146435072}, {1e300, -164130400},
	} {
		if got := HashFloat64(c.v); got != c.want {
			t.Errorf("HashFloat64(%v) = %d, want %d", c.v, got, c.want)
		}
	}
	for _, c := range []struct {
		v    float32
		want int32
	}{
		{0, 0}, {float32(math.Copysign(0, -1)), math.MinInt32}, {1.5, 1069547520}, {-3.25, -1068498944},
		{float32(math.NaN()), 2143289344}, {math.Float32frombits(0x7f800001), 2143289344},
	} {
		if got := HashFloat32(c.v); got != c.want {
			t.Errorf("HashFloat32(%v) = %d, want %d", c.v, got, c.want)
		}
	}
	if HashBool(true) != 1231 || HashBool(false) != 1237 {
		t.Error("HashBool wrong")
	}
	if HashInt32(-7) != -7 {
		t.Error("HashInt32 wrong")
	}
}
