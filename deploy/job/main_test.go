package main

import (
	"bufio"
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestSIGTERMStopsWithSavepoint runs the job as its pod would (service
// mode, a token, the REST server), waits for /readyz, sends SIGTERM as
// the kubelet does, and checks that it exits 0 after a stop with a
// savepoint in -dir, archived for `weir history`; a second run resumes
// from that savepoint.
func TestSIGTERMStopsWithSavepoint(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "job")
	if b, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, b)
	}
	dir, archive := t.TempDir(), t.TempDir()
	run := func() string {
		cmd := exec.Command(bin, "-dir", dir, "-archive", archive, "-rest", "127.0.0.1:0", "-rate", "2000")
		cmd.Env = append(os.Environ(), "WEIR_REST_TOKEN=tok")
		stderr, _ := cmd.StderrPipe()
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		defer cmd.Process.Kill()
		var log strings.Builder
		addr := make(chan string, 1)
		done := make(chan struct{})
		go func() {
			defer close(done)
			sc := bufio.NewScanner(stderr)
			for sc.Scan() {
				log.WriteString(sc.Text() + "\n")
				var l struct{ Msg, Address string }
				if json.Unmarshal(sc.Bytes(), &l) == nil && l.Msg == "REST server listening" {
					select {
					case addr <- l.Address:
					default:
					}
				}
			}
		}()
		var base string
		select {
		case a := <-addr:
			base = "http://" + a
		case <-time.After(60 * time.Second):
			t.Fatal("no REST address")
		}
		for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(50 * time.Millisecond) {
			if resp, err := http.Get(base + "/readyz"); err == nil {
				resp.Body.Close()
				if resp.StatusCode == http.StatusOK {
					break
				}
			}
			if time.Now().After(deadline) {
				t.Fatal("never ready")
			}
		}
		cmd.Process.Signal(syscall.SIGTERM)
		err := cmd.Wait()
		<-done
		if err != nil {
			t.Fatalf("exit after SIGTERM: %v\n%s", err, log.String())
		}
		return log.String()
	}
	first := run()
	if !strings.Contains(first, `"status":"STOPPED_WITH_SAVEPOINT"`) {
		t.Fatalf("no stop with a savepoint:\n%s", first)
	}
	sps, _ := filepath.Glob(filepath.Join(dir, "savepoints", "*"))
	archives, _ := os.ReadDir(archive)
	if len(sps) != 1 || len(archives) != 1 {
		t.Fatalf("savepoints %v, archives %d", sps, len(archives))
	}
	second := run()
	if !strings.Contains(second, `"msg":"restoring","job":"counts","from":"savepoint`) || !strings.Contains(second, `"checkpoint":1}`) {
		t.Fatalf("the second run does not name the savepoint it resumed from (%s):\n%s", sps[0], second)
	}
}
