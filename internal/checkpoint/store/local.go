package store

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path/filepath"
)

// Local is a Store in a local directory: one subdirectory per checkpoint
// (chk-<id>) or savepoint (savepoint-<id>) holding its data files and its
// manifest, which is written last with write-temp, fsync, rename, fsync-dir.
// See FORMAT.md.
type Local struct {
	coreStore
}

var _ Store = (*Local)(nil)

// NewLocal returns a Store in directory dir. The directory must exist
// unless WithCreateDir is given. Options: WithLogger, WithFS, WithCreateDir.
func NewLocal(dir string, opts ...Option) (*Local, error) {
	o := buildOptions(opts)
	fsys := o.fs
	if fsys == nil {
		fsys = OSFS{}
	}
	if dir == "" {
		return nil, errors.New("checkpoint store: empty checkpoint directory")
	}
	root := filepath.Clean(dir)
	if o.createDir {
		if err := fsys.MkdirAll(root); err != nil {
			return nil, fmt.Errorf("checkpoint store: creating checkpoint directory: %w", err)
		}
		if err := fsys.SyncDir(filepath.Dir(root)); err != nil {
			return nil, fmt.Errorf("checkpoint store: creating checkpoint directory: %w", err)
		}
	}
	info, err := fsys.Stat(root)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("checkpoint store: checkpoint directory %s does not exist: %w", root, err)
	}
	if err != nil {
		return nil, fmt.Errorf("checkpoint store: checkpoint directory: %w", err)
	}
	if !info.IsDir() {
		return nil, fmt.Errorf("checkpoint store: checkpoint directory %s is not a directory", root)
	}
	return &Local{coreStore{newCore(&localBackend{fs: fsys, root: root}, o.logger)}}, nil
}

// localBackend stores checkpoints as directories under root.
type localBackend struct {
	fs   FS
	root string
}

// tmpManifest is the manifest's name while it is written (names starting
// with '.' are never data files).
const tmpManifest = ".manifest.json.tmp"

func (b *localBackend) path(elem ...string) string {
	return filepath.Join(append([]string{b.root}, elem...)...)
}

func (b *localBackend) location(dir string) string { return b.path(dir) }

func (b *localBackend) list(ctx context.Context) ([]dirState, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	entries, err := b.fs.ReadDir(b.root)
	if err != nil {
		return nil, err
	}
	var out []dirState
	for _, e := range entries {
		id, kind, ok := parseDir(e.Name())
		if !ok || !e.IsDir() {
			continue
		}
		st, err := b.stat(ctx, e.Name())
		if err != nil {
			return nil, err
		}
		if st.exists { // else removed since ReadDir
			st.id, st.kind = id, kind
			out = append(out, st)
		}
	}
	return out, nil
}

func (b *localBackend) stat(ctx context.Context, dir string) (dirState, error) {
	if err := ctx.Err(); err != nil {
		return dirState{}, err
	}
	var st dirState
	info, err := b.fs.Stat(b.path(dir))
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return st, nil
	case err != nil:
		return st, err
	case !info.IsDir():
		return st, fmt.Errorf("%s is not a directory", b.path(dir))
	}
	st.exists = true
	_, err = b.fs.Stat(b.path(dir, manifestName))
	switch {
	case err == nil:
		st.committed = true
	case !errors.Is(err, fs.ErrNotExist):
		return st, err
	}
	return st, nil
}

func (b *localBackend) prepare(ctx context.Context, dir string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	p := b.path(dir)
	if err := b.fs.RemoveAll(p); err != nil {
		return err
	}
	return b.fs.Mkdir(p)
}

// writeFile creates (or truncates) name, writes size bytes of r into it
// and fsyncs it.
func (b *localBackend) writeFile(name string, r io.ReaderAt, size int64) (err error) {
	f, err := b.fs.Create(name)
	if err != nil {
		return err
	}
	defer func() {
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			_ = b.fs.Remove(name) // best effort: the file is unreferenced anyway
		}
	}()
	n, err := io.Copy(f, io.NewSectionReader(r, 0, size))
	if err == nil && n != size {
		err = fmt.Errorf("%w: wrote %d of %d bytes", io.ErrShortWrite, n, size)
	}
	if err != nil {
		return err
	}
	return f.Sync()
}

func (b *localBackend) put(ctx context.Context, dir, name string, r io.ReaderAt, size int64) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	return b.writeFile(b.path(dir, name), r, size)
}

// publish makes the data files' directory entries durable, writes the
// manifest to a temporary file, fsyncs it, renames it into place and
// fsyncs the checkpoint directory and the root, in that order: the manifest
// can only appear once everything it describes is durable.
func (b *localBackend) publish(ctx context.Context, dir string, manifest []byte) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	p := b.path(dir)
	if err := b.fs.SyncDir(p); err != nil {
		return err
	}
	tmp := b.path(dir, tmpManifest)
	if err := b.writeFile(tmp, bytes.NewReader(manifest), int64(len(manifest))); err != nil {
		return err
	}
	if err := b.fs.Rename(tmp, b.path(dir, manifestName)); err != nil {
		return err
	}
	if err := b.fs.SyncDir(p); err != nil {
		return err
	}
	return b.fs.SyncDir(b.root)
}

func (b *localBackend) open(ctx context.Context, dir, name string) (io.ReadCloser, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return b.fs.Open(b.path(dir, name))
}

// remove deletes the manifest and makes that durable before removing the
// rest, so a crash part way leaves an incomplete checkpoint.
func (b *localBackend) remove(ctx context.Context, dir string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	p := b.path(dir)
	err := b.fs.Remove(b.path(dir, manifestName))
	switch {
	case err == nil:
		if err := b.fs.SyncDir(p); err != nil {
			return err
		}
	case !errors.Is(err, fs.ErrNotExist):
		return err
	}
	if err := b.fs.RemoveAll(p); err != nil {
		return err
	}
	return b.fs.SyncDir(b.root)
}

// putShared writes root/shared/name as a new file, creating the directory
// (durably) the first time.
func (b *localBackend) putShared(ctx context.Context, name string, r io.ReaderAt, size int64) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	p, err := b.prepareShared(name)
	if err != nil {
		return err
	}
	return b.writeFile(p, r, size)
}

// prepareShared returns the path of shared file name, creating the
// directory (durably) the first time. A file of the name left over
// (unreferenced, not yet collected) is removed, not overwritten: a
// reader may still have it open.
func (b *localBackend) prepareShared(name string) (string, error) {
	dir := b.path(sharedDir)
	if _, err := b.fs.Stat(dir); errors.Is(err, fs.ErrNotExist) {
		if err := b.fs.MkdirAll(dir); err != nil {
			return "", err
		}
		if err := b.fs.SyncDir(b.root); err != nil {
			return "", err
		}
	} else if err != nil {
		return "", err
	}
	p := b.path(sharedDir, name)
	if err := b.fs.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return "", err
	}
	return p, nil
}

func (b *localBackend) syncShared(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	return b.fs.SyncDir(b.path(sharedDir))
}

func (b *localBackend) listShared(ctx context.Context) ([]string, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	entries, err := b.fs.ReadDir(b.path(sharedDir))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var names []string
	for _, e := range entries {
		if !e.IsDir() {
			names = append(names, e.Name())
		}
	}
	return names, nil
}

func (b *localBackend) removeShared(ctx context.Context, names []string) error {
	for _, n := range names {
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := b.fs.Remove(b.path(sharedDir, n)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
	}
	return b.fs.SyncDir(b.path(sharedDir))
}
