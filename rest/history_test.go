package rest_test

import (
	"encoding/json"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/weirstream/weir"
	irest "github.com/weirstream/weir/internal/rest"
	"github.com/weirstream/weir/rest"
)

// getJSON GETs url into v and returns the status code.
func getJSON(t *testing.T, url string, v any, headers ...string) int {
	t.Helper()
	code, body := send(t, "GET", url, "", "", headers...)
	if code == http.StatusOK && v != nil {
		if err := json.Unmarshal([]byte(body), v); err != nil {
			t.Fatalf("GET %s: %v in %s", url, err, body)
		}
	}
	return code
}

type overview struct {
	Jobs []struct {
		JID   string `json:"jid"`
		Name  string `json:"name"`
		State string `json:"state"`
	} `json:"jobs"`
}

func (o overview) state(id string) string {
	for _, j := range o.Jobs {
		if j.JID == id {
			return j.State
		}
	}
	return ""
}

type checkpointStats struct {
	Counts struct {
		Completed int `json:"completed"`
	} `json:"counts"`
	History []struct {
		ID     int64  `json:"id"`
		Status string `json:"status"`
	} `json:"history"`
}

// TestEndedJobsVisibleAndArchived: a client stops a job with a savepoint
// and polls the operation: it reads COMPLETED and the savepoint's path
// from the server after the job has ended (the server used to stop with
// the job: "connection refused"), and the job stays listed as FINISHED
// with its checkpoints, while /readyz says not ready. A second job fails:
// it stays with its exception. Both are archived; `weir history`'s
// server (ListenHistory) serves their overview, checkpoints and
// exceptions from the archives alone, once the job's server is closed.
func TestEndedJobsVisibleAndArchived(t *testing.T) {
	archive := t.TempDir()
	srv := rest.New("127.0.0.1:0", rest.WithToken("tok"), rest.WithArchiveDir(archive))
	t.Cleanup(func() { srv.Close() })
	auth := "Authorization: Bearer tok"

	// The first job: checkpoints, then a stop with a savepoint.
	h := startJob(t, srv, t.TempDir())
	base := "http://" + srv.Addr()
	env2 := weir.NewEnvironment(weir.WithParallelism(1), weir.WithPlugin(srv))
	weir.Discard(weir.Map(weir.Generate(env2, -1, 2000, func(i int64) int64 { return i }, weir.NoWatermarks[int64]()), func(v int64) int64 {
		if v == 500 {
			panic("boom at record 500")
		}
		return v
	}).Name("exploding"))
	code, body := send(t, "POST", base+"/jobs/"+h.ID()+"/stop", "", `{}`, auth, "Content-Type: application/json")
	if code != http.StatusAccepted {
		t.Fatalf("stop: %d %s", code, body)
	}
	var trig struct {
		RequestID string `json:"request-id"`
	}
	json.Unmarshal([]byte(body), &trig)
	var location string
	for deadline := time.Now().Add(60 * time.Second); location == ""; {
		var st struct {
			Status    struct{ ID string }
			Operation struct {
				Location     string
				FailureCause any `json:"failure-cause"`
			}
		}
		if c := getJSON(t, base+"/jobs/"+h.ID()+"/savepoints/"+trig.RequestID, &st); c != http.StatusOK {
			t.Fatalf("poll: %d", c)
		}
		if st.Status.ID == "COMPLETED" {
			if st.Operation.Location == "" {
				t.Fatalf("stop failed: %+v", st.Operation)
			}
			location = st.Operation.Location
		}
		if time.Now().After(deadline) {
			t.Fatal("the stop did not complete")
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err := h.Wait(); !errors.As(err, new(*weir.StoppedError)) {
		t.Fatalf("the stopped job: %v", err)
	}
	// The job has ended: the server answers, keeps polling the same
	// operation, and shows the job's end.
	waitFor(t, func() (bool, string) {
		var o overview
		getJSON(t, base+"/jobs/overview", &o)
		return o.state(h.ID()) == "FINISHED", "overview"
	})
	var job struct {
		State string `json:"state"`
	}
	if getJSON(t, base+"/jobs/"+h.Name(), &job); job.State != "FINISHED" {
		t.Fatalf("the ended job by name: %q", job.State)
	}
	var cps checkpointStats
	if c := getJSON(t, base+"/jobs/"+h.ID()+"/checkpoints", &cps); c != http.StatusOK || cps.Counts.Completed < 1 {
		t.Fatalf("checkpoints of the ended job: %d %+v", c, cps)
	}
	if c, b := send(t, "GET", base+"/readyz", "", ""); c != http.StatusServiceUnavailable || !strings.Contains(b, "FINISHED") {
		t.Fatalf("readyz after the end: %d %s", c, b)
	}
	// A savepoint of an ended job fails, and says why.
	if c, b := send(t, "POST", base+"/jobs/"+h.ID()+"/savepoints", "", `{}`, auth, "Content-Type: application/json"); c != http.StatusAccepted {
		t.Fatalf("savepoint of an ended job: %d %s", c, b)
	} else {
		json.Unmarshal([]byte(b), &trig)
		waitFor(t, func() (bool, string) {
			_, b := send(t, "GET", base+"/jobs/"+h.ID()+"/savepoints/"+trig.RequestID, "", "")
			return strings.Contains(b, "the job has ended"), b
		})
	}

	// The second job fails on a record.
	h2, err := env2.ExecuteAsync(t.Context(), "exploding")
	if err != nil {
		t.Fatal(err)
	}
	if err := h2.Wait(); err == nil {
		t.Fatal("the exploding job did not fail")
	}
	waitFor(t, func() (bool, string) {
		_, b := send(t, "GET", base+"/jobs/"+h2.ID()+"/exceptions", "", "", auth)
		return strings.Contains(b, "boom at record 500"), b
	})

	// Both archived, under their IDs.
	for _, id := range []string{h.ID(), h2.ID()} {
		waitFor(t, func() (bool, string) {
			_, err := os.Stat(filepath.Join(archive, id))
			return err == nil, "no archive of " + id
		})
	}
	if err := srv.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := http.Get(base + "/healthz"); err == nil {
		t.Fatal("the server answers after Close")
	}

	hs, err := irest.ListenHistory("127.0.0.1:0", archive, irest.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer hs.Close(time.Second)
	hb := "http://" + hs.Addr()
	var o overview
	getJSON(t, hb+"/v1/jobs/overview", &o)
	if o.state(h.ID()) != "FINISHED" || o.state(h2.ID()) != "FAILED" || len(o.Jobs) != 2 {
		t.Fatalf("history overview: %+v", o)
	}
	var hcps checkpointStats
	if c := getJSON(t, hb+"/jobs/"+h.ID()+"/checkpoints", &hcps); c != http.StatusOK || hcps.Counts.Completed != cps.Counts.Completed || len(hcps.History) == 0 {
		t.Fatalf("history checkpoints: %d %+v, the server said %+v", c, hcps, cps)
	}
	last := hcps.History[0].ID
	var det struct {
		ID     int64  `json:"id"`
		Status string `json:"status"`
	}
	if c := getJSON(t, hb+"/jobs/"+h.ID()+"/checkpoints/details/"+jsonInt(last), &det); c != http.StatusOK || det.ID != last {
		t.Fatalf("history checkpoint %d: %d %+v", last, c, det)
	}
	if _, b := send(t, "GET", hb+"/jobs/"+h2.ID()+"/exceptions", "", ""); !strings.Contains(b, "boom at record 500") {
		t.Fatalf("history exceptions: %s", b)
	}
	var snap struct {
		Job struct {
			Status    string `json:"status"`
			Savepoint string `json:"savepoint"`
		} `json:"job"`
	}
	if getJSON(t, hb+"/weir/jobs/"+h.ID()+"/snapshot", &snap); snap.Job.Status != "STOPPED_WITH_SAVEPOINT" || snap.Job.Savepoint != location {
		t.Fatalf("history snapshot: %+v, stopped into %s", snap.Job, location)
	}
	var cfg struct {
		Features map[string]bool `json:"features"`
	}
	if getJSON(t, hb+"/config", &cfg); !cfg.Features["web-history"] || cfg.Features["web-cancel"] {
		t.Fatalf("history config: %+v", cfg)
	}
	if c, _ := send(t, "GET", hb+"/", "", ""); c != http.StatusOK {
		t.Fatalf("history dashboard: %d", c)
	}
	if c, _ := send(t, "PATCH", hb+"/jobs/"+h.ID(), "", ""); c != http.StatusMethodNotAllowed {
		t.Fatalf("history cancel: %d", c)
	}
	if c, _ := send(t, "GET", hb+"/jobs/"+h.ID()+"/nothing", "", ""); c != http.StatusNotFound {
		t.Fatalf("a path in no archive: %d", c)
	}
}

// TestStopWithLastJob: with StopWithLastJob the server stops when its
// job ends, as before; KeepFinishedJobs(0) forgets an ended job at once.
func TestStopWithLastJob(t *testing.T) {
	srv := rest.New("127.0.0.1:0", rest.StopWithLastJob())
	t.Cleanup(func() { srv.Close() })
	h := startJob(t, srv, t.TempDir())
	base := "http://" + srv.Addr()
	if c, _ := send(t, "GET", base+"/healthz", "", ""); c != http.StatusOK {
		t.Fatal(c)
	}
	h.Cancel()
	h.Wait()
	waitFor(t, func() (bool, string) {
		_, err := http.Get(base + "/healthz")
		return err != nil, "the server still answers"
	})

	srv2 := rest.New("127.0.0.1:0", rest.KeepFinishedJobs(0))
	t.Cleanup(func() { srv2.Close() })
	h2 := startJob(t, srv2, t.TempDir())
	base2 := "http://" + srv2.Addr()
	h2.Cancel()
	h2.Wait()
	waitFor(t, func() (bool, string) {
		c, b := send(t, "GET", base2+"/jobs/"+h2.ID(), "", "")
		return c == http.StatusNotFound, b
	})
}

// TestWithArchiveDirURL: an archive directory must be local.
func TestWithArchiveDirURL(t *testing.T) {
	env := weir.NewEnvironment(weir.WithPlugin(rest.New("127.0.0.1:0", rest.WithArchiveDir("s3://bucket/archive"))))
	weir.Discard(weir.FromSlice(env, []int64{1}))
	if err := env.Execute(t.Context(), "url"); err == nil || !strings.Contains(err.Error(), "local directory") {
		t.Fatalf("got %v", err)
	}
}

func jsonInt(n int64) string { b, _ := json.Marshal(n); return string(b) }

// waitFor polls cond for at most 60 s.
func waitFor(t *testing.T, cond func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		ok, why := cond()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal(why)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
