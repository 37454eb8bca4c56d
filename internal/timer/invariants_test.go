//go:build invariants

package timer

import (
	"fmt"
	"strings"
	"testing"
)

// wantViolation runs fn and fails unless it panics with a broken
// invariant whose message contains want.
func wantViolation(t *testing.T, want string, fn func()) {
	t.Helper()
	defer func() {
		t.Helper()
		if r := recover(); r == nil || !strings.Contains(fmt.Sprint(r), want) {
			t.Fatalf("recovered %v, want an invariant violation saying %q", r, want)
		}
	}()
	fn()
}

// TestQueueCheckFindsDamage damages a queue's bookkeeping behind its back:
// the next change panics naming what is wrong.
func TestQueueCheckFindsDamage(t *testing.T) {
	q := NewQueue[int, int]()
	q.Add(Timer[int, int]{Timestamp: 5, Key: 1})
	q.Add(Timer[int, int]{Timestamp: 7, Key: 1})
	q.n++
	wantViolation(t, "live timers in buckets", func() { q.Add(Timer[int, int]{Timestamp: 9, Key: 1}) })

	q = NewQueue[int, int]()
	q.Add(Timer[int, int]{Timestamp: 5, Key: 1})
	q.Add(Timer[int, int]{Timestamp: 7, Key: 1})
	q.Add(Timer[int, int]{Timestamp: 9, Key: 1})
	q.heap[0], q.heap[1] = q.heap[1], q.heap[0] // positions now stale, order broken
	wantViolation(t, "records position", func() { q.Add(Timer[int, int]{Timestamp: 9, Key: 2}) })
}
