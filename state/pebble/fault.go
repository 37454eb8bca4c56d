package pebble

import (
	"errors"
	"fmt"
	"log"
	"sync"
	"sync/atomic"

	cpebble "github.com/cockroachdb/pebble/v2"
)

// A database fails in one of three ways, two of them on Pebble's own
// goroutines (flushes, compactions, table statistics), where a panic
// would kill the whole process and no caller gets an error:
//
//   - a read finds a damaged block (a checksum mismatch): Pebble reports
//     EventListener.DataCorruption, whose default calls Logger.Fatalf,
//     then returns the error to the read (a state handle, which panics
//     with it: the task fails; or a compaction, which goes on to the next
//     case);
//   - a flush or compaction fails: EventListener.BackgroundError, and
//     Pebble retries it later;
//   - Pebble finds its own state inconsistent or cannot write its
//     MANIFEST: Logger.Fatalf, which Pebble expects never to return.
//
// Each records the first such error as the database's fault (store.Err)
// and calls kv.Options.OnFault, which fails the owning task (the runtime's
// Task.Fail): the task stops at its next step, its operator's Close
// discards the database, and the job restarts from its last completed
// checkpoint as after any task failure, or fails with the error when no
// restart remains. The database is never used for state again: the
// records the failing step emitted are never committed, because no
// checkpoint can complete without the failed task.
//
// Fatalf returns after recording, and the goroutine goes on. Of what it
// could do instead, runtime.Goexit would skip Pebble's unlocks and
// counters that are not deferred (a compaction goroutine's
// compactingCount, which DB.Close waits on), and blocking for good would
// hold them: either leaves the database's Close, and so the task's
// failure, hanging. Returning lets the goroutine unwind through its own
// error path: in Pebble v2.1.7 the storage failures that reach Fatalf
// (MANIFEST writes, DB.Commit) return their error right after it; the
// other calls are Pebble's invariant checks, after which Pebble may fail
// further, which the recorded fault already covers (a panic on Pebble's
// goroutine after such a bug cannot be caught by anyone).

// fault is the first fatal or background error of one database.
type fault struct {
	mu     sync.Mutex
	err    error
	notify func(error)
	done   chan struct{} // closed when err is set
	failed atomic.Bool   // err is set (read on every state access)
}

func newFault(notify func(error)) *fault {
	return &fault{notify: notify, done: make(chan struct{})}
}

// record keeps err if it is the first and reports it. It is called on
// whatever goroutine Pebble reports on, possibly with Pebble's locks held:
// it must not block or call into the database.
func (f *fault) record(err error) {
	f.mu.Lock()
	if f.err != nil {
		f.mu.Unlock()
		return
	}
	f.err = err
	f.failed.Store(true)
	close(f.done)
	notify := f.notify
	f.mu.Unlock()
	if notify != nil {
		notify(err)
	}
}

func (f *fault) get() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.err
}

// configure routes the failures of a database opened with po to f.
func (f *fault) configure(po *cpebble.Options, dir string) {
	po.Logger = faultLogger{f: f, dir: dir}
	po.EventListener = &cpebble.EventListener{
		BackgroundError: func(err error) {
			f.record(fmt.Errorf("pebble: database %s failed in the background: %w", dir, err))
		},
		DataCorruption: func(info cpebble.DataCorruptionInfo) {
			f.record(fmt.Errorf("pebble: database %s is damaged: %w", dir, errors.New(info.String())))
		},
	}
}

// faultLogger drops Pebble's informational messages, logs its errors and
// records its fatal errors as the database's fault, then returns.
type faultLogger struct {
	f   *fault
	dir string
}

func (faultLogger) Infof(string, ...any) {}

func (faultLogger) Errorf(format string, a ...any) { log.Printf("pebble: "+format, a...) }

func (l faultLogger) Fatalf(format string, a ...any) {
	l.f.record(fmt.Errorf("pebble: fatal error of database %s: %s", l.dir, fmt.Sprintf(format, a...)))
}
