package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/examples/troubles/trouble"
)

// recordAndReplay records subtask 1 of vertex of a running job with
// `weir record` and replays the file with `weir scenario --check`.
func recordAndReplay(t *testing.T, c string, vertex string, wantOp string) string {
	t.Helper()
	var out, errb bytes.Buffer
	if code := run([]string{"record", "--url", c, "--vertex", vertex, "--subtask", "1", "--limit", "3000", "--for", "20s"}, &out, &errb); code != 0 {
		t.Fatalf("weir record: exit %d: %s", code, errb.String())
	}
	scn := out.String()
	if !strings.Contains(scn, wantOp+"\n") || strings.Count(scn, " rec ") < 100 || !strings.Contains(scn, "> wm ") {
		t.Fatalf("recorded scenario:\n%.2000s", scn)
	}
	file := filepath.Join(t.TempDir(), "case.scn")
	if err := os.WriteFile(file, out.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	out.Reset()
	errb.Reset()
	if code := run([]string{"scenario", "--check", file}, &out, &errb); code != 0 {
		t.Fatalf("weir scenario --check: exit %d\n%s%s\nfile:\n%.3000s", code, out.String(), errb.String(), scn)
	}
	if !strings.Contains(out.String(), "1 passed, 0 failed") {
		t.Fatalf("weir scenario --check: %s", out.String())
	}
	return scn
}

// TestRecordReplay captures the inputs of a live two-input operator (an
// interval join with two channels per input) and of a one-input operator
// behind a keyBy, and replays each offline: the engine must give the same
// watermarks and statuses the live operator got.
func TestRecordReplay(t *testing.T) {
	env, srv := newEnv()
	if err := trouble.Build(env, "healthy", trouble.Options{}); err != nil {
		t.Fatal(err)
	}
	h, c := runJob(t, env, srv, "")
	_ = h
	scn := recordAndReplay(t, c.Base, "join -> Discard", "op watermarks inputs=2 channels=2")
	if !strings.Contains(scn, "2.1 rec ") || !strings.Contains(scn, "proc ") {
		t.Fatalf("the capture lacks the second input's second channel or processing time:\n%.2000s", scn)
	}

	env, srv = newEnv()
	strategy := weir.ForBoundedOutOfOrderness[trouble.Event](10 * time.Millisecond).
		WithTimestampAssigner(func(e trouble.Event, _ int64) int64 { return e.TS })
	src := weir.Generate(env, -1, 5_000, func(i int64) trouble.Event { return trouble.Event{Key: i % 7, TS: i} }, strategy).Name("events")
	keyed := weir.KeyBy(src, func(e trouble.Event) int64 { return e.Key }).Stream()
	weir.Discard(weir.Map(keyed, func(e trouble.Event) int64 { return e.Key }).Name("per-key"))
	_, c = runJob(t, env, srv, "")
	scn = recordAndReplay(t, c.Base, "per-key -> Discard", "op watermarks inputs=1 channels=2")
	if !strings.Contains(scn, "1.0 rec 3 ") {
		t.Fatalf("records lack their keys:\n%.1000s", scn)
	}
}
