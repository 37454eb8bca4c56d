package connector

import "unicode/utf8"

// StringHashCode returns Java's String.hashCode of s: s[0]*31^(n-1) + ...
// + s[n-1] in wrapping int32 arithmetic over the UTF-16 code units of s.
// Runes outside the Basic Multilingual Plane count as their surrogate
// pair; bytes of s that are not valid UTF-8 each count as U+FFFD. It is
// the hash Weir's key groups and Flink's split assignment (Kafka
// partitions to subtasks) use for strings, so a connector can assign
// splits as Flink does.
func StringHashCode(s string) int32 {
	var h int32
	for i := 0; i < len(s); i++ {
		b := s[i]
		if b >= utf8.RuneSelf {
			for _, r := range s[i:] {
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
		h = 31*h + int32(b)
	}
	return h
}
