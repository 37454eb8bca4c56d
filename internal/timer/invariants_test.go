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
	wantViolation(t, "live timers in runs and pending", func() { q.Add(Timer[int, int]{Timestamp: 9, Key: 1}) })

	q = NewQueue[int, int]()
	q.Add(Timer[int, int]{Timestamp: 5, Key: 1})
	q.Add(Timer[int, int]{Timestamp: 7, Key: 1})
	q.Add(Timer[int, int]{Timestamp: 9, Key: 1})
	q.Peek() // sorts them into a run
	rs := q.runs[0].refs
	rs[0], rs[1] = rs[1], rs[0] // order broken
	wantViolation(t, "out of order", func() { q.Add(Timer[int, int]{Timestamp: 9, Key: 2}) })

	q = NewQueue[int, int]()
	q.Add(Timer[int, int]{Timestamp: 5, Key: 1})
	q.Add(Timer[int, int]{Timestamp: 7, Key: 1})
	q.dead++
	wantViolation(t, "dead refs", func() { q.Delete(7, 1, 0) })
}
