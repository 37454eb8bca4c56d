package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/internal/checkpoint/store"
	"github.com/weirstream/weir/internal/checkpoint/store/s3store"
	"github.com/weirstream/weir/internal/s3test"
	"github.com/weirstream/weir/rest"
	"github.com/weirstream/weir/state"
)

type counter struct{ n state.ValueState[int64] }

func (c *counter) Open(ctx weir.KeyedRuntimeContext[int64]) (err error) {
	c.n, err = weir.GetValueState(ctx, state.Value[int64]("n"))
	return err
}

func (c *counter) ProcessElement(v int64, ctx weir.KeyedContext[int64], out weir.Collector[int64]) error {
	// One event-time timer per key, far ahead: inspect counts them.
	ctx.TimerService().RegisterEventTimeTimer(1 << 50)
	n, _ := c.n.Value()
	c.n.Update(n + 1)
	out.Collect(n + 1)
	return nil
}

func (c *counter) OnTimer(int64, weir.OnTimerContext[int64], weir.Collector[int64]) error { return nil }

// TestSavepointCommand runs a job with a control endpoint in this process
// and drives it with `weir savepoint`: a savepoint, its inspection, bad
// input, then a stop with a savepoint.
func TestSavepointCommand(t *testing.T) {
	dir := t.TempDir()
	srv := rest.New("127.0.0.1:0", rest.AllowSavepointTargets(dir))
	t.Cleanup(func() { srv.Close() })
	env := weir.NewEnvironment(weir.WithParallelism(2), weir.WithPlugin(srv))
	env.EnableCheckpointing(time.Hour)
	src := weir.Generate(env, -1, 5000, func(i int64) int64 { return i % 10 }, weir.NoWatermarks[int64]()).SetParallelism(1)
	counted := weir.Process(weir.KeyBy(src, func(v int64) int64 { return v }), &counter{}).UID("counter")
	weir.Discard(counted)
	h, err := env.ExecuteAsync(t.Context(), "counting")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { h.Cancel(); h.Wait() }()
	addr := srv.Addr()
	if addr == "" {
		t.Fatal("no control address")
	}
	run1 := func(args ...string) (int, string, string) {
		var out, errb bytes.Buffer
		code := run(args, &out, &errb)
		return code, out.String(), errb.String()
	}

	resp, err := http.Get("http://" + addr + "/jobs")
	if err != nil {
		t.Fatal(err)
	}
	var jobs struct {
		Jobs []struct{ Name, Status string }
	}
	json.NewDecoder(resp.Body).Decode(&jobs)
	resp.Body.Close()
	if len(jobs.Jobs) != 1 || jobs.Jobs[0].Name != "counting" || jobs.Jobs[0].Status != "RUNNING" {
		t.Fatalf("GET /jobs: %+v", jobs)
	}

	code, out, errs := run1("savepoint", "--address", addr, "--dir", dir, "counting")
	path := strings.TrimSpace(out)
	if code != 0 || filepath.Dir(path) != dir || !strings.HasPrefix(filepath.Base(path), "savepoint-") {
		t.Fatalf("savepoint: code %d, stdout %q, stderr %q", code, out, errs)
	}

	code, out, errs = run1("savepoint", "inspect", path)
	if code != 0 || !strings.Contains(out, "savepoint 1 of job \"counting\"") || !strings.Contains(out, "counter") ||
		!strings.Contains(out, "128") || !strings.Contains(out, "128 in [0, 127]") ||
		!strings.Contains(out, "KeyedProcess") || !strings.Contains(out, "source weir.generatorSource") {
		t.Fatalf("inspect: code %d, stdout:\n%s\nstderr %q", code, out, errs)
	}
	// The keyed states, with their schemas, key counts and timers.
	if m := regexp.MustCompile(`counter: key int64, (\d+) event-time and 0 processing-time timers\n.*STATE.*KIND.*KEYS.*SCHEMA\n\s+n\s+value\s+(\d+)\s+-\s+int64\n`).FindStringSubmatch(out); m == nil || m[1] == "0" || m[1] != m[2] {
		t.Fatalf("inspect does not list the counter's state and timers (one timer per key with a count):\n%s", out)
	}
	if code, out, _ = run1("savepoint", "inspect", "--json", dir); code != 0 || !strings.Contains(out, `"kind": "savepoint"`) {
		t.Fatalf("inspect --json of the parent directory: code %d, %s", code, out)
	}
	if code, out, errs = run1("savepoint", "inspect", "file://"+filepath.ToSlash(path)); code != 0 || !strings.Contains(out, "savepoint 1 of job") {
		t.Fatalf("inspect of a file:// URL: code %d, stdout %q, stderr %q", code, out, errs)
	}
	// A file:// target: the savepoint's location comes back in that form.
	code, out, errs = run1("savepoint", "--address", addr, "--dir", "file://"+filepath.ToSlash(dir)+"/urls", "counting")
	if code != 0 || !strings.HasPrefix(strings.TrimSpace(out), "file://"+filepath.ToSlash(dir)+"/urls/savepoint-") {
		t.Fatalf("savepoint to a file:// URL: code %d, stdout %q, stderr %q", code, out, errs)
	}

	for _, bad := range [][]string{
		{"savepoint", "--dir", dir, "counting"},
		{"savepoint", "--address", addr, "counting"},
		{"savepoint", "--address", addr, "--dir", dir},
		{"savepoint", "--address", addr, "--dir", dir, "--bogus", "counting"},
		{"savepoint", "--address", addr, "--dir", dir, "no-such-job"},
		{"savepoint", "--address", addr, "--dir", "gs://bucket/sp", "counting"},
		{"savepoint", "--address", addr, "--dir", t.TempDir(), "counting"},           // not under the allowed root
		{"savepoint", "--address", addr, "--dir", dir + "/../elsewhere", "counting"}, // nor is this
		{"savepoint", "inspect"},
		{"savepoint", "inspect", filepath.Join(dir, "savepoint-99")},
	} {
		if code, _, errs := run1(bad...); code != 2 || errs == "" {
			t.Errorf("%v: code %d, stderr %q; want 2 and a message", bad, code, errs)
		}
	}

	code, out, errs = run1("savepoint", "--address", addr, "--dir", dir, "--stop", "counting")
	if code != 0 || !strings.HasSuffix(strings.TrimSpace(out), "savepoint-3") {
		t.Fatalf("stop: code %d, stdout %q, stderr %q", code, out, errs)
	}
	if err := h.Wait(); !errors.Is(err, weir.ErrStopped) {
		t.Fatalf("the stopped job ended with %v", err)
	}

	// A damaged file is reported.
	kg, _ := filepath.Glob(filepath.Join(path, "*.kg"))
	if len(kg) == 0 {
		t.Fatal("no keyed state file")
	}
	if err := os.WriteFile(kg[0], []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	if code, _, errs := run1("savepoint", "inspect", path); code != 1 || !strings.Contains(errs, "DAMAGED "+filepath.Base(kg[0])) {
		t.Fatalf("inspect of a damaged savepoint: code %d, stderr %q", code, errs)
	}
}

// TestInspectIncremental inspects a checkpoint that references shared
// files (an incremental checkpoint) and finds a damaged shared file.
func TestInspectIncremental(t *testing.T) {
	ctx := t.Context()
	root := t.TempDir()
	s, err := store.NewLocal(root)
	if err != nil {
		t.Fatal(err)
	}
	w, err := s.Begin(ctx, 4, store.Checkpoint)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.WriteFile(ctx, "MANIFEST-000001", []byte("private")); err != nil {
		t.Fatal(err)
	}
	if err := w.WriteShared(ctx, "x-000005.sst", bytes.Repeat([]byte("s"), 2048)); err != nil {
		t.Fatal(err)
	}
	m := store.Manifest{Operators: []store.OperatorState{{UID: "counter", Parallelism: 1, MaxParallelism: 128,
		Subtasks: []store.SubtaskState{{Index: 0, DB: &store.DBFiles{FirstKeyGroup: 0, LastKeyGroup: 127, Files: []store.DBFile{
			{Name: "MANIFEST-000001", File: "MANIFEST-000001"}, {Name: "000005.sst", Shared: "x-000005.sst"}}}}}}}}
	if _, err := w.Commit(ctx, m); err != nil {
		t.Fatal(err)
	}
	var out, errs bytes.Buffer
	path := filepath.Join(root, "chk-4")
	if code := run([]string{"savepoint", "inspect", path}, &out, &errs); code != 0 ||
		!strings.Contains(out.String(), "incremental: 1 shared files, 2.0 KiB (2.0 KiB uploaded by this checkpoint)") ||
		!strings.Contains(out.String(), "2.0 KiB") {
		t.Fatalf("inspect: code %d, stdout:\n%s\nstderr %q", code, out.String(), errs.String())
	}
	if err := os.WriteFile(filepath.Join(root, "shared", "x-000005.sst"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	out.Reset()
	errs.Reset()
	if code := run([]string{"savepoint", "inspect", path}, &out, &errs); code != 1 || !strings.Contains(errs.String(), "DAMAGED shared/x-000005.sst") {
		t.Fatalf("inspect of a damaged shared file: code %d, stderr %q", code, errs.String())
	}
}

// TestInspectS3 inspects a savepoint in the S3 server of the test command,
// by its own location and by its prefix, with credentials from the
// environment (the standard chain), then without credentials, then a
// damaged one.
func TestInspectS3(t *testing.T) {
	ctx := t.Context()
	srv := s3test.Require(t)
	prefix := srv.Prefix() + "/team/sp"
	s, err := s3store.New(store.S3Config{Endpoint: srv.Endpoint, Region: srv.Region, Transport: s3test.Transport(t),
		Credentials: store.Credentials{AccessKeyID: srv.AccessKey, SecretAccessKey: srv.SecretKey}}, srv.Bucket, prefix)
	if err != nil {
		t.Fatal(err)
	}
	w, err := s.Begin(ctx, 3, store.Savepoint)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.WriteFile(ctx, "counter-0.op", []byte("state")); err != nil {
		t.Fatal(err)
	}
	m := store.Manifest{JobID: "counting", Operators: []store.OperatorState{{UID: "counter", Parallelism: 1,
		Subtasks: []store.SubtaskState{{Index: 0, OperatorState: "counter-0.op"}}}}}
	if _, err := w.Commit(ctx, m); err != nil {
		t.Fatal(err)
	}
	inspect := func(args ...string) (int, string, string) {
		var out, errs bytes.Buffer
		code := run(append([]string{"savepoint", "inspect"}, args...), &out, &errs)
		return code, out.String(), errs.String()
	}
	loc := "s3://" + srv.Bucket + "/" + prefix
	for _, v := range []string{"AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE", "AWS_ENDPOINT_URL_S3",
		"AWS_WEB_IDENTITY_TOKEN_FILE", "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI", "AWS_CONTAINER_CREDENTIALS_FULL_URI"} {
		t.Setenv(v, "")
	}
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true") // never the metadata service from a test
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", filepath.Join(t.TempDir(), "none"))
	t.Setenv("AWS_ACCESS_KEY_ID", srv.AccessKey)
	t.Setenv("AWS_SECRET_ACCESS_KEY", srv.SecretKey)
	t.Setenv("AWS_REGION", srv.Region)
	for _, path := range []string{loc + "/savepoint-3", loc} {
		if code, out, errs := inspect("--s3-endpoint", srv.Endpoint, path); code != 0 || !strings.Contains(out, `savepoint 3 of job "counting"`) || !strings.Contains(out, "counter") {
			t.Fatalf("inspect %s: code %d, stdout:\n%s\nstderr %q", path, code, out, errs)
		}
	}
	// The endpoint from the environment, as the AWS tools read it.
	t.Setenv("AWS_ENDPOINT_URL", srv.Endpoint)
	if code, _, errs := inspect(loc); code != 0 {
		t.Fatalf("inspect with AWS_ENDPOINT_URL: code %d, stderr %q", code, errs)
	}
	// Without credentials: a clear error.
	t.Setenv("AWS_ACCESS_KEY_ID", "")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "")
	if code, _, errs := inspect(loc); code != 2 || !strings.Contains(errs, "no S3 credentials were found") {
		t.Fatalf("no credentials: code %d, stderr %q", code, errs)
	}
	t.Setenv("AWS_ACCESS_KEY_ID", srv.AccessKey)
	t.Setenv("AWS_SECRET_ACCESS_KEY", srv.SecretKey)
	srv.Mutate(prefix+"/savepoint-3/counter-0.op", func(d []byte) []byte { d[0] ^= 1; return d })
	if code, _, errs := inspect(loc + "/savepoint-3"); code != 1 || !strings.Contains(errs, "DAMAGED counter-0.op") {
		t.Fatalf("damaged: code %d, stderr %q", code, errs)
	}
	if code, _, errs := inspect("gs://ckpt/x"); code != 2 || !strings.Contains(errs, "no storage for scheme gs://") {
		t.Fatalf("gs://: code %d, stderr %q", code, errs)
	}
}
