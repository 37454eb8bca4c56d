package engine

import (
	"sync"
	"sync/atomic"
)

// Mailbox carries work from other goroutines into a task: an operator that
// waits on something outside the task (the answers of asynchronous
// requests) posts a function, and the task runs it on its own goroutine
// between two steps, then flushes, as Flink's mailbox runs mails between
// records. Posting never blocks; what is posted after the task has ended is
// dropped. Operators registered as waiters (Watch) can hold the task's
// input back and keep the task from finishing.
type Mailbox struct {
	mu      sync.Mutex
	queued  atomic.Int64 // len(mails), read without the lock
	mails   []func() error
	spare   []func() error
	closed  bool
	notify  chan struct{}
	waiters []Waiter
}

// inputMsg marks the inbox messages that carry input (batches of an
// exchange or of a source's split reader): while a waiter blocks the
// input, the task parks them unprocessed, with their credits, and goes on
// handling the other messages (checkpoint triggers and notifications).
type inputMsg interface{ input() }

func (m *batchMsg[T]) input() {}
func (m *srcMsg[T]) input()   {}

// Waiter is implemented by operators with work in flight outside the task
// goroutine (async I/O). Both methods are called on the task goroutine.
type Waiter interface {
	// InputBlocked reports whether the task must stop taking input (a full
	// request queue): it then runs mails, timers and nothing else until
	// the operator has room again.
	InputBlocked() bool
	// Pending reports whether the operator still has work in flight; the
	// task does not finish, even with all its input ended, until no waiter
	// has.
	Pending() bool
}

// NewMailbox returns an empty mailbox.
func NewMailbox() *Mailbox { return &Mailbox{notify: make(chan struct{}, 1)} }

// Post queues f to run on the task goroutine and reports whether it was
// queued (false once the task has ended). Safe from any goroutine.
func (m *Mailbox) Post(f func() error) bool {
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return false
	}
	m.mails = append(m.mails, f)
	m.queued.Store(int64(len(m.mails)))
	m.mu.Unlock()
	select {
	case m.notify <- struct{}{}:
	default:
	}
	return true
}

// Watch registers an operator that may block the task's input or keep the
// task from finishing. Call it while the task is built.
func (m *Mailbox) Watch(w Waiter) { m.waiters = append(m.waiters, w) }

// take returns the queued mails and empties the queue.
func (m *Mailbox) take() []func() error {
	if m.queued.Load() == 0 {
		return nil
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	out := m.mails
	m.mails, m.spare = m.spare[:0], nil
	m.queued.Store(0)
	return out
}

// recycle gives a drained slice back for the next take.
func (m *Mailbox) recycle(s []func() error) {
	clear(s)
	m.mu.Lock()
	if m.spare == nil {
		m.spare = s[:0]
	}
	m.mu.Unlock()
}

// close drops what is queued and refuses later posts.
func (m *Mailbox) close() {
	m.mu.Lock()
	m.closed = true
	m.mails = nil
	m.queued.Store(0)
	m.mu.Unlock()
}

// blocked reports whether a waiter holds the input back.
func (m *Mailbox) blocked() bool {
	for _, w := range m.waiters {
		if w.InputBlocked() {
			return true
		}
	}
	return false
}

// pending reports whether a waiter has work in flight.
func (m *Mailbox) pending() bool {
	for _, w := range m.waiters {
		if w.Pending() {
			return true
		}
	}
	return false
}

// Mailbox returns the task's mailbox.
func (t *Task) Mailbox() *Mailbox { return t.mail }

// RunMail runs every mail posted so far, in posting order (mails posted
// meanwhile wait for the next call), then flushes. It reports how many it
// ran.
func (t *Task) RunMail() (int, error) {
	mails := t.mail.take()
	if len(mails) == 0 {
		return 0, nil
	}
	defer t.mail.recycle(mails)
	for _, f := range mails {
		if err := t.guard(f); err != nil {
			return 0, err
		}
	}
	return len(mails), t.Flush()
}
