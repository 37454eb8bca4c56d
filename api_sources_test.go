package weir_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/weirstream/weir"
)

func TestReadTextFileLines(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "a.txt")
	long := strings.Repeat("x", 100_000) // longer than bufio's default 64 KiB token
	if err := os.WriteFile(path, []byte("first\nsecond\n\n"+long+"\nlast without newline"), 0o644); err != nil {
		t.Fatal(err)
	}
	env := weir.NewEnvironment(weir.WithParallelism(2))
	res := weir.Collect(weir.ReadTextFile(env, path))
	mustRun(t, env)
	got := res.Records()
	want := []string{"first", "second", "", long, "last without newline"}
	if len(got) != len(want) {
		t.Fatalf("got %d lines, want %d", len(got), len(want))
	}
	for i, r := range got {
		if r.Value != want[i] || r.TS != weir.NoTimestamp {
			t.Fatalf("line %d: %.20q@%d, want %.20q without timestamp", i, r.Value, r.TS, want[i])
		}
	}
}

func TestReadTextFileGlob(t *testing.T) {
	dir := t.TempDir()
	for i := range 3 {
		content := fmt.Sprintf("f%d-1\nf%d-2\n", i, i)
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("part-%d.txt", i)), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "other.log"), []byte("not me\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	env := weir.NewEnvironment(weir.WithParallelism(2))
	res := weir.Collect(weir.ReadTextFile(env, filepath.Join(dir, "part-*.txt")))
	mustRun(t, env)
	want := []string{"f0-1", "f0-2", "f1-1", "f1-2", "f2-1", "f2-2"}
	if got := sorted(res.Values()); !slices.Equal(got, want) {
		t.Fatalf("got %v, want %v", got, want)
	}
}

func TestReadTextFileMissingFailsJob(t *testing.T) {
	path := filepath.Join(t.TempDir(), "no-such-file.txt")
	env := weir.NewEnvironment(weir.WithParallelism(1), quiet())
	weir.Collect(weir.ReadTextFile(env, path))
	err := run(t, env)
	if err == nil || !strings.Contains(err.Error(), path) {
		t.Fatalf("got %v, want an error naming %s", err, path)
	}
	if !errors.Is(err, os.ErrNotExist) {
		t.Errorf("error %v does not wrap os.ErrNotExist", err)
	}
}

// lineServer accepts connections on 127.0.0.1 and serves them one script
// each, in order; it counts the connections.
type lineServer struct {
	ln      net.Listener
	scripts []func(net.Conn)
	mu      sync.Mutex
	n       int
	wg      sync.WaitGroup
}

func newLineServer(t *testing.T, scripts ...func(net.Conn)) *lineServer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &lineServer{ln: ln, scripts: scripts}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			s.mu.Lock()
			i := s.n
			s.n++
			s.mu.Unlock()
			s.wg.Add(1)
			go func() {
				defer s.wg.Done()
				defer c.Close()
				if i < len(s.scripts) {
					s.scripts[i](c)
				}
			}()
		}
	}()
	t.Cleanup(s.close)
	return s
}

func (s *lineServer) port() int { return s.ln.Addr().(*net.TCPAddr).Port }

func (s *lineServer) close() {
	s.ln.Close()
	s.wg.Wait()
}

func (s *lineServer) conns() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.n
}

func write(text string) func(net.Conn) {
	return func(c net.Conn) { c.Write([]byte(text)) }
}

func TestSocketTextStreamEndsWhenServerCloses(t *testing.T) {
	srv := newLineServer(t, write("alpha\nbeta\r\n\ngam"), write("never read\n"))
	env := weir.NewEnvironment(weir.WithParallelism(1))
	res := weir.Collect(weir.SocketTextStream(env, "127.0.0.1", srv.port(), weir.SocketOptions{}))
	mustRun(t, env)
	if got, want := res.Values(), []string{"alpha", "beta", "", "gam"}; !slices.Equal(got, want) {
		t.Fatalf("got %q, want %q", got, want)
	}
	srv.close()
	if n := srv.conns(); n != 1 {
		t.Fatalf("%d connections, want 1 (MaxRetries 0 does not reconnect)", n)
	}
}

func TestSocketTextStreamReconnects(t *testing.T) {
	srv := newLineServer(t, write("a\nb\n"), write("c\n"), write("d\n"), write("never\n"))
	env := weir.NewEnvironment(weir.WithParallelism(1))
	res := weir.Collect(weir.SocketTextStream(env, "127.0.0.1", srv.port(), weir.SocketOptions{MaxRetries: 2, RetryDelay: time.Millisecond}))
	mustRun(t, env)
	if got, want := res.Values(), []string{"a", "b", "c", "d"}; !slices.Equal(got, want) {
		t.Fatalf("got %q, want %q", got, want)
	}
	srv.close()
	if n := srv.conns(); n != 3 {
		t.Fatalf("%d connections, want 3 (one plus two retries)", n)
	}
}

func TestSocketTextStreamConnectFailureFailsJob(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close() // nothing listens there now
	env := weir.NewEnvironment(weir.WithParallelism(1), quiet())
	weir.Collect(weir.SocketTextStream(env, "127.0.0.1", port, weir.SocketOptions{}))
	err = run(t, env)
	if err == nil || !strings.Contains(err.Error(), "127.0.0.1:"+strconv.Itoa(port)) || !strings.Contains(err.Error(), "SocketTextStream") {
		t.Fatalf("got %v, want a failure naming the source and the address", err)
	}
}

// TestSocketTextStreamCancel cancels a job whose server keeps the
// connection open: Execute returns and no goroutine is left (goleak).
func TestSocketTextStreamCancel(t *testing.T) {
	release := make(chan struct{})
	srv := newLineServer(t, func(c net.Conn) {
		c.Write([]byte("first\n"))
		<-release
	})
	defer close(release)
	env := weir.NewEnvironment(weir.WithParallelism(1))
	got := make(chan string, 1)
	weir.SinkFunc(weir.SocketTextStream(env, "127.0.0.1", srv.port(), weir.SocketOptions{MaxRetries: -1}), func(v string) error {
		got <- v
		return nil
	})
	ctx, cancel := context.WithCancel(context.Background())
	h, err := env.ExecuteAsync(ctx, "cancel")
	if err != nil {
		t.Fatal(err)
	}
	if v := recv(t, h, got); v != "first" {
		t.Fatalf("got %q", v)
	}
	cancel()
	if err := wait(t, h); !errors.Is(err, context.Canceled) {
		t.Fatalf("Wait after cancel: %v", err)
	}
}

func TestSocketTextStreamInvalidPort(t *testing.T) {
	env := weir.NewEnvironment(weir.WithParallelism(1))
	weir.Collect(weir.SocketTextStream(env, "127.0.0.1", 70000, weir.SocketOptions{}))
	if err := run(t, env); err == nil || !strings.Contains(err.Error(), "70000") {
		t.Fatalf("got %v", err)
	}
}

func TestGenerateSplitsAcrossSubtasks(t *testing.T) {
	for _, c := range []struct{ n, p int }{{10, 3}, {2, 4}, {0, 2}, {1000, 2}} {
		env := weir.NewEnvironment(weir.WithParallelism(c.p))
		res := weir.Collect(tagSubtasks(weir.Generate(env, int64(c.n), 0, func(i int64) int64 { return i }, weir.NoWatermarks[int64]()), c.p))
		mustRun(t, env)
		got := res.Values()
		if v := sorted(valuesOf(got)); !slices.Equal(v, seq(0, int64(c.n))) {
			t.Fatalf("n=%d p=%d: values %v", c.n, c.p, v)
		}
		// Subtask s generates the contiguous range [n*s/p, n*(s+1)/p).
		for _, r := range got {
			if lo, hi := int64(c.n*r.Sub/c.p), int64(c.n*(r.Sub+1)/c.p); r.V < lo || r.V >= hi {
				t.Fatalf("n=%d p=%d: %d generated in subtask %d", c.n, c.p, r.V, r.Sub)
			}
		}
	}
}

// TestGenerateWithRate runs a generator limited to 1000 records per second
// on a manual clock that the test moves 2 ms at a time: record i is never
// produced before the clock reaches start+i ms, and after each step the
// generator catches up with what the rate allows (two more records).
func TestGenerateWithRate(t *testing.T) {
	const t0, n = 5000, 41
	clk := weir.NewManualClock(t0)
	env := weir.NewEnvironment(weir.WithParallelism(1), weir.WithClock(clk))
	type stamped struct{ i, at int64 }
	got := make(chan stamped, n)
	// The generator function runs when the record is produced.
	gen := weir.Generate(env, n, 1000, func(i int64) stamped { return stamped{i, clk.NowMillis()} }, weir.NoWatermarks[stamped]())
	weir.SinkFunc(gen, func(s stamped) error {
		got <- s
		return nil
	})
	h := start(t, env)
	next := int64(0)
	for now := int64(t0); next < n; now += 2 {
		clk.Set(now)
		for ; next < min(now-t0+1, n); next++ {
			s := recv(t, h, got)
			if s.i != next || s.at < t0+next {
				t.Fatalf("record %d produced at %d; want record %d, not before %d", s.i, s.at, next, t0+next)
			}
		}
	}
	if err := wait(t, h); err != nil {
		t.Fatal(err)
	}
	if len(got) != 0 {
		t.Fatalf("%d records too many", len(got))
	}
}

// TestGenerateWithRateRealClock checks that a small rate on the wall clock
// still finishes with every record.
func TestGenerateWithRateRealClock(t *testing.T) {
	env := weir.NewEnvironment(weir.WithParallelism(2))
	res := weir.Collect(weir.Generate(env, 20, 2000, func(i int64) int64 { return i }, weir.NoWatermarks[int64]()))
	mustRun(t, env)
	if got := sorted(res.Values()); !slices.Equal(got, seq(0, 20)) {
		t.Fatalf("got %v", got)
	}
}

func TestGenerateUnboundedCancel(t *testing.T) {
	env := weir.NewEnvironment(weir.WithParallelism(2))
	seen := make(chan int64, 1)
	weir.SinkFunc(weir.Generate(env, -1, 0, func(i int64) int64 { return i }, weir.NoWatermarks[int64]()), func(v int64) error {
		if v == 10_000 {
			seen <- v
		}
		return nil
	})
	h := start(t, env)
	recv(t, h, seen)
	h.Cancel()
	if err := wait(t, h); !errors.Is(err, context.Canceled) {
		t.Fatalf("Wait after Cancel: %v", err)
	}
}

func TestGenerateNegativeRateFailsAtBuild(t *testing.T) {
	env := weir.NewEnvironment(weir.WithParallelism(1))
	weir.Collect(weir.Generate(env, 1, -1, func(i int64) int64 { return i }, weir.NoWatermarks[int64]()))
	if err := run(t, env); err == nil || !strings.Contains(err.Error(), "rate") {
		t.Fatalf("got %v", err)
	}
}
