package store

import (
	"context"
	"errors"
	"io"
)

// Backend is where the bytes of a Remote store go: an object store that
// another package reaches (package s3store for S3), so that this package
// stays free of its client library. Remote implements the Store semantics
// once on top of it, as it does for the local directory.
//
// A checkpoint lives in a "directory" (a key prefix) named by DirName; it
// is complete exactly when its manifest (ManifestName) exists. Shared
// files live in the directory SharedDir.
type Backend interface {
	// Location describes dir for messages (a scheme://bucket/key URL).
	Location(dir string) string
	// List returns every checkpoint directory, complete or not.
	List(ctx context.Context) ([]DirState, error)
	// Stat reports whether dir exists and whether it holds a manifest
	// (ID and Kind are left zero).
	Stat(ctx context.Context, dir string) (DirState, error)
	// Prepare makes dir empty and ready for Put.
	Prepare(ctx context.Context, dir string) error
	// Put durably stores a data file in dir: size bytes read from r (a
	// reader at offsets, so that an upload can be retried or sent in
	// parts).
	Put(ctx context.Context, dir, name string, r io.ReaderAt, size int64) error
	// Publish durably and atomically stores dir's manifest, after every
	// data file put so far is durable.
	Publish(ctx context.Context, dir string, manifest []byte) error
	// Open reads a file (or the manifest) of dir; a missing file is
	// reported with an error matching fs.ErrNotExist.
	Open(ctx context.Context, dir, name string) (io.ReadCloser, error)
	// Remove deletes dir, its manifest first (durably) and then the rest.
	Remove(ctx context.Context, dir string) error
	// PutShared durably stores a shared file, size bytes read from r.
	PutShared(ctx context.Context, name string, r io.ReaderAt, size int64) error
	// SyncShared makes the shared files put so far durable.
	SyncShared(ctx context.Context) error
	// ListShared returns the names of the stored shared files.
	ListShared(ctx context.Context) ([]string, error)
	// RemoveShared deletes shared files; missing ones are not an error.
	RemoveShared(ctx context.Context, names []string) error
}

// DirState describes one checkpoint directory of a Backend.
type DirState struct {
	// ID and Kind are parsed from the directory's name (ParseDirName).
	ID   int64
	Kind Kind
	// Exists reports whether the directory holds any file.
	Exists bool
	// Committed reports whether it holds its manifest.
	Committed bool
}

// ManifestName is the name of a checkpoint's manifest in its directory.
const ManifestName = manifestName

// SharedDir is the directory (key prefix) of shared files under a store's
// root.
const SharedDir = sharedDir

// Remote is a Store on a Backend.
type Remote struct {
	coreStore
}

var _ Store = (*Remote)(nil)

// NewRemote returns the Store on b. Options: WithLogger (WithFS and
// WithCreateDir apply to local stores only and make it fail).
func NewRemote(b Backend, opts ...Option) (*Remote, error) {
	o := buildOptions(opts)
	if o.fs != nil || o.createDir {
		return nil, errors.New("checkpoint store: WithFS and WithCreateDir do not apply to a remote store")
	}
	return &Remote{coreStore{newCore(remoteBackend{b}, o.logger)}}, nil
}

// Opener opens the store at bucket and key prefix of a remote location
// (Location.Bucket and Key) with the given options (WithLogger).
type Opener func(bucket, prefix string, opts ...Option) (Store, error)

// Remotes holds the openers of remote locations by URL scheme ("s3").
type Remotes map[string]Opener

// remoteBackend adapts a Backend to the package's backend.
type remoteBackend struct{ b Backend }

func (r remoteBackend) location(dir string) string { return r.b.Location(dir) }

func (r remoteBackend) list(ctx context.Context) ([]dirState, error) {
	ds, err := r.b.List(ctx)
	out := make([]dirState, len(ds))
	for i, d := range ds {
		out[i] = dirState{id: d.ID, kind: d.Kind, exists: d.Exists, committed: d.Committed}
	}
	return out, err
}

func (r remoteBackend) stat(ctx context.Context, dir string) (dirState, error) {
	d, err := r.b.Stat(ctx, dir)
	return dirState{id: d.ID, kind: d.Kind, exists: d.Exists, committed: d.Committed}, err
}

func (r remoteBackend) prepare(ctx context.Context, dir string) error { return r.b.Prepare(ctx, dir) }

func (r remoteBackend) put(ctx context.Context, dir, name string, rd io.ReaderAt, size int64) error {
	return r.b.Put(ctx, dir, name, rd, size)
}

func (r remoteBackend) publish(ctx context.Context, dir string, manifest []byte) error {
	return r.b.Publish(ctx, dir, manifest)
}

func (r remoteBackend) open(ctx context.Context, dir, name string) (io.ReadCloser, error) {
	return r.b.Open(ctx, dir, name)
}

func (r remoteBackend) remove(ctx context.Context, dir string) error { return r.b.Remove(ctx, dir) }

func (r remoteBackend) putShared(ctx context.Context, name string, rd io.ReaderAt, size int64) error {
	return r.b.PutShared(ctx, name, rd, size)
}

func (r remoteBackend) syncShared(ctx context.Context) error { return r.b.SyncShared(ctx) }

func (r remoteBackend) listShared(ctx context.Context) ([]string, error) {
	return r.b.ListShared(ctx)
}

func (r remoteBackend) removeShared(ctx context.Context, names []string) error {
	return r.b.RemoveShared(ctx, names)
}
