// Package s3store is the checkpoint store of package store in an
// S3-compatible bucket, on minio-go: a store.Backend given to
// store.NewRemote. It is apart from package store so that only the
// programs that reach S3 link minio-go.
package s3store

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"
	"syscall"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"

	"github.com/weirstream/weir/internal/checkpoint/store"
)

// New returns a Store in an S3-compatible bucket, reached through minio-go
// (github.com/minio/minio-go/v7): request signing, the credential chain,
// multipart uploads and per-request retries are the library's. A
// checkpoint is the objects under <prefix>/chk-<id>/ (or savepoint-<id>/);
// uploading its manifest object, last, commits it. The layout is the local
// one (see FORMAT.md).
//
// S3 is strongly consistent (read-after-write and list-after-write), which
// this store relies on. A transient failure (a network error, HTTP 5xx,
// 429, SlowDown) is retried by the library a few times per request, then
// by the store, with exponential backoff, until the operation's context
// ends (the checkpoint timeout, for a checkpoint) or, for a context
// without deadline, store.S3Config.RetryFor has passed. A download cut
// off midway resumes where it stopped.
//
// The store is in bucket under key prefix prefix ("" for the bucket's
// root), reached as cfg says. It makes no request. Options:
// store.WithLogger.
func New(cfg store.S3Config, bucket, prefix string, opts ...store.Option) (*store.Remote, error) {
	b, err := newS3Backend(cfg, bucket, prefix)
	if err != nil {
		return nil, err
	}
	return store.NewRemote(b, opts...)
}

type s3Backend struct {
	cl       *minio.Client
	core     minio.Core // for GetObject with the response body as it comes
	bucket   string
	prefix   string // "" or ending in "/"
	partSize uint64
	retryFor time.Duration
	// anonymous reports whether the credential chain found nothing (for
	// error messages); nil with static keys.
	anonymous func() bool
}

func newS3Backend(cfg store.S3Config, bucket, prefix string) (*s3Backend, error) {
	endpoint := cfg.Endpoint
	if endpoint == "" {
		endpoint = firstEnv("AWS_ENDPOINT_URL_S3", "AWS_ENDPOINT_URL")
	}
	secure, host := true, "s3.amazonaws.com"
	if endpoint != "" {
		u, err := url.Parse(endpoint)
		if err != nil {
			return nil, fmt.Errorf("checkpoint store: S3 endpoint: %w", err)
		}
		if u.Scheme != "http" && u.Scheme != "https" || u.Host == "" || strings.Trim(u.Path, "/") != "" || u.RawQuery != "" || u.User != nil {
			return nil, fmt.Errorf("checkpoint store: S3 endpoint %q must be http(s)://host[:port] without a path", endpoint)
		}
		secure, host = u.Scheme == "https", u.Host
	}
	if bucket == "" || strings.Contains(bucket, "/") {
		return nil, fmt.Errorf("checkpoint store: invalid S3 bucket name %q", bucket)
	}
	if cfg.PartSize != 0 && cfg.PartSize < 5<<20 {
		return nil, fmt.Errorf("checkpoint store: S3 part size %d is below the 5 MiB S3 allows", cfg.PartSize)
	}
	region := cfg.Region
	if region == "" {
		region = firstEnv("AWS_REGION", "AWS_DEFAULT_REGION")
	}
	var transport http.RoundTripper
	if cfg.Transport != nil {
		t, ok := cfg.Transport.(http.RoundTripper)
		if !ok {
			return nil, fmt.Errorf("checkpoint store: S3 transport %T is not an http.RoundTripper", cfg.Transport)
		}
		transport = t
	}
	creds, anonymous := credentialsOf(cfg)
	cl, err := minio.New(host, &minio.Options{
		Creds: creds, Secure: secure, Region: region, Transport: transport, MaxRetries: cfg.MaxRetries,
	})
	if err != nil {
		return nil, fmt.Errorf("checkpoint store: S3 client for %s: %w", host, err)
	}
	if prefix = strings.Trim(prefix, "/"); prefix != "" {
		prefix += "/"
	}
	retryFor := cfg.RetryFor
	if retryFor <= 0 {
		retryFor = time.Minute
	}
	return &s3Backend{cl: cl, core: minio.Core{Client: cl}, bucket: bucket, prefix: prefix, partSize: cfg.PartSize, retryFor: retryFor, anonymous: anonymous}, nil
}

// credentials returns static credentials, or the standard chain and a
// function telling whether it found nothing.
func credentialsOf(cfg store.S3Config) (*credentials.Credentials, func() bool) {
	k := cfg.Credentials
	if k.AccessKeyID != "" || k.SecretAccessKey != "" {
		return credentials.NewStaticV4(k.AccessKeyID, k.SecretAccessKey, k.SessionToken), nil
	}
	chain := credentials.NewChainCredentials([]credentials.Provider{
		&credentials.EnvAWS{}, &credentials.FileAWSCredentials{}, roleProvider{&credentials.IAM{}},
	})
	return chain, func() bool {
		v, err := chain.GetWithContext(nil)
		return err != nil || v.SignerType.IsAnonymous()
	}
}

// roleProvider is the IAM provider except that, with
// AWS_EC2_METADATA_DISABLED=true (as the AWS SDKs read it), it does not
// ask the EC2 instance metadata service.
type roleProvider struct{ *credentials.IAM }

func (p roleProvider) metadataOnly() bool {
	return strings.EqualFold(os.Getenv("AWS_EC2_METADATA_DISABLED"), "true") &&
		firstEnv("AWS_WEB_IDENTITY_TOKEN_FILE", "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI", "AWS_CONTAINER_CREDENTIALS_FULL_URI") == ""
}

var errNoMetadata = errors.New("the EC2 instance metadata service is disabled (AWS_EC2_METADATA_DISABLED)")

// Retrieve implements credentials.Provider.
func (p roleProvider) Retrieve() (credentials.Value, error) {
	if p.metadataOnly() {
		return credentials.Value{}, errNoMetadata
	}
	return p.IAM.Retrieve()
}

// RetrieveWithCredContext implements credentials.Provider.
func (p roleProvider) RetrieveWithCredContext(cc *credentials.CredContext) (credentials.Value, error) {
	if p.metadataOnly() {
		return credentials.Value{}, errNoMetadata
	}
	return p.IAM.RetrieveWithCredContext(cc)
}

// firstEnv returns the first of the environment variables that is set.
func firstEnv(names ...string) string {
	for _, n := range names {
		if v := os.Getenv(n); v != "" {
			return v
		}
	}
	return ""
}

func (b *s3Backend) key(dir, name string) string { return b.prefix + dir + "/" + name }

// Location implements store.Backend.
func (b *s3Backend) Location(dir string) string {
	return "s3://" + b.bucket + "/" + b.prefix + dir
}

// s3Error is a failed S3 operation on a key.
type s3Error struct {
	op, key string
	err     error
	hint    string
}

// Error names the operation, the object and the service's answer.
func (e *s3Error) Error() string {
	s := fmt.Sprintf("S3 %s %s: %v", e.op, e.key, e.err)
	var r minio.ErrorResponse
	if errors.As(e.err, &r) && r.Code != "" {
		s = fmt.Sprintf("S3 %s %s: HTTP %d %s: %v", e.op, e.key, r.StatusCode, r.Code, e.err)
	}
	if e.hint != "" {
		s += " (" + e.hint + ")"
	}
	return s
}

func (e *s3Error) Unwrap() error { return e.err }

// Is makes a missing object match fs.ErrNotExist.
func (e *s3Error) Is(target error) bool {
	if target != fs.ErrNotExist {
		return false
	}
	var r minio.ErrorResponse
	return errors.As(e.err, &r) && r.Code == minio.NoSuchKey
}

// fail wraps err from operation op on key, adding a hint when the service
// refused requests that no credentials signed.
func (b *s3Backend) fail(op, key string, err error) error {
	if err == nil {
		return nil
	}
	e := &s3Error{op: op, key: "s3://" + b.bucket + "/" + key, err: err}
	var r minio.ErrorResponse
	if errors.As(err, &r) && r.StatusCode == http.StatusForbidden && b.anonymous != nil && b.anonymous() {
		e.hint = "no S3 credentials were found: set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, a shared credentials file or an IAM role, or give keys explicitly"
	}
	return e
}

// transient reports whether err is worth retrying: a network failure or
// an answer S3 documents as temporary.
func transient(err error) bool {
	if err == nil || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return false
	}
	var r minio.ErrorResponse
	if errors.As(err, &r) {
		switch r.StatusCode {
		case http.StatusRequestTimeout, http.StatusTooManyRequests, http.StatusInternalServerError,
			http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout:
			return true
		}
		switch r.Code {
		case "SlowDown", "InternalError", "RequestTimeout", "ServiceUnavailable", "Throttling", "RequestError":
			return true
		}
		return false
	}
	var ne net.Error
	var ue *url.Error
	return errors.As(err, &ne) || errors.As(err, &ue) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.EPIPE)
}

// retry runs fn until it succeeds, fails for good, or transient failures
// have lasted until ctx's deadline (or retryFor), waiting with
// exponential backoff and jitter between attempts.
func (b *s3Backend) retry(ctx context.Context, fn func() error) error {
	end, ok := ctx.Deadline()
	if !ok {
		end = time.Now().Add(b.retryFor)
	}
	wait := 100 * time.Millisecond
	for attempt := 1; ; attempt++ {
		err := fn()
		if !transient(err) || ctx.Err() != nil {
			return err
		}
		d := wait/2 + rand.N(wait/2+1)
		if time.Now().Add(d).After(end) {
			return fmt.Errorf("%w (gave up after %d attempts)", err, attempt)
		}
		t := time.NewTimer(d)
		select {
		case <-ctx.Done():
			t.Stop()
			return err
		case <-t.C:
		}
		wait = min(2*wait, 5*time.Second)
	}
}

// keys returns the keys under prefix p (at most max if max > 0).
func (b *s3Backend) keys(ctx context.Context, p string, max int) ([]string, error) {
	var keys []string
	err := b.retry(ctx, func() error {
		keys = keys[:0]
		lctx, cancel := context.WithCancel(ctx)
		defer cancel()
		for o := range b.cl.ListObjects(lctx, b.bucket, minio.ListObjectsOptions{Prefix: p, Recursive: true, MaxKeys: max}) {
			if o.Err != nil {
				return b.fail("list", p, o.Err)
			}
			keys = append(keys, o.Key)
			if max > 0 && len(keys) >= max {
				break
			}
		}
		return ctx.Err()
	})
	return keys, err
}

// List implements store.Backend.
func (b *s3Backend) List(ctx context.Context) ([]store.DirState, error) {
	keys, err := b.keys(ctx, b.prefix, 0)
	if err != nil {
		return nil, err
	}
	byDir := make(map[string]*store.DirState)
	var order []string
	for _, k := range keys {
		dir, name, ok := strings.Cut(strings.TrimPrefix(k, b.prefix), "/")
		if !ok {
			continue
		}
		id, kind, ok := store.ParseDirName(dir)
		if !ok {
			continue
		}
		st := byDir[dir]
		if st == nil {
			st = &store.DirState{ID: id, Kind: kind, Exists: true}
			byDir[dir] = st
			order = append(order, dir)
		}
		if name == store.ManifestName {
			st.Committed = true
		}
	}
	out := make([]store.DirState, 0, len(order))
	for _, d := range order {
		out = append(out, *byDir[d])
	}
	return out, nil
}

// Stat implements store.Backend.
func (b *s3Backend) Stat(ctx context.Context, dir string) (store.DirState, error) {
	var st store.DirState
	k := b.key(dir, store.ManifestName)
	err := b.retry(ctx, func() error {
		_, err := b.cl.StatObject(ctx, b.bucket, k, minio.StatObjectOptions{})
		return b.fail("stat", k, err)
	})
	switch {
	case err == nil:
		st.Exists, st.Committed = true, true
		return st, nil
	case !errors.Is(err, fs.ErrNotExist):
		return st, err
	}
	keys, err := b.keys(ctx, b.key(dir, ""), 1)
	if err != nil {
		return st, err
	}
	st.Exists = len(keys) > 0
	return st, nil
}

// deleteKeys deletes the objects; missing ones are not an error.
func (b *s3Backend) deleteKeys(ctx context.Context, keys []string) error {
	if len(keys) == 0 {
		return nil
	}
	return b.retry(ctx, func() error {
		ch := make(chan minio.ObjectInfo, len(keys))
		for _, k := range keys {
			ch <- minio.ObjectInfo{Key: k}
		}
		close(ch)
		var first error
		for e := range b.cl.RemoveObjects(ctx, b.bucket, ch, minio.RemoveObjectsOptions{}) {
			var r minio.ErrorResponse
			if errors.As(e.Err, &r) && r.Code == minio.NoSuchKey {
				continue
			}
			if first == nil {
				first = b.fail("delete", e.ObjectName, e.Err)
			}
		}
		return first
	})
}

// deleteUnder deletes every object under dir/.
func (b *s3Backend) deleteUnder(ctx context.Context, dir string) error {
	keys, err := b.keys(ctx, b.key(dir, ""), 0)
	if err != nil {
		return err
	}
	return b.deleteKeys(ctx, keys)
}

// Prepare implements store.Backend.
func (b *s3Backend) Prepare(ctx context.Context, dir string) error { return b.deleteUnder(ctx, dir) }

// upload stores size bytes of r as object k: one PUT, or a multipart
// upload of parts read from r as they are sent (several at a time). The
// object appears whole when the upload completes, never in part.
func (b *s3Backend) upload(ctx context.Context, k string, r io.ReaderAt, size int64) error {
	return b.retry(ctx, func() error {
		_, err := b.cl.PutObject(ctx, b.bucket, k, io.NewSectionReader(r, 0, size), size,
			minio.PutObjectOptions{ContentType: "application/octet-stream", PartSize: b.partSize})
		return b.fail("upload", k, err)
	})
}

// Put implements store.Backend.
func (b *s3Backend) Put(ctx context.Context, dir, name string, r io.ReaderAt, size int64) error {
	return b.upload(ctx, b.key(dir, name), r, size)
}

// Publish uploads the manifest object. Every data object was uploaded
// before (an upload is durable when it returns), and an upload is
// atomic, so the manifest appears whole or not at all.
func (b *s3Backend) Publish(ctx context.Context, dir string, manifest []byte) error {
	return b.upload(ctx, b.key(dir, store.ManifestName), strings.NewReader(string(manifest)), int64(len(manifest)))
}

// Open implements store.Backend.
func (b *s3Backend) Open(ctx context.Context, dir, name string) (io.ReadCloser, error) {
	r := &s3Reader{ctx: ctx, b: b, key: b.key(dir, name)}
	if err := r.get(); err != nil {
		return nil, err
	}
	return r, nil
}

// s3Reader reads an object; when the connection fails midway it asks for
// the rest of the same object (same ETag) and goes on.
type s3Reader struct {
	ctx  context.Context
	b    *s3Backend
	key  string
	etag string
	size int64
	off  int64
	body io.ReadCloser
}

// get (re)opens the object at r.off.
func (r *s3Reader) get() error {
	return r.b.retry(r.ctx, func() error {
		var opts minio.GetObjectOptions
		if r.etag != "" {
			if err := opts.SetMatchETag(r.etag); err != nil {
				return err
			}
			if err := opts.SetRange(r.off, 0); err != nil {
				return err
			}
		}
		body, info, _, err := r.b.core.GetObject(r.ctx, r.b.bucket, r.key, opts)
		if err != nil {
			return r.b.fail("get", r.key, err)
		}
		if r.etag == "" {
			r.etag, r.size = info.ETag, info.Size
		}
		r.body = body
		return nil
	})
}

// Read implements io.Reader.
func (r *s3Reader) Read(p []byte) (int, error) {
	for {
		if r.body == nil {
			if r.off >= r.size {
				return 0, io.EOF
			}
			if err := r.get(); err != nil {
				return 0, err
			}
		}
		n, err := r.body.Read(p)
		r.off += int64(n)
		if err == nil || err == io.EOF || !transient(err) || r.ctx.Err() != nil {
			return n, err
		}
		// Cut off: read the rest anew.
		r.body.Close()
		r.body = nil
		if n > 0 {
			return n, nil
		}
	}
}

// Close implements io.Closer.
func (r *s3Reader) Close() error {
	if r.body == nil {
		return nil
	}
	return r.body.Close()
}

// Remove deletes the manifest object first, then the data objects.
func (b *s3Backend) Remove(ctx context.Context, dir string) error {
	if err := b.deleteKeys(ctx, []string{b.key(dir, store.ManifestName)}); err != nil {
		return err
	}
	return b.deleteUnder(ctx, dir)
}

// PutShared implements store.Backend.
func (b *s3Backend) PutShared(ctx context.Context, name string, r io.ReaderAt, size int64) error {
	return b.Put(ctx, store.SharedDir, name, r, size)
}

// SyncShared does nothing: an upload is durable when it returns.
func (b *s3Backend) SyncShared(context.Context) error { return nil }

// ListShared implements store.Backend.
func (b *s3Backend) ListShared(ctx context.Context) ([]string, error) {
	p := b.key(store.SharedDir, "")
	keys, err := b.keys(ctx, p, 0)
	if err != nil {
		return nil, err
	}
	names := make([]string, 0, len(keys))
	for _, k := range keys {
		if name := strings.TrimPrefix(k, p); name != "" && !strings.Contains(name, "/") {
			names = append(names, name)
		}
	}
	return names, nil
}

// RemoveShared implements store.Backend.
func (b *s3Backend) RemoveShared(ctx context.Context, names []string) error {
	keys := make([]string, len(names))
	for i, n := range names {
		keys[i] = b.key(store.SharedDir, n)
	}
	return b.deleteKeys(ctx, keys)
}
