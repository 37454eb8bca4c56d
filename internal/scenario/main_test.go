package scenario

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func writeFile(t *testing.T, dir, name, text string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func runMain(args ...string) (code int, stdout, stderr string) {
	var out, errb bytes.Buffer
	code = Main(args, echoRunner(), &out, &errb)
	return code, out.String(), errb.String()
}

func TestMainCheck(t *testing.T) {
	dir := t.TempDir()
	good := writeFile(t, dir, "good.scn", echoScenario)
	bad := writeFile(t, dir, "bad.scn", "op echo\n1 rec k 1 a\n> out k 1 a\n1 wm 4\n> wm 5\n")
	unparsable := writeFile(t, dir, "unparsable.scn", "op echo\n1 wm\n")
	unknown := writeFile(t, dir, "unknown.scn", "op nope\n")
	unavailable := writeFile(t, dir, "unavailable.scn", "op window size=10\n1 wm 1\n")
	panics := writeFile(t, dir, "panics.scn", "op echo panic-at=3\n1 rec k 3 a\n")
	missing := filepath.Join(dir, "missing.scn")

	code, out, errs := runMain("--check", good)
	if code != 0 || out != "ok "+good+"\n1 passed, 0 failed\n" || errs != "" {
		t.Errorf("good: code %d, stdout %q, stderr %q", code, out, errs)
	}

	code, out, _ = runMain(good, "--check", bad, unparsable, unknown, unavailable, panics, missing)
	if code != 1 {
		t.Errorf("mixed: exit %d, want 1", code)
	}
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	want := []string{
		"ok " + good,
		"FAIL " + bad + ": line 4: expected [wm 5] got [wm 4]",
		"FAIL " + unparsable + ": line 2: want `<in> wm <ts>`",
		"FAIL " + unknown + ": line 1: unknown operator \"nope\"",
		"FAIL " + unavailable + ": line 1: operator window is unavailable: the window operator is not available in this build yet",
		"FAIL " + panics + ": line 2: driver panicked: echo panic",
		"FAIL " + missing + ": open ",
		"1 passed, 6 failed",
	}
	if len(lines) != len(want) {
		t.Fatalf("stdout has %d lines, want %d:\n%s", len(lines), len(want), out)
	}
	for i := range want {
		if !strings.HasPrefix(lines[i], want[i]) {
			t.Errorf("stdout line %d = %q, want prefix %q", i+1, lines[i], want[i])
		}
	}
}

func TestMainPrint(t *testing.T) {
	dir := t.TempDir()
	a := writeFile(t, dir, "a.scn", "op echo # c\n1 rec k 1 a\n> wm 3\n")
	b := writeFile(t, dir, "b.scn", "op echo\n1 wm 3\n")

	code, out, errs := runMain(a)
	if code != 0 || errs != "" {
		t.Errorf("exit %d, stderr %q", code, errs)
	}
	if want := "op echo # c\n1 rec k 1 a\n> out k 1 a\n"; out != want {
		t.Errorf("printout %q, want %q", out, want)
	}

	code, out, _ = runMain("--", a, b)
	if code != 0 {
		t.Errorf("two files: exit %d", code)
	}
	want := "# ==> " + a + " <==\nop echo # c\n1 rec k 1 a\n> out k 1 a\n\n# ==> " + b + " <==\nop echo\n1 wm 3\n> wm 3\n"
	if out != want {
		t.Errorf("printout %q, want %q", out, want)
	}

	bad := writeFile(t, dir, "bad.scn", "op echo\nfoo\n")
	code, out, errs = runMain(bad, b)
	if code != 1 {
		t.Errorf("bad file: exit %d, want 1", code)
	}
	if want := bad + ": line 2: unknown input line starting with \"foo\""; !strings.HasPrefix(errs, want) {
		t.Errorf("stderr %q, want prefix %q", errs, want)
	}
	if out != "# ==> "+b+" <==\nop echo\n1 wm 3\n> wm 3\n" {
		t.Errorf("the good file was not printed: %q", out)
	}
}

func TestMainUsage(t *testing.T) {
	for _, args := range [][]string{nil, {"--check"}, {"--bogus", "x.scn"}, {"--"}} {
		code, out, errs := runMain(args...)
		if code != 2 {
			t.Errorf("%q: exit %d, want 2", args, code)
		}
		if out != "" || !strings.Contains(errs, "usage: weir scenario") {
			t.Errorf("%q: stdout %q, stderr %q", args, out, errs)
		}
	}
	code, out, _ := runMain("--help")
	if code != 0 || !strings.Contains(out, "usage: weir scenario") {
		t.Errorf("--help: exit %d, stdout %q", code, out)
	}
	// After "--", a name starting with "-" is a file.
	code, out, _ = runMain("--check", "--", "-nofile")
	if code != 1 || !strings.HasPrefix(out, "FAIL -nofile: ") {
		t.Errorf("-- then -nofile: exit %d, stdout %q", code, out)
	}
}

// TestMainMultilineError: a driver error spanning lines stays on one line
// of the report.
func TestMainMultilineError(t *testing.T) {
	dir := t.TempDir()
	f := writeFile(t, dir, "x.scn", "op multi\n1 wm 1\n")
	r := &Runner{Ops: map[string]Factory{"multi": func(Spec) (Driver, error) {
		return nil, errorString("first\nsecond")
	}}}
	var out, errb bytes.Buffer
	code := Main([]string{"--check", f}, r, &out, &errb)
	if code != 1 || out.String() != "FAIL "+f+": line 1: op multi: first second\n0 passed, 1 failed\n" {
		t.Errorf("exit %d, stdout %q", code, out.String())
	}
}

type errorString string

func (e errorString) Error() string { return string(e) }
