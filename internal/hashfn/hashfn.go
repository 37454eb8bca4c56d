// Package hashfn provides the seeded hash functions of Weir's flat
// open-addressed tables (keyed state's tables and the timer queues'
// indexes): a salted multiply-fold for integer values, hash/maphash for the
// rest. There is no package-level seed: each table, backend or queue draws
// its own, so that values chosen to collide in one do not collide in
// another (as Go's maps seed their hashes).
package hashfn

import (
	"hash/maphash"
	"math/bits"
	"reflect"
	"unsafe"
)

const (
	mixA = 0x9e3779b97f4a7c15
	mixB = 0xbf58476d1ce4e5b9
)

// Mix64 scrambles x into a hash whose low bits depend on all of x's bits
// (the folded 128-bit product, as in wyhash). Callers salt x with a random
// value first.
func Mix64(x uint64) uint64 {
	hi, lo := bits.Mul64(x^mixA, mixB)
	return hi ^ lo
}

// Combine combines two hashes (or a hash and a salted value) into one.
func Combine(a, b uint64) uint64 {
	hi, lo := bits.Mul64(a^mixA, b^mixB)
	return hi ^ lo
}

// For returns a hash function for T, seeded by seed: a multiply-fold of
// the value salted with a word drawn from seed for integer kinds and for
// structs and arrays made only of integers without padding (up to 16
// bytes), maphash for strings, hash/maphash.Comparable for the rest.
// Zero-size types hash to 0 (zeroSize reports them).
func For[T comparable](seed maphash.Seed) (hash func(T) uint64, zeroSize bool) {
	t := reflect.TypeFor[T]()
	if t.Size() == 0 {
		return func(T) uint64 { return 0 }, true
	}
	if t.Kind() == reflect.String {
		return func(v T) uint64 {
			return maphash.String(seed, *(*string)(unsafe.Pointer(&v)))
		}, false
	}
	salt := maphash.Comparable(seed, uint64(0))
	if IntegerMemory(t) {
		switch t.Size() {
		case 1:
			return func(v T) uint64 { return Mix64(salt ^ uint64(*(*uint8)(unsafe.Pointer(&v)))) }, false
		case 2:
			return func(v T) uint64 { return Mix64(salt ^ uint64(*(*uint16)(unsafe.Pointer(&v)))) }, false
		case 4:
			return func(v T) uint64 { return Mix64(salt ^ uint64(*(*uint32)(unsafe.Pointer(&v)))) }, false
		case 8:
			return func(v T) uint64 { return Mix64(salt ^ *(*uint64)(unsafe.Pointer(&v))) }, false
		case 16:
			return func(v T) uint64 {
				w := (*[2]uint64)(unsafe.Pointer(&v))
				return Combine(Mix64(salt^w[0]), w[1])
			}, false
		}
	}
	return func(v T) uint64 { return maphash.Comparable(seed, v) }, false
}

// IntegerMemory reports whether t's values are equal exactly when their
// memory is: integers (and booleans), and structs and arrays of them
// without padding.
func IntegerMemory(t reflect.Type) bool {
	switch t.Kind() {
	case reflect.Bool, reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return true
	case reflect.Array:
		return IntegerMemory(t.Elem())
	case reflect.Struct:
		var off uintptr
		for i := range t.NumField() {
			f := t.Field(i)
			if f.Name == "_" || f.Offset != off || !IntegerMemory(f.Type) {
				return false
			}
			off += f.Type.Size()
		}
		return off == t.Size()
	default:
		return false
	}
}
