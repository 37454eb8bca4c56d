package weir

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/weirstream/weir/internal/hooks"
	"github.com/weirstream/weir/internal/rest"
)

// How a job ended is told apart: its input ended (Finished, nil error),
// it was stopped with a savepoint (StoppedWithSavepoint, *StoppedError with
// the path), or it was cancelled (Canceled, context.Canceled), whether the
// stop or cancel came from Go or from the REST API, and the REST API
// reports the same status as JobHandle.Result.

// resultJob builds a keyed count over an unbounded slow generator (or,
// with n >= 0, n records at full speed); seen counts the records that
// reached the sink.
func resultJob(t *testing.T, n int64, opts ...Option) (*Environment, *atomic.Int64) {
	t.Helper()
	env := NewEnvironment(append([]Option{WithParallelism(2)}, opts...)...)
	env.EnableCheckpointing(time.Hour, DefaultSavepointDir(filepath.Join(t.TempDir(), "savepoints")))
	rate := 500.0
	if n >= 0 {
		rate = 0
	}
	ones := Generate(env, n, rate, func(i int64) [2]int64 { return [2]int64{i % 7, 1} }, NoWatermarks[[2]int64]()).UID("numbers")
	counts := Sum(KeyBy(ones, func(v [2]int64) int64 { return v[0] }),
		func(v [2]int64) int64 { return v[1] }, func(v *[2]int64, c int64) { v[1] = c }).UID("counts")
	var seen atomic.Int64
	SinkFunc(counts, func([2]int64) error { seen.Add(1); return nil })
	return env, &seen
}

// waitSeen waits until the job's sink has had a record.
func waitSeen(t *testing.T, h *JobHandle, seen *atomic.Int64) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for seen.Load() == 0 {
		select {
		case <-h.Done():
			t.Fatalf("the job ended before its first record: %v", h.Wait())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatal("no record reached the sink in 20 s")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// checkResult checks h's result, Wait's error and Status against want.
func checkResult(t *testing.T, h *JobHandle, want JobStatus, savepoint string) {
	t.Helper()
	r := h.Result()
	if r.Status != want || r.Savepoint != savepoint {
		t.Fatalf("Result() = %v %q (err %v), want %v %q", r.Status, r.Savepoint, r.Err, want, savepoint)
	}
	if s := h.Status(); s.Status != r.Status || s.Savepoint != r.Savepoint {
		t.Fatalf("Status() = %v, Result() = %v", s, r)
	}
	err := h.Wait()
	if err != r.Err {
		t.Fatalf("Wait() = %v, Result().Err = %v", err, r.Err)
	}
	var se *StoppedError
	switch want {
	case JobFinished:
		if err != nil {
			t.Fatalf("a finished job's Wait returned %v", err)
		}
	case JobStoppedWithSavepoint:
		if !errors.Is(err, ErrStopped) || !errors.As(err, &se) || se.Savepoint != savepoint {
			t.Fatalf("a stopped job's Wait returned %v (%T), want a *StoppedError with %q", err, err, savepoint)
		}
		if errors.Is(err, context.Canceled) {
			t.Fatalf("a stopped job's error %v reads as a cancellation", err)
		}
		if _, err := os.Stat(filepath.Join(savepoint, "_metadata")); err != nil && !hasFiles(savepoint) {
			t.Fatalf("the savepoint %q is not there: %v", savepoint, err)
		}
	case JobCanceled:
		if !errors.Is(err, context.Canceled) || errors.Is(err, ErrStopped) {
			t.Fatalf("a cancelled job's Wait returned %v", err)
		}
	}
}

func hasFiles(dir string) bool {
	ents, err := os.ReadDir(dir)
	return err == nil && len(ents) > 0
}

// restStatus reads the job's status as the REST API reports it: Flink's
// state, Weir's status and the savepoint path.
func restStatus(t *testing.T, base, id string) (state, status, savepoint string) {
	t.Helper()
	resp, err := http.Get(base + "/jobs/" + id)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var body struct {
		State     string `json:"state"`
		Status    string `json:"weir-status"`
		Savepoint string `json:"savepoint-path"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		t.Fatal(err)
	}
	return body.State, body.Status, body.Savepoint
}

// testREST is a plugin serving internal/rest for one job: the public
// package rest imports this one, so this package's own tests cannot use
// it.
type testREST struct{ addr, bound string }

func (p *testREST) PluginName() string { return "test REST server" }
func (p *testREST) Check() error       { return nil }

func (p *testREST) Attach(job hooks.Job, _, _ *slog.Logger) (func(), error) {
	// The tests' savepoint targets are temporary directories.
	s, err := rest.Listen(p.addr, rest.Options{SavepointRoots: []string{os.TempDir()}})
	if err != nil {
		return nil, err
	}
	s.Register(job)
	p.bound = s.Addr()
	return func() { s.Close(5 * time.Second) }, nil
}

// endedRESTStatus serves the ended job h on a new REST server (the job's
// own stops with the job) and returns what it reports.
func endedRESTStatus(t *testing.T, h *JobHandle) (state, status, savepoint string) {
	t.Helper()
	s, err := rest.Listen("127.0.0.1:0", rest.Options{SampleEvery: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close(5 * time.Second)
	s.Register(pluginJob{h})
	return restStatus(t, "http://"+s.Addr(), h.ID())
}

func post(t *testing.T, method, url, body string) int {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

func TestJobResultFinished(t *testing.T) {
	env, seen := resultJob(t, 1000)
	h, err := env.ExecuteAsync(t.Context(), "finished")
	if err != nil {
		t.Fatal(err)
	}
	checkResult(t, h, JobFinished, "")
	if seen.Load() != 1000 {
		t.Fatalf("%d counts, want 1000", seen.Load())
	}
	if state, status, sp := endedRESTStatus(t, h); state != "FINISHED" || status != "FINISHED" || sp != "" {
		t.Fatalf("REST: state %q, status %q, savepoint %q", state, status, sp)
	}
	// Execute says the same.
	env, _ = resultJob(t, 100)
	if err := env.Execute(t.Context(), "finished"); err != nil {
		t.Fatalf("Execute of a finished job: %v", err)
	}
}

func TestJobResultStopFromGo(t *testing.T) {
	env, seen := resultJob(t, -1)
	h, err := env.ExecuteAsync(t.Context(), "stopped")
	if err != nil {
		t.Fatal(err)
	}
	if s := h.Status(); s.Status != JobRunning || s.Status.String() != "RUNNING" {
		t.Fatalf("a running job's status is %v", s.Status)
	}
	waitSeen(t, h, seen)
	path, err := h.StopWithSavepoint(t.Context(), filepath.Join(t.TempDir(), "sp"))
	if err != nil {
		t.Fatal(err)
	}
	checkResult(t, h, JobStoppedWithSavepoint, path)
	if got := (&StoppedError{Savepoint: path}).Error(); !strings.Contains(got, path) {
		t.Fatalf("StoppedError's message %q does not name the savepoint", got)
	}
	state, status, sp := endedRESTStatus(t, h)
	if state != "FINISHED" || status != "STOPPED_WITH_SAVEPOINT" || sp != path {
		t.Fatalf("REST: state %q, status %q, savepoint %q; want FINISHED (Flink's), STOPPED_WITH_SAVEPOINT, %q", state, status, sp, path)
	}
	// The savepoint is one a job resumes from.
	env, _ = resultJob(t, -1, RestoreFromSavepoint(path))
	h, err = env.ExecuteAsync(t.Context(), "resumed")
	if err != nil {
		t.Fatal(err)
	}
	h.Cancel()
	checkResult(t, h, JobCanceled, "")
}

func TestJobResultCancelFromGo(t *testing.T) {
	env, seen := resultJob(t, -1)
	h, err := env.ExecuteAsync(t.Context(), "cancelled")
	if err != nil {
		t.Fatal(err)
	}
	waitSeen(t, h, seen)
	h.Cancel()
	checkResult(t, h, JobCanceled, "")
	if state, status, _ := endedRESTStatus(t, h); state != "CANCELED" || status != "CANCELED" {
		t.Fatalf("REST: state %q, status %q", state, status)
	}
	// Cancelling ExecuteAsync's context is a cancellation as well.
	env, seen = resultJob(t, -1)
	ctx, cancel := context.WithCancel(t.Context())
	h, err = env.ExecuteAsync(ctx, "cancelled")
	if err != nil {
		t.Fatal(err)
	}
	waitSeen(t, h, seen)
	cancel()
	checkResult(t, h, JobCanceled, "")
}

func TestJobResultStopFromREST(t *testing.T) {
	srv := &testREST{addr: "127.0.0.1:0"}
	env, seen := resultJob(t, -1, WithPlugin(srv))
	h, err := env.ExecuteAsync(t.Context(), "stopped")
	if err != nil {
		t.Fatal(err)
	}
	base := "http://" + srv.bound
	waitSeen(t, h, seen)
	if state, status, _ := restStatus(t, base, h.ID()); state != "RUNNING" || status != "RUNNING" {
		t.Fatalf("REST of a running job: state %q, status %q", state, status)
	}
	dir := filepath.Join(t.TempDir(), "rest-sp")
	if code := post(t, http.MethodPost, base+"/jobs/"+h.ID()+"/stop", `{"targetDirectory": "`+dir+`"}`); code != http.StatusAccepted {
		t.Fatalf("POST /stop: %d", code)
	}
	r := h.Result()
	if r.Status != JobStoppedWithSavepoint || filepath.Dir(r.Savepoint) != dir {
		t.Fatalf("after a stop through REST: %v %q (err %v), want a savepoint in %s", r.Status, r.Savepoint, r.Err, dir)
	}
	checkResult(t, h, JobStoppedWithSavepoint, r.Savepoint)
	if state, status, sp := endedRESTStatus(t, h); state != "FINISHED" || status != "STOPPED_WITH_SAVEPOINT" || sp != r.Savepoint {
		t.Fatalf("REST: state %q, status %q, savepoint %q", state, status, sp)
	}
}

func TestJobResultCancelFromREST(t *testing.T) {
	srv := &testREST{addr: "127.0.0.1:0"}
	env, seen := resultJob(t, -1, WithPlugin(srv))
	h, err := env.ExecuteAsync(t.Context(), "cancelled")
	if err != nil {
		t.Fatal(err)
	}
	waitSeen(t, h, seen)
	if code := post(t, http.MethodPatch, "http://"+srv.bound+"/jobs/"+h.ID()+"?mode=cancel", ""); code != http.StatusAccepted {
		t.Fatalf("PATCH /jobs/:id: %d", code)
	}
	checkResult(t, h, JobCanceled, "")
	if state, status, _ := endedRESTStatus(t, h); state != "CANCELED" || status != "CANCELED" {
		t.Fatalf("REST: state %q, status %q", state, status)
	}
}

// Execute, which gives its caller no handle, tells a stop through the
// REST API from an end of input.
func TestExecuteStoppedThroughREST(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	env, seen := resultJob(t, -1, WithPlugin(&testREST{addr: addr}))
	done := make(chan error, 1)
	go func() { done <- env.Execute(t.Context(), "stopped") }()
	deadline := time.Now().Add(20 * time.Second)
	for seen.Load() == 0 {
		if time.Now().After(deadline) {
			t.Fatal("no record reached the sink in 20 s")
		}
		time.Sleep(5 * time.Millisecond)
	}
	dir := filepath.Join(t.TempDir(), "sp")
	if code := post(t, http.MethodPost, "http://"+addr+"/jobs/stopped/stop", `{"targetDirectory": "`+dir+`"}`); code != http.StatusAccepted {
		t.Fatalf("POST /stop: %d", code)
	}
	err = <-done
	var se *StoppedError
	if !errors.Is(err, ErrStopped) || !errors.As(err, &se) || filepath.Dir(se.Savepoint) != dir {
		t.Fatalf("Execute of a job stopped through REST returned %v, want a *StoppedError with a savepoint in %s", err, dir)
	}
}
