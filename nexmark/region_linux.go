package nexmark

import "syscall"

// offHeap tells whether a Memory holds its events outside the Go heap.
const offHeap = true

// mapRegion maps n bytes (rounded up to pages) of anonymous, private,
// zeroed memory.
func mapRegion(n int) ([]byte, error) {
	return syscall.Mmap(-1, 0, n, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_ANON|syscall.MAP_PRIVATE)
}

func unmapRegion(b []byte) error { return syscall.Munmap(b) }
