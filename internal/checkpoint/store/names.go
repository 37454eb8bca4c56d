package store

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"strings"
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
func OpenPath(ctx context.Context, path string, opts ...Option) (Store, *Manifest, error) {
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
	return OpenFrom(ctx, path, clean, filepath.Dir(clean), filepath.Base(clean), func(root string) (Store, error) {
		return NewLocal(root, opts...)
	})
}

// OpenFrom opens the checkpoint or savepoint that path names, given how to
// open the store at a root: if base, path's last element, is a
// checkpoint's or savepoint's own name ("savepoint-7", "chk-12"), that one
// in the store at parent; otherwise the store at full, path itself, which
// stands for its newest savepoint, or if it has none its newest intact
// checkpoint.
func OpenFrom(ctx context.Context, path, full, parent, base string, open func(root string) (Store, error)) (Store, *Manifest, error) {
	if id, kind, ok := parseDir(base); ok {
		s, err := open(parent)
		if err != nil {
			return nil, nil, err
		}
		m, err := s.Open(ctx, id)
		if err != nil {
			return nil, nil, err
		}
		if m.Kind != kind {
			return nil, nil, fmt.Errorf("%w: %s holds a %s", ErrCorrupt, path, m.Kind)
		}
		return s, m, nil
	}
	s, err := open(full)
	if err != nil {
		return nil, nil, err
	}
	es, err := s.List(ctx)
	if err != nil {
		return nil, nil, err
	}
	for i := len(es) - 1; i >= 0; i-- {
		if es[i].Kind == Savepoint {
			m, err := s.Open(ctx, es[i].ID)
			return s, m, err
		}
	}
	m, err := s.Latest(ctx)
	if errors.Is(err, ErrNoCheckpoint) {
		return nil, nil, fmt.Errorf("%w: no savepoint or checkpoint in %s", ErrNotFound, path)
	}
	return s, m, err
}

// S3Path is a parsed s3://bucket/key path.
type S3Path struct {
	// Bucket is the bucket.
	Bucket string
	// Key is the key prefix, without leading or trailing "/".
	Key string
}

// ParseS3Path tells a checkpoint or savepoint path's kind: an s3://
// path (p set) or a local path (p nil). Other URL schemes are refused
// rather than taken for a local directory named "gs:".
func ParseS3Path(path string) (p *S3Path, err error) {
	scheme, rest, ok := strings.Cut(path, "://")
	if !ok {
		return nil, nil
	}
	if scheme != "s3" {
		return nil, fmt.Errorf("savepoint path %q: scheme %q is not supported (use a local directory or s3://bucket/prefix)", path, scheme)
	}
	u, err := url.Parse(path)
	if err != nil {
		return nil, fmt.Errorf("savepoint path %q: %w", path, err)
	}
	if u.User != nil || u.RawQuery != "" || u.Fragment != "" || strings.Contains(rest, "//") {
		return nil, fmt.Errorf("savepoint path %q: want s3://bucket/prefix without user, query, fragment or empty path elements", path)
	}
	if u.Host == "" {
		return nil, fmt.Errorf("savepoint path %q names no bucket (want s3://bucket/prefix)", path)
	}
	return &S3Path{Bucket: u.Host, Key: strings.Trim(u.Path, "/")}, nil
}

// String returns the path as s3://bucket/key.
func (p S3Path) String() string {
	if p.Key == "" {
		return "s3://" + p.Bucket
	}
	return "s3://" + p.Bucket + "/" + p.Key
}

// Split returns the key's parent prefix and last element.
func (p S3Path) Split() (parent, base string) {
	if i := strings.LastIndexByte(p.Key, '/'); i >= 0 {
		return p.Key[:i], p.Key[i+1:]
	}
	return "", p.Key
}
