package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/weirstream/weir"
	weirrest "github.com/weirstream/weir/rest"
)

// syncBuffer is a bytes.Buffer safe for a writer and a reader.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestHistoryCommand: a job that ends is archived by its REST server
// (rest.WithArchiveDir); `weir history DIR` serves its overview,
// details and exceptions, and the dashboard; a token, when given, is
// asked of the API.
func TestHistoryCommand(t *testing.T) {
	dir := t.TempDir()
	srv := weirrest.New("127.0.0.1:0", weirrest.WithArchiveDir(dir), weirrest.WithOpenDetails())
	t.Cleanup(func() { srv.Close() })
	env := weir.NewEnvironment(weir.WithParallelism(1), weir.WithPlugin(srv))
	weir.Discard(weir.Map(weir.Generate(env, -1, 1000, func(i int64) int64 { return i }, weir.NoWatermarks[int64]()), func(v int64) int64 {
		if v == 100 {
			panic("history test failure")
		}
		return v
	}))
	h, err := env.ExecuteAsync(t.Context(), "to-archive")
	if err != nil {
		t.Fatal(err)
	}
	if h.Wait() == nil {
		t.Fatal("the job did not fail")
	}
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if _, err := os.Stat(filepath.Join(dir, h.ID())); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("no archive")
		}
	}
	srv.Close()

	if code := run([]string{"history"}, io.Discard, io.Discard); code != 2 {
		t.Fatalf("no directory: exit %d", code)
	}
	if code := run([]string{"history", "--addr", "0.0.0.0:0", dir}, io.Discard, io.Discard); code != 1 {
		t.Fatalf("a public address without a token: exit %d", code)
	}

	for _, token := range []string{"", "hist-tok"} {
		ctx, cancel := context.WithCancel(context.Background())
		out := &syncBuffer{}
		done := make(chan int)
		args := []string{"--addr", "127.0.0.1:0", dir}
		if token != "" {
			args = append([]string{"--token", token}, args...)
		}
		go func() { done <- serveHistory(ctx, args, out, io.Discard) }()
		addrRe := regexp.MustCompile(`http://([0-9.:]+)/`)
		var base string
		for deadline := time.Now().Add(10 * time.Second); base == ""; time.Sleep(5 * time.Millisecond) {
			if m := addrRe.FindStringSubmatch(out.String()); m != nil {
				base = "http://" + m[1]
			} else if time.Now().After(deadline) {
				t.Fatalf("no address in %q", out.String())
			}
		}
		get := func(path string, auth bool) (int, string) {
			r, _ := http.NewRequest("GET", base+path, nil)
			if auth {
				r.Header.Set("Authorization", "Bearer "+token)
			}
			resp, err := http.DefaultClient.Do(r)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			b, _ := io.ReadAll(resp.Body)
			return resp.StatusCode, string(b)
		}
		if token != "" {
			if c, _ := get("/jobs/overview", false); c != http.StatusUnauthorized {
				t.Fatalf("without the token: %d", c)
			}
			if c, _ := get("/", false); c != http.StatusOK {
				t.Fatalf("the dashboard page without the token: %d", c)
			}
		}
		c, b := get("/jobs/overview", true)
		var o struct {
			Jobs []struct{ JID, State string }
		}
		json.Unmarshal([]byte(b), &o)
		if c != http.StatusOK || len(o.Jobs) != 1 || o.Jobs[0].JID != h.ID() || o.Jobs[0].State != "FAILED" {
			t.Fatalf("overview: %d %s", c, b)
		}
		if c, b := get("/jobs/"+h.ID()+"/exceptions", true); c != http.StatusOK || !strings.Contains(b, "history test failure") {
			t.Fatalf("exceptions: %d %s", c, b)
		}
		if c, b := get("/jobs/"+h.ID()+"/plan", true); c != http.StatusOK || !strings.Contains(b, `"nodes"`) {
			t.Fatalf("plan: %d %s", c, b)
		}
		cancel()
		if code := <-done; code != 0 {
			t.Fatalf("exit %d", code)
		}
	}
}
