// Package store keeps Weir's completed checkpoints and savepoints: a small
// Store interface, a local-directory implementation (the embedded default),
// Remote, which gives a Backend that another package provides the same
// semantics (the S3-compatible one on minio-go is package s3store, so that
// only programs that use it link minio-go), and the locations that name
// them (a path, file:///dir, s3://bucket/prefix: ParseLocation).
//
// A checkpoint is a set of named, opaque data files plus a Manifest that
// describes them: which operator (by UID) and subtask each file belongs to,
// where every key group's keyed state lies (so a restore at another
// parallelism can read whole key groups), and the size and CRC32C checksum
// of every file. The files of a checkpoint are written through a Writer and
// stay invisible until Commit publishes the manifest, which is always
// written last and atomically: a crash or failure at any point before that
// leaves a checkpoint that every reader treats as incomplete, never one that
// looks complete. Checksums are verified on every read, and Latest skips a
// corrupt or incomplete checkpoint for the previous one with a log line.
//
// The on-disk (and in-bucket) format is described in FORMAT.md next to this
// file.
//
// Checkpoint ids are unique across checkpoints and savepoints of one store,
// as Flink's checkpoint counter is. A store assumes a single writing process
// (the job's checkpoint coordinator); within that process every method is
// safe for concurrent use, and the WriteFile calls of one Writer may run
// concurrently.
package store

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
)

// Store keeps checkpoints and savepoints. Local and Remote implement it.
type Store interface {
	// Begin starts writing checkpoint (or savepoint) id. Its files are
	// invisible to every reader until the Writer's Commit returns. Begin
	// fails with ErrExists if id was already completed (as either kind) and
	// with ErrInProgress if a Writer for id is still open; leftovers of an
	// earlier attempt at id that never completed (a crash) are removed.
	Begin(ctx context.Context, id int64, kind Kind) (Writer, error)

	// Latest returns the manifest of the newest complete and intact
	// checkpoint (never a savepoint). Every file of the candidate is read
	// and its size and checksum verified; a corrupt or incomplete checkpoint
	// is skipped for the previous one with a warning in the log that names
	// it and says why. Latest returns ErrNoCheckpoint if there is none, and
	// any other error (an I/O or network failure) as is, without falling
	// back: only proven damage makes it pick an older checkpoint.
	Latest(ctx context.Context) (*Manifest, error)

	// Open returns the manifest of the completed checkpoint or savepoint id
	// after verifying the manifest's own checksum (data files are verified
	// when read). It fails with ErrNotFound if id does not exist, with
	// ErrIncomplete if it was never completed, and with ErrCorrupt if its
	// manifest is damaged.
	Open(ctx context.Context, id int64) (*Manifest, error)

	// ReadFile returns the contents of the data file name of the checkpoint
	// m describes, after checking its size and CRC32C against m.Files
	// (ErrCorrupt on a mismatch or a missing file, ErrNotFound if m lists
	// no such file).
	ReadFile(ctx context.Context, m *Manifest, name string) ([]byte, error)

	// ReadShared returns the contents of the shared file name that the
	// checkpoint m describes references, after checking its size and
	// CRC32C against m.Shared (ErrCorrupt on a mismatch or a missing file,
	// ErrNotFound if m references no such file).
	ReadShared(ctx context.Context, m *Manifest, name string) ([]byte, error)

	// VerifyShared reads the shared file name that the checkpoint m
	// references, without keeping it, and checks it as ReadShared does.
	VerifyShared(ctx context.Context, m *Manifest, name string) error

	// CopyShared places the shared file name that the checkpoint m
	// references at the local path dst (which must not exist), with the
	// checks of ReadShared, streamed into dst without being held in
	// memory. dst is always a copy, never a link to the store's file, so
	// that damage to one never reaches the other. On an error dst is
	// removed.
	CopyShared(ctx context.Context, m *Manifest, name, dst string) error

	// List returns the completed checkpoints and savepoints in ascending id
	// order, without verifying them. Checkpoints being written are never
	// listed. List is not a snapshot: every checkpoint completed before the
	// call is listed (unless deleted since), one completed during the call
	// may or may not be.
	List(ctx context.Context) ([]Entry, error)

	// Retain keeps the newest n (n >= 1) completed checkpoints whose
	// manifest is intact and deletes every older checkpoint, complete or
	// not. Savepoints are never deleted by Retain, and nothing is deleted
	// while fewer than n intact checkpoints exist. Then it deletes every
	// shared file that no remaining checkpoint references and no open
	// Writer has written or reused (files of crashed attempts and of
	// checkpoints deleted by this or an earlier call included); a shared
	// file that a remaining checkpoint references is never deleted. The
	// references are read from the manifests, so this holds after a
	// process restart too.
	Retain(ctx context.Context, n int) error

	// Delete removes checkpoint or savepoint id, complete or not (ErrNotFound
	// if there is none, ErrInProgress if it is being written). The manifest
	// goes first, so an interrupted Delete leaves an incomplete checkpoint,
	// never a damaged one that looks complete. Shared files the checkpoint
	// referenced are left for the next Retain to collect.
	Delete(ctx context.Context, id int64) error
}

// Writer writes the files of one checkpoint. WriteFile may be called from
// several goroutines at once; Commit and Abort end the Writer.
type Writer interface {
	// WriteFile stores a data file of the checkpoint. The name must be a
	// valid file name (see CheckName) not yet written by this Writer. The
	// file is durable when WriteFile returns but stays invisible until
	// Commit. A failed WriteFile may be retried with the same name.
	WriteFile(ctx context.Context, name string, data []byte) error

	// WriteShared stores a shared file, under <root>/shared/name: an
	// immutable file that this checkpoint and later ones may reference
	// (the database files of incremental checkpoints). Shared file names
	// must be unique for their contents: a name is never written with
	// other bytes. The file is durable when WriteShared returns; it is
	// protected from Retain until the Writer ends, and afterwards for as
	// long as a retained checkpoint references it. Commit records it in
	// Manifest.Shared as uploaded by this checkpoint. Savepoints cannot
	// have shared files.
	WriteShared(ctx context.Context, name string, data []byte) error

	// WriteSharedFile is WriteShared with the contents of the local file
	// at path, streamed by a directory store (never held in memory). The
	// store keeps its own copy, never a link to path, so that damage to
	// the file (a live database's) never reaches the store.
	WriteSharedFile(ctx context.Context, name, path string) error

	// ReuseShared makes the checkpoint reference the shared file name that
	// an earlier, still stored, checkpoint wrote, or that this Writer
	// already wrote or reused, without writing it again, and reports true;
	// it reports false if no stored checkpoint (as the manifests say)
	// references name, and then the caller writes it with WriteShared.
	ReuseShared(ctx context.Context, name string) (bool, error)

	// Commit waits for WriteFile calls in progress, validates m (see
	// Manifest.Validate) and publishes it, which makes the checkpoint
	// visible and complete. Commit sets m's ID, Kind, Files and Shared
	// from the Writer (whatever the caller put there) and CreatedAt to the current
	// time if it is zero; it returns the manifest as a reader will see it.
	// An invalid manifest is reported before anything is published and the
	// Writer stays open. After any other failure the checkpoint's state is
	// unknown (a manifest upload may have happened) and the caller should
	// Abort.
	Commit(ctx context.Context, m Manifest) (*Manifest, error)

	// Abort waits for WriteFile calls in progress and removes everything
	// the Writer wrote. Abort after a successful Commit does nothing and
	// returns nil, so it can be deferred.
	Abort(ctx context.Context) error
}

// Entry names one completed checkpoint or savepoint in a List result.
type Entry struct {
	// ID is the checkpoint id.
	ID int64
	// Kind says whether it is a checkpoint or a savepoint.
	Kind Kind
}

// Kind distinguishes checkpoints from savepoints. The zero Kind is invalid.
type Kind uint8

const (
	// Checkpoint is a periodic checkpoint: subject to Retain and returned
	// by Latest.
	Checkpoint Kind = iota + 1
	// Savepoint is a user-triggered savepoint: never deleted by Retain and
	// never returned by Latest (open it by id).
	Savepoint
)

// String returns "checkpoint" or "savepoint".
func (k Kind) String() string {
	switch k {
	case Checkpoint:
		return "checkpoint"
	case Savepoint:
		return "savepoint"
	}
	return fmt.Sprintf("Kind(%d)", uint8(k))
}

// MarshalText encodes k as "checkpoint" or "savepoint".
func (k Kind) MarshalText() ([]byte, error) {
	if !k.valid() {
		return nil, fmt.Errorf("checkpoint store: invalid kind %d", uint8(k))
	}
	return []byte(k.String()), nil
}

// UnmarshalText decodes "checkpoint" or "savepoint".
func (k *Kind) UnmarshalText(b []byte) error {
	switch string(b) {
	case "checkpoint":
		*k = Checkpoint
	case "savepoint":
		*k = Savepoint
	default:
		return fmt.Errorf("checkpoint store: unknown kind %q", b)
	}
	return nil
}

func (k Kind) valid() bool { return k == Checkpoint || k == Savepoint }

// Errors reported by stores, always wrapped with details (test with
// errors.Is).
var (
	// ErrNoCheckpoint: Latest found no complete, intact checkpoint.
	ErrNoCheckpoint = errors.New("checkpoint store: no completed checkpoint")
	// ErrNotFound: the checkpoint, or a file the manifest does not list,
	// does not exist.
	ErrNotFound = errors.New("checkpoint store: not found")
	// ErrIncomplete: the checkpoint was started but never committed (it
	// has no manifest), for instance after a crash.
	ErrIncomplete = errors.New("checkpoint store: incomplete checkpoint")
	// ErrCorrupt: a manifest or data file is damaged (bad checksum, wrong
	// size, unparsable, or missing although the manifest lists it).
	ErrCorrupt = errors.New("checkpoint store: corrupt checkpoint")
	// ErrExists: Begin was called for an id that is already completed.
	ErrExists = errors.New("checkpoint store: checkpoint already exists")
	// ErrInProgress: the checkpoint is being written by an open Writer.
	ErrInProgress = errors.New("checkpoint store: checkpoint is being written")
	// ErrNoStorage: a remote location's scheme has no opener in the
	// Remotes given.
	ErrNoStorage = errors.New("no storage for scheme")
	// ErrClosed: the Writer was already committed or aborted.
	ErrClosed = errors.New("checkpoint store: writer is closed")
)

// Option configures NewLocal or NewRemote. An option that does not apply to the
// store being built makes its constructor fail.
type Option func(*options)

type options struct {
	logger    *slog.Logger
	fs        FS
	createDir bool
}

// WithLogger sets the logger for warnings (skipped checkpoints). The default
// is slog.Default().
func WithLogger(l *slog.Logger) Option { return func(o *options) { o.logger = l } }

// WithFS makes a Local store do all its file system access through fsys
// (for fault injection in tests). The default is OSFS. Local only.
func WithFS(fsys FS) Option { return func(o *options) { o.fs = fsys } }

// WithCreateDir makes NewLocal create the directory (and its parents) if it
// does not exist; without it a missing directory is an error. Local only.
func WithCreateDir() Option { return func(o *options) { o.createDir = true } }

func buildOptions(opts []Option) options {
	var o options
	for _, opt := range opts {
		opt(&o)
	}
	if o.logger == nil {
		o.logger = slog.Default()
	}
	return o
}
