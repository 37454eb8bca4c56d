package asyncio

import "container/heap"

type timerKind uint8

const (
	timerTimeout timerKind = iota + 1
	timerRetry
)

// timer is a request's timeout or the start of its next attempt. The
// operator keeps its own heap, so that a request that completes removes
// its timers at once, and asks the task's processing-time service for one
// callback at the earliest.
type timer[IN, OUT any] struct {
	at    int64
	seq   uint64
	kind  timerKind
	e     *entry[IN, OUT]
	index int
}

type timerHeap[IN, OUT any] []*timer[IN, OUT]

func (h timerHeap[IN, OUT]) Len() int { return len(h) }
func (h timerHeap[IN, OUT]) Less(i, j int) bool {
	if h[i].at != h[j].at {
		return h[i].at < h[j].at
	}
	return h[i].seq < h[j].seq
}
func (h timerHeap[IN, OUT]) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].index, h[j].index = i, j
}
func (h *timerHeap[IN, OUT]) Push(x any) {
	t := x.(*timer[IN, OUT])
	t.index = len(*h)
	*h = append(*h, t)
}
func (h *timerHeap[IN, OUT]) Pop() any {
	old := *h
	t := old[len(old)-1]
	old[len(old)-1] = nil
	*h = old[:len(old)-1]
	t.index = -1
	return t
}

func (h *timerHeap[IN, OUT]) add(t *timer[IN, OUT]) { heap.Push(h, t) }

func (h *timerHeap[IN, OUT]) remove(t *timer[IN, OUT]) {
	if t.index >= 0 {
		heap.Remove(h, t.index)
	}
}

func (h *timerHeap[IN, OUT]) popMin() *timer[IN, OUT] { return heap.Pop(h).(*timer[IN, OUT]) }
