package rest

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/weirstream/weir/internal/control"
	"github.com/weirstream/weir/internal/monitor"
)

// req sends a request with the given Host and headers ("Name: value").
func req(t *testing.T, method, url, host, body string, headers ...string) (int, string) {
	t.Helper()
	r, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if host != "" {
		r.Host = host
	}
	for _, h := range headers {
		k, v, _ := strings.Cut(h, ": ")
		r.Header.Set(k, v)
	}
	resp, err := client.Do(r)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(data)
}

// TestCrossSiteRequests stages what a web page the operator opens can
// send to a server without a token: the stop of issue 33 (a form POST
// from another origin, through a rebound name), reads through a rebound
// name, and writes from another origin or with a content type a page may
// send without asking. The server's own clients (same origin, JSON, no
// Origin at all) still act.
func TestCrossSiteRequests(t *testing.T) {
	s, job, base := start(t, Options{Hosts: []string{"weir.example"}})
	addr := s.Addr()
	stop := base + "/jobs/orders-join/stop"
	form := "Content-Type: application/x-www-form-urlencoded"
	for _, c := range []struct {
		name, method, url, host, body string
		headers                       []string
	}{
		{"the stop of issue 33", "POST", stop, "attacker.example", "", []string{"Origin: http://evil.example", form}},
		{"a rebound name, same origin", "POST", stop, "attacker.example:" + port(addr), "{}", []string{"Origin: http://attacker.example:" + port(addr), "Content-Type: application/json"}},
		{"a rebound name reading", "GET", base + "/weir/jobs/orders-join/snapshot", "attacker.example", "", nil},
		{"a rebound name reading the dashboard", "GET", base + "/", "attacker.example:" + port(addr), "", nil},
		{"another origin, JSON", "POST", stop, "", "{}", []string{"Origin: http://evil.example", "Content-Type: application/json"}},
		{"another port", "POST", stop, "", "{}", []string{"Origin: http://127.0.0.1:1", "Content-Type: application/json"}},
		{"an opaque origin", "PATCH", base + "/jobs/orders-join", "", "", []string{"Origin: null"}},
		{"cross-site fetch metadata", "POST", stop, "", "{}", []string{"Sec-Fetch-Site: cross-site", "Content-Type: application/json"}},
		{"a form without Origin", "POST", stop, "", "a=b", []string{form}},
		{"a form with a charset", "POST", stop, "", "a=b", []string{"Content-Type: Application/X-WWW-Form-Urlencoded; charset=utf-8"}},
		{"multipart", "POST", stop, "", "--b--", []string{"Content-Type: multipart/form-data; boundary=b"}},
		{"text/plain", "POST", base + "/jobs/orders-join/savepoints", "", `{"dir": ""}`, []string{"Content-Type: text/plain;charset=UTF-8"}},
		{"a bad content type", "POST", stop, "", "{}", []string{"Content-Type: ;;"}},
		{"a rebound name for the legacy savepoint", "POST", base + "/jobs/orders-join/savepoints", "evil.example", `{"dir": ""}`, []string{"Content-Type: application/json"}},
	} {
		if code, body := req(t, c.method, c.url, c.host, c.body, c.headers...); code != http.StatusForbidden {
			t.Errorf("%s: %d %s, want 403", c.name, code, body)
		}
	}
	if len(job.sp) != 0 || job.cancelled {
		t.Fatalf("refused requests acted: savepoints %v, cancelled %v", job.sp, job.cancelled)
	}

	// Reads from any origin, with a name of this server.
	for _, host := range []string{"", "localhost:" + port(addr), "LOCALHOST", "app.localhost:1", "[::1]:" + port(addr), "10.1.2.3", "weir.example", "Weir.Example.:443"} {
		if code, body := req(t, "GET", base+"/jobs", host, "", "Origin: http://evil.example"); code != 200 {
			t.Errorf("GET /jobs with Host %q: %d %s", host, code, body)
		}
	}
	// The server's own clients act: no Origin (curl, weir savepoint), or
	// its own origin with JSON (a page it serves); a proxy's name with
	// its https origin.
	job.block = nil
	for _, c := range []struct {
		host    string
		headers []string
	}{
		{"", nil},
		{"", []string{"Content-Type: application/json"}},
		{"", []string{"Origin: http://" + addr, "Content-Type: application/json", "Sec-Fetch-Site: same-origin"}},
		{"localhost:" + port(addr), []string{"Origin: http://localhost:" + port(addr), "Content-Type: application/json; charset=utf-8"}},
		{"weir.example", []string{"Origin: https://weir.example", "Content-Type: application/json"}},
	} {
		if code, body := req(t, "POST", base+"/jobs/orders-join/savepoints", c.host, `{}`, c.headers...); code != http.StatusAccepted {
			t.Errorf("savepoint with Host %q and %v: %d %s", c.host, c.headers, code, body)
		}
	}
	if code, body := req(t, "PATCH", base+"/jobs/orders-join", "", ""); code != http.StatusAccepted || !job.cancelled {
		t.Fatalf("cancel without Origin: %d %s", code, body)
	}
}

func port(addr string) string {
	_, p, _ := net.SplitHostPort(addr)
	return p
}

// TestGuardedDetails stages open monitoring reading key values and
// exceptions' texts: redacted on a server without a token, and on one
// with a token for requests without it (or with a wrong one); shown with
// the token, or to all with OpenDetails. The doctor's hot-key evidence
// follows the same rule.
func TestGuardedDetails(t *testing.T) {
	check := func(t *testing.T, base, token string, shown bool) {
		t.Helper()
		var auth []string
		if token != "" {
			auth = []string{"Authorization: Bearer " + token}
		}
		get := func(path string) string {
			code, body := req(t, "GET", base+path, "", "", auth...)
			if code != 200 {
				t.Fatalf("GET %s: %d %s", path, code, body)
			}
			return body
		}
		for _, path := range []string{"/weir/jobs/" + jobID + "/snapshot", "/weir/jobs/" + jobID + "/history", "/jobs/" + jobID + "/exceptions"} {
			body := get(path)
			leaks := strings.Contains(body, `"k1"`) || strings.Contains(body, "boom") || strings.Contains(body, "goroutine 7")
			redacted := strings.Contains(body, "redacted: ")
			if shown && (!leaks || redacted) || !shown && (leaks || !redacted) {
				t.Errorf("GET %s with token %q (details shown: %v): %.600s", path, token, shown, body)
			}
		}
		var snap monitor.Snapshot
		json.Unmarshal([]byte(get("/weir/jobs/"+jobID+"/snapshot")), &snap)
		if k := snap.Vertices[2].KeySkew[0].Keys[0]; k.Count != 80 || k.Subtask != 1 || (k.Key == "k1") != shown {
			t.Errorf("hot key %+v (details shown: %v)", k, shown)
		}
		if x := snap.Exceptions[0]; x.Name != "*errors.errorString" || x.Task != "join" || x.Timestamp != 1_700_000_001_000 {
			t.Errorf("exception %+v: its name, task and time stay", x)
		}
	}
	t.Run("no token", func(t *testing.T) {
		_, _, base := start(t, Options{})
		check(t, base, "", false)
		check(t, base, "anything", false)
	})
	t.Run("token", func(t *testing.T) {
		_, _, base := start(t, Options{Token: "s3cret"})
		check(t, base, "", false)
		check(t, base, "wrong", false)
		check(t, base, "s3cret", true)
	})
	t.Run("open details", func(t *testing.T) {
		_, _, base := start(t, Options{OpenDetails: true})
		check(t, base, "", true)
		_, _, base = start(t, Options{Token: "s3cret", OpenDetails: true})
		check(t, base, "", true)
	})
	t.Run("doctor", func(t *testing.T) {
		// Skewed records to subtask 1 of the join: a hot-key finding,
		// whose evidence names k1 only with the details.
		s, err := Listen("127.0.0.1:0", Options{SampleEvery: -1, Token: "s3cret"})
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close(5 * time.Second)
		job := skewJob{&fakeJob{calls: 1}}
		s.Register(job)
		job.tick()
		s.Sample()
		base := "http://" + s.Addr()
		for _, c := range []struct {
			token string
			shown bool
		}{{"", false}, {"s3cret", true}} {
			var auth []string
			if c.token != "" {
				auth = []string{"Authorization: Bearer " + c.token}
			}
			_, body := req(t, "GET", base+"/weir/jobs/"+jobID+"/doctor", "", "", auth...)
			if strings.Contains(body, "k1") != c.shown || strings.Contains(body, "redacted") == c.shown {
				t.Errorf("doctor with token %q: %s", c.token, body)
			}
		}
	})
	// The snapshot the job gave is not changed by a redacted view.
	s := (&fakeJob{calls: 1}).Snapshot()
	_ = s.Redact()
	if s.Vertices[2].KeySkew[0].Keys[0].Key != "k1" || !strings.Contains(s.Exceptions[0].Message, "boom") {
		t.Fatalf("Redact changed its snapshot: %+v", s)
	}
}

// dirJob is a fakeJob with a default savepoint directory.
type dirJob struct {
	*fakeJob
	dir string
}

func (d *dirJob) SavepointDir() string { return d.dir }

// TestSavepointTargets stages a client with the token choosing where the
// process writes: only targets under the job's default directory or the
// allowed roots are taken, cleaned; others, ../ escapes, other buckets and
// links out of a root included, are refused with 403 on every route.
func TestSavepointTargets(t *testing.T) {
	tmp := t.TempDir()
	def := filepath.Join(tmp, "default")
	root := filepath.Join(tmp, "root")
	outside := filepath.Join(tmp, "outside")
	for _, d := range []string{def, root, outside} {
		os.Mkdir(d, 0o755)
	}
	if err := os.Symlink(outside, filepath.Join(root, "link")); err != nil {
		t.Fatal(err)
	}
	s, err := Listen("127.0.0.1:0", Options{SampleEvery: -1, Token: "t", SavepointRoots: []string{root, "s3://bucket/weir/sp", "file://" + filepath.ToSlash(filepath.Join(tmp, "urls"))}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close(5 * time.Second)
	job := &dirJob{fakeJob: &fakeJob{calls: 1}, dir: def}
	s.Register(job)
	base := "http://" + s.Addr()
	auth := "Authorization: Bearer t"
	cwd, _ := os.Getwd()
	rel, _ := filepath.Rel(cwd, filepath.Join(root, "rel"))

	allowed := map[string]string{ // target: as the job gets it
		"":                                  "",
		def:                                 def,
		filepath.Join(def, "a"):             filepath.Join(def, "a"),
		root + "/x/../y":                    filepath.Join(root, "y"),
		rel:                                 filepath.Join(root, "rel"),
		"file://" + root + "/z":             "file://" + filepath.ToSlash(filepath.Join(root, "z")),
		filepath.Join(tmp, "urls", "u"):     filepath.Join(tmp, "urls", "u"),
		"s3://bucket/weir/sp":               "s3://bucket/weir/sp",
		"s3://bucket/weir/sp/job1":          "s3://bucket/weir/sp/job1",
		filepath.Join(root, "new", "child"): filepath.Join(root, "new", "child"),
	}
	refused := []string{
		"/etc",
		outside,
		tmp,
		root + "/../outside",
		def + "/../../../etc",
		"file://" + outside,
		"file:///etc/weir",
		filepath.Join(root, "link"),
		filepath.Join(root, "link", "x"),
		root + "-sibling",
		"../../../../tmp/x",
		"s3://bucket/weir/spx",
		"s3://bucket/weir/sp/../other",
		"s3://bucket/weir/sp/./x",
		"s3://bucket/weir",
		"s3://other/weir/sp",
		"gs://bucket/weir/sp",
		"file://host/etc",
	}
	var want []string
	for target, got := range allowed {
		for _, c := range []struct{ path, field string }{{"savepoints", "target-directory"}, {"stop", "targetDirectory"}} {
			body, _ := json.Marshal(map[string]string{c.field: target})
			code, data := req(t, "POST", base+"/jobs/"+jobID+"/"+c.path, "", string(body), auth, "Content-Type: application/json")
			if code != http.StatusAccepted {
				t.Errorf("%s to %q: %d %s", c.path, target, code, data)
				continue
			}
			want = append(want, fmt.Sprintf("%s stop=%v", got, c.path == "stop"))
		}
	}
	for _, target := range refused {
		for _, c := range []struct{ path, field string }{{"savepoints", "target-directory"}, {"stop", "targetDirectory"}, {"savepoints", "dir"}} {
			body, _ := json.Marshal(map[string]string{c.field: target})
			code, data := req(t, "POST", base+"/jobs/"+jobID+"/"+c.path, "", string(body), auth, "Content-Type: application/json")
			if code != http.StatusForbidden || !strings.Contains(data, "savepoint target refused") || !strings.Contains(data, root) {
				t.Errorf("%s with %s %q: %d %s, want 403 naming the allowed roots", c.path, c.field, target, code, data)
			}
		}
	}
	s.Close(5 * time.Second) // waits for the asynchronous savepoints
	job.mu.Lock()
	got := job.sp
	job.mu.Unlock()
	if len(got) != len(want) {
		t.Fatalf("the job was asked for %d savepoints, want %d:\n%v\nwant (in any order)\n%v", len(got), len(want), got, want)
	}
	count := map[string]int{}
	for _, w := range want {
		count[w]++
	}
	for _, g := range got {
		count[g]--
	}
	for k, n := range count {
		if n != 0 {
			t.Errorf("savepoint %q asked %d times more than wanted", k, -n)
		}
	}

	// Without a default directory or roots, only the default (none) is
	// taken, and the refusal says how to allow a target.
	s2, _, base2 := start(t, Options{})
	code, data := req(t, "POST", base2+"/jobs/"+jobID+"/savepoints", "", `{"target-directory": "/tmp/x"}`, "Content-Type: application/json")
	if code != http.StatusForbidden || !strings.Contains(data, "rest.AllowSavepointTargets") {
		t.Fatalf("a target without roots: %d %s", code, data)
	}
	// The legacy client of `weir savepoint`.
	var se *control.StatusError
	if _, err := control.TriggerSavepoint(context.Background(), client, s2.Addr(), jobID, "/etc", false); !errors.As(err, &se) || se.Code != http.StatusForbidden || !strings.Contains(se.Message, "savepoint target refused") {
		t.Errorf("legacy savepoint to /etc: %v", err)
	}
}

// skewJob is a fakeJob whose join gets ten times the records at
// subtask 1: a hot-key finding.
type skewJob struct{ *fakeJob }

func (j skewJob) Snapshot() *monitor.Snapshot {
	s := j.fakeJob.Snapshot()
	st := &s.Vertices[2].Subtasks[1]
	st.RecordsIn *= 10
	st.BusyNanos *= 10
	return s
}

// TestTimeoutsAndLimits stages slow and many clients: a body that never
// comes and an idle kept-alive connection are cut, connections beyond
// the limit wait; the endpoints that take long by design (flame graph,
// CPU profile) still answer past the write timeout.
func TestTimeoutsAndLimits(t *testing.T) {
	s, _, _ := start(t, Options{ReadTimeout: 300 * time.Millisecond, WriteTimeout: 300 * time.Millisecond, IdleTimeout: 300 * time.Millisecond, MaxConns: 2})
	addr := s.Addr()
	dial := func() net.Conn {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	// closedWithin reads c until it ends, failing unless it does within d.
	closedWithin := func(what string, c net.Conn, d time.Duration) {
		t.Helper()
		c.SetReadDeadline(time.Now().Add(d))
		_, err := io.Copy(io.Discard, c)
		if err != nil {
			t.Errorf("%s: the server kept the connection for %v: %v", what, d, err)
		}
	}

	// A body announced and never sent.
	c := dial()
	fmt.Fprintf(c, "POST /jobs/%s/stop HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{", jobID, addr)
	closedWithin("a slow body", c, 3*time.Second)
	c.Close()

	// An idle kept-alive connection.
	c = dial()
	fmt.Fprintf(c, "GET /jobs HTTP/1.1\r\nHost: %s\r\n\r\n", addr)
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("GET /jobs: %v %v", resp, err)
	}
	resp.Body.Close()
	closedWithin("an idle connection", c, 3*time.Second)
	c.Close()

	// Two connections held open: a third waits until one closes.
	c1, c2 := dial(), dial()
	time.Sleep(100 * time.Millisecond) // accepted
	c3 := dial()
	fmt.Fprintf(c3, "GET /jobs HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n", addr)
	c3.SetReadDeadline(time.Now().Add(150 * time.Millisecond))
	if n, _ := c3.Read(make([]byte, 1)); n > 0 {
		t.Errorf("a third connection was served beyond the limit of 2")
	}
	c1.Close()
	c3.SetReadDeadline(time.Now().Add(3 * time.Second))
	resp, err = http.ReadResponse(bufio.NewReader(c3), nil)
	if err != nil || resp.StatusCode != 200 {
		t.Errorf("the third connection after the first closed: %v %v", resp, err)
	}
	c2.Close()
	c3.Close()

	// Long by design: past the 300 ms write timeout.
	for _, p := range []string{
		"/jobs/" + jobID + "/vertices/" + joinID + "/flamegraph?seconds=0.8",
		"/debug/pprof/profile?seconds=1",
	} {
		code, body := req(t, "GET", "http://"+addr+p, "", "")
		if code != 200 {
			t.Errorf("GET %s: %d %.200s", p, code, body)
		}
	}
}
