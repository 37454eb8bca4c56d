// Package rolling holds the reduce functions of the rolling aggregations
// of a keyed stream (Sum, Min, Max, MinBy, MaxBy), as Flink's
// SumAggregator and ComparableAggregator.
package rolling

import "cmp"

// Number is any integer or floating-point type.
type Number interface {
	~int | ~int8 | ~int16 | ~int32 | ~int64 |
		~uint | ~uint8 | ~uint16 | ~uint32 | ~uint64 | ~uintptr |
		~float32 | ~float64
}

// Sum adds the field of v to the running record's.
func Sum[T any, F Number](get func(T) F, set func(*T, F)) func(acc, v T) T {
	return func(acc, v T) T {
		set(&acc, get(acc)+get(v))
		return acc
	}
}

// ExtremeField keeps the running record and replaces its field when a
// record's field is at least as extreme (sign -1: smaller, 1: larger), as
// Flink's ComparableAggregator for MIN and MAX.
func ExtremeField[T any, F cmp.Ordered](get func(T) F, set func(*T, F), sign int) func(acc, v T) T {
	return func(acc, v T) T {
		if x := get(v); JavaCompare(get(acc), x)*sign <= 0 {
			set(&acc, x)
		}
		return acc
	}
}

// ExtremeRecord keeps the record with the most extreme field, the first
// of equal ones unless last, as Flink's ComparableAggregator for MINBY and
// MAXBY.
func ExtremeRecord[T any, F cmp.Ordered](get func(T) F, sign int, last bool) func(acc, v T) T {
	return func(acc, v T) T {
		switch d := JavaCompare(get(acc), get(v)) * sign; {
		case d > 0, d == 0 && !last:
			return acc
		}
		return v
	}
}

// JavaCompare is cmp.Compare with Java's order for NaN: larger than every
// other value and equal to itself.
func JavaCompare[F cmp.Ordered](a, b F) int {
	aNaN, bNaN := a != a, b != b
	switch {
	case aNaN && bNaN:
		return 0
	case aNaN:
		return 1
	case bNaN:
		return -1
	}
	return cmp.Compare(a, b)
}
