package weir

import (
	"context"
	"log/slog"
	"net/http"

	"github.com/weirstream/weir/internal/checkpoint/store"
)

// S3Options says how a job reaches s3://bucket/prefix locations
// (checkpoint storage, savepoint targets, restores), as Flink's s3.*
// settings configure its S3 file system. The zero value reaches AWS with
// the standard credential chain. Requests go through minio-go: signing,
// multipart uploads and retries are the library's.
type S3Options struct {
	// Endpoint is the URL of an S3-compatible service, without a path:
	// "http://127.0.0.1:9000", "https://s3.eu-west-3.amazonaws.com".
	// Empty: $AWS_ENDPOINT_URL_S3, else $AWS_ENDPOINT_URL, else AWS.
	Endpoint string
	// Region is the region requests are signed for. Empty: $AWS_REGION,
	// else $AWS_DEFAULT_REGION, else the bucket's region as the service
	// reports it.
	Region string
	// Credentials are static access keys, for S3-compatible servers.
	// Left empty, the standard chain finds them: the environment
	// ($AWS_ACCESS_KEY_ID, $AWS_SECRET_ACCESS_KEY, $AWS_SESSION_TOKEN),
	// the shared credentials file (~/.aws/credentials or
	// $AWS_SHARED_CREDENTIALS_FILE, profile $AWS_PROFILE), web identity
	// ($AWS_WEB_IDENTITY_TOKEN_FILE and $AWS_ROLE_ARN, as on Kubernetes),
	// ECS/EKS container credentials, or the EC2 instance's role.
	Credentials S3Credentials
	// Transport makes the HTTP requests (nil: the library's default
	// transport). Requests end with their context.
	Transport http.RoundTripper
	// PartSize is the part size of multipart uploads (0: 16 MiB; at
	// least 5 MiB). A file larger than a part is uploaded in parts, read
	// from memory or from its file as they are sent.
	PartSize int64
}

// S3Credentials are static access keys of an S3-compatible store.
type S3Credentials struct {
	// AccessKeyID is the access key id.
	AccessKeyID string
	// SecretAccessKey is the secret access key.
	SecretAccessKey string
	// SessionToken is the token of temporary credentials (optional).
	SessionToken string
}

// config returns the store's configuration for o (nil: the defaults).
func (o *S3Options) config() store.S3Config {
	if o == nil {
		return store.S3Config{}
	}
	return store.S3Config{
		Endpoint: o.Endpoint, Region: o.Region, Transport: o.Transport, PartSize: uint64(max(o.PartSize, 0)),
		Credentials: store.Credentials(o.Credentials),
	}
}

// WithS3 sets how the job reaches s3:// locations wherever it takes one:
// CheckpointStorage, TriggerSavepoint, StopWithSavepoint, the control
// endpoint (weir savepoint --dir s3://...), DefaultSavepointDir and
// RestoreFromSavepoint. Without it they reach AWS with the standard
// credential chain.
func WithS3(o S3Options) Option { return func(c *config) { c.s3 = &o } }

// s3Options returns the job's WithS3 setting (the zero value without it).
func (e *Environment) s3Options() S3Options {
	if e.cfg.s3 == nil {
		return S3Options{}
	}
	return *e.cfg.s3
}

// ReadOption configures ReadSavepoint.
type ReadOption func(*readConfig)

type readConfig struct{ s3 *S3Options }

// ReadWithS3 sets how ReadSavepoint reaches an s3:// location (as WithS3
// for a job).
func ReadWithS3(o S3Options) ReadOption { return func(c *readConfig) { c.s3 = &o } }

// DefaultSavepointDir is the target of savepoints requested without one
// (TriggerSavepoint or StopWithSavepoint with dir ""), as Flink's
// state.savepoints.dir: a local directory (a path or file:///dir) or an
// s3://bucket/prefix location.
func DefaultSavepointDir(target string) CheckpointOption {
	return func(c *checkpointConfig) { c.savepointDir = target }
}

// savepointTarget opens the store a savepoint into target is written to
// and returns it with the path savepoint id will have there, in the form
// target was given in.
func savepointTarget(target string, s3 *S3Options, log *slog.Logger) (store.Store, func(id int64) string, error) {
	loc, err := store.ParseLocation(target)
	if err != nil {
		return nil, nil, err
	}
	if loc, err = loc.Abs(); err != nil {
		return nil, nil, err
	}
	s, err := loc.NewStore(s3.config(), store.WithCreateDir(), store.WithLogger(log))
	if err != nil {
		return nil, nil, err
	}
	return s, func(id int64) string { return loc.Child(store.DirName(store.Savepoint, id)).String() }, nil
}

// openSavepoint opens the savepoint or checkpoint at path (the forms of
// RestoreFromSavepoint) and returns its store and manifest.
func openSavepoint(ctx context.Context, path string, s3 *S3Options, log *slog.Logger) (store.Store, *store.Manifest, error) {
	loc, err := store.ParseLocation(path)
	if err != nil {
		return nil, nil, err
	}
	if log == nil {
		log = slog.Default()
	}
	return store.OpenLocation(ctx, loc, s3.config(), store.WithLogger(log))
}
