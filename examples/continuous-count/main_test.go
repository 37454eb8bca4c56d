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
	"time"

	"go.uber.org/goleak"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/weirtest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// base is 2026-01-01 00:00:00 UTC, a multiple of 200 s: the start of a window.
var base = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).UnixMilli()

// driver steps the job built by Build in a test harness with a manual
// processing-time clock.
type driver struct {
	t *testing.T
	h *weirtest.OneInput[string, WindowCount]
}

func newDriver(t *testing.T) *driver {
	t.Helper()
	h, err := weirtest.NewOneInput(func(in weir.DataStream[string]) weir.DataStream[WindowCount] {
		return Build(in, DefaultSize, DefaultInterval)
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := h.Close(); err != nil {
			t.Error(err)
		}
	})
	d := &driver{t: t, h: h}
	d.at(0)
	return d
}

// at moves the clock to base+ms and returns the lines printed meanwhile.
func (d *driver) at(ms int64) []string {
	d.t.Helper()
	if err := d.h.SetProcessingTime(base + ms); err != nil {
		d.t.Fatal(err)
	}
	return d.take()
}

// take returns the output records since the last call as printed lines,
// and checks that each carries its window's last millisecond.
func (d *driver) take() []string {
	d.t.Helper()
	var out []string
	for _, e := range d.h.TakeEvents() {
		if e.Kind != weirtest.KindRecord {
			continue
		}
		c := e.Value.(WindowCount)
		if now := d.h.ProcessingTime(); c.At != now {
			d.t.Errorf("%v fired at %d, the clock is at %d", c, c.At, now)
		}
		if e.TS != c.End-1 {
			d.t.Errorf("%v emitted at %d, want the window's max timestamp %d", c, e.TS, c.End-1)
		}
		out = append(out, c.String())
	}
	return out
}

// lines feeds lines at the current processing time.
func (d *driver) lines(ls ...string) {
	d.t.Helper()
	for _, l := range ls {
		if err := d.h.ProcessElement(l, weir.NoTimestamp); err != nil {
			d.t.Fatal(err)
		}
	}
	if out := d.take(); len(out) > 0 {
		d.t.Fatalf("a line fired the window: %q (the continuous processing-time trigger never fires on an element)", out)
	}
}

func (d *driver) expect(ms int64, want ...string) {
	d.t.Helper()
	if got := d.at(ms); !slices.Equal(got, want) {
		d.t.Fatalf("at +%dms printed %q, want %q", ms, got, want)
	}
}

const (
	first  = "[00:00:00, 00:03:20)" // the window [base, base+200 s)
	second = "[00:03:20, 00:06:40)"
)

// TestFiresEveryFiveSeconds steps the clock through a whole 200-second
// window, 5 seconds at a time, and checks every line printed: the
// cumulative count at each multiple of 5 s after the first line (also when
// nothing arrived since the last firing), the final count at the window's
// last millisecond, nothing for an empty window, and the next window
// starting from 1.
func TestFiresEveryFiveSeconds(t *testing.T) {
	d := newDriver(t)
	d.expect(1000)
	d.lines("a", "b")
	d.expect(4999)
	d.expect(5000, "00:00:05 count 2 in window "+first)
	d.expect(6000)
	d.lines("c")
	d.expect(7500)
	d.lines("d")
	d.expect(10000, "00:00:10 count 4 in window "+first)
	for ms := int64(15000); ms <= 195000; ms += 5000 {
		want := int64(4)
		if ms > 100500 {
			want = 5
		}
		d.expect(ms - 1) // nothing between firings
		d.expect(ms, fmt.Sprintf("%s count %d in window %s", utc(base+ms, "15:04:05"), want, first))
		if ms == 100000 {
			d.expect(100500)
			d.lines("e")
		}
	}
	d.expect(199998)
	d.lines("f")
	// The last firing is at the window's max timestamp (the trigger clamps
	// its next fire time to it), then the window is cleaned up.
	d.expect(199999, "00:03:19 count 6 in window "+first)
	d.expect(200000)
	d.expect(205000) // the second window has no element: no firing
	d.expect(206000)
	d.lines("g")
	d.expect(209999)
	d.expect(210000, "00:03:30 count 1 in window "+second)
	d.expect(215000, "00:03:35 count 1 in window "+second)
}

// TestFirstFiringIsAlignedToTheEpoch: the first fire time is the next
// multiple of the interval after the first line's processing time, not 5 s
// after the line.
func TestFirstFiringIsAlignedToTheEpoch(t *testing.T) {
	d := newDriver(t)
	d.expect(9999)
	d.lines("x") // at 00:00:09.999: fires at 00:00:10, 1 ms later
	d.expect(10000, "00:00:10 count 1 in window "+first)
	d.expect(14999)
	d.lines("y")
	d.expect(15000, "00:00:15 count 2 in window "+first)
}

// TestClockJump: when the clock jumps over several intervals (a stalled
// process), every missed firing runs, in order, at the time of the jump.
func TestClockJump(t *testing.T) {
	d := newDriver(t)
	d.expect(1000)
	d.lines("a")
	d.expect(5000, "00:00:05 count 1 in window "+first)
	d.lines("b")
	d.expect(20000,
		"00:00:20 count 2 in window "+first, // the firing due at 00:00:10
		"00:00:20 count 2 in window "+first, // 00:00:15
		"00:00:20 count 2 in window "+first) // 00:00:20
	d.lines("c")
	// A jump past the window's end: the periodic firings up to 00:03:15,
	// the end firing at 00:03:19.999, and nothing for the next window.
	got := d.at(300000)
	if len(got) != 36 {
		t.Fatalf("%d firings after a jump over 36 fire times: %q", len(got), got)
	}
	for _, l := range got {
		if l != "00:05:00 count 3 in window "+first {
			t.Fatalf("after the jump: %q", got)
		}
	}
}

// TestLineAfterTheLastFiring: a processing-time window is not late by
// itself (only event-time windows are), so a line that arrives at a
// window's last millisecond after its final firing and cleanup starts the
// window anew; its end timer is already due and fires it with that line
// only, as in Flink. (The harness runs due timers when the clock is set;
// the real runtime runs them at once.)
func TestLineAfterTheLastFiring(t *testing.T) {
	d := newDriver(t)
	d.expect(1000)
	d.lines("a", "b")
	if got := d.at(190000); len(got) != 38 {
		t.Fatalf("%d firings up to 00:03:10, want 38", len(got))
	}
	d.expect(195000, "00:03:15 count 2 in window "+first)
	d.expect(199999, "00:03:19 count 2 in window "+first)
	d.lines("c")
	d.expect(199999, "00:03:19 count 1 in window "+first)
	d.expect(205000)
}

// syncBuffer is a bytes.Buffer safe for the print sink's goroutine and the
// test's.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) lines() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.b.Len() == 0 {
		return nil
	}
	return strings.Split(strings.TrimSuffix(s.b.String(), "\n"), "\n")
}

// TestRunOverSocket runs the whole command against a local text server,
// with a manual clock: the lines written to the socket are counted and the
// counts printed as the test moves the clock.
func TestRunOverSocket(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	send := make(chan string)
	served := make(chan struct{})
	go func() {
		defer close(served)
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close() // the job ends when the server closes the connection
		for s := range send {
			if _, err := c.Write([]byte(s)); err != nil {
				return
			}
		}
	}()

	clk := weirtest.NewManualClock(base)
	var out syncBuffer
	ctx := t.Context() // no deadline: a hang ends at go test's -timeout
	closeSend := sync.OnceFunc(func() { close(send) })
	job, err := start(ctx, []string{"-host", "127.0.0.1", "-port", fmt.Sprint(ln.Addr().(*net.TCPAddr).Port)}, &out, weir.WithClock(clk))
	if err != nil {
		closeSend()
		t.Fatal(err)
	}
	defer func() {
		if t.Failed() {
			job.Cancel()
		}
		closeSend()
		<-job.Done()
		<-served
	}()
	// waitFor advances the clock by 5 s at a time until a line with count
	// n is printed. (The test cannot know exactly when the window operator
	// has taken the lines written to the socket, so the firing may come one
	// interval later than in the harness tests; the counts are exact.)
	waitFor := func(n int64) {
		t.Helper()
		want := fmt.Sprintf(" count %d in window %s", n, first)
		printed := func() bool {
			for _, l := range out.lines() {
				if strings.HasSuffix(l, want) {
					return true
				}
			}
			return false
		}
		for windowIn(job) < n && ctx.Err() == nil {
			time.Sleep(time.Millisecond)
		}
		for range 5 {
			before := len(out.lines())
			clk.Advance(5000)
			// Every firing prints a line: wait for it, however long.
			for len(out.lines()) == before {
				time.Sleep(time.Millisecond)
			}
			if printed() {
				return
			}
		}
		t.Fatalf("no %q printed; output:\n%s", want, strings.Join(out.lines(), "\n"))
	}
	send <- "to be\nor not\n"
	waitFor(2)
	send <- "to be\n"
	waitFor(3)
	closeSend()
	if err := job.Wait(); err != nil {
		t.Fatal(err)
	}
	// Every firing printed the count so far: 2 until the third line was
	// counted, then 3.
	lines := out.lines()
	t.Logf("printed:\n%s", strings.Join(lines, "\n"))
	last := int64(0)
	for _, l := range lines {
		var at string
		var n int64
		if _, err := fmt.Sscanf(l, "%s count %d in window", &at, &n); err != nil || !strings.HasSuffix(l, " in window "+first) {
			t.Fatalf("unexpected line %q", l)
		}
		if n < last || n < 2 || n > 3 {
			t.Fatalf("count %d after %d:\n%s", n, last, strings.Join(lines, "\n"))
		}
		last = n
	}
	if last != 3 {
		t.Fatalf("last count %d, want 3:\n%s", last, strings.Join(lines, "\n"))
	}
}

// windowIn returns the records that reached the counting operator.
func windowIn(job *weir.JobHandle) int64 {
	var n int64
	for _, task := range job.Metrics() {
		for _, op := range task.Operators {
			if op.Name == "count" {
				n += op.RecordsIn
			}
		}
	}
	return n
}

func TestRunRejectsBadFlags(t *testing.T) {
	var out bytes.Buffer
	for _, args := range [][]string{
		{"-size", "0s"},
		{"-interval", "-5s"},
		{"-port", "70000"},
		{"extra"},
	} {
		if err := run(context.Background(), args, &out); err == nil {
			t.Errorf("%q accepted", args)
		}
	}
}
