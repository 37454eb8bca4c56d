//go:build !linux

package nexmark

import "errors"

// offHeap tells whether a Memory holds its events outside the Go heap:
// off Linux it holds them in the heap, and no region is mapped.
const offHeap = false

func mapRegion(int) ([]byte, error) {
	return nil, errors.New("off-heap memory is only mapped on Linux")
}

func unmapRegion([]byte) error { return nil }
