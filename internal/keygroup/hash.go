package keygroup

import (
	"math"
	"unicode/utf8"
)

// HashString returns Java's String.hashCode of s: s[0]*31^(n-1) + ... +
// s[n-1] in wrapping int32 arithmetic over the UTF-16 code units of s. Runes
// outside the Basic Multilingual Plane count as their surrogate pair. Bytes
// of s that are not valid UTF-8 each count as U+FFFD, the rune Go decodes
// them to. ASCII strings take a byte-at-a-time fast path.
func HashString(s string) int32 {
	var h int32
	for i := 0; i < len(s); i++ {
		b := s[i]
		if b >= utf8.RuneSelf {
			return hashStringSlow(h, s[i:])
		}
		h = 31*h + int32(b)
	}
	return h
}

// hashStringSlow continues HashString from state h over s, decoding runes.
func hashStringSlow(h int32, s string) int32 {
	for _, r := range s {
		if r < 0x10000 {
			h = 31*h + r
			continue
		}
		r -= 0x10000
		h = 31*h + (0xD800 + r>>10)
		h = 31*h + (0xDC00 + r&0x3FF)
	}
	return h
}

// HashInt64 returns Java's Long.hashCode of v: (int)(v ^ (v >>> 32)).
func HashInt64(v int64) int32 {
	return int32(v ^ int64(uint64(v)>>32))
}

// HashInt32 returns Java's Integer.hashCode of v, which is v itself.
func HashInt32(v int32) int32 {
	return v
}

// HashBool returns Java's Boolean.hashCode of v: 1231 for true, 1237 for
// false.
func HashBool(v bool) int32 {
	if v {
		return 1231
	}
	return 1237
}

// HashFloat64 returns Java's Double.hashCode of v: Long.hashCode of
// Double.doubleToLongBits(v), so every NaN hashes like the canonical NaN.
// Like Java, 0.0 and -0.0 hash differently even though Go's == treats them as
// equal.
func HashFloat64(v float64) int32 {
	b := math.Float64bits(v)
	if v != v {
		b = 0x7ff8000000000000
	}
	return HashInt64(int64(b))
}

// HashFloat32 returns Java's Float.hashCode of v: Float.floatToIntBits(v),
// so every NaN hashes like the canonical NaN. Like Java, 0.0 and -0.0 hash
// differently.
func HashFloat32(v float32) int32 {
	if v != v {
		return 0x7fc00000
	}
	return int32(math.Float32bits(v))
}

// hashUint64 hashes the bits of v as a Java long.
func hashUint64(v uint64) int32 { return HashInt64(int64(v)) }
