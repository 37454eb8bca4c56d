package store

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/xml"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// fakeS3 is an in-memory S3 serving the subset the S3 store uses: PUT, GET,
// HEAD and DELETE object and ListObjectsV2 (path style, one bucket). Every
// request must carry a well-formed SigV4 Authorization header whose
// signature verifies with the fake's secret and whose payload hash matches
// the body; otherwise the fake answers 403 like S3.
type fakeS3 struct {
	t      testing.TB
	bucket string
	creds  Credentials
	region string
	// pageSize caps ListObjectsV2 pages, to exercise continuation.
	pageSize int

	mu      sync.Mutex
	objects map[string][]byte
	// fail, if set, returns an HTTP status to answer a request with
	// instead of serving it (0: serve it).
	fail     func(method, key string) int
	requests int
	srv      *httptest.Server
}

var authRE = regexp.MustCompile(`^AWS4-HMAC-SHA256 Credential=([^/,\s]+)/(\d{8})/([a-z0-9-]+)/s3/aws4_request, SignedHeaders=([a-z0-9-]+(?:;[a-z0-9-]+)*), Signature=([0-9a-f]{64})$`)

func newFakeS3(t testing.TB) *fakeS3 {
	f := &fakeS3{
		t:        t,
		bucket:   "ckpt",
		creds:    Credentials{AccessKeyID: "AKIDTEST", SecretAccessKey: "secret/key+test"},
		region:   "eu-west-3",
		pageSize: 3,
		objects:  map[string][]byte{},
	}
	f.srv = httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(func() {
		f.srv.Client().CloseIdleConnections()
		f.srv.Close()
	})
	return f
}

// store returns an S3 store on the fake (a fresh instance: a restart).
func (f *fakeS3) store(t testing.TB, prefix string, opts ...Option) *S3 {
	t.Helper()
	opts = append([]Option{WithRegion(f.region)}, opts...)
	s, err := NewS3(f.srv.URL, f.bucket, prefix, f.creds, f.srv.Client(), opts...)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func (f *fakeS3) errorResponse(w http.ResponseWriter, status int, code, msg string) {
	w.Header().Set("Content-Type", "application/xml")
	w.WriteHeader(status)
	fmt.Fprintf(w, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<Error><Code>%s</Code><Message>%s</Message></Error>", code, msg)
}

// verify checks the request's SigV4 signature; it returns a reason if the
// request must be refused.
func (f *fakeS3) verify(r *http.Request, body []byte) string {
	m := authRE.FindStringSubmatch(r.Header.Get("Authorization"))
	if m == nil {
		return "malformed Authorization header: " + r.Header.Get("Authorization")
	}
	akid, date, region, signedList, sig := m[1], m[2], m[3], m[4], m[5]
	if akid != f.creds.AccessKeyID {
		return "unknown access key " + akid
	}
	if region != f.region {
		return "wrong region " + region
	}
	amzDate := r.Header.Get("X-Amz-Date")
	ts, err := time.Parse(amzDateFormat, amzDate)
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
	if tok := r.Header.Get("X-Amz-Security-Token"); tok != f.creds.SessionToken {
		return "wrong security token " + tok
	} else if tok != "" && !slices.Contains(signed, "x-amz-security-token") {
		return "security token not signed"
	}
	sum := sha256.Sum256(body)
	if got := r.Header.Get("X-Amz-Content-Sha256"); got != hex.EncodeToString(sum[:]) {
		return "X-Amz-Content-Sha256 does not match the body"
	}
	header := func(name string) string {
		if name == "host" {
			return r.Host
		}
		return strings.Join(r.Header.Values(name), ",")
	}
	canonical := canonicalRequest(r.Method, r.URL.EscapedPath(), r.URL.Query(), signed, header, r.Header.Get("X-Amz-Content-Sha256"))
	scope := date + "/" + region + "/s3/aws4_request"
	if want := signature(f.creds.SecretAccessKey, amzDate, region, scope, canonical); want != sig {
		return "signature does not match"
	}
	return ""
}

func (f *fakeS3) serve(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		f.errorResponse(w, 400, "IncompleteBody", err.Error())
		return
	}
	if reason := f.verify(r, body); reason != "" {
		f.errorResponse(w, 403, "SignatureDoesNotMatch", reason)
		return
	}
	bucket, key, _ := strings.Cut(strings.TrimPrefix(r.URL.Path, "/"), "/")
	if bucket != f.bucket {
		f.errorResponse(w, 404, "NoSuchBucket", "no bucket "+bucket)
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.requests++
	if f.fail != nil {
		if status := f.fail(r.Method, key); status != 0 {
			f.errorResponse(w, status, "InjectedFault", "injected fault")
			return
		}
	}
	switch {
	case key == "" && r.Method == http.MethodGet && r.URL.Query().Get("list-type") == "2":
		f.list(w, r)
	case key == "":
		f.errorResponse(w, 400, "InvalidRequest", "unsupported bucket operation")
	case r.Method == http.MethodPut:
		if r.ContentLength != int64(len(body)) {
			f.errorResponse(w, 400, "IncompleteBody", "Content-Length mismatch")
			return
		}
		f.objects[key] = body
		w.Header().Set("ETag", `"`+hex.EncodeToString(sum(body))+`"`)
		w.WriteHeader(200)
	case r.Method == http.MethodGet || r.Method == http.MethodHead:
		data, ok := f.objects[key]
		if !ok {
			if r.Method == http.MethodHead {
				w.WriteHeader(404)
				return
			}
			f.errorResponse(w, 404, "NoSuchKey", "The specified key does not exist.")
			return
		}
		w.Header().Set("Content-Length", strconv.Itoa(len(data)))
		w.WriteHeader(200)
		if r.Method == http.MethodGet {
			w.Write(data)
		}
	case r.Method == http.MethodDelete:
		delete(f.objects, key)
		w.WriteHeader(204)
	default:
		f.errorResponse(w, 405, "MethodNotAllowed", r.Method)
	}
}

func sum(b []byte) []byte { s := sha256.Sum256(b); return s[:16] }

type listResult struct {
	XMLName               xml.Name `xml:"http://s3.amazonaws.com/doc/2006-03-01/ ListBucketResult"`
	Name                  string   `xml:"Name"`
	Prefix                string   `xml:"Prefix"`
	KeyCount              int      `xml:"KeyCount"`
	MaxKeys               int      `xml:"MaxKeys"`
	IsTruncated           bool     `xml:"IsTruncated"`
	ContinuationToken     string   `xml:"ContinuationToken,omitempty"`
	NextContinuationToken string   `xml:"NextContinuationToken,omitempty"`
	Contents              []struct {
		Key  string `xml:"Key"`
		Size int    `xml:"Size"`
	} `xml:"Contents"`
}

// list serves ListObjectsV2; the continuation token is the last key of the
// previous page, hex encoded (opaque to the client).
func (f *fakeS3) list(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	prefix := q.Get("prefix")
	after := ""
	if tok := q.Get("continuation-token"); tok != "" {
		b, err := hex.DecodeString(tok)
		if err != nil {
			f.errorResponse(w, 400, "InvalidArgument", "bad continuation token")
			return
		}
		after = string(b)
	}
	max := 1000
	if s := q.Get("max-keys"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 0 {
			f.errorResponse(w, 400, "InvalidArgument", "bad max-keys")
			return
		}
		max = n
	}
	page := min(max, f.pageSize)
	var keys []string
	for k := range f.objects {
		if strings.HasPrefix(k, prefix) && k > after {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	res := listResult{Name: f.bucket, Prefix: prefix, MaxKeys: max, ContinuationToken: q.Get("continuation-token")}
	if len(keys) > page {
		keys = keys[:page]
		res.IsTruncated = true
		res.NextContinuationToken = hex.EncodeToString([]byte(keys[len(keys)-1]))
	}
	for _, k := range keys {
		res.Contents = append(res.Contents, struct {
			Key  string `xml:"Key"`
			Size int    `xml:"Size"`
		}{k, len(f.objects[k])})
	}
	res.KeyCount = len(keys)
	w.Header().Set("Content-Type", "application/xml")
	io.WriteString(w, xml.Header)
	if err := xml.NewEncoder(w).Encode(res); err != nil {
		f.t.Errorf("fake S3: encoding list: %v", err)
	}
}

// mutate replaces object key with fn(old); fn returning nil deletes it.
func (f *fakeS3) mutate(key string, fn func([]byte) []byte) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	old, ok := f.objects[key]
	if !ok {
		return false
	}
	if nw := fn(slices.Clone(old)); nw == nil {
		delete(f.objects, key)
	} else {
		f.objects[key] = nw
	}
	return true
}

func (f *fakeS3) keys() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Sorted(maps.Keys(f.objects))
}
