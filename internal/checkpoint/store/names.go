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

// Location is a parsed checkpoint or savepoint location, as Flink writes
// them: a local directory (a plain path, or a file:// URL) or a remote
// bucket and key prefix (scheme://bucket/prefix, as s3://bucket/prefix),
// which a Remotes opener of its scheme reaches.
type Location struct {
	// Dir is the local directory, cleaned ("" for a remote location).
	Dir string
	// Scheme is the URL scheme of a remote location ("s3"; "" for a
	// local directory).
	Scheme string
	// Bucket and Key are the bucket and key prefix of a remote location
	// (Key without leading or trailing "/").
	Bucket, Key string
	// fileURL records that Dir was given as a file:// URL, so that
	// locations derived from it are written the same way.
	fileURL bool
}

// ParseLocation parses a checkpoint or savepoint location: a local path
// ("/ckpt", "ckpt", "file:///ckpt", "file:/ckpt") or a remote
// "scheme://bucket/prefix" ("s3://bucket/prefix"). A URL is never taken
// for a local directory named "gs:"; whether its scheme can be reached is
// decided when a store is opened (Remotes).
func ParseLocation(loc string) (Location, error) {
	if loc == "" {
		return Location{}, errors.New("empty checkpoint location")
	}
	scheme, rest, ok := strings.Cut(loc, "://")
	if !ok && strings.HasPrefix(loc, "file:/") {
		// file:/dir, Flink's short form: no host.
		scheme, rest, ok = "file", loc[len("file:"):], true
	}
	if !ok {
		return Location{Dir: filepath.Clean(loc)}, nil
	}
	switch scheme {
	case "file":
		host, path, _ := strings.Cut(rest, "/")
		if host != "" && host != "localhost" {
			return Location{}, fmt.Errorf("location %q: a file URL names a local directory (file:///dir), not host %q", loc, host)
		}
		u, err := url.PathUnescape("/" + path)
		if err != nil {
			return Location{}, fmt.Errorf("location %q: %w", loc, err)
		}
		return Location{Dir: filepath.Clean(filepath.FromSlash(u)), fileURL: true}, nil
	}
	if scheme == "" || strings.ContainsAny(scheme, "/\\") {
		return Location{}, fmt.Errorf("location %q: invalid URL scheme %q", loc, scheme)
	}

	u, err := url.Parse(loc)
	if err != nil {
		return Location{}, fmt.Errorf("location %q: %w", loc, err)
	}
	if u.User != nil || u.RawQuery != "" || u.Fragment != "" || strings.Contains(rest, "//") {
		return Location{}, fmt.Errorf("location %q: want %s://bucket/prefix without user, query, fragment or empty path elements", loc, scheme)
	}
	if u.Host == "" {
		return Location{}, fmt.Errorf("location %q names no bucket (want %s://bucket/prefix)", loc, scheme)
	}
	return Location{Scheme: u.Scheme, Bucket: u.Host, Key: strings.Trim(u.Path, "/")}, nil
}

// IsRemote reports whether l is a remote location (scheme://bucket/prefix).
func (l Location) IsRemote() bool { return l.Scheme != "" }

// String returns the location in the form it was given:
// scheme://bucket/key, file:///dir or the directory path.
func (l Location) String() string {
	switch {
	case l.IsRemote() && l.Key == "":
		return l.Scheme + "://" + l.Bucket
	case l.IsRemote():
		return l.Scheme + "://" + l.Bucket + "/" + l.Key
	case l.fileURL:
		return (&url.URL{Scheme: "file", Path: filepath.ToSlash(l.Dir)}).String()
	}
	return l.Dir
}

// Child returns the location of name (one path element) inside l.
func (l Location) Child(name string) Location {
	if l.IsRemote() {
		l.Key = strings.TrimPrefix(l.Key+"/"+name, "/")
	} else {
		l.Dir = filepath.Join(l.Dir, name)
	}
	return l
}

// Split returns l's parent and its last element.
func (l Location) Split() (parent Location, base string) {
	parent = l
	if l.IsRemote() {
		i := strings.LastIndexByte(l.Key, '/')
		parent.Key, base = l.Key[:max(i, 0)], l.Key[i+1:]
		return parent, base
	}
	parent.Dir, base = filepath.Dir(l.Dir), filepath.Base(l.Dir)
	return parent, base
}

// Abs makes a local location's directory absolute.
func (l Location) Abs() (Location, error) {
	if l.IsRemote() {
		return l, nil
	}
	abs, err := filepath.Abs(l.Dir)
	l.Dir = abs
	return l, err
}

// NewStore returns the store rooted at l: a remote store opened by the
// opener of l's scheme in r, or a local store in l's directory (which must
// exist unless WithCreateDir is given). A remote location whose scheme r
// has no opener for fails with an error wrapping ErrNoStorage.
func (l Location) NewStore(r Remotes, opts ...Option) (Store, error) {
	if l.IsRemote() {
		open := r[l.Scheme]
		if open == nil {
			return nil, fmt.Errorf("location %s: %w %s://", l, ErrNoStorage, l.Scheme)
		}
		s, err := open(l.Bucket, l.Key, withoutLocal(opts)...)
		if err != nil {
			return nil, fmt.Errorf("location %s: %w", l, err)
		}
		return s, nil
	}
	s, err := NewLocal(l.Dir, opts...)
	if err != nil {
		return nil, err
	}
	return s, nil
}

// withoutLocal drops the options that apply to local stores only.
func withoutLocal(opts []Option) []Option {
	var o options
	for _, opt := range opts {
		opt(&o)
	}
	var out []Option
	if o.logger != nil {
		out = append(out, WithLogger(o.logger))
	}
	return out
}

// OpenLocation opens the checkpoint or savepoint at l: either its own
// directory, under its name (".../savepoint-7", ".../chk-12") or under any
// other, as when it was renamed or copied (".../before-upgrade", which
// holds a "_manifest.json" of its own), or a store's root, which stands for
// the newest savepoint in it, or if it has none its newest intact
// checkpoint. It returns the store the checkpoint belongs to and the
// manifest (whose own checksum is verified; data files are verified as
// they are read). A directory under another name reads its shared files,
// if it has any, from the shared directory next to it, as a checkpoint of
// that root would. A location with no checkpoint is reported with
// ErrNotFound. A remote location is reached through r (see NewStore).
// Options: those of NewLocal and NewRemote (WithCreateDir is ignored).
func OpenLocation(ctx context.Context, l Location, r Remotes, opts ...Option) (Store, *Manifest, error) {
	if !l.IsRemote() {
		fi, err := os.Stat(l.Dir)
		if errors.Is(err, fs.ErrNotExist) {
			return nil, nil, fmt.Errorf("%w: %s does not exist", ErrNotFound, l)
		}
		if err != nil {
			return nil, nil, err
		}
		if !fi.IsDir() {
			return nil, nil, fmt.Errorf("%s is not a directory (a savepoint is a directory with a %s)", l, manifestName)
		}
	}
	opts = append(opts[:len(opts):len(opts)], func(o *options) { o.createDir = false })
	parent, base := l.Split()
	id, kind, named := parseDir(base)
	if plainName(base) {
		ps, err := parent.NewStore(r, opts...)
		if err != nil {
			return nil, nil, err
		}
		c, err := coreOf(ps)
		if err != nil {
			return nil, nil, err
		}
		m, own, err := readOwnManifest(ctx, c, base)
		if err != nil {
			return nil, nil, err
		}
		switch {
		case own && named && m.ID == id && m.Kind == kind:
			// Under its own name.
			return openOwn(ctx, ps, l, id, kind)
		case own:
			// Renamed or copied: the directory stands for the
			// checkpoint its manifest describes.
			return openAliased(ctx, c, base, m)
		case named:
			// Incomplete (no manifest): Open says so.
			return openOwn(ctx, ps, l, id, kind)
		}
	}
	s, err := l.NewStore(r, opts...)
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
		return nil, nil, fmt.Errorf("%w: %s holds no savepoint or checkpoint: it has no %s of its own and no savepoint-<id> or chk-<id> directory with one", ErrNotFound, l, manifestName)
	}
	return s, m, err
}

// openOwn opens checkpoint id of store s, l being its directory.
func openOwn(ctx context.Context, s Store, l Location, id int64, kind Kind) (Store, *Manifest, error) {
	m, err := s.Open(ctx, id)
	if err != nil {
		return nil, nil, err
	}
	if m.Kind != kind {
		return nil, nil, fmt.Errorf("%w: %s holds a %s", ErrCorrupt, l, m.Kind)
	}
	return s, m, nil
}
