package s3test

import (
	"errors"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"time"
)

// Fault is what the proxy does to one request instead of passing it on
// as it is. The zero Fault passes it on.
type Fault struct {
	// Status, if set, answers the request with this HTTP status (and no
	// body) without passing it on.
	Status int
	// Delay holds the request this long (or until the client gives up)
	// before passing it on.
	Delay time.Duration
	// CutRequest, if set, reads this many bytes of the request body and
	// then drops the connection, without passing the request on: an
	// upload cut off midway.
	CutRequest int64
	// CutResponse, if set, passes the request on and drops the
	// connection after this many bytes of the response body: a download
	// cut off midway.
	CutResponse int64
}

// Event is one request the proxy saw, logged when it ended.
type Event struct {
	// Method is the request's method.
	Method string
	// Key is the object key (the path without the bucket), "" for
	// requests on the bucket.
	Key string
	// Query is the request's query string (uploadId, partNumber, ...).
	Query url.Values
	// Range is the request's Range header.
	Range string
	// Status is the status the client got (0 if the connection was cut).
	Status int
	// Fault says whether the proxy injected a fault.
	Fault bool
}

// Proxy is a reverse proxy in front of the server that injects the faults
// a rule chooses and logs every request. Its URL is an S3 endpoint with
// the server's keys: requests keep their Host header, so their
// signatures stay valid.
type Proxy struct {
	// URL is the proxy's endpoint, http://127.0.0.1:port.
	URL string

	done   chan struct{} // closed when the test ends
	mu     sync.Mutex
	rule   func(r *http.Request, key string) Fault
	events []Event
}

// Proxy starts a fault-injecting proxy in front of the server, closed
// when the test ends.
func (s *Server) Proxy() *Proxy {
	target, err := url.Parse(s.Endpoint)
	if err != nil {
		s.t.Fatal(err)
	}
	p := &Proxy{done: make(chan struct{})}
	tr := Transport(s.t)
	rp := &httputil.ReverseProxy{
		Rewrite: func(r *httputil.ProxyRequest) {
			r.Out.URL.Scheme, r.Out.URL.Host = target.Scheme, target.Host
			r.Out.Host = r.In.Host // signed by the client
		},
		Transport: tr,
		ErrorLog:  log.New(io.Discard, "", 0), // injected cuts are no news
	}
	bucket := "/" + s.Bucket
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		key := strings.TrimPrefix(strings.TrimPrefix(r.URL.Path, bucket), "/")
		p.mu.Lock()
		rule := p.rule
		p.mu.Unlock()
		var f Fault
		if rule != nil {
			f = rule(r, key)
		}
		ev := Event{Method: r.Method, Key: key, Query: r.URL.Query(), Range: r.Header.Get("Range"), Fault: f != (Fault{})}
		defer func() {
			p.mu.Lock()
			p.events = append(p.events, ev)
			p.mu.Unlock()
		}()
		if f.Delay > 0 {
			t := time.NewTimer(f.Delay)
			select {
			case <-t.C:
			case <-r.Context().Done():
				t.Stop()
				return
			case <-p.done: // the test ended (a client that gave up during an upload is not noticed)
				t.Stop()
				return
			}
		}
		switch {
		case f.Status != 0:
			ev.Status = f.Status
			w.WriteHeader(f.Status)
		case f.CutRequest > 0:
			io.CopyN(io.Discard, r.Body, f.CutRequest)
			panic(http.ErrAbortHandler) // the server drops the connection
		default:
			sw := &statusWriter{ResponseWriter: w, cut: f.CutResponse}
			rp.ServeHTTP(sw, r)
			ev.Status = sw.status
			if sw.cutNow {
				ev.Status = 0
				panic(http.ErrAbortHandler)
			}
		}
	}))
	srv.Config.ErrorLog = log.New(io.Discard, "", 0)
	srv.Start()
	s.t.Cleanup(srv.Close)
	s.t.Cleanup(func() { close(p.done) }) // runs first
	p.URL = srv.URL
	return p
}

// statusWriter records the status and, with cut set, stops writing the
// body after cut bytes.
type statusWriter struct {
	http.ResponseWriter
	status  int
	cut     int64
	written int64
	cutNow  bool
}

// WriteHeader implements http.ResponseWriter.
func (w *statusWriter) WriteHeader(code int) {
	w.status = code
	w.ResponseWriter.WriteHeader(code)
}

var errCut = errors.New("s3test: connection cut")

// Write implements http.ResponseWriter.
func (w *statusWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	if w.cut > 0 && w.written+int64(len(b)) > w.cut {
		n, _ := w.ResponseWriter.Write(b[:w.cut-w.written])
		w.written += int64(n)
		if f, ok := w.ResponseWriter.(http.Flusher); ok {
			f.Flush()
		}
		w.cutNow = true
		return n, errCut
	}
	n, err := w.ResponseWriter.Write(b)
	w.written += int64(n)
	return n, err
}

// Flush implements http.Flusher.
func (w *statusWriter) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// SetRule makes the proxy ask rule what to do with every request (key is
// the object key); nil passes every request on.
func (p *Proxy) SetRule(rule func(r *http.Request, key string) Fault) {
	p.mu.Lock()
	p.rule = rule
	p.mu.Unlock()
}

// Events returns the requests seen so far, in the order they ended.
func (p *Proxy) Events() []Event {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]Event(nil), p.events...)
}

// Times returns a rule that injects f into the first n requests for which
// match is true, then passes everything on.
func Times(n int, match func(r *http.Request, key string) bool, f Fault) func(*http.Request, string) Fault {
	fs := make([]Fault, n)
	for i := range fs {
		fs[i] = f
	}
	return Sequence(match, fs...)
}

// Sequence returns a rule that injects the faults, one each, into the
// first requests for which match is true, then passes everything on.
func Sequence(match func(r *http.Request, key string) bool, faults ...Fault) func(*http.Request, string) Fault {
	var mu sync.Mutex
	return func(r *http.Request, key string) Fault {
		mu.Lock()
		defer mu.Unlock()
		if len(faults) > 0 && match(r, key) {
			f := faults[0]
			faults = faults[1:]
			return f
		}
		return Fault{}
	}
}
