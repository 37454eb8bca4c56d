// Package pebble is Weir's disk state backend: keyed state in Pebble
// databases (github.com/cockroachdb/pebble/v2, an LSM store), for state
// larger than memory. Select it with
//
//	weir.WithStateBackend(pebble.New(dir))
//
// Only programs that import this package link Pebble.
//
// Each keyed operator subtask keeps its state in a database of its own in
// a new directory under dir, removed when the subtask ends; the state
// survives failures through checkpoints. Values are serialized with the
// descriptors' codecs on every access. The layout of the state in the
// database is the one of any store behind package
// github.com/weirstream/weir/state/kv (its FORMAT.md).
//
// With a durable checkpoint store, checkpoints are incremental, as Flink's
// RocksDB incremental checkpoints: at the barrier a subtask flushes and
// hard-links its database files into a staging directory under dir, and
// the store uploads only the SST files no stored checkpoint has yet (as
// shared files, referenced by later checkpoints and deleted by retention
// once none refers to them). Savepoints stay full, canonical snapshots,
// which either backend restores.
//
// TTL works as on the heap except that incremental cleanup
// (TTLConfig.CleanupEntries, CleanupEveryRecord) is not performed: expired
// values are dropped when read, as with Flink's RocksDB backend.
package pebble

import (
	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/state/kv"
)

// Defaults of the options. Pebble's own (4 MiB memtable, 8 MiB cache) make
// a keyed count over 100k keys flush and read SST blocks constantly.
const (
	DefaultMemTableSize = 32 << 20
	DefaultCacheSize    = 64 << 20
)

// Option configures the backend New returns.
type Option func(*config)

type config struct {
	memTableSize uint64
	cacheSize    int64
	fs           vfs.FS
}

// WithMemTableSize sets the size of each database's memtable in bytes
// (default DefaultMemTableSize).
func WithMemTableSize(n uint64) Option { return func(c *config) { c.memTableSize = n } }

// WithCacheSize sets the size of each database's block cache in bytes
// (default DefaultCacheSize).
func WithCacheSize(n int64) Option { return func(c *config) { c.cacheSize = n } }

// WithFS sets the file system of the databases (default the operating
// system's). Tests inject failures through it (Pebble's vfs/errorfs).
func WithFS(fs vfs.FS) Option { return func(c *config) { c.fs = fs } }

// New returns the Pebble state backend, keeping its databases under dir
// (an empty dir means the system's temporary directory).
func New(dir string, opts ...Option) weir.StateBackend {
	b := &backend{dir: dir}
	for _, o := range opts {
		o(&b.cfg)
	}
	return b
}

// backend is the weir.StateBackend of New.
type backend struct {
	dir string
	cfg config
}

// Name implements weir.StateBackend.
func (*backend) Name() string { return "pebble" }

// Dir implements weir.StateBackend.
func (b *backend) Dir() string { return b.dir }

// Open implements weir.StateBackend (kv.Opener).
func (b *backend) Open(dir string, opts kv.Options) (kv.Store, error) {
	return openStore(dir, b.cfg, opts.OnFault)
}
