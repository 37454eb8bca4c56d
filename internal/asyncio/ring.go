package asyncio

// ring is a FIFO on a circular buffer that grows as needed.
type ring[T any] struct {
	buf        []T
	head, size int
}

func (r *ring[T]) len() int { return r.size }

func (r *ring[T]) push(v T) {
	if r.size == len(r.buf) {
		n := make([]T, max(2*len(r.buf), 8))
		for i := range r.size {
			n[i] = r.buf[(r.head+i)%len(r.buf)]
		}
		r.buf, r.head = n, 0
	}
	r.buf[(r.head+r.size)%len(r.buf)] = v
	r.size++
}

func (r *ring[T]) front() T { return r.buf[r.head] }

func (r *ring[T]) back() T { return r.buf[(r.head+r.size-1)%len(r.buf)] }

func (r *ring[T]) pop() T {
	var zero T
	v := r.buf[r.head]
	r.buf[r.head] = zero
	r.head = (r.head + 1) % len(r.buf)
	r.size--
	return v
}

// at returns the i-th element from the front.
func (r *ring[T]) at(i int) T { return r.buf[(r.head+i)%len(r.buf)] }
