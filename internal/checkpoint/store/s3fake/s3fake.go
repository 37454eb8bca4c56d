// Package s3fake is an in-memory S3-compatible server for tests: the
// subset of the S3 API the checkpoint store uses (PUT, GET, HEAD and
// DELETE object, ListObjectsV2; path-style requests, one bucket). Every
// request must carry an AWS Signature Version 4 Authorization header that
// verifies with the server's secret and a payload hash matching its body,
// else it gets 403 as from S3. The signature check is written here from
// the AWS documentation, independently of the store's signer, so a test
// against it also checks the signer.
//
// It does not import internal/checkpoint/store, so that package's own
// tests can use it as well as tests of the packages above it.
package s3fake

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/xml"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// Server is a running fake S3 endpoint. Its fields are fixed once New
// returns.
type Server struct {
	// Bucket is the one bucket the server has.
	Bucket string
	// Region is the region requests must be signed for.
	Region string
	// AccessKeyID and SecretAccessKey are the credentials it accepts.
	AccessKeyID     string
	SecretAccessKey string

	t        testing.TB
	pageSize int

	mu      sync.Mutex
	objects map[string][]byte
	fail    func(method, key string) int
	srv     *httptest.Server
}

// PageSize is the most keys a ListObjectsV2 page holds.
const PageSize = 3

// SetFail makes the server answer a request with the HTTP status fail
// returns for its method and key instead of serving it (0: serve it); nil
// serves every request.
func (s *Server) SetFail(fail func(method, key string) int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.fail = fail
}

// Mutate replaces the object at key with fn of a copy of its contents, or
// deletes it if fn returns nil, and reports whether the object existed.
func (s *Server) Mutate(key string, fn func([]byte) []byte) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	data, ok := s.objects[key]
	if !ok {
		return false
	}
	if nw := fn(slices.Clone(data)); nw == nil {
		delete(s.objects, key)
	} else {
		s.objects[key] = nw
	}
	return true
}

// New starts a server, closed when the test ends. ListObjectsV2 answers
// pages of at most PageSize keys, so clients must follow continuation
// tokens.
func New(t testing.TB) *Server {
	s := &Server{
		Bucket:          "ckpt",
		Region:          "eu-west-3",
		AccessKeyID:     "AKIDTEST",
		SecretAccessKey: "secret/key+test",
		t:               t,
		pageSize:        PageSize,
		objects:         map[string][]byte{},
	}
	s.srv = httptest.NewServer(http.HandlerFunc(s.serve))
	t.Cleanup(func() {
		s.srv.Client().CloseIdleConnections()
		s.srv.Close()
	})
	return s
}

// URL returns the endpoint, http://127.0.0.1:port.
func (s *Server) URL() string { return s.srv.URL }

// Client returns an HTTP client for the endpoint.
func (s *Server) Client() *http.Client { return s.srv.Client() }

// Keys returns the keys of every object, sorted.
func (s *Server) Keys() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Sorted(maps.Keys(s.objects))
}

func (s *Server) errorResponse(w http.ResponseWriter, status int, code, msg string) {
	w.Header().Set("Content-Type", "application/xml")
	w.WriteHeader(status)
	fmt.Fprintf(w, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<Error><Code>%s</Code><Message>%s</Message></Error>", code, msg)
}

var authRE = regexp.MustCompile(`^AWS4-HMAC-SHA256 Credential=([^/,\s]+)/(\d{8})/([a-z0-9-]+)/s3/aws4_request, SignedHeaders=([a-z0-9-]+(?:;[a-z0-9-]+)*), Signature=([0-9a-f]{64})$`)

// verify checks the request's signature; it returns why the request must
// be refused, or "".
func (s *Server) verify(r *http.Request, body []byte) string {
	m := authRE.FindStringSubmatch(r.Header.Get("Authorization"))
	if m == nil {
		return "malformed Authorization header"
	}
	akid, date, region, signedList, sig := m[1], m[2], m[3], m[4], m[5]
	if akid != s.AccessKeyID {
		return "unknown access key " + akid
	}
	if region != s.Region {
		return "wrong region " + region
	}
	amzDate := r.Header.Get("X-Amz-Date")
	ts, err := time.Parse("20060102T150405Z", amzDate)
	if err != nil || amzDate[:8] != date {
		return "bad X-Amz-Date " + amzDate
	}
	if d := time.Since(ts); d > 15*time.Minute || d < -15*time.Minute {
		return "request time too skewed"
	}
	signed := strings.Split(signedList, ";")
	if !slices.IsSorted(signed) {
		return "SignedHeaders not sorted"
	}
	for _, must := range []string{"host", "x-amz-content-sha256", "x-amz-date"} {
		if !slices.Contains(signed, must) {
			return "header " + must + " not signed"
		}
	}
	sum := sha256.Sum256(body)
	payload := r.Header.Get("X-Amz-Content-Sha256")
	if payload != hex.EncodeToString(sum[:]) {
		return "X-Amz-Content-Sha256 does not match the body"
	}
	// The canonical request, string to sign and signing key of
	// https://docs.aws.amazon.com/AmazonS3/latest/API/sig-v4-header-based-auth.html
	var c strings.Builder
	c.WriteString(r.Method + "\n" + r.URL.EscapedPath() + "\n")
	var pairs []string
	for k, vs := range r.URL.Query() {
		for _, v := range vs {
			pairs = append(pairs, encode(k)+"="+encode(v))
		}
	}
	slices.Sort(pairs)
	c.WriteString(strings.Join(pairs, "&") + "\n")
	for _, h := range signed {
		v := strings.Join(r.Header.Values(h), ",")
		if h == "host" {
			v = r.Host
		}
		c.WriteString(h + ":" + strings.Join(strings.Fields(v), " ") + "\n")
	}
	c.WriteString("\n" + signedList + "\n" + payload)
	creq := sha256.Sum256([]byte(c.String()))
	scope := date + "/" + region + "/s3/aws4_request"
	toSign := "AWS4-HMAC-SHA256\n" + amzDate + "\n" + scope + "\n" + hex.EncodeToString(creq[:])
	key := []byte("AWS4" + s.SecretAccessKey)
	for _, part := range []string{date, region, "s3", "aws4_request"} {
		key = mac(key, part)
	}
	if hex.EncodeToString(mac(key, toSign)) != sig {
		return "signature does not match"
	}
	return ""
}

func mac(key []byte, data string) []byte {
	h := hmac.New(sha256.New, key)
	h.Write([]byte(data))
	return h.Sum(nil)
}

// encode is SigV4's URI encoding of a query name or value.
func encode(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(url.QueryEscape(s), "+", "%20"), "%7E", "~")
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		s.errorResponse(w, 400, "IncompleteBody", err.Error())
		return
	}
	if reason := s.verify(r, body); reason != "" {
		s.errorResponse(w, 403, "SignatureDoesNotMatch", reason)
		return
	}
	bucket, key, _ := strings.Cut(strings.TrimPrefix(r.URL.Path, "/"), "/")
	if bucket != s.Bucket {
		s.errorResponse(w, 404, "NoSuchBucket", "no bucket "+bucket)
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.fail != nil {
		if code := s.fail(r.Method, key); code != 0 {
			s.errorResponse(w, code, "InjectedFault", "injected fault")
			return
		}
	}
	switch {
	case key == "" && r.Method == http.MethodGet && r.URL.Query().Get("list-type") == "2":
		s.list(w, r)
	case key == "":
		s.errorResponse(w, 400, "InvalidRequest", "unsupported bucket operation")
	case r.Method == http.MethodPut:
		if r.ContentLength != int64(len(body)) {
			s.errorResponse(w, 400, "IncompleteBody", "Content-Length mismatch")
			return
		}
		s.objects[key] = body
		w.WriteHeader(200)
	case r.Method == http.MethodGet || r.Method == http.MethodHead:
		data, ok := s.objects[key]
		if !ok {
			if r.Method == http.MethodHead {
				w.WriteHeader(404)
				return
			}
			s.errorResponse(w, 404, "NoSuchKey", "The specified key does not exist.")
			return
		}
		w.Header().Set("Content-Length", strconv.Itoa(len(data)))
		w.WriteHeader(200)
		if r.Method == http.MethodGet {
			w.Write(data)
		}
	case r.Method == http.MethodDelete:
		delete(s.objects, key)
		w.WriteHeader(204)
	default:
		s.errorResponse(w, 405, "MethodNotAllowed", r.Method)
	}
}

type object struct {
	Key  string `xml:"Key"`
	Size int    `xml:"Size"`
}

type listResult struct {
	XMLName               xml.Name `xml:"http://s3.amazonaws.com/doc/2006-03-01/ ListBucketResult"`
	Name                  string   `xml:"Name"`
	Prefix                string   `xml:"Prefix"`
	KeyCount              int      `xml:"KeyCount"`
	MaxKeys               int      `xml:"MaxKeys"`
	IsTruncated           bool     `xml:"IsTruncated"`
	ContinuationToken     string   `xml:"ContinuationToken,omitempty"`
	NextContinuationToken string   `xml:"NextContinuationToken,omitempty"`
	Contents              []object `xml:"Contents"`
}

// list serves ListObjectsV2; the continuation token is the last key of the
// previous page, hex encoded (opaque to the client).
func (s *Server) list(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	prefix := q.Get("prefix")
	after := ""
	if tok := q.Get("continuation-token"); tok != "" {
		b, err := hex.DecodeString(tok)
		if err != nil {
			s.errorResponse(w, 400, "InvalidArgument", "bad continuation token")
			return
		}
		after = string(b)
	}
	limit := 1000
	if v := q.Get("max-keys"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			s.errorResponse(w, 400, "InvalidArgument", "bad max-keys")
			return
		}
		limit = n
	}
	page := min(limit, s.pageSize)
	var keys []string
	for k := range s.objects {
		if strings.HasPrefix(k, prefix) && k > after {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	res := listResult{Name: s.Bucket, Prefix: prefix, MaxKeys: limit, ContinuationToken: q.Get("continuation-token")}
	if len(keys) > page {
		keys = keys[:page]
		res.IsTruncated = true
		res.NextContinuationToken = hex.EncodeToString([]byte(keys[len(keys)-1]))
	}
	for _, k := range keys {
		res.Contents = append(res.Contents, object{k, len(s.objects[k])})
	}
	res.KeyCount = len(keys)
	w.Header().Set("Content-Type", "application/xml")
	io.WriteString(w, xml.Header)
	if err := xml.NewEncoder(w).Encode(res); err != nil {
		s.t.Errorf("fake S3: encoding list: %v", err)
	}
}
