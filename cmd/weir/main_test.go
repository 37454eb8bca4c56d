package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestUsageAndUnknownCommand(t *testing.T) {
	var out, errb bytes.Buffer
	if code := run(nil, &out, &errb); code != 2 || !strings.Contains(errb.String(), "usage") {
		t.Fatalf("no args: code %d, stderr %q", code, errb.String())
	}
	errb.Reset()
	if code := run([]string{"frobnicate"}, &out, &errb); code != 2 || !strings.Contains(errb.String(), "frobnicate") {
		t.Fatalf("unknown command: code %d, stderr %q", code, errb.String())
	}
}

func TestScenarioCheck(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "good.scn")
	bad := filepath.Join(dir, "bad.scn")
	window := filepath.Join(dir, "window.scn")
	os.WriteFile(good, []byte("op watermarks inputs=1 channels=2\n1.0 wm 5\n1.1 wm 3\n> wm 3\n"), 0o644)
	os.WriteFile(bad, []byte("op watermarks inputs=1 channels=2\n1.0 wm 5\n> wm 5\n"), 0o644)
	os.WriteFile(window, []byte("op nope\n1 rec k 1 a\n"), 0o644)
	var out, errb bytes.Buffer
	code := run([]string{"scenario", "--check", good, bad, window}, &out, &errb)
	s := out.String()
	if code != 1 || !strings.Contains(s, "ok "+good) || !strings.Contains(s, "FAIL "+bad+": line 2") ||
		!strings.Contains(s, "nope") || !strings.HasSuffix(strings.TrimSpace(s), "1 passed, 2 failed") {
		t.Fatalf("code %d, output:\n%s", code, s)
	}
	out.Reset()
	if code := run([]string{"scenario", good}, &out, &errb); code != 0 || !strings.Contains(out.String(), "> wm 3") {
		t.Fatalf("print mode: code %d, output:\n%s", code, out.String())
	}
}
