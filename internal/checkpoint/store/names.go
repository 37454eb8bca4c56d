package store

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// DirName returns the name of the directory (key prefix) that holds
// checkpoint or savepoint id: "chk-<id>" or "savepoint-<id>".
func DirName(kind Kind, id int64) string { return dirName(kind, id) }

// ParseDirName parses a name DirName returns; ok is false for any other
// name (leading zeros included).
func ParseDirName(name string) (id int64, kind Kind, ok bool) { return parseDir(name) }

// OpenPath opens the checkpoint or savepoint at path in the local file
// system: either its own directory (".../savepoint-7", ".../chk-12") or a
// store's root directory, which stands for the newest savepoint in it, or
// if it has none its newest intact checkpoint. It returns the store the
// directory belongs to and the manifest (whose own checksum is verified;
// data files are verified as they are read). A missing path is reported
// with ErrNotFound.
func OpenPath(ctx context.Context, path string, opts ...Option) (*Local, *Manifest, error) {
	clean := filepath.Clean(path)
	fi, err := os.Stat(clean)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil, fmt.Errorf("%w: %s does not exist", ErrNotFound, path)
	}
	if err != nil {
		return nil, nil, err
	}
	if !fi.IsDir() {
		return nil, nil, fmt.Errorf("%s is not a directory (a savepoint is a directory with a %s)", path, manifestName)
	}
	if id, kind, ok := parseDir(filepath.Base(clean)); ok {
		l, err := NewLocal(filepath.Dir(clean), opts...)
		if err != nil {
			return nil, nil, err
		}
		m, err := l.Open(ctx, id)
		if err != nil {
			return nil, nil, err
		}
		if m.Kind != kind {
			return nil, nil, fmt.Errorf("%w: %s holds a %s", ErrCorrupt, path, m.Kind)
		}
		return l, m, nil
	}
	l, err := NewLocal(clean, opts...)
	if err != nil {
		return nil, nil, err
	}
	es, err := l.List(ctx)
	if err != nil {
		return nil, nil, err
	}
	for i := len(es) - 1; i >= 0; i-- {
		if es[i].Kind == Savepoint {
			m, err := l.Open(ctx, es[i].ID)
			return l, m, err
		}
	}
	m, err := l.Latest(ctx)
	if errors.Is(err, ErrNoCheckpoint) {
		return nil, nil, fmt.Errorf("%w: no savepoint or checkpoint in %s", ErrNotFound, path)
	}
	return l, m, err
}
