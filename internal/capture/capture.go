// Package capture turns what one subtask's head operator is given (a
// engine.Capturer's calls) into a scenario file of the conformance
// format (docs/scenario-format.md): `weir record` takes one from a
// live job and `weir scenario` replays it offline.
//
// The file runs the `watermarks` operator: the engine's channel valves and,
// for two inputs, its two-input combiner in front of an identity operator,
// the part of every operator that decides which watermarks and statuses it
// sees. Each record becomes an input line with the key its keyBy gives it
// and its value as text, each watermark and status of a channel a line of
// its own, processing time a `proc` line where it moved, and under each
// line the outputs the live operator had from it: the records (which the
// identity passes on) and the watermarks and statuses its valves and
// combiner gave it. A preamble first restores every channel's watermark and
// idleness as they were when the capture started (its outputs are the
// engine's own for that preamble). `weir scenario --check` on the file then
// tells whether the offline engine reproduces the live operator's event
// time exactly; `weir scenario` prints what it does with the inputs.
package capture

import (
	"fmt"
	"math"
	"strings"
	"sync"

	"github.com/weirstream/weir/internal/engine"
	"github.com/weirstream/weir/internal/watermark"
)

// Recorder is a engine.Capturer that writes a scenario file. It is safe
// for concurrent use: the task goroutine captures, another reads.
type Recorder struct {
	mu      sync.Mutex
	header  []string
	lines   []entry
	limit   int
	full    chan struct{}
	closed  bool
	refused bool // an input line came after the limit: later outputs are its
	began   bool
	inputs  int
	chans   int
	lastNow int64
	pre     []entry
}

type entry struct {
	in   string
	outs []string
}

// New returns a recorder that stops after limit input lines (0: no
// limit); header lines are written as comments at the top.
func New(limit int, header ...string) *Recorder {
	return &Recorder{header: header, limit: limit, full: make(chan struct{}), lastNow: math.MinInt64}
}

// Full is closed once the recorder has taken limit input lines.
func (r *Recorder) Full() <-chan struct{} { return r.full }

// Close makes the recorder ignore every later call.
func (r *Recorder) Close() {
	r.mu.Lock()
	r.closed = true
	r.mu.Unlock()
}

// token makes s a scenario token: no spaces, no comment sign, not empty.
func token(s string) string {
	s = strings.Map(func(c rune) rune {
		if c == '#' || c == ' ' || c == '\t' || c == '\n' || c == '\r' {
			return '_'
		}
		return c
	}, s)
	if s == "" {
		return "_"
	}
	return s
}

func chanName(input, ch int) string { return fmt.Sprintf("%d.%d", input+1, ch) }

func eventLine(e watermark.Event) string {
	if e.IsStatus {
		if e.Idle {
			return "status idle"
		}
		return "status active"
	}
	return fmt.Sprintf("wm %d", e.Watermark)
}

// Begin implements engine.Capturer: it writes the preamble that restores
// the channels' state, with the outputs the engine's valves and combiner
// give it.
func (r *Recorder) Begin(inputs []engine.CaptureInput) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.began = true
	r.inputs = len(inputs)
	for _, in := range inputs {
		r.chans = max(r.chans, in.Channels)
	}
	sim := newSimulator(len(inputs), r.chans)
	for i, in := range inputs {
		for ch := range r.chans {
			wm, idle := int64(math.MinInt64), true // a channel the input lacks stays idle
			if ch < in.Channels {
				wm, idle = in.Watermarks[ch], in.Idle[ch]
			}
			if wm != math.MinInt64 {
				r.pre = append(r.pre, entry{in: fmt.Sprintf("%s wm %d", chanName(i, ch), wm), outs: sim.watermark(i, ch, wm)})
			}
			if idle {
				r.pre = append(r.pre, entry{in: chanName(i, ch) + " idle", outs: sim.status(i, ch, true)})
			}
		}
	}
}

func (r *Recorder) add(line string, now int64) bool {
	if r.closed || !r.began {
		return false
	}
	if r.limit > 0 && len(r.lines) >= r.limit {
		r.refused = true
		return false
	}
	if now != r.lastNow {
		r.lastNow = now
		r.lines = append(r.lines, entry{in: fmt.Sprintf("proc %d", now)})
	}
	r.lines = append(r.lines, entry{in: line})
	if r.limit > 0 && len(r.lines) >= r.limit {
		close(r.full)
	}
	return true
}

// Record implements engine.Capturer.
func (r *Recorder) Record(input, ch int, key, value string, ts, now int64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	key, value = token(key), token(value)
	if r.add(fmt.Sprintf("%s rec %s %d %s", chanName(input, ch), key, ts, value), now) {
		last := &r.lines[len(r.lines)-1]
		last.outs = append(last.outs, fmt.Sprintf("out %s %d %s", key, ts, value))
	}
}

// Watermark implements engine.Capturer.
func (r *Recorder) Watermark(input, ch int, wm, now int64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.add(fmt.Sprintf("%s wm %d", chanName(input, ch), wm), now)
}

// Status implements engine.Capturer.
func (r *Recorder) Status(input, ch int, idle bool, now int64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	s := "active"
	if idle {
		s = "idle"
	}
	r.add(chanName(input, ch)+" "+s, now)
}

// Output implements engine.Capturer: the event belongs to the last input
// line.
func (r *Recorder) Output(e watermark.Event) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed || r.refused || len(r.lines) == 0 {
		return
	}
	last := &r.lines[len(r.lines)-1]
	last.outs = append(last.outs, eventLine(e))
}

// Lines returns the number of input lines captured (proc lines included).
func (r *Recorder) Lines() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.lines)
}

// Scenario returns the scenario file.
func (r *Recorder) Scenario() []byte {
	r.mu.Lock()
	defer r.mu.Unlock()
	var b strings.Builder
	for _, h := range r.header {
		fmt.Fprintf(&b, "# %s\n", h)
	}
	fmt.Fprintf(&b, "op watermarks inputs=%d channels=%d\n", max(r.inputs, 1), max(r.chans, 1))
	write := func(es []entry) {
		for _, e := range es {
			b.WriteString(e.in + "\n")
			for _, o := range e.outs {
				b.WriteString("> " + o + "\n")
			}
		}
	}
	if len(r.pre) > 0 {
		b.WriteString("# the channels' watermarks and idleness when the capture started\n")
		write(r.pre)
	}
	fmt.Fprintf(&b, "# %d captured input lines\n", len(r.lines))
	write(r.lines)
	return []byte(b.String())
}

// simulator runs the engine's valves and combiner over the preamble.
type simulator struct {
	gates []*engine.Gate[struct{}]
	out   *sink
}

// sink collects what the simulated operator is given.
type sink struct{ events []string }

func (s *sink) ProcessBatch([]engine.Record[struct{}]) error  { return nil }
func (s *sink) ProcessBatch1([]engine.Record[struct{}]) error { return nil }
func (s *sink) ProcessBatch2([]engine.Record[struct{}]) error { return nil }
func (s *sink) ProcessWatermark(wm int64) error {
	s.events = append(s.events, eventLine(watermark.Event{Watermark: wm}))
	return nil
}
func (s *sink) ProcessStatus(idle bool) error {
	s.events = append(s.events, eventLine(watermark.Event{IsStatus: true, Idle: idle}))
	return nil
}
func (s *sink) EndInput() error  { return nil }
func (s *sink) EndInput1() error { return nil }
func (s *sink) EndInput2() error { return nil }

func newSimulator(inputs, chans int) *simulator {
	s := &simulator{out: &sink{}}
	if inputs == 2 {
		a := engine.NewTwoInputAdapter[struct{}, struct{}](s.out)
		s.gates = []*engine.Gate[struct{}]{engine.NewGate(chans, a.First()), engine.NewGate(chans, a.Second())}
		return s
	}
	s.gates = []*engine.Gate[struct{}]{engine.NewGate[struct{}](chans, s.out)}
	return s
}

func (s *simulator) take() []string {
	out := s.out.events
	s.out.events = nil
	return out
}

func (s *simulator) watermark(input, ch int, wm int64) []string {
	s.gates[input].WatermarkOn(ch, wm)
	return s.take()
}

func (s *simulator) status(input, ch int, idle bool) []string {
	s.gates[input].Status(ch, idle)
	return s.take()
}
