package pebble

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sort"
	"strings"

	cpebble "github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/bloom"

	"github.com/weirstream/weir/state/kv"
)

// store is a kv.Store on one Pebble database. It implements
// kv.Checkpointer (Pebble's checkpoints: hard links to the immutable SST
// and blob files), kv.Compacter and kv.Faulter.
type store struct {
	db    *cpebble.DB
	dir   string
	fault *fault // the database's first fatal or background error (fault.go)
}

var writeOpts = cpebble.NoSync

var (
	_ kv.Store        = (*store)(nil)
	_ kv.Checkpointer = (*store)(nil)
	_ kv.Compacter    = (*store)(nil)
	_ kv.Faulter      = (*store)(nil)
)

// openStore opens the database in dir with cfg; onFault gets its fault.
func openStore(dir string, cfg config, onFault func(error)) (*store, error) {
	if cfg.memTableSize == 0 {
		cfg.memTableSize = DefaultMemTableSize
	}
	if cfg.cacheSize == 0 {
		cfg.cacheSize = DefaultCacheSize
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("pebble: %w", err)
	}
	po := &cpebble.Options{
		DisableWAL:   true, // checkpoints flush first; state is rebuilt from checkpoints
		MemTableSize: cfg.memTableSize,
		FS:           cfg.fs,
	}
	f := newFault(onFault)
	f.configure(po, dir)
	// Bloom filters on every level: point reads of state skip the SST
	// files that do not hold the key.
	for i := range po.Levels {
		po.Levels[i].FilterPolicy = bloom.FilterPolicy(10)
	}
	c := cpebble.NewCache(cfg.cacheSize)
	defer c.Unref()
	po.Cache = c
	db, err := cpebble.Open(dir, po)
	if err != nil {
		return nil, fmt.Errorf("pebble: opening %s: %w", dir, err)
	}
	s := &store{db: db, dir: dir, fault: f}
	if err := s.Err(); err != nil {
		_ = db.Close()
		return nil, err
	}
	return s, nil
}

// check returns the database's fault, if it has one: the store never reads
// or writes a failed database (and a write never waits in one of Pebble's
// write stalls, which end only when a flush or compaction succeeds).
func (s *store) check() error {
	if s.fault.failed.Load() {
		return s.fault.get()
	}
	return nil
}

// Get implements kv.Store.
func (s *store) Get(dst, key []byte) ([]byte, bool, error) {
	if err := s.check(); err != nil {
		return dst, false, err
	}
	v, closer, err := s.db.Get(key)
	if errors.Is(err, cpebble.ErrNotFound) {
		return dst, false, nil
	}
	if err != nil {
		return dst, false, err
	}
	dst = append(dst, v...)
	_ = closer.Close()
	return dst, true, nil
}

// Set implements kv.Store.
func (s *store) Set(key, value []byte) error {
	if err := s.check(); err != nil {
		return err
	}
	return s.db.Set(key, value, writeOpts)
}

// Delete implements kv.Store.
func (s *store) Delete(key []byte) error {
	if err := s.check(); err != nil {
		return err
	}
	return s.db.Delete(key, writeOpts)
}

// DeleteRange implements kv.Store.
func (s *store) DeleteRange(start, end []byte) error {
	if err := s.check(); err != nil {
		return err
	}
	return s.db.DeleteRange(start, end, writeOpts)
}

// Merge implements kv.Store with Pebble's merge operator (the default
// merger: concatenation).
func (s *store) Merge(key, operand []byte) error {
	if err := s.check(); err != nil {
		return err
	}
	return s.db.Merge(key, operand, writeOpts)
}

// NewIter implements kv.Store.
func (s *store) NewIter(lower, upper []byte) (kv.Iterator, error) {
	if err := s.check(); err != nil {
		return nil, err
	}
	it, err := s.db.NewIter(&cpebble.IterOptions{LowerBound: lower, UpperBound: upper})
	if err != nil {
		return nil, err
	}
	return iterator{it}, nil
}

// iterator is a kv.Iterator on a Pebble iterator.
type iterator struct{ it *cpebble.Iterator }

func (i iterator) First() bool            { return i.it.First() }
func (i iterator) Next() bool             { return i.it.Next() }
func (i iterator) Key() []byte            { return i.it.Key() }
func (i iterator) Value() ([]byte, error) { return i.it.ValueAndErr() }
func (i iterator) Error() error           { return i.it.Error() }
func (i iterator) Close() error           { return i.it.Close() }

// NewBatch implements kv.Store.
func (s *store) NewBatch() kv.Batch { return &batch{s: s, b: s.db.NewBatch()} }

// batch is a kv.Batch on a Pebble batch.
type batch struct {
	s *store
	b *cpebble.Batch
}

func (b *batch) Set(key, value []byte) error { return b.b.Set(key, value, nil) }
func (b *batch) Delete(key []byte) error     { return b.b.Delete(key, nil) }
func (b *batch) Len() int                    { return b.b.Len() }
func (b *batch) Close() error                { return b.b.Close() }

func (b *batch) Commit() error {
	if err := b.s.check(); err != nil {
		return err
	}
	return b.b.Commit(writeOpts)
}

// Flush implements kv.Store: it writes the memtable to SST files and waits
// for it, or for the database's fault: Pebble retries a failed flush for
// good, so pebble.DB.Flush would never return.
func (s *store) Flush() error {
	if err := s.Err(); err != nil {
		return err
	}
	flushed, err := s.db.AsyncFlush()
	if err != nil {
		return err
	}
	select {
	case <-flushed:
	case <-s.fault.done:
	}
	return s.Err()
}

// Close implements kv.Store: it flushes the memtable (the database writes
// no write-ahead log) and closes the database. A database with a fault
// is closed without a flush.
func (s *store) Close() error {
	if s.db == nil {
		return nil
	}
	var err error
	if s.Err() == nil {
		err = s.Flush()
	}
	if cerr := s.db.Close(); err == nil {
		err = cerr
	}
	s.db = nil
	return err
}

// Compact implements kv.Compacter: it flushes the memtable and compacts the
// whole database, so that its files are as few as they can be.
func (s *store) Compact() error {
	if err := s.Flush(); err != nil {
		return err
	}
	// A manual compaction waits for its retries, which never succeed once
	// the database has a fault: the fault cancels it.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		select {
		case <-s.fault.done:
			cancel()
		case <-ctx.Done():
		}
	}()
	if err := s.db.Compact(ctx, []byte{0}, []byte{0xFF, 0xFF, 0xFF}, false); err != nil {
		if ferr := s.Err(); ferr != nil {
			return ferr
		}
		return err
	}
	return s.Err()
}

// Checkpoint implements kv.Checkpointer with Pebble's checkpoint: hard
// links to the SST and blob files, which Pebble never changes, and fresh
// copies of MANIFEST, OPTIONS and markers.
func (s *store) Checkpoint(dir string) ([]kv.File, error) {
	if err := s.Flush(); err != nil {
		return nil, err
	}
	if err := s.db.Checkpoint(dir); err != nil {
		_ = os.RemoveAll(dir)
		return nil, err
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		_ = os.RemoveAll(dir)
		return nil, err
	}
	var files []kv.File
	for _, e := range entries {
		if e.IsDir() {
			continue
		}
		info, err := e.Info()
		if err != nil {
			_ = os.RemoveAll(dir)
			return nil, err
		}
		files = append(files, kv.File{Name: e.Name(), Size: info.Size(), Immutable: immutable(e.Name())})
	}
	sort.Slice(files, func(i, j int) bool { return files[i].Name < files[j].Name })
	if err := s.Err(); err != nil {
		// The files may be damaged: no checkpoint of them.
		_ = os.RemoveAll(dir)
		return nil, err
	}
	return files, nil
}

// immutable reports whether the database file name is one Pebble never
// changes after writing it (an SST or blob file), which checkpoints can
// therefore share.
func immutable(name string) bool {
	return strings.HasSuffix(name, ".sst") || strings.HasSuffix(name, ".blob")
}

// Err implements kv.Faulter: the database's fault, the first fatal or
// background error Pebble reported (see kv.Options.OnFault), or nil.
func (s *store) Err() error { return s.fault.get() }
