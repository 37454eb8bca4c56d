package pebble_test

import (
	"crypto/rand"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/cockroachdb/pebble/v2/vfs/errorfs"

	"github.com/weirstream/weir/internal/clock"
	"github.com/weirstream/weir/internal/state/kvstate"
	"github.com/weirstream/weir/state"
	"github.com/weirstream/weir/state/pebble"
)

// faultRig is a backend whose faults are collected, with a value state of
// incompressible 1 KiB values.
type faultRig struct {
	t      *testing.T
	b      *kvstate.Backend[int64]
	v      state.ValueState[[]byte]
	faults chan error
	calls  atomic.Int32
}

func newFaultRig(t *testing.T, fs vfs.FS) *faultRig {
	r := &faultRig{t: t, faults: make(chan error, 1)}
	opts := kvstate.Options{Store: pebble.New("", pebble.WithFS(fs)), OnFault: func(err error) {
		if r.calls.Add(1) == 1 {
			r.faults <- err
		}
	}}
	r.b = must[*kvstate.Backend[int64]](t)(kvstate.Open[int64](filepath.Join(t.TempDir(), "db"), 0, 127, clock.NewManual(0), opts))
	r.v = must[*kvstate.Value[int64, struct{}, []byte]](t)(kvstate.GetValue[int64, struct{}](r.b, state.Value[[]byte]("v")))
	return r
}

// write stores keys lo..hi-1 and flushes them into an SST file.
func (r *faultRig) write(lo, hi int64) {
	r.update(lo, hi)
	if err := r.b.Flush(); err != nil {
		r.t.Fatal(err)
	}
}

// update stores random values under keys lo..hi-1.
func (r *faultRig) update(lo, hi int64) {
	val := make([]byte, 1024)
	for k := lo; k < hi; k++ {
		r.b.SetCurrentKey(k, int(k%128))
		rand.Read(val)
		r.v.Update(val)
	}
}

// failed waits for the backend's fault and checks that it says want,
// that it refuses state access and checkpoints from then on, and that it
// can be discarded.
func (r *faultRig) failed(want string) {
	t := r.t
	t.Helper()
	// Pebble may report the fault just after the failed call returned
	// (a compaction hands its waiter the error first).
	err := <-r.faults
	if !strings.Contains(err.Error(), want) {
		t.Fatalf("fault %q, want one saying %q", err, want)
	}
	if got := r.b.Err(); got != err {
		t.Fatalf("Err() = %v, want the reported fault", got)
	}
	func() {
		defer func() {
			if p := recover(); p == nil || !strings.Contains(fmt.Sprint(p), want) {
				t.Fatalf("reading state of a failed database: panic %v, want the fault", p)
			}
		}()
		r.b.SetCurrentKey(1, 1)
		r.v.Value()
	}()
	if _, err := r.b.Stage(1); err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("Stage of a failed database: %v, want the fault", err)
	}
	if _, err := r.b.SnapshotKeyGroup(1); err == nil {
		t.Fatal("SnapshotKeyGroup of a failed database succeeded")
	}
	_ = r.b.Discard() // may report the failure again; must not panic or hang
	if n := r.calls.Load(); n != 1 {
		t.Fatalf("OnFault called %d times, want once", n)
	}
}

// TestCorruptFileDuringCompactionFailsTheBackend damages what the SST
// files read (as a failing disk would) and compacts: the compaction, on
// one of Pebble's goroutines, finds a checksum mismatch. Pebble's default
// reaction, Logger.Fatalf, panicked there and killed the process; now it
// is the backend's fault.
func TestCorruptFileDuringCompactionFailsTheBackend(t *testing.T) {
	var armed atomic.Bool
	r := newFaultRig(t, damagingFS{FS: vfs.Default, armed: &armed})
	r.write(0, 1000)
	armed.Store(true)
	// A file that overlaps every other: the compaction must read them.
	// (Pebble may find the damage first on another of its goroutines,
	// loading table statistics; then Flush returns the fault.)
	r.update(1000, 2000)
	_ = r.b.Flush()
	err := r.b.Compact()
	if err == nil {
		t.Fatal("compacting damaged files succeeded")
	}
	r.failed("checksum mismatch")
}

// damagingFS damages the data read from SST files, once armed: a byte in
// the middle of every read.
type damagingFS struct {
	vfs.FS
	armed *atomic.Bool
}

func (fs damagingFS) Open(name string, opts ...vfs.OpenOption) (vfs.File, error) {
	f, err := fs.FS.Open(name, opts...)
	if err != nil || !strings.HasSuffix(name, ".sst") {
		return f, err
	}
	return damagingFile{File: f, armed: fs.armed}, nil
}

type damagingFile struct {
	vfs.File
	armed *atomic.Bool
}

func (f damagingFile) ReadAt(p []byte, off int64) (int, error) {
	n, err := f.File.ReadAt(p, off)
	if n > 0 && f.armed.Load() {
		p[n/2] ^= 0x55
	}
	return n, err
}

// TestFatalErrorFailsTheBackend makes the writes of Pebble's MANIFEST fail
// during a flush: Pebble calls Logger.Fatalf on its flush goroutine (and
// reports the failed flush as a background error, then retries it for
// good). The old logger panicked there, killing the process; now the
// backend records the fault, and Flush returns it instead of waiting for
// a flush that never succeeds.
func TestFatalErrorFailsTheBackend(t *testing.T) {
	var armed atomic.Bool
	injected := errors.New("injected MANIFEST write failure")
	fs := errorfs.Wrap(vfs.Default, errorfs.InjectorFunc(func(op errorfs.Op) error {
		if armed.Load() && (op.Kind == errorfs.OpFileWrite || op.Kind == errorfs.OpFileSync) &&
			strings.HasPrefix(filepath.Base(op.Path), "MANIFEST") {
			return injected
		}
		return nil
	}))
	r := newFaultRig(t, fs)
	r.write(0, 1000)
	armed.Store(true)
	r.update(1000, 2000)
	err := r.b.Flush()
	if err == nil || !strings.Contains(err.Error(), "fatal error") {
		t.Fatalf("Flush = %v, want the fatal error", err)
	}
	r.failed(injected.Error())
}

// TestBackgroundErrorFailsTheBackend makes the SST file writes of flushes
// fail: Pebble reports each failed flush as a background error and
// retries it, so a Flush waited for ever before; now the first error is
// the backend's fault.
func TestBackgroundErrorFailsTheBackend(t *testing.T) {
	var armed atomic.Bool
	injected := errors.New("injected SST write failure")
	fs := errorfs.Wrap(vfs.Default, errorfs.InjectorFunc(func(op errorfs.Op) error {
		if armed.Load() && (op.Kind == errorfs.OpCreate || op.Kind == errorfs.OpFileWrite) && strings.HasSuffix(op.Path, ".sst") {
			return injected
		}
		return nil
	}))
	r := newFaultRig(t, fs)
	r.write(0, 100)
	armed.Store(true)
	r.b.SetCurrentKey(7, 7)
	r.v.Update([]byte("x"))
	if err := r.b.Flush(); err == nil || !strings.Contains(err.Error(), "in the background") {
		t.Fatalf("Flush = %v, want the background error", err)
	}
	r.failed(injected.Error())
}
