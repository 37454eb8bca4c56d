package socket_test

import (
	"context"
	"errors"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/connector/socket"
	"github.com/weirstream/weir/internal/jobtest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

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
	res := weir.Collect(socket.TextStream(env, "127.0.0.1", srv.port(), socket.Options{}))
	jobtest.MustRun(t, env)
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
	res := weir.Collect(socket.TextStream(env, "127.0.0.1", srv.port(), socket.Options{MaxRetries: 2, RetryDelay: time.Millisecond}))
	jobtest.MustRun(t, env)
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
	env := weir.NewEnvironment(weir.WithParallelism(1), jobtest.Quiet())
	weir.Collect(socket.TextStream(env, "127.0.0.1", port, socket.Options{}))
	err = jobtest.Run(t, env)
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
	weir.SinkFunc(socket.TextStream(env, "127.0.0.1", srv.port(), socket.Options{MaxRetries: -1}), func(v string) error {
		got <- v
		return nil
	})
	ctx, cancel := context.WithCancel(context.Background())
	h, err := env.ExecuteAsync(ctx, "cancel")
	if err != nil {
		t.Fatal(err)
	}
	if v := jobtest.Recv(t, h, got); v != "first" {
		t.Fatalf("got %q", v)
	}
	cancel()
	if err := jobtest.Wait(t, h); !errors.Is(err, context.Canceled) {
		t.Fatalf("Wait after cancel: %v", err)
	}
}

func TestSocketTextStreamInvalidPort(t *testing.T) {
	env := weir.NewEnvironment(weir.WithParallelism(1))
	weir.Collect(socket.TextStream(env, "127.0.0.1", 70000, socket.Options{}))
	if err := jobtest.Run(t, env); err == nil || !strings.Contains(err.Error(), "70000") {
		t.Fatalf("got %v", err)
	}
}
