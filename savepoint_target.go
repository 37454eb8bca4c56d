package weir

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"path/filepath"
	"strings"

	"github.com/weirstream/weir/internal/checkpoint/store"
)

// S3Options says how a job reaches savepoint paths of the form
// s3://bucket/prefix, as Flink resolves s3:// paths through its S3 file
// system: the endpoint of an S3-compatible service and the credentials to
// sign requests with (AWS Signature V4, path-style requests).
type S3Options struct {
	// Endpoint is the service's URL without a path:
	// "https://s3.eu-west-3.amazonaws.com", "http://127.0.0.1:9000".
	Endpoint string
	// Region is the region requests are signed for ("" means us-east-1).
	Region string
	// Credentials are the access keys.
	Credentials S3Credentials
	// Client makes the requests (nil: a client without timeout; requests
	// end with their context).
	Client *http.Client
}

// WithS3 lets the job use s3://bucket/prefix paths wherever it takes a
// savepoint path: TriggerSavepoint, StopWithSavepoint, the control
// endpoint (weir savepoint --dir s3://...), DefaultSavepointDir and
// RestoreFromSavepoint.
func WithS3(o S3Options) Option { return func(c *config) { c.s3 = &o } }

// ReadOption configures ReadSavepoint.
type ReadOption func(*readConfig)

type readConfig struct{ s3 *S3Options }

// ReadWithS3 lets ReadSavepoint read s3://bucket/prefix paths.
func ReadWithS3(o S3Options) ReadOption { return func(c *readConfig) { c.s3 = &o } }

// DefaultSavepointDir is the target of savepoints requested without one
// (TriggerSavepoint or StopWithSavepoint with dir ""), as Flink's
// state.savepoints.dir: a local directory or, with WithS3, an
// s3://bucket/prefix path.
func DefaultSavepointDir(target string) CheckpointOption {
	return func(c *checkpointConfig) { c.savepointDir = target }
}

// s3Path is a parsed s3://bucket/key path.
type s3Path struct{ bucket, key string }

// parseTarget tells a savepoint path's kind: an s3:// path (s3 set) or a
// local path (s3 nil). Other URL schemes are refused rather than taken
// for a local directory named "gs:".
func parseTarget(path string) (*s3Path, error) {
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
	return &s3Path{bucket: u.Host, key: strings.Trim(u.Path, "/")}, nil
}

// String returns the path as s3://bucket/key.
func (p s3Path) String() string {
	if p.key == "" {
		return "s3://" + p.bucket
	}
	return "s3://" + p.bucket + "/" + p.key
}

// s3Store opens the store rooted at bucket/prefix.
func (o *S3Options) store(path string, p s3Path, prefix string, log *slog.Logger) (store.Store, error) {
	if o == nil {
		return nil, fmt.Errorf("savepoint path %q is in S3, and the job has no S3 endpoint and credentials: use weir.WithS3 (ReadWithS3 for ReadSavepoint)", path)
	}
	opts := []store.Option{store.WithLogger(log)}
	if o.Region != "" {
		opts = append(opts, store.WithRegion(o.Region))
	}
	s, err := store.NewS3(o.Endpoint, p.bucket, prefix, o.Credentials, o.Client, opts...)
	if err != nil {
		return nil, fmt.Errorf("savepoint path %q: %w", path, err)
	}
	return s, nil
}

// savepointTarget opens the store a savepoint into target is written to
// and returns it with the path savepoint id will have there.
func savepointTarget(target string, s3 *S3Options, log *slog.Logger) (store.Store, func(id int64) string, error) {
	p, err := parseTarget(target)
	if err != nil {
		return nil, nil, err
	}
	if p != nil {
		s, err := s3.store(target, *p, p.key, log)
		if err != nil {
			return nil, nil, err
		}
		return s, func(id int64) string {
			return s3Path{p.bucket, strings.TrimPrefix(p.key+"/"+store.DirName(store.Savepoint, id), "/")}.String()
		}, nil
	}
	abs, err := filepath.Abs(target)
	if err != nil {
		return nil, nil, err
	}
	s, err := store.NewLocal(abs, store.WithCreateDir(), store.WithLogger(log))
	if err != nil {
		return nil, nil, err
	}
	return s, func(id int64) string { return filepath.Join(abs, store.DirName(store.Savepoint, id)) }, nil
}

// openSavepoint opens the savepoint or checkpoint at path (the forms of
// RestoreFromSavepoint, locally or in S3) and returns its store and
// manifest.
func openSavepoint(ctx context.Context, path string, s3 *S3Options, log *slog.Logger) (store.Store, *store.Manifest, error) {
	p, err := parseTarget(path)
	if err != nil {
		return nil, nil, err
	}
	if p == nil {
		var opts []store.Option
		if log != nil {
			opts = append(opts, store.WithLogger(log))
		}
		return store.OpenPath(ctx, path, opts...)
	}
	if log == nil {
		log = slog.Default()
	}
	// The last path element is a savepoint's or checkpoint's own
	// directory, else the path is a root standing for its newest
	// savepoint (else its newest intact checkpoint), as for local paths.
	parent, base := "", p.key
	if i := strings.LastIndexByte(p.key, '/'); i >= 0 {
		parent, base = p.key[:i], p.key[i+1:]
	}
	if id, kind, ok := store.ParseDirName(base); ok {
		s, err := s3.store(path, *p, parent, log)
		if err != nil {
			return nil, nil, err
		}
		m, err := s.Open(ctx, id)
		if err != nil {
			return nil, nil, err
		}
		if m.Kind != kind {
			return nil, nil, fmt.Errorf("%w: %s holds a %s", store.ErrCorrupt, path, m.Kind)
		}
		return s, m, nil
	}
	s, err := s3.store(path, *p, p.key, log)
	if err != nil {
		return nil, nil, err
	}
	es, err := s.List(ctx)
	if err != nil {
		return nil, nil, err
	}
	for i := len(es) - 1; i >= 0; i-- {
		if es[i].Kind == store.Savepoint {
			m, err := s.Open(ctx, es[i].ID)
			return s, m, err
		}
	}
	m, err := s.Latest(ctx)
	if errors.Is(err, store.ErrNoCheckpoint) {
		return nil, nil, fmt.Errorf("%w: no savepoint or checkpoint under %s", store.ErrNotFound, path)
	}
	return s, m, err
}
