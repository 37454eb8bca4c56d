package rest_test

import (
	"encoding/json"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/rest"
)

// startJob runs a keyed job with checkpointing, savepoints into
// defaultDir by default, behind srv.
func startJob(t *testing.T, srv rest.Server, defaultDir string) *weir.JobHandle {
	t.Helper()
	env := weir.NewEnvironment(weir.WithParallelism(2), weir.WithPlugin(srv), weir.WithKeySampling(1))
	env.EnableCheckpointing(time.Hour, weir.DefaultSavepointDir(defaultDir))
	src := weir.Generate(env, -1, 2000, func(i int64) int64 { return i % 3 }, weir.NoWatermarks[int64]()).SetParallelism(1)
	sums := weir.Sum(weir.KeyBy(src, func(v int64) int64 { return v }), func(v int64) int64 { return v }, func(p *int64, v int64) { *p = v })
	weir.Discard(sums)
	h, err := env.ExecuteAsync(t.Context(), "guarded")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Cancel(); h.Wait() })
	return h
}

func send(t *testing.T, method, url, host, body string, headers ...string) (int, string) {
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
	resp, err := http.DefaultClient.Do(r)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(data)
}

// TestSavepointTargetsOfAJob stages a client with the token choosing the
// savepoint target of a running job: under the job's DefaultSavepointDir
// or a root of AllowSavepointTargets it is taken, elsewhere (../ out of
// the default directory included) it is refused with 403 and nothing is
// written.
func TestSavepointTargetsOfAJob(t *testing.T) {
	tmp := t.TempDir()
	def, extra := filepath.Join(tmp, "default"), filepath.Join(tmp, "extra")
	srv := rest.New("127.0.0.1:0", rest.WithToken("tok"), rest.AllowSavepointTargets(extra))
	t.Cleanup(func() { srv.Close() })
	h := startJob(t, srv, def)
	base := "http://" + srv.Addr()
	auth := []string{"Authorization: Bearer tok", "Content-Type: application/json"}
	for _, target := range []string{filepath.Join(def, "ops"), filepath.Join(extra, "x")} {
		code, body := send(t, "POST", base+"/jobs/"+h.ID()+"/savepoints", "", `{"target-directory": "`+target+`"}`, auth...)
		if code != http.StatusAccepted {
			t.Fatalf("savepoint into %s: %d %s", target, code, body)
		}
		var trig struct {
			RequestID string `json:"request-id"`
		}
		json.Unmarshal([]byte(body), &trig)
		deadline := time.Now().Add(30 * time.Second)
		for {
			var st struct {
				Status    struct{ ID string }
				Operation struct{ Location string }
			}
			_, body := send(t, "GET", base+"/jobs/"+h.ID()+"/savepoints/"+trig.RequestID, "", "")
			json.Unmarshal([]byte(body), &st)
			if st.Status.ID == "COMPLETED" {
				if filepath.Dir(st.Operation.Location) != target {
					t.Fatalf("savepoint into %s: %s", target, body)
				}
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("savepoint into %s: %s", target, body)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	for _, target := range []string{tmp, def + "/../outside", "/etc/weir", "s3://bucket/sp"} {
		code, body := send(t, "POST", base+"/jobs/"+h.ID()+"/stop", "", `{"targetDirectory": "`+target+`"}`, auth...)
		if code != http.StatusForbidden || !strings.Contains(body, "rest.AllowSavepointTargets") {
			t.Fatalf("stop into %s: %d %s", target, code, body)
		}
	}
	if s := h.Status(); s.Status != weir.JobRunning {
		t.Fatalf("the job after refused stops: %v", s.Status)
	}
}

// TestBrowserCannotStopTheJob is issue 33's attack on a server without a
// token: a page of another site, reached through a rebound name, posts a
// form to stop the job. It is refused; reads with a foreign Host are
// too; the server's own names (and WithHosts') still read. Key values
// show without a token only with WithOpenDetails.
func TestBrowserCannotStopTheJob(t *testing.T) {
	srv := rest.New("127.0.0.1:0", rest.WithHosts("weir.internal"))
	t.Cleanup(func() { srv.Close() })
	h := startJob(t, srv, t.TempDir())
	base := "http://" + srv.Addr()
	code, body := send(t, "POST", base+"/jobs/guarded/stop", "attacker.example", "",
		"Origin: http://evil.example", "Content-Type: application/x-www-form-urlencoded")
	if code != http.StatusForbidden {
		t.Fatalf("the cross-site stop: %d %s", code, body)
	}
	code, body = send(t, "POST", base+"/jobs/guarded/stop", "", "x", "Content-Type: text/plain")
	if code != http.StatusForbidden {
		t.Fatalf("a text/plain stop: %d %s", code, body)
	}
	if code, _ := send(t, "GET", base+"/jobs/overview", "attacker.example", ""); code != http.StatusForbidden {
		t.Fatalf("a read through a rebound name: %d", code)
	}
	for _, host := range []string{"", "localhost", "weir.internal:443"} {
		if code, body := send(t, "GET", base+"/jobs/overview", host, ""); code != http.StatusOK {
			t.Fatalf("GET /jobs/overview with Host %q: %d %s", host, code, body)
		}
	}
	if s := h.Status(); s.Status != weir.JobRunning {
		t.Fatalf("the job after the refused stops: %v", s.Status)
	}
}

// TestOpenDetails: a server without a token redacts key values unless
// started with WithOpenDetails.
func TestOpenDetails(t *testing.T) {
	for _, open := range []bool{false, true} {
		var opts []rest.Option
		if open {
			opts = append(opts, rest.WithOpenDetails())
		}
		srv := rest.New("127.0.0.1:0", opts...)
		t.Cleanup(func() { srv.Close() })
		h := startJob(t, srv, t.TempDir())
		deadline := time.Now().Add(30 * time.Second)
		for {
			_, body := send(t, "GET", "http://"+srv.Addr()+"/weir/jobs/"+h.ID()+"/snapshot", "", "")
			if strings.Contains(body, `"key-skew"`) && strings.Contains(body, `"keys":[{`) {
				redacted := strings.Contains(body, `"key":"redacted: `)
				if redacted == open || open && !strings.Contains(body, `"key":"0"`) {
					t.Fatalf("open details %v: %s", open, body)
				}
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("no key skew: %s", body)
			}
			time.Sleep(20 * time.Millisecond)
		}
		h.Cancel()
		h.Wait()
	}
}
