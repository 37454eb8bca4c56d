package rest

import (
	"context"
	"errors"
	"fmt"
	"mime"
	"net"
	"net/http"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/weirstream/weir/internal/checkpoint/store"
	"github.com/weirstream/weir/internal/monitor"
)

// The server's defenses against the web pages its operator opens and
// against the clients that reach it:
//
//   - Host: a request whose Host header is not an IP address, a loopback
//     name, the listen address's host, the machine's host name or one of
//     Options.Hosts is refused (403), so that a page of another site whose
//     name resolves to 127.0.0.1 (DNS rebinding) cannot read or act.
//   - Cross-origin writes: a request that is not GET, HEAD or OPTIONS is
//     refused (403) if it has an Origin header that is not the server's
//     own origin, if the browser says it is cross-site (Sec-Fetch-Site),
//     or if its content type is one a page of another origin may send
//     without asking (application/x-www-form-urlencoded,
//     multipart/form-data, text/plain).
//   - Details: key values and exceptions' texts are shown only with the
//     token (a server with one) or with Options.OpenDetails.
//   - Savepoint targets: only under the job's default savepoint directory
//     or Options.SavepointRoots.
//   - Limits: read, write and idle timeouts and a bound on connections.

// allowedHosts returns the host names (lower case) requests may give in
// their Host header besides IP addresses and loopback names.
func allowedHosts(addr string, extra []string) map[string]bool {
	m := map[string]bool{}
	add := func(h string) {
		if hh, _, err := net.SplitHostPort(h); err == nil {
			h = hh
		}
		h = strings.TrimSuffix(strings.ToLower(strings.Trim(h, "[]")), ".")
		if h != "" {
			m[h] = true
		}
	}
	add(addr)
	if name, err := os.Hostname(); err == nil {
		add(name)
	}
	for _, h := range extra {
		add(h)
	}
	return m
}

// hostAllowed reports whether a request's Host header names this server.
func (s *Server) hostAllowed(hostport string) bool {
	if hostport == "" {
		return true // HTTP/1.0 without Host: not a browser
	}
	host := hostport
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		host = h
	}
	host = strings.TrimSuffix(strings.ToLower(strings.Trim(host, "[]")), ".")
	if net.ParseIP(host) != nil || host == "localhost" || strings.HasSuffix(host, ".localhost") {
		// An address is no name a rebinding site can take over.
		return true
	}
	return s.hosts[host]
}

// simpleContentTypes are the content types a page may send to another
// origin without a preflight request (CORS-safelisted).
var simpleContentTypes = map[string]bool{
	"application/x-www-form-urlencoded": true,
	"multipart/form-data":               true,
	"text/plain":                        true,
}

// checkRequest refuses requests with a foreign Host and cross-origin
// writes before they reach h.
func (s *Server) checkRequest(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !s.hostAllowed(r.Host) {
			writeError(w, http.StatusForbidden, fmt.Sprintf("Host %q is not this server's name: use its address or a loopback name, or name it with rest.WithHosts (a reverse proxy's name)", r.Host))
			return
		}
		switch r.Method {
		case http.MethodGet, http.MethodHead, http.MethodOptions:
			h.ServeHTTP(w, r)
			return
		}
		if o := r.Header.Get("Origin"); o != "" && !sameOrigin(o, r.Host) {
			writeError(w, http.StatusForbidden, fmt.Sprintf("cross-origin request refused: Origin %s is not this server's (%s)", o, r.Host))
			return
		}
		if r.Header.Get("Sec-Fetch-Site") == "cross-site" {
			writeError(w, http.StatusForbidden, "cross-site request refused (Sec-Fetch-Site: cross-site)")
			return
		}
		if ct := r.Header.Get("Content-Type"); ct != "" {
			mt, _, err := mime.ParseMediaType(ct)
			if err != nil || simpleContentTypes[strings.ToLower(mt)] {
				writeError(w, http.StatusForbidden, fmt.Sprintf("content type %q refused for a write action, which a page of another site could send: send application/json or no body", ct))
				return
			}
		}
		h.ServeHTTP(w, r)
	})
}

// sameOrigin reports whether origin (scheme://host[:port]) is the
// server's own, reached as host (the request's Host header).
func sameOrigin(origin, host string) bool {
	u, err := url.Parse(origin)
	if err != nil || u.Host == "" || u.Path != "" && u.Path != "/" {
		return false
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return false
	}
	return strings.EqualFold(u.Host, host) || strings.EqualFold(u.Host+":"+defaultPort(u.Scheme), host) ||
		strings.EqualFold(u.Host, strings.TrimSuffix(host, ":"+defaultPort(u.Scheme)))
}

func defaultPort(scheme string) string {
	if scheme == "https" {
		return "443"
	}
	return "80"
}

// details reports whether r may see key values and exceptions' texts.
func (s *Server) details(r *http.Request) bool {
	return s.opts.OpenDetails || s.opts.Token != "" && s.authorized(r)
}

// view returns snap as r may see it: redacted without the details.
func (s *Server) view(r *http.Request, snap *monitor.Snapshot) *monitor.Snapshot {
	if s.details(r) {
		return snap
	}
	return snap.Redact()
}

// SavepointDirer is implemented by jobs that have a default savepoint
// directory (weir.DefaultSavepointDir, RunService's), under which REST
// clients may name savepoint targets.
type SavepointDirer interface {
	SavepointDir() string
}

// errTarget is a savepoint target outside the allowed roots.
var errTarget = errors.New("savepoint target refused")

// savepointTarget checks a savepoint target a request names against the
// allowed roots and returns it cleaned ("" stays "": the job's default).
func (s *Server) savepointTarget(e *entry, dir string) (string, error) {
	if dir == "" {
		return "", nil
	}
	var roots []string
	if d, ok := e.job.(SavepointDirer); ok && d.SavepointDir() != "" {
		roots = append(roots, d.SavepointDir())
	}
	roots = append(roots, s.opts.SavepointRoots...)
	refuse := func(why string) error {
		allowed := "none: the job has no default savepoint directory (weir.DefaultSavepointDir) and no rest.AllowSavepointTargets was given; send no target to use the default"
		if len(roots) > 0 {
			allowed = strings.Join(roots, ", ")
		}
		return fmt.Errorf("%w: %s; a REST client may name only targets under the job's default savepoint directory or rest.AllowSavepointTargets (allowed: %s)", errTarget, why, allowed)
	}
	l, err := store.ParseLocation(dir)
	if err != nil {
		return "", refuse(err.Error())
	}
	if l.IsRemote() {
		for _, el := range strings.Split(l.Key, "/") {
			if el == "." || el == ".." {
				return "", refuse(fmt.Sprintf("%s has . or .. elements", dir))
			}
		}
	} else if l, err = l.Abs(); err != nil {
		return "", refuse(err.Error())
	}
	for _, root := range roots {
		rl, err := store.ParseLocation(root)
		if err != nil {
			continue
		}
		if within(l, rl) {
			return l.String(), nil
		}
	}
	return "", refuse(fmt.Sprintf("%s is not under an allowed root", dir))
}

// within reports whether location l is root or inside it, comparing
// cleaned absolute paths (and the directories symbolic links lead to)
// for local ones.
func within(l, root store.Location) bool {
	if l.IsRemote() != root.IsRemote() {
		return false
	}
	if l.IsRemote() {
		rk := path.Clean("/" + root.Key)
		return l.Scheme == root.Scheme && l.Bucket == root.Bucket &&
			(rk == "/" || "/"+l.Key == rk || strings.HasPrefix("/"+l.Key, rk+"/"))
	}
	root, err := root.Abs()
	if err != nil {
		return false
	}
	inside := func(p, r string) bool {
		rel, err := filepath.Rel(r, p)
		return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) && !filepath.IsAbs(rel)
	}
	return inside(l.Dir, root.Dir) && inside(resolve(l.Dir), resolve(root.Dir))
}

// resolve follows the symbolic links of the longest existing prefix of
// the absolute path p.
func resolve(p string) string {
	rest := ""
	for {
		if r, err := filepath.EvalSymlinks(p); err == nil {
			return filepath.Join(r, rest)
		}
		parent := filepath.Dir(p)
		if parent == p {
			return filepath.Join(p, rest)
		}
		rest = filepath.Join(filepath.Base(p), rest)
		p = parent
	}
}

// longRequest lifts the server's read and write deadlines for a request
// that takes d by design (a profile, a flame graph, an input capture, a
// synchronous savepoint: 0 means no deadline), plus a margin to answer.
func longRequest(w http.ResponseWriter, r *http.Request, d time.Duration) *http.Request {
	rc := http.NewResponseController(w)
	var deadline time.Time
	if d > 0 {
		deadline = time.Now().Add(d + 30*time.Second)
	}
	rc.SetReadDeadline(deadline)
	rc.SetWriteDeadline(deadline)
	// net/http/pprof refuses a profile longer than the server's
	// WriteTimeout: show it a server without one, as this request has
	// its own deadline now.
	return r.WithContext(context.WithValue(r.Context(), http.ServerContextKey, noWriteTimeout))
}

var noWriteTimeout = &http.Server{}

// limitListener accepts at most n connections at once; more wait in
// Accept until one is closed.
func limitListener(ln net.Listener, n int) net.Listener {
	return &limited{Listener: ln, sem: make(chan struct{}, n), done: make(chan struct{})}
}

type limited struct {
	net.Listener
	sem  chan struct{}
	done chan struct{} // closed by Close
	once sync.Once
}

func (l *limited) Accept() (net.Conn, error) {
	select {
	case l.sem <- struct{}{}:
	case <-l.done:
		return nil, net.ErrClosed
	}
	c, err := l.Listener.Accept()
	if err != nil {
		<-l.sem
		return nil, err
	}
	return &limitedConn{Conn: c, release: func() { <-l.sem }}, nil
}

func (l *limited) Close() error {
	l.once.Do(func() { close(l.done) })
	return l.Listener.Close()
}

type limitedConn struct {
	net.Conn
	once    sync.Once
	release func()
}

func (c *limitedConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(c.release)
	return err
}
