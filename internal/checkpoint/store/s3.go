package store

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// S3 is a Store in an S3-compatible bucket, spoken to with the S3 REST API
// (PUT, GET, HEAD and DELETE object, ListObjectsV2) and AWS Signature
// Version 4, path-style (endpoint/bucket/key). A checkpoint is the objects
// under <prefix>/chk-<id>/ (or savepoint-<id>/); uploading its manifest
// object, last, commits it. The layout is the local one (see FORMAT.md).
//
// S3 is strongly consistent (read-after-write and list-after-write), which
// this store relies on. Failed requests are not retried.
type S3 struct {
	c *core
}

var _ Store = (*S3)(nil)

// NewS3 returns a Store in bucket under key prefix prefix ("" for the
// bucket's root), at endpoint ("https://s3.us-east-1.amazonaws.com",
// "http://127.0.0.1:9000", ...), signing requests with creds. client makes
// the requests (nil: a new http.Client with no timeout; cancel through the
// context). Options: WithLogger, WithRegion.
func NewS3(endpoint, bucket, prefix string, creds Credentials, client *http.Client, opts ...Option) (*S3, error) {
	o := buildOptions(opts)
	if o.fs != nil || o.createDir {
		return nil, errors.New("checkpoint store: WithFS and WithCreateDir do not apply to an S3 store")
	}
	u, err := url.Parse(endpoint)
	if err != nil {
		return nil, fmt.Errorf("checkpoint store: S3 endpoint: %w", err)
	}
	if u.Scheme != "http" && u.Scheme != "https" || u.Host == "" || strings.Trim(u.Path, "/") != "" || u.RawQuery != "" {
		return nil, fmt.Errorf("checkpoint store: S3 endpoint %q must be http(s)://host[:port] without a path", endpoint)
	}
	if bucket == "" || strings.Contains(bucket, "/") {
		return nil, fmt.Errorf("checkpoint store: invalid S3 bucket name %q", bucket)
	}
	if creds.AccessKeyID == "" || creds.SecretAccessKey == "" {
		return nil, errors.New("checkpoint store: S3 credentials need an access key id and a secret access key")
	}
	if o.region == "" {
		o.region = "us-east-1"
	}
	if client == nil {
		client = &http.Client{}
	}
	if prefix = strings.Trim(prefix, "/"); prefix != "" {
		prefix += "/"
	}
	b := &s3Backend{
		scheme: u.Scheme, host: u.Host, bucket: bucket, prefix: prefix,
		creds: creds, region: o.region, client: client,
	}
	return &S3{c: newCore(b, o.logger)}, nil
}

// Begin implements Store.
func (s *S3) Begin(ctx context.Context, id int64, kind Kind) (Writer, error) {
	return s.c.begin(ctx, id, kind)
}

// Latest implements Store.
func (s *S3) Latest(ctx context.Context) (*Manifest, error) { return s.c.latest(ctx) }

// Open implements Store.
func (s *S3) Open(ctx context.Context, id int64) (*Manifest, error) { return s.c.open(ctx, id) }

// ReadFile implements Store.
func (s *S3) ReadFile(ctx context.Context, m *Manifest, name string) ([]byte, error) {
	return s.c.readFile(ctx, m, name)
}

// List implements Store.
func (s *S3) List(ctx context.Context) ([]Entry, error) { return s.c.list(ctx) }

// Retain implements Store.
func (s *S3) Retain(ctx context.Context, n int) error { return s.c.retain(ctx, n) }

// Delete implements Store.
func (s *S3) Delete(ctx context.Context, id int64) error { return s.c.delete(ctx, id) }

type s3Backend struct {
	scheme, host string
	bucket       string
	prefix       string // "" or ending in "/"
	creds        Credentials
	region       string
	client       *http.Client
}

func (b *s3Backend) key(dir, name string) string { return b.prefix + dir + "/" + name }

func (b *s3Backend) location(dir string) string {
	return "s3://" + b.bucket + "/" + b.prefix + dir
}

// s3Error is a non-success S3 response.
type s3Error struct {
	method, key string
	status      int
	code, msg   string
}

// Error describes the failed request and S3's error code and message.
func (e *s3Error) Error() string {
	s := fmt.Sprintf("S3 %s %s: HTTP %d", e.method, e.key, e.status)
	if e.code != "" {
		s += " " + e.code
	}
	if e.msg != "" {
		s += ": " + e.msg
	}
	return s
}

// Is makes a 404 match fs.ErrNotExist.
func (e *s3Error) Is(target error) bool {
	return target == fs.ErrNotExist && e.status == http.StatusNotFound
}

// do sends one signed request for key (the bucket itself if key is "") and
// returns the response if its status is 2xx.
func (b *s3Backend) do(ctx context.Context, method, key string, query url.Values, body []byte) (*http.Response, error) {
	path := "/" + b.bucket + "/" + key
	if key == "" {
		path = "/" + b.bucket
	}
	u := &url.URL{Scheme: b.scheme, Host: b.host, Path: path, RawPath: uriEncode(path, false), RawQuery: canonicalQuery(query)}
	req, err := http.NewRequestWithContext(ctx, method, u.String(), bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	if body == nil {
		req.Body, req.GetBody, req.ContentLength = http.NoBody, nil, 0
	}
	payloadHash := emptyPayloadHash
	if len(body) > 0 {
		sum := sha256.Sum256(body)
		payloadHash = hex.EncodeToString(sum[:])
	}
	if method == http.MethodPut {
		req.Header.Set("Content-Type", "application/octet-stream")
	}
	signRequest(req, b.creds, b.region, payloadHash, time.Now())
	resp, err := b.client.Do(req)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode/100 == 2 {
		return resp, nil
	}
	defer resp.Body.Close()
	e := &s3Error{method: method, key: key, status: resp.StatusCode}
	var x struct {
		Code    string `xml:"Code"`
		Message string `xml:"Message"`
	}
	if data, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10)); xml.Unmarshal(data, &x) == nil {
		e.code, e.msg = x.Code, x.Message
	}
	return nil, e
}

// call is do for requests whose response body is not needed.
func (b *s3Backend) call(ctx context.Context, method, key string, query url.Values, body []byte) error {
	resp, err := b.do(ctx, method, key, query, body)
	if err != nil {
		return err
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	return resp.Body.Close()
}

// s3Object is one entry of a ListObjectsV2 response.
type s3Object struct {
	Key  string `xml:"Key"`
	Size int64  `xml:"Size"`
}

// listKeys returns the keys under prefix p, following continuation tokens
// (at most max keys if max > 0).
func (b *s3Backend) listKeys(ctx context.Context, p string, max int) ([]string, error) {
	var keys []string
	token := ""
	for {
		q := url.Values{"list-type": {"2"}, "prefix": {p}}
		if token != "" {
			q.Set("continuation-token", token)
		}
		if max > 0 {
			q.Set("max-keys", strconv.Itoa(max-len(keys)))
		}
		resp, err := b.do(ctx, http.MethodGet, "", q, nil)
		if err != nil {
			return nil, err
		}
		var page struct {
			Contents              []s3Object `xml:"Contents"`
			IsTruncated           bool       `xml:"IsTruncated"`
			NextContinuationToken string     `xml:"NextContinuationToken"`
		}
		err = xml.NewDecoder(resp.Body).Decode(&page)
		resp.Body.Close()
		if err != nil {
			return nil, fmt.Errorf("S3 ListObjectsV2 %s: bad response: %w", p, err)
		}
		for _, o := range page.Contents {
			keys = append(keys, o.Key)
		}
		if !page.IsTruncated || max > 0 && len(keys) >= max {
			return keys, nil
		}
		if page.NextContinuationToken == "" || page.NextContinuationToken == token {
			return nil, fmt.Errorf("S3 ListObjectsV2 %s: truncated response without a new continuation token", p)
		}
		token = page.NextContinuationToken
	}
}

func (b *s3Backend) list(ctx context.Context) ([]dirState, error) {
	keys, err := b.listKeys(ctx, b.prefix, 0)
	if err != nil {
		return nil, err
	}
	byDir := make(map[string]*dirState)
	var order []string
	for _, k := range keys {
		dir, name, ok := strings.Cut(strings.TrimPrefix(k, b.prefix), "/")
		if !ok {
			continue
		}
		id, kind, ok := parseDir(dir)
		if !ok {
			continue
		}
		st := byDir[dir]
		if st == nil {
			st = &dirState{id: id, kind: kind, exists: true}
			byDir[dir] = st
			order = append(order, dir)
		}
		if name == manifestName {
			st.committed = true
		}
	}
	out := make([]dirState, 0, len(order))
	for _, d := range order {
		out = append(out, *byDir[d])
	}
	return out, nil
}

func (b *s3Backend) stat(ctx context.Context, dir string) (dirState, error) {
	var st dirState
	err := b.call(ctx, http.MethodHead, b.key(dir, manifestName), nil, nil)
	switch {
	case err == nil:
		st.exists, st.committed = true, true
		return st, nil
	case !errors.Is(err, fs.ErrNotExist):
		return st, err
	}
	keys, err := b.listKeys(ctx, b.key(dir, ""), 1)
	if err != nil {
		return st, err
	}
	st.exists = len(keys) > 0
	return st, nil
}

// deleteUnder deletes every object under dir/.
func (b *s3Backend) deleteUnder(ctx context.Context, dir string) error {
	keys, err := b.listKeys(ctx, b.key(dir, ""), 0)
	if err != nil {
		return err
	}
	for _, k := range keys {
		if err := b.call(ctx, http.MethodDelete, k, nil, nil); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
	}
	return nil
}

func (b *s3Backend) prepare(ctx context.Context, dir string) error { return b.deleteUnder(ctx, dir) }

func (b *s3Backend) put(ctx context.Context, dir, name string, data []byte) error {
	if data == nil {
		data = []byte{}
	}
	return b.call(ctx, http.MethodPut, b.key(dir, name), nil, data)
}

// publish uploads the manifest object. Every data object was uploaded
// before (a successful PUT is durable), and a PUT is atomic, so the
// manifest appears whole or not at all.
func (b *s3Backend) publish(ctx context.Context, dir string, manifest []byte) error {
	return b.call(ctx, http.MethodPut, b.key(dir, manifestName), nil, manifest)
}

func (b *s3Backend) open(ctx context.Context, dir, name string) (io.ReadCloser, error) {
	resp, err := b.do(ctx, http.MethodGet, b.key(dir, name), nil, nil)
	if err != nil {
		return nil, err
	}
	return resp.Body, nil
}

// remove deletes the manifest object first, then the data objects.
func (b *s3Backend) remove(ctx context.Context, dir string) error {
	if err := b.call(ctx, http.MethodDelete, b.key(dir, manifestName), nil, nil); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return b.deleteUnder(ctx, dir)
}

// ReadShared implements Store.
func (s *S3) ReadShared(ctx context.Context, m *Manifest, name string) ([]byte, error) {
	return s.c.readShared(ctx, m, name)
}

// CopyShared implements Store: the object is streamed into dst.
func (s *S3) CopyShared(ctx context.Context, m *Manifest, name, dst string) error {
	return s.c.copyShared(ctx, m, name, dst)
}

func (b *s3Backend) putShared(ctx context.Context, name string, data []byte) error {
	return b.put(ctx, sharedDir, name, data)
}

// syncShared does nothing: a PUT is durable when it returns.
func (b *s3Backend) syncShared(context.Context) error { return nil }

func (b *s3Backend) listShared(ctx context.Context) ([]string, error) {
	p := b.key(sharedDir, "")
	keys, err := b.listKeys(ctx, p, 0)
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

func (b *s3Backend) removeShared(ctx context.Context, names []string) error {
	for _, n := range names {
		if err := b.call(ctx, http.MethodDelete, b.key(sharedDir, n), nil, nil); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
	}
	return nil
}
