package weir

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
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

// s3Store opens the store rooted at bucket/prefix.
func (o *S3Options) store(path string, p store.S3Path, prefix string, log *slog.Logger) (store.Store, error) {
	if o == nil {
		return nil, fmt.Errorf("savepoint path %q is in S3, and the job has no S3 endpoint and credentials: use weir.WithS3 (ReadWithS3 for ReadSavepoint)", path)
	}
	opts := []store.Option{store.WithLogger(log)}
	if o.Region != "" {
		opts = append(opts, store.WithRegion(o.Region))
	}
	s, err := store.NewS3(o.Endpoint, p.Bucket, prefix, o.Credentials, o.Client, opts...)
	if err != nil {
		return nil, fmt.Errorf("savepoint path %q: %w", path, err)
	}
	return s, nil
}

// savepointTarget opens the store a savepoint into target is written to
// and returns it with the path savepoint id will have there.
func savepointTarget(target string, s3 *S3Options, log *slog.Logger) (store.Store, func(id int64) string, error) {
	p, err := store.ParseS3Path(target)
	if err != nil {
		return nil, nil, err
	}
	if p != nil {
		s, err := s3.store(target, *p, p.Key, log)
		if err != nil {
			return nil, nil, err
		}
		return s, func(id int64) string {
			return store.S3Path{Bucket: p.Bucket, Key: strings.TrimPrefix(p.Key+"/"+store.DirName(store.Savepoint, id), "/")}.String()
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
	p, err := store.ParseS3Path(path)
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
	parent, base := p.Split()
	return store.OpenFrom(ctx, path, p.Key, parent, base, func(root string) (store.Store, error) {
		return s3.store(path, *p, root, log)
	})
}
