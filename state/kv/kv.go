// Package kv is the seam between Weir's keyed state and the ordered
// key-value stores that keep it on disk. A disk state backend for
// weir.WithStateBackend is an Opener of Stores; Weir's Pebble backend
// (github.com/weirstream/weir/state/pebble) is one, and anyone can write
// another against this package alone.
//
// Weir lays the typed state of one keyed operator subtask (value, list,
// map, reducing and aggregating state, their TTL timestamps and the
// states' metadata) out as keys and values of one Store, and writes,
// snapshots and restores it through the Store's methods; FORMAT.md beside
// this file specifies that layout and what a Store must guarantee. The
// Store sees only bytes: it knows nothing of codecs, key groups or TTL.
//
// A Store is used by one goroutine at a time (the task's), except that
// Faulter.Err may be called from any goroutine. Required behaviour:
//
//   - keys are ordered bytewise (bytes.Compare), and an Iterator visits a
//     range in that order, seeing the store as it was when the iterator
//     was created (writes made while it is open are not seen by it);
//   - Merge appends its operand to the key's value (an absent key counts
//     as an empty value): list state appends without reading the list;
//   - writes need not be durable before Flush: the state survives failures
//     through checkpoints, not through the store;
//   - Close keeps the store's files in its directory, and Opener.Open on
//     that directory finds the state again.
//
// Optional capabilities are separate interfaces, checked with a type
// assertion: Checkpointer (incremental checkpoints: without it, a durable
// checkpoint of the store's state is a full snapshot), Compacter and
// Faulter.
package kv

// Opener opens stores: the part of a disk state backend Weir calls to
// create, reopen and restore the store of each keyed operator subtask.
type Opener interface {
	// Open opens the store in dir, an existing directory, creating an
	// empty store if dir is empty. A directory holding the files of an
	// earlier store (written by Close, or laid out from the files of a
	// Checkpointer checkpoint) opens with its entries.
	Open(dir string, opts Options) (Store, error)
}

// Options are what Weir passes to Opener.Open.
type Options struct {
	// OnFault, if set, is called once with the first error that makes the
	// store unusable when that error does not reach a caller of the
	// Store's methods (a failed background flush or compaction, a
	// damaged file), possibly on a goroutine of the store's own. It does
	// not block; Weir then fails the owning task and discards the store.
	OnFault func(error)
}

// Store is an ordered key-value store holding the keyed state of one
// operator subtask (see the package documentation for its contract).
// Methods return an error once the store has a fault.
type Store interface {
	// Get appends the value of key to dst and returns it and true, or
	// dst and false if key is absent. The result does not alias the
	// store's memory.
	Get(dst, key []byte) ([]byte, bool, error)
	// Set stores value under key. The store does not keep key or value.
	Set(key, value []byte) error
	// Delete removes key, if present.
	Delete(key []byte) error
	// DeleteRange removes the keys in [start, end).
	DeleteRange(start, end []byte) error
	// Merge appends operand to the value of key, storing operand if key
	// is absent.
	Merge(key, operand []byte) error
	// NewIter returns an iterator over the keys in [lower, upper), in
	// ascending order; a nil upper means no upper bound. It sees the
	// store as of the call.
	NewIter(lower, upper []byte) (Iterator, error)
	// NewBatch returns an empty batch of writes, applied atomically by
	// its Commit.
	NewBatch() Batch
	// Flush makes every write so far part of the store's files.
	Flush() error
	// Close flushes and closes the store. Its files stay in its directory.
	Close() error
}

// Iterator walks a key range of a Store. Key and Value are valid until the
// next call of First, Next or Close.
type Iterator interface {
	// First moves to the first key of the range and reports whether there
	// is one.
	First() bool
	// Next moves to the next key and reports whether there is one.
	Next() bool
	// Key returns the current key.
	Key() []byte
	// Value returns the current value.
	Value() ([]byte, error)
	// Error returns the error that stopped the iteration, if any.
	Error() error
	// Close releases the iterator.
	Close() error
}

// Batch collects writes to apply at once. The batch does not keep the
// slices it is given.
type Batch interface {
	// Set adds a Set of key to value.
	Set(key, value []byte) error
	// Delete adds a Delete of key.
	Delete(key []byte) error
	// Len returns the approximate size of the batch in bytes.
	Len() int
	// Commit applies the batch to its store.
	Commit() error
	// Close releases the batch (committed or not).
	Close() error
}

// Checkpointer is a Store that can take a cheap, consistent copy of its
// files: Weir's incremental checkpoints. Files that Checkpoint marks
// immutable are uploaded once and shared by every later checkpoint that
// lists the same file under the same name.
type Checkpointer interface {
	// Checkpoint flushes the store and writes a consistent copy of its
	// files into dir, which does not exist yet (hard links are fine for
	// files the store never changes). Opener.Open on a directory holding
	// these files opens the store as it was.
	Checkpoint(dir string) ([]File, error)
}

// File is one file of a Checkpointer checkpoint.
type File struct {
	// Name is the file's name in the checkpoint directory.
	Name string
	// Size is its size in bytes.
	Size int64
	// Immutable reports that a file of this name, in this store, never
	// changes once written (an SST file of an LSM tree), so checkpoints
	// may share it.
	Immutable bool
}

// Compacter is a Store that can compact its files.
type Compacter interface {
	// Compact flushes the store and rewrites its files as compactly as it
	// can.
	Compact() error
}

// Faulter is a Store that reports a fault found off the caller's path (see
// Options.OnFault).
type Faulter interface {
	// Err returns the store's fault, or nil. It may be called from any
	// goroutine.
	Err() error
}
