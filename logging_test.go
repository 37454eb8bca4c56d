package weir_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/rest"
)

// captured is a slog handler that keeps every record, with the attributes
// its logger was given (With) and the record's own, in order.
type captured struct {
	mu      sync.Mutex
	records []capturedRecord
}

type capturedRecord struct {
	level string
	msg   string
	attrs []slog.Attr
	text  string // msg and attrs as key=value
}

func (c *captured) logger() *slog.Logger { return slog.New(&captureHandler{c: c}) }

func (c *captured) all() []capturedRecord {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]capturedRecord(nil), c.records...)
}

func (r capturedRecord) String() string { return r.level + " " + r.text }

// attr returns the values of key in r.
func (r capturedRecord) attr(key string) []string {
	var vs []string
	for _, a := range r.attrs {
		if a.Key == key {
			vs = append(vs, a.Value.String())
		}
	}
	return vs
}

type captureHandler struct {
	c     *captured
	attrs []slog.Attr
}

func (h *captureHandler) Enabled(context.Context, slog.Level) bool { return true }

func (h *captureHandler) Handle(_ context.Context, r slog.Record) error {
	cr := capturedRecord{level: r.Level.String(), msg: r.Message, attrs: append([]slog.Attr(nil), h.attrs...)}
	r.Attrs(func(a slog.Attr) bool {
		cr.attrs = append(cr.attrs, a)
		return true
	})
	var b strings.Builder
	b.WriteString(r.Message)
	for _, a := range cr.attrs {
		fmt.Fprintf(&b, " %s=%s", a.Key, a.Value)
	}
	cr.text = b.String()
	h.c.mu.Lock()
	h.c.records = append(h.c.records, cr)
	h.c.mu.Unlock()
	return nil
}

func (h *captureHandler) WithAttrs(as []slog.Attr) slog.Handler {
	return &captureHandler{c: h.c, attrs: append(append([]slog.Attr(nil), h.attrs...), as...)}
}

func (h *captureHandler) WithGroup(string) slog.Handler { return h }

// noRepeatedAttrs fails the test if a record has an attribute twice.
func noRepeatedAttrs(t *testing.T, recs []capturedRecord) {
	t.Helper()
	for _, r := range recs {
		seen := map[string]bool{}
		for _, a := range r.attrs {
			if seen[a.Key] {
				t.Errorf("attribute %s repeated: %s", a.Key, r)
			}
			seen[a.Key] = true
		}
	}
}

// TestJobFailureLoggedOnce: a failing job logs one entry at ERROR, naming
// the job once and carrying Execute's message without the stack (the
// returned error has it); nothing else at WARN or above.
func TestJobFailureLoggedOnce(t *testing.T) {
	logs := &captured{}
	env := weir.NewEnvironment(weir.WithParallelism(1), weir.WithLogger(logs.logger()))
	weir.Discard(weir.Map(weir.FromSlice(env, []int{1, 2, 3}), func(v int) int {
		if v == 2 {
			panic("two is not allowed")
		}
		return v
	}))
	err := env.Execute(t.Context(), "failing job")
	if err == nil || !strings.Contains(err.Error(), "goroutine ") {
		t.Fatalf("want the panic with its stack, got %v", err)
	}
	first, _, _ := strings.Cut(err.Error(), "\n")
	errs := logs.problems()
	if len(errs) != 1 || errs[0].level != "ERROR" {
		t.Fatalf("want one ERROR entry, got %v", errs)
	}
	r := errs[0]
	if strings.Contains(r.text, "goroutine ") || strings.Contains(r.text, "\n") {
		t.Errorf("the entry holds the stack: %q", r.text)
	}
	if got := r.attr("err"); len(got) != 1 || got[0] != first {
		t.Errorf("err attribute %q, want %q", got, first)
	}
	if got := r.attr("job"); len(got) != 1 || got[0] != "failing job" {
		t.Errorf("job attribute %q", got)
	}
	noRepeatedAttrs(t, logs.all())
}

// TestRestartLogsStackOnce: a failure that the restart strategy recovers
// from is logged once at WARN, with the message and, in an attribute of
// its own, the stack (nothing else returns it).
func TestRestartLogsStackOnce(t *testing.T) {
	logs := &captured{}
	env := weir.NewEnvironment(weir.WithParallelism(1), weir.WithLogger(logs.logger()),
		weir.WithRestartStrategy(weir.FixedDelayRestart(1, 0)))
	var once sync.Once
	weir.Discard(weir.Map(weir.FromSlice(env, []int{1, 2, 3}), func(v int) int {
		if v == 2 {
			once.Do(func() { panic("two, once") })
		}
		return v
	}))
	if err := env.Execute(t.Context(), "restarted"); err != nil {
		t.Fatal(err)
	}
	warns := logs.problems()
	if len(warns) != 1 || warns[0].level != "WARN" {
		t.Fatalf("want one WARN entry, got %v", warns)
	}
	r := warns[0]
	if e := r.attr("err"); len(e) != 1 || strings.Contains(e[0], "\n") || !strings.Contains(e[0], "two, once") {
		t.Errorf("err attribute %q", e)
	}
	if s := r.attr("stack"); len(s) != 1 || !strings.Contains(s[0], "goroutine ") {
		t.Errorf("stack attribute %q", s)
	}
	noRepeatedAttrs(t, logs.all())
}

// TestCancellationIsNotAFailure: a job cancelled by its caller (its
// context, or JobHandle.Cancel) returns context.Canceled itself, the same
// error on every run, and logs nothing at WARN or above. The job runs
// with one small batch of credit per channel, so tasks are blocked on
// backpressure in various places when it is cancelled (a task blocked in
// a send used to report the cancellation wrapped in its operator's name,
// in about one run in 15).
func TestCancellationIsNotAFailure(t *testing.T) {
	logs := &captured{}
	for run := range 30 {
		opts := []weir.Option{weir.WithParallelism(2), weir.WithLogger(logs.logger()), weir.WithBufferSize(8), weir.WithBufferCredits(1)}
		if run%3 == 0 {
			opts = append(opts, weir.WithRestartStrategy(weir.FixedDelayRestart(3, 0)))
		}
		env := weir.NewEnvironment(opts...)
		env.EnableCheckpointing(time.Millisecond)
		seen := make(chan struct{})
		var once sync.Once
		src := weir.Map(weir.Generate(env, -1, 0, func(i int64) int64 { return i }, weir.NoWatermarks[int64]()),
			func(v int64) int64 { return v })
		counted := weir.Process(weir.KeyBy(src, func(v int64) int64 { return v % 7 }), &idCounter{})
		weir.SinkFunc(counted, func(keyCount) error {
			once.Do(func() { close(seen) })
			return nil
		})
		ctx, cancel := context.WithCancel(t.Context())
		h, err := env.ExecuteAsync(ctx, "cancelled")
		if err != nil {
			t.Fatal(err)
		}
		recv(t, h, seen)
		if run%2 == 0 {
			cancel()
		} else {
			h.Cancel()
		}
		err = h.Wait()
		cancel()
		if err != context.Canceled {
			t.Errorf("run %d: Wait returned %v (%T), want context.Canceled itself", run, err, err)
		}
		if !errors.Is(err, context.Canceled) {
			t.Errorf("run %d: not context.Canceled: %v", run, err)
		}
	}
	for _, r := range logs.problems() {
		t.Errorf("a cancelled job logged %s", r)
	}
	noRepeatedAttrs(t, logs.all())
}

// TestControlEndpointLogsJobOnce: the control endpoint's entries name the
// job once (they repeated it: job="ctl job" job="ctl job").
func TestControlEndpointLogsJobOnce(t *testing.T) {
	logs := &captured{}
	spDir := t.TempDir()
	srv := rest.New("127.0.0.1:0", rest.AllowSavepointTargets(spDir))
	t.Cleanup(func() { srv.Close() })
	env := weir.NewEnvironment(weir.WithParallelism(1), weir.WithLogger(logs.logger()), weir.WithPlugin(srv))
	env.EnableCheckpointing(time.Hour)
	src := weir.Generate(env, -1, 1000, func(i int64) int64 { return i }, weir.NoWatermarks[int64]())
	weir.Discard(src)
	h, err := env.ExecuteAsync(t.Context(), "ctl job")
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.Post("http://"+srv.Addr()+"/jobs/ctl%20job/savepoints", "application/json",
		strings.NewReader(fmt.Sprintf(`{"dir": %q}`, spDir)))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("savepoint request: %s", resp.Status)
	}
	h.Cancel()
	h.Wait()
	requested := false
	for _, r := range logs.all() {
		if r.msg == "savepoint requested" {
			requested = true
			if got := r.attr("job"); len(got) != 1 || got[0] != "ctl job" {
				t.Errorf("job attribute %q in %s", got, r)
			}
		}
	}
	if !requested {
		t.Errorf("no savepoint request logged: %v", logs.all())
	}
	noRepeatedAttrs(t, logs.all())
}

// problems returns the WARN and ERROR entries logged.
func (c *captured) problems() []capturedRecord {
	var out []capturedRecord
	for _, r := range c.all() {
		if r.level == "ERROR" || r.level == "WARN" {
			out = append(out, r)
		}
	}
	return out
}
