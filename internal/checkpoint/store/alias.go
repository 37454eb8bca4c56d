package store

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
)

// aliasBackend is a backend in which the checkpoint directory alias (the
// name dirName gives the checkpoint) is the directory dir of the same
// root, which has another name: a savepoint or checkpoint directory that
// was renamed or copied ("backup-before-upgrade" for "savepoint-7").
// Every other directory, and the shared files, are the root's own.
type aliasBackend struct {
	backend
	alias, dir string
}

func (a aliasBackend) name(dir string) string {
	if dir == a.alias {
		return a.dir
	}
	return dir
}

func (a aliasBackend) location(dir string) string { return a.backend.location(a.name(dir)) }

func (a aliasBackend) stat(ctx context.Context, dir string) (dirState, error) {
	return a.backend.stat(ctx, a.name(dir))
}

func (a aliasBackend) prepare(ctx context.Context, dir string) error {
	return a.backend.prepare(ctx, a.name(dir))
}

func (a aliasBackend) put(ctx context.Context, dir, name string, r io.ReaderAt, size int64) error {
	return a.backend.put(ctx, a.name(dir), name, r, size)
}

func (a aliasBackend) publish(ctx context.Context, dir string, manifest []byte) error {
	return a.backend.publish(ctx, a.name(dir), manifest)
}

func (a aliasBackend) open(ctx context.Context, dir, name string) (io.ReadCloser, error) {
	return a.backend.open(ctx, a.name(dir), name)
}

func (a aliasBackend) remove(ctx context.Context, dir string) error {
	return a.backend.remove(ctx, a.name(dir))
}

// list lists the root's checkpoint directories, the aliased one standing
// for the one of its name.
func (a aliasBackend) list(ctx context.Context) ([]dirState, error) {
	dirs, err := a.backend.list(ctx)
	if err != nil {
		return nil, err
	}
	id, kind, _ := parseDir(a.alias)
	out := dirs[:0]
	for _, d := range dirs {
		if d.id != id || d.kind != kind {
			out = append(out, d)
		}
	}
	st, err := a.backend.stat(ctx, a.dir)
	if err != nil {
		return nil, err
	}
	if st.exists {
		st.id, st.kind = id, kind
		out = append(out, st)
	}
	return out, nil
}

// coreOf returns the core of a store this package made.
func coreOf(s Store) (*core, error) {
	switch s := s.(type) {
	case *Local:
		return s.c, nil
	case *Remote:
		return s.c, nil
	}
	return nil, fmt.Errorf("checkpoint store: %T is not a store of this package", s)
}

// plainName reports whether base, the last element of a location, names
// a directory inside its parent (not a root such as "/" or ".").
func plainName(base string) bool {
	return base != "" && base != "." && base != ".." && base != "/" && base != `\`
}

// readOwnManifest reads the manifest that directory base of the store
// rooted at parent holds in itself, whatever base is called. ok is false
// when base holds no manifest.
func readOwnManifest(ctx context.Context, c *core, base string) (m *Manifest, ok bool, err error) {
	st, err := c.b.stat(ctx, base)
	if err != nil || !st.committed {
		return nil, false, err
	}
	loc := c.b.location(base)
	rc, err := c.b.open(ctx, base, manifestName)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, false, nil // removed since
	}
	if err != nil {
		return nil, false, fmt.Errorf("checkpoint store: reading manifest of %s: %w", loc, err)
	}
	data, err := io.ReadAll(rc)
	rc.Close()
	if err != nil {
		return nil, false, fmt.Errorf("checkpoint store: reading manifest of %s: %w", loc, err)
	}
	m, err = decodeManifest(data, loc)
	return m, err == nil, err
}

// openAliased opens the checkpoint whose manifest m directory base of
// the store c holds under a name that is not its own: a store in which
// that directory stands for dirName(m.Kind, m.ID).
func openAliased(ctx context.Context, c *core, base string, m *Manifest) (Store, *Manifest, error) {
	a := aliasBackend{backend: c.b, alias: dirName(m.Kind, m.ID), dir: base}
	s := coreStore{newCore(a, c.log)}
	got, err := s.Open(ctx, m.ID)
	if err != nil {
		return nil, nil, err
	}
	return s, got, nil
}
