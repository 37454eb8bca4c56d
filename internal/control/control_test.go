package control

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

type fakeJob struct {
	err  error
	got  SavepointRequest
	stop bool
}

func (f *fakeJob) Name() string   { return "j 1" }
func (f *fakeJob) Status() string { return "running" }
func (f *fakeJob) Savepoint(_ context.Context, dir string, stop bool) (string, error) {
	f.got = SavepointRequest{Dir: dir, Stop: stop}
	if f.err != nil {
		return "", f.err
	}
	return dir + "/savepoint-3", nil
}

func TestEndpoint(t *testing.T) {
	s, err := Listen("127.0.0.1:0", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close(time.Second)
	job := &fakeJob{}
	s.Register(job)
	client := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	ctx := context.Background()

	path, err := TriggerSavepoint(ctx, client, s.Addr(), "j 1", "/sp", true)
	if err != nil || path != "/sp/savepoint-3" || job.got != (SavepointRequest{"/sp", true}) {
		t.Fatalf("path %q, err %v, request %+v", path, err, job.got)
	}
	// An http:// address works too.
	if _, err := TriggerSavepoint(ctx, client, "http://"+s.Addr(), "j 1", "/sp", false); err != nil {
		t.Fatal(err)
	}

	var se *StatusError
	_, err = TriggerSavepoint(ctx, client, s.Addr(), "other", "/sp", false)
	if !errors.As(err, &se) || se.Code != http.StatusNotFound || !strings.Contains(se.Message, `"other"`) {
		t.Fatalf("unknown job: %v", err)
	}
	// No dir: the job's default, or 400 if it has none.
	path, err = TriggerSavepoint(ctx, client, s.Addr(), "j 1", "", false)
	if err != nil || path != "/savepoint-3" || job.got != (SavepointRequest{"", false}) {
		t.Fatalf("no dir, a default: path %q, err %v, request %+v", path, err, job.got)
	}
	job.err = fmt.Errorf("weir: savepoint: %w", ErrNoTarget)
	_, err = TriggerSavepoint(ctx, client, s.Addr(), "j 1", "", false)
	if !errors.As(err, &se) || se.Code != http.StatusBadRequest || !strings.Contains(se.Message, "no savepoint directory") {
		t.Fatalf("no dir, no default: %v", err)
	}
	job.err = errors.New("savepoint 4 expired")
	_, err = TriggerSavepoint(ctx, client, s.Addr(), "j 1", "/sp", false)
	if !errors.As(err, &se) || se.Code != http.StatusInternalServerError || se.Message != "savepoint 4 expired" {
		t.Fatalf("failed savepoint: %v", err)
	}

	resp, err := client.Post("http://"+s.Addr()+"/jobs/j%201/savepoints", "application/json", strings.NewReader(`{"dir": 5}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest {
		t.Fatalf("bad JSON: status %d", resp.StatusCode)
	}
	resp, err = client.Get("http://" + s.Addr() + "/jobs/j%201/savepoints")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusMethodNotAllowed {
		t.Fatalf("GET on the savepoints resource: status %d", resp.StatusCode)
	}
}
