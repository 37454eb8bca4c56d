package main

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"slices"
	"strings"
	"sync"
	"testing"

	"go.uber.org/goleak"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/connector/socket"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// serve listens on 127.0.0.1:0, writes chunks to the first connection and
// closes it. It returns the port and a function that waits for the server.
func serve(t *testing.T, chunks ...string) (int, func()) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		defer ln.Close()
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		for _, s := range chunks {
			if _, err := c.Write([]byte(s)); err != nil {
				return
			}
		}
	}()
	return ln.Addr().(*net.TCPAddr).Port, func() { ln.Close(); wg.Wait() }
}

// text is written in chunks that split a line and a word ("fo" + "x").
var text = []string{
	"The quick brown fo", "x\njumps over the lazy dog\n",
	"THE DOG barks; the fox runs.\n", "\n", "dog dog", "\n",
}

var wantCounts = map[string]int64{
	"the": 4, "quick": 1, "brown": 1, "fox": 2, "jumps": 1, "over": 1,
	"lazy": 1, "dog": 4, "barks": 1, "runs": 1,
}

func TestWordCountFromSocket(t *testing.T) {
	for _, p := range []int{1, 2, 3} {
		t.Run(fmt.Sprintf("p=%d", p), func(t *testing.T) {
			port, done := serve(t, text...)
			defer done()
			env := weir.NewEnvironment(weir.WithParallelism(p))
			res := weir.Collect(Build(env, "127.0.0.1", port, socket.Options{}))
			ctx := t.Context() // no deadline: a hang ends at go test's -timeout
			if err := env.Execute(ctx, "wordcount"); err != nil {
				t.Fatal(err)
			}
			// Each word's counts arrive as 1, 2, ..., final count.
			last := map[string]int64{}
			for _, wc := range res.Values() {
				if wc.Count != last[wc.Word]+1 {
					t.Fatalf("%q: count %d after %d", wc.Word, wc.Count, last[wc.Word])
				}
				last[wc.Word] = wc.Count
			}
			if fmt.Sprint(last) != fmt.Sprint(wantCounts) {
				t.Fatalf("counts %v, want %v", last, wantCounts)
			}
		})
	}
}

func TestRunPrints(t *testing.T) {
	port, done := serve(t, "b a b\n")
	defer done()
	var out bytes.Buffer
	if err := run(context.Background(), []string{"-host", "127.0.0.1", "-port", fmt.Sprint(port), "-parallelism", "1"}, &out); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	slices.Sort(lines)
	if want := []string{"a: 1", "b: 1", "b: 2"}; !slices.Equal(lines, want) {
		t.Fatalf("printed %q, want %q", lines, want)
	}
}

func TestRunPrintsSubtaskPrefix(t *testing.T) {
	port, done := serve(t, "x y z w v\n")
	defer done()
	var out bytes.Buffer
	if err := run(context.Background(), []string{"-host", "127.0.0.1", "-port", fmt.Sprint(port), "-parallelism", "2"}, &out); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 5 {
		t.Fatalf("printed %q", lines)
	}
	for _, l := range lines {
		if !strings.HasPrefix(l, "1> ") && !strings.HasPrefix(l, "2> ") {
			t.Fatalf("line %q has no subtask prefix", l)
		}
	}
}

func TestRunFailsWithoutServer(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	var out bytes.Buffer
	err = run(context.Background(), []string{"-host", "127.0.0.1", "-port", fmt.Sprint(port), "-parallelism", "1"}, &out)
	if err == nil || !strings.Contains(err.Error(), fmt.Sprint(port)) {
		t.Fatalf("got %v, want a connection error naming the port", err)
	}
}
