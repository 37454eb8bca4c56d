package main

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/internal/monitor"
	"github.com/weirstream/weir/internal/rest"
	weirrest "github.com/weirstream/weir/rest"
)

// endedJob is a rest.Job that has ended with the given statuses.
type endedJob struct{ state, status, savepoint string }

func (j endedJob) Snapshot() *monitor.Snapshot {
	return &monitor.Snapshot{Job: monitor.Job{ID: "0123456789abcdef0123456789abcdef", Name: "ended",
		State: j.state, Status: j.status, Savepoint: j.savepoint, EndTime: 1}}
}
func (endedJob) Savepoint(context.Context, string, bool) (string, error) { return "", nil }
func (endedJob) Cancel()                                                 {}

func status(args ...string) (int, string, string) {
	var out, errb bytes.Buffer
	code := run(append([]string{"status"}, args...), &out, &errb)
	return code, out.String(), errb.String()
}

func TestStatusCommand(t *testing.T) {
	// A running job, through its own REST server.
	srv := weirrest.New("127.0.0.1:0")
	t.Cleanup(func() { srv.Close() })
	env := weir.NewEnvironment(weir.WithParallelism(1), weir.WithPlugin(srv))
	weir.Discard(weir.Generate(env, -1, 1000, func(i int64) int64 { return i }, weir.NoWatermarks[int64]()))
	h, err := env.ExecuteAsync(t.Context(), "running")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { h.Cancel(); h.Wait() }()
	if code, out, errs := status("--address", srv.Addr(), "running"); code != 0 || out != "RUNNING\n" {
		t.Fatalf("running job: code %d, out %q, err %q", code, out, errs)
	}
	if code, _, _ := status("--address", srv.Addr(), "nosuchjob"); code != 2 {
		t.Fatalf("no such job: code %d", code)
	}

	// Ended jobs, on a server that outlives them.
	for _, c := range []struct {
		job  endedJob
		want string
	}{
		{endedJob{"FINISHED", "FINISHED", ""}, "FINISHED\n"},
		{endedJob{"FINISHED", "STOPPED_WITH_SAVEPOINT", "/sp/savepoint-3"}, "STOPPED_WITH_SAVEPOINT /sp/savepoint-3\n"},
		{endedJob{"CANCELED", "CANCELED", ""}, "CANCELED\n"},
		{endedJob{"FAILED", "FAILED", ""}, "FAILED\n"},
		{endedJob{"FINISHED", "", ""}, "FINISHED\n"}, // a server without weir-status (Flink)
	} {
		s, err := rest.Listen("127.0.0.1:0", rest.Options{SampleEvery: -1})
		if err != nil {
			t.Fatal(err)
		}
		s.Register(c.job)
		code, out, errs := status("--address", s.Addr(), "ended")
		s.Close(5 * time.Second)
		if code != 0 || out != c.want {
			t.Fatalf("%+v: code %d, out %q (want %q), err %q", c.job, code, out, c.want, errs)
		}
	}

	for _, args := range [][]string{{}, {"--address", "127.0.0.1:1"}, {"job"}, {"--address", "a", "--timeout", "0", "job"}} {
		if code, _, _ := status(args...); code != 2 {
			t.Fatalf("%q: code %d, want 2", args, code)
		}
	}
	if code, _, _ := status("--address", "127.0.0.1:1", "--timeout", "2s", "job"); code != 1 {
		t.Fatalf("unreachable server: code %d, want 1", code)
	}
}
