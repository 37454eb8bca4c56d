// Package s3 keeps Weir's checkpoints and savepoints in an S3-compatible
// object store, at s3://bucket/prefix locations, as Flink's S3 file system
// plugin does. It is a plugin of the root package: a job plugs it in with
//
//	env := weir.NewEnvironment(weir.WithStorage(s3.New(s3.Options{})))
//	env.EnableCheckpointing(time.Minute, weir.CheckpointStorage("s3://bucket/jobs/wordcount"))
//
// and weir.ReadSavepoint, package savepoint and the weir command take it
// the same way. Requests go through minio-go (signing, multipart uploads,
// retries), which only programs importing this package link. The layout
// in the bucket is the local directory's (a checkpoint's manifest is
// uploaded last, so a failure never leaves one that looks complete).
package s3

import (
	"net/http"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/internal/checkpoint/store"
	"github.com/weirstream/weir/internal/checkpoint/store/s3store"
)

// Options says how the storage reaches the service, as Flink's s3.*
// settings configure its S3 file system. The zero value reaches AWS with
// the standard credential chain.
type Options struct {
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
	Credentials Credentials
	// Transport makes the HTTP requests (nil: the library's default
	// transport). Requests end with their context.
	Transport http.RoundTripper
	// PartSize is the part size of multipart uploads (0: 16 MiB; at
	// least 5 MiB). A file larger than a part is uploaded in parts, read
	// from memory or from its file as they are sent.
	PartSize int64
}

// Credentials are static access keys of an S3-compatible store.
type Credentials struct {
	// AccessKeyID is the access key id.
	AccessKeyID string
	// SecretAccessKey is the secret access key.
	SecretAccessKey string
	// SessionToken is the token of temporary credentials (optional).
	SessionToken string
}

// New returns the storage of s3:// locations reached as o says, for
// weir.WithStorage, weir.ReadWithStorage, weir.NewCheckpointStore and
// package savepoint. Settings are checked when a location is opened (the
// job is built).
func New(o Options) weir.Storage {
	return &storage{cfg: store.S3Config{
		Endpoint: o.Endpoint, Region: o.Region, Transport: o.Transport, PartSize: uint64(max(o.PartSize, 0)),
		Credentials: store.Credentials(o.Credentials),
	}}
}

// storage implements weir.Storage and hooks.Storage.
type storage struct{ cfg store.S3Config }

// Scheme implements weir.Storage.
func (s *storage) Scheme() string { return "s3" }

// CheckpointStore implements weir.Storage.
func (s *storage) CheckpointStore(location string) (weir.CheckpointStore, error) {
	return weir.NewCheckpointStore(location, s)
}

// OpenStore implements hooks.Storage.
func (s *storage) OpenStore(bucket, prefix string, opts ...store.Option) (store.Store, error) {
	st, err := s3store.New(s.cfg, bucket, prefix, opts...)
	if err != nil {
		return nil, err
	}
	return st, nil
}
