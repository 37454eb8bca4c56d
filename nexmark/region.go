package nexmark

import (
	"errors"
	"unsafe"
)

// region is memory outside the Go heap, bump-allocated: anonymous private
// mappings (mapRegion; Linux only, see offHeap) that the garbage collector
// neither scans nor marks, so a large store of events held in it costs the
// collector nothing. Go ignores pointers into memory it did not allocate,
// so a region may be pointed into from anywhere, and typed values with
// pointers (events, people, strings) may be placed in it, on one rule:
// what is stored in a region may only point into a region that outlives
// it, or into static data, never into the Go heap, which the collector
// would free or move under it unseen. Memory allocated here is zeroed and
// never reused: nothing is freed before release, which unmaps it all.
type region struct {
	maps  [][]byte // every mapping, to unmap
	free  []byte   // the current chunk's unused tail
	chunk int      // size of the next chunk
	size  int64    // bytes mapped
	used  int64    // bytes allocated

	released bool
}

const (
	minRegionChunk = 256 << 10
	maxRegionChunk = 8 << 20
)

var errRegionReleased = errors.New("nexmark: off-heap region used after release")

// alloc returns size bytes aligned to align (a power of two no larger
// than a page), zeroed. It carves them from the current chunk, or from a
// new one (chunks grow from 256 kB to 8 MB); a request larger than a
// quarter of the next chunk gets a mapping of its own. It panics if the
// memory cannot be mapped (as the heap does when it cannot grow).
func (r *region) alloc(size, align uintptr) unsafe.Pointer {
	if size == 0 {
		return unsafe.Pointer(&zeroSized)
	}
	r.used += int64(size)
	pad := -uintptr(unsafe.Pointer(unsafe.SliceData(r.free))) & (align - 1)
	if uintptr(len(r.free)) < pad+size {
		next := min(max(2*r.chunk, minRegionChunk), maxRegionChunk)
		if size > uintptr(next/4) {
			return unsafe.Pointer(unsafe.SliceData(r.mapBytes(int(size))))
		}
		r.chunk = next
		r.free = r.mapBytes(next)
		pad = 0
	}
	p := unsafe.Pointer(&r.free[pad])
	r.free = r.free[pad+size:]
	return p
}

// zeroSized is the address of zero-sized allocations.
var zeroSized uintptr

func (r *region) mapBytes(n int) []byte {
	if r.released {
		panic(errRegionReleased)
	}
	b, err := mapRegion(n)
	if err != nil {
		panic("nexmark: mapping off-heap memory: " + err.Error())
	}
	r.maps = append(r.maps, b)
	r.size += int64(len(b))
	return b
}

// regionSlice returns a zeroed slice of n Ts in r, or in the Go heap if
// r is nil.
func regionSlice[T any](r *region, n int) []T {
	if r == nil {
		return make([]T, n)
	}
	if n == 0 {
		return nil
	}
	var t T
	p := r.alloc(unsafe.Sizeof(t)*uintptr(n), unsafe.Alignof(t))
	return unsafe.Slice((*T)(p), n)
}

// str returns a copy of s in r.
func (r *region) str(s string) string {
	if len(s) == 0 {
		return ""
	}
	b := regionSlice[byte](r, len(s))
	copy(b, s)
	return unsafe.String(&b[0], len(b))
}

// contains reports whether p points into one of r's mappings.
func (r *region) contains(p unsafe.Pointer) bool {
	for _, m := range r.maps {
		base := uintptr(unsafe.Pointer(unsafe.SliceData(m)))
		if a := uintptr(p); a >= base && a < base+uintptr(len(m)) {
			return true
		}
	}
	return false
}

// release unmaps all of r. Nothing may point into it afterwards.
func (r *region) release() error {
	var first error
	for _, m := range r.maps {
		if err := unmapRegion(m); err != nil && first == nil {
			first = err
		}
	}
	r.maps, r.free, r.size, r.used, r.released = nil, nil, 0, 0, true
	return first
}
