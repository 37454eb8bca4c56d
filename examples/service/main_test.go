package main

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"
)

// buildService builds the example program into a temporary directory.
func buildService(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "service")
	cmd := exec.Command("go", "build", "-o", bin, ".")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// run is one run of the service process.
type run struct {
	stdout, stderr string
	err            error
}

// start runs the service with args; with interrupt > 0 it sends SIGTERM
// that long after the job started running.
func start(t *testing.T, bin string, interrupt time.Duration, args ...string) run {
	t.Helper()
	cmd := exec.Command(bin, args...)
	var stdout bytes.Buffer
	cmd.Stdout = &stdout
	errPipe, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	running := make(chan struct{})
	copied := make(chan struct{})
	go func() {
		defer close(copied)
		sc := bufio.NewScanner(errPipe)
		once := false
		for sc.Scan() {
			stderr.WriteString(sc.Text() + "\n")
			if !once && strings.Contains(sc.Text(), "running job") {
				once = true
				close(running)
			}
		}
		io.Copy(io.Discard, errPipe)
	}()
	if interrupt > 0 {
		select {
		case <-running:
			time.Sleep(interrupt)
			if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
				t.Fatalf("SIGTERM: %v", err)
			}
		case <-copied:
		case <-time.After(60 * time.Second):
			cmd.Process.Kill()
			t.Fatal("the service did not start its job in 60 s")
		}
	}
	<-copied
	err = cmd.Wait()
	return run{stdout: stdout.String(), stderr: stderr.String(), err: err}
}

// counts parses the "key K: N" lines of out.
func counts(t *testing.T, out string) map[int64]int64 {
	t.Helper()
	m := map[int64]int64{}
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		if l == "" {
			continue
		}
		var k, n int64
		if _, err := fmt.Sscanf(l, "key %d: %d", &k, &n); err != nil {
			t.Fatalf("output line %q: %v", l, err)
		}
		if _, dup := m[k]; dup {
			t.Fatalf("key %d printed twice", k)
		}
		m[k] = n
	}
	return m
}

// The service is stopped with SIGTERM twice in the middle of its input
// and started again each time; the third run reads the rest. Every key's
// count, printed once at the end, is exact: no record lost or counted
// twice across the stops.
func TestServiceSurvivesSIGTERM(t *testing.T) {
	bin := buildService(t)
	dir := t.TempDir()
	const n, keys = 4000, 10
	args := []string{"-dir", dir, "-n", fmt.Sprint(n), "-keys", fmt.Sprint(keys), "-rate", "1000"}
	stoppedWith := regexp.MustCompile(`stopped with savepoint (\S+)`)
	var savepoints []string
	for i := 1; i <= 2; i++ {
		r := start(t, bin, 700*time.Millisecond, args...)
		if r.err != nil {
			t.Fatalf("run %d: %v\n%s", i, r.err, r.stderr)
		}
		m := stoppedWith.FindStringSubmatch(r.stderr)
		if m == nil {
			t.Fatalf("run %d did not stop with a savepoint (did its input end before the SIGTERM?):\n%s", i, r.stderr)
		}
		if r.stdout != "" {
			t.Fatalf("run %d, stopped mid-stream, printed counts:\n%s", i, r.stdout)
		}
		if _, err := os.Stat(m[1]); err != nil {
			t.Fatalf("run %d: the savepoint is not there: %v", i, err)
		}
		if i > 1 && !strings.Contains(r.stderr, "restoring") {
			t.Fatalf("run %d did not resume:\n%s", i, r.stderr)
		}
		savepoints = append(savepoints, m[1])
	}
	if savepoints[0] == savepoints[1] {
		t.Fatalf("both runs stopped with the same savepoint %s", savepoints[0])
	}
	r := start(t, bin, 0, args...)
	if r.err != nil {
		t.Fatalf("last run: %v\n%s", r.err, r.stderr)
	}
	if !strings.Contains(r.stderr, "restoring") || !strings.Contains(r.stderr, "job FINISHED") {
		t.Fatalf("the last run did not resume and finish:\n%s", r.stderr)
	}
	got := counts(t, r.stdout)
	if len(got) != keys {
		t.Fatalf("%d keys printed, want %d:\n%s", len(got), keys, r.stdout)
	}
	var bad []string
	for k := int64(0); k < keys; k++ {
		if got[k] != n/keys {
			bad = append(bad, fmt.Sprintf("key %d: %d", k, got[k]))
		}
	}
	sort.Strings(bad)
	if len(bad) > 0 {
		t.Fatalf("counts differ from %d: %v", n/keys, bad)
	}
}

// A service whose input ends before any signal prints every count and
// reports FINISHED.
func TestServiceFinishes(t *testing.T) {
	bin := buildService(t)
	r := start(t, bin, 0, "-dir", t.TempDir(), "-n", "1000", "-keys", "4", "-rate", "0")
	if r.err != nil {
		t.Fatalf("%v\n%s", r.err, r.stderr)
	}
	if !strings.Contains(r.stderr, "job FINISHED") {
		t.Fatalf("no FINISHED:\n%s", r.stderr)
	}
	for k, c := range counts(t, r.stdout) {
		if c != 250 {
			t.Fatalf("key %d: %d, want 250", k, c)
		}
	}
}

// docs/operations.md's service recipe is the code of this program, which
// compiles: the lines between recipe:begin and recipe:end, unindented.
func TestRecipeInDocs(t *testing.T) {
	src, err := os.ReadFile("main.go")
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(src), "// recipe:begin\n")
	recipe, _, ok2 := strings.Cut(rest, "\t// recipe:end")
	if !ok || !ok2 {
		t.Fatal("main.go has no recipe:begin ... recipe:end block")
	}
	var lines []string
	for _, l := range strings.Split(strings.TrimRight(recipe, "\n"), "\n") {
		lines = append(lines, strings.TrimPrefix(l, "\t"))
	}
	want := strings.Join(lines, "\n")
	docs, err := os.ReadFile(filepath.Join("..", "..", "docs", "operations.md"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(docs), "```go\n"+want+"\n```") && !strings.Contains(string(docs), "```go fragment\n"+want+"\n```") {
		t.Fatalf("docs/operations.md does not hold the recipe of examples/service/main.go as a go block:\n%s", want)
	}
}
