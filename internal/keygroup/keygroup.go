// Package keygroup assigns keys to key groups and key groups to parallel
// operator instances exactly as Flink's KeyGroupRangeAssignment does, and
// provides Go equivalents of the Java hashCode functions Flink feeds into
// that assignment.
//
// A key travels the following path: its Java-style hash code (see HashString,
// HashInt64, HasherFor, ...) is scrambled with Murmur, reduced modulo the max
// parallelism to a key group (Of), and the key group is mapped to the index
// of the subtask that owns it (OperatorIndex). The key groups owned by one
// subtask form a contiguous Range (RangeFor).
package keygroup

import (
	"fmt"
	"math/bits"
)

// MaxParallelismLimit is the largest max parallelism Flink accepts (1 << 15),
// and the upper bound of DefaultMaxParallelism.
const MaxParallelismLimit = 1 << 15

// defaultLowerBound is the smallest value DefaultMaxParallelism returns.
const defaultLowerBound = 1 << 7

// Murmur scrambles a 32-bit hash code exactly like Flink's
// MathUtils.murmurHash: one murmur3 round, a length mix of 4, the murmur3
// finaliser, and finally a non-negative result (the absolute value, with
// math.MinInt32 mapped to 0). All arithmetic wraps as in Java.
func Murmur(code int32) int32 {
	c := uint32(code)
	c *= 0xcc9e2d51
	c = bits.RotateLeft32(c, 15)
	c *= 0x1b873593
	c = bits.RotateLeft32(c, 13)
	c = c*5 + 0xe6546b64
	c ^= 4
	// bitMix (murmur3 fmix32).
	c ^= c >> 16
	c *= 0x85ebca6b
	c ^= c >> 13
	c *= 0xc2b2ae35
	c ^= c >> 16
	r := int32(c)
	switch {
	case r >= 0:
		return r
	case r != -1<<31:
		return -r
	default:
		return 0
	}
}

// Of returns the key group of a key whose Java-style hash code is hash:
// Murmur(hash) % maxParallelism. maxParallelism must be positive; the result
// is in [0, maxParallelism).
func Of(hash int32, maxParallelism int) int {
	return int(Murmur(hash)) % maxParallelism
}

// OperatorIndex returns the index of the parallel operator instance (subtask)
// that owns keyGroup: keyGroup * parallelism / maxParallelism, with integer
// division. It requires 0 <= keyGroup < maxParallelism and
// 0 < parallelism <= maxParallelism.
func OperatorIndex(keyGroup, parallelism, maxParallelism int) int {
	return keyGroup * parallelism / maxParallelism
}

// Range is an inclusive range [Start, End] of key groups. A Range with
// End < Start is empty.
type Range struct {
	// Start is the first key group of the range.
	Start int
	// End is the last key group of the range (inclusive).
	End int
}

// Contains reports whether keyGroup lies in r.
func (r Range) Contains(keyGroup int) bool {
	return keyGroup >= r.Start && keyGroup <= r.End
}

// Len returns the number of key groups in r (0 if r is empty).
func (r Range) Len() int {
	if r.End < r.Start {
		return 0
	}
	return r.End - r.Start + 1
}

// String formats r as "[Start, End]".
func (r Range) String() string {
	return fmt.Sprintf("[%d, %d]", r.Start, r.End)
}

// RangeFor returns the key groups owned by subtask index of an operator with
// the given parallelism and max parallelism, as Flink's
// computeKeyGroupRangeForOperatorIndex does:
// [(index*maxP + p - 1) / p, ((index+1)*maxP - 1) / p].
// The ranges of indexes 0..parallelism-1 partition [0, maxParallelism), and
// OperatorIndex(kg, p, maxP) == index exactly for the kg in RangeFor(maxP, p,
// index).
//
// RangeFor panics unless 0 < parallelism <= maxParallelism <=
// MaxParallelismLimit and 0 <= index < parallelism.
func RangeFor(maxParallelism, parallelism, index int) Range {
	if maxParallelism <= 0 || maxParallelism > MaxParallelismLimit {
		panic(fmt.Sprintf("keygroup: max parallelism %d not in (0, %d]", maxParallelism, MaxParallelismLimit))
	}
	if parallelism <= 0 || parallelism > maxParallelism {
		panic(fmt.Sprintf("keygroup: parallelism %d not in (0, max parallelism %d]", parallelism, maxParallelism))
	}
	if index < 0 || index >= parallelism {
		panic(fmt.Sprintf("keygroup: operator index %d not in [0, %d)", index, parallelism))
	}
	return Range{
		Start: (index*maxParallelism + parallelism - 1) / parallelism,
		End:   ((index+1)*maxParallelism - 1) / parallelism,
	}
}

// DefaultMaxParallelism returns the max parallelism Flink picks for an
// operator with the given parallelism when none is configured
// (computeDefaultMaxParallelism):
// min(max(roundUpToPowerOfTwo(p + p/2), 128), 32768).
// It panics unless 0 < parallelism <= MaxParallelismLimit.
func DefaultMaxParallelism(parallelism int) int {
	if parallelism <= 0 || parallelism > MaxParallelismLimit {
		panic(fmt.Sprintf("keygroup: parallelism %d not in (0, %d]", parallelism, MaxParallelismLimit))
	}
	n := parallelism + parallelism/2
	// roundUpToPowerOfTwo for n >= 1.
	pow := 1 << bits.Len(uint(n-1))
	return min(max(pow, defaultLowerBound), MaxParallelismLimit)
}
