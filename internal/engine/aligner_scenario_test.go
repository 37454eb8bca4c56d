package engine

import (
	"bytes"
	"context"
	"encoding/gob"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/weirstream/weir/internal/clock"
)

var rewrite = flag.Bool("rewrite", false, "rewrite the expected output of testdata/aligner scenarios")

// TestAlignerScenarios replays the step scripts of testdata/aligner on a
// two-input task: input 1 has two channels (producers 1.0 and 1.1), input 2
// one (producer 2.0). Each block is a few commands, "----", and what they
// caused, in order:
//
//	new [at-least-once] [unaligned] [timeout=MS]   a fresh task (exactly-once aligned by default)
//	rec I.C v...        records from producer I.C (sent and processed)
//	wm I.C MS           a watermark from producer I.C
//	barrier I.C ID [at=MS] [savepoint]   barrier ID started at MS (default: now)
//	end I.C             producer I.C ends
//	advance MS          processing time moves on (alignment timeouts fire)
//	state               the aligner's checkpoint, mode, held batches, recorded channels
//
// Output lines: "inI: v..." (records the operator got), "inI wm: MS",
// "snapshot cpN: in1=[...] in2=[...]" (what the operator had processed when
// it snapshotted), "forward barrier N", "abort cpN", "ack cpN" with the
// channel state "chan I.C: [v... wm:MS]". Run with -rewrite to regenerate.
func TestAlignerScenarios(t *testing.T) {
	files, err := filepath.Glob("testdata/aligner/*.txt")
	if err != nil || len(files) == 0 {
		t.Fatalf("no scenario files: %v", err)
	}
	for _, f := range files {
		t.Run(strings.TrimSuffix(filepath.Base(f), ".txt"), func(t *testing.T) { runScenarioFile(t, f) })
	}
}

type scenBlock struct {
	line  int
	input string // comments and commands, as written
	want  string
}

func parseScenario(t *testing.T, data string) []scenBlock {
	var blocks []scenBlock
	lines := strings.Split(data, "\n")
	for i := 0; i < len(lines); {
		if strings.TrimSpace(lines[i]) == "" {
			i++
			continue
		}
		b := scenBlock{line: i + 1}
		var in []string
		for i < len(lines) && lines[i] != "----" {
			in = append(in, lines[i])
			i++
		}
		if i == len(lines) {
			t.Fatalf("line %d: block without ----", b.line)
		}
		i++
		var want []string
		for i < len(lines) && strings.TrimSpace(lines[i]) != "" {
			want = append(want, lines[i])
			i++
		}
		b.input = strings.Join(in, "\n")
		b.want = strings.Join(want, "\n")
		blocks = append(blocks, b)
	}
	return blocks
}

func runScenarioFile(t *testing.T, path string) {
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	blocks := parseScenario(t, string(data))
	var r *scenRig
	var out strings.Builder
	for _, b := range blocks {
		var got strings.Builder
		for _, l := range strings.Split(b.input, "\n") {
			l = strings.TrimSpace(l)
			if l == "" || strings.HasPrefix(l, "#") {
				continue
			}
			f := strings.Fields(l)
			if f[0] == "new" {
				r = newScenRig(t, f[1:])
				continue
			}
			if f[0] == "restore" && r != nil {
				r = r.restore(f[1:])
				r.collect()
				got.WriteString(r.log.String())
				r.log.Reset()
				continue
			}
			if r == nil {
				t.Fatalf("%s:%d: %q before new", path, b.line, l)
			}
			if err := r.do(f); err != nil {
				fmt.Fprintf(&r.log, "error: %v\n", err)
			}
			r.collect()
			got.WriteString(r.log.String())
			r.log.Reset()
		}
		g := strings.TrimRight(got.String(), "\n")
		if *rewrite {
			fmt.Fprintf(&out, "%s\n----\n%s\n\n", b.input, g)
			continue
		}
		if g != b.want {
			t.Errorf("%s:%d:\n%s\ngot:\n%s\nwant:\n%s", path, b.line, b.input, g, b.want)
		}
	}
	if *rewrite {
		if err := os.WriteFile(path, []byte(strings.TrimRight(out.String(), "\n")+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// scenRig is a real Task with two gates fed through real exchanges, a
// snapshotter that records what the operator had processed, and a fake
// output that logs forwarded barriers.
type scenRig struct {
	t     *testing.T
	clk   *clock.Manual
	task  *Task
	g     [2]*Gate[string]
	s     [2]*scenSink
	w     map[string]*Writer[string]
	acks  chan TaskAck
	log   bytes.Buffer
	args  []string
	acked map[int64]TaskAck
	// snapped holds what the operator had processed at each snapshot.
	snapped map[int64][]string
}

// scenSink is the operator's input: it logs what arrives, as it arrives.
type scenSink struct {
	sink[string]
	r  *scenRig
	in int
}

func (s *scenSink) ProcessBatch(recs []Record[string]) error {
	fmt.Fprintf(&s.r.log, "in%d: %s\n", s.in, strings.Join(values(recs), " "))
	return s.sink.ProcessBatch(recs)
}

func (s *scenSink) ProcessWatermark(wm int64) error {
	fmt.Fprintf(&s.r.log, "in%d wm: %d\n", s.in, wm)
	return s.sink.ProcessWatermark(wm)
}

func (s *scenSink) EndInput() error {
	fmt.Fprintf(&s.r.log, "in%d ended\n", s.in)
	return s.sink.EndInput()
}

type scenSnap struct{ r *scenRig }

func (s scenSnap) SnapshotState(id int64) (OperatorSnapshot, error) {
	r := s.r
	fmt.Fprintf(&r.log, "snapshot cp%d: in1=%v in2=%v\n", id, values(r.s[0].recs), values(r.s[1].recs))
	r.snapped[id] = append(values(r.s[0].recs), values(r.s[1].recs)...)
	return OperatorSnapshot{State: []byte("x")}, nil
}

type scenOut struct{ r *scenRig }

func (o scenOut) Flush() error { return nil }
func (o scenOut) Barrier(b Barrier) error {
	fmt.Fprintf(&o.r.log, "forward barrier %d\n", b.ID)
	return nil
}
func (o scenOut) SetContext(context.Context)  {}
func (o scenOut) SetActivity(*clock.Pausable) {}

func newScenRig(t *testing.T, args []string) *scenRig {
	cc := &CheckpointConfig{ExactlyOnce: true}
	for _, a := range args {
		switch {
		case a == "at-least-once":
			cc.ExactlyOnce = false
		case a == "unaligned":
			cc.Unaligned = true
		case strings.HasPrefix(a, "timeout="):
			ms, err := strconv.Atoi(strings.TrimPrefix(a, "timeout="))
			if err != nil {
				t.Fatal(err)
			}
			cc.AlignedTimeout = time.Duration(ms) * time.Millisecond
		default:
			t.Fatalf("new: unknown option %q", a)
		}
	}
	r := &scenRig{t: t, clk: clock.NewManual(0), acks: make(chan TaskAck, 16), w: map[string]*Writer[string]{},
		args: args, acked: map[int64]TaskAck{}, snapped: map[int64][]string{}}
	r.task = NewTask("two-input", 0, r.clk)
	r.task.parallelism = 1
	r.task.headUID = "op"
	r.task.SetAcks(r.acks)
	r.task.AddSnapshotter("op", scenSnap{r})
	r.task.AddWriter(scenOut{r})
	// Room for every batch a test sends: a blocked channel's producer
	// would otherwise wait for credits on the test's own goroutine.
	inbox := make(chan message, 3*128)
	r.task.SetInbox(inbox)
	a := r.task.newAligner(cc)
	abort := a.cfg.Abort
	a.cfg.Abort = func(id int64) {
		fmt.Fprintf(&r.log, "abort cp%d\n", id)
		abort(id)
	}
	complete := a.cfg.Complete
	a.cfg.Complete = func(id int64, chans []GateChannelState) error {
		err := complete(id, chans)
		r.collect()
		return err
	}
	r.task.aligner = a
	ctx := context.Background()
	for i, chans := range []int{2, 1} {
		r.s[i] = &scenSink{r: r, in: i + 1}
		r.g[i] = NewGate[string](chans, r.s[i])
		r.g[i].SetAligner(a, i)
		kind := PartitionRebalance
		if chans == 1 {
			kind = PartitionForward
		}
		x, err := NewExchange[string](kind, nil, chans, 1, ExchangeConfig{BatchSize: 100, Credits: 128})
		if err != nil {
			t.Fatal(err)
		}
		x.Attach(0, r.g[i], 0, inbox)
		for p := range chans {
			r.w[fmt.Sprintf("%d.%d", i+1, p)] = x.Writer(ctx, p, nil)
		}
	}
	return r
}

func (r *scenRig) writer(name string) (*Writer[string], error) {
	w := r.w[name]
	if w == nil {
		return nil, fmt.Errorf("no producer %q (have 1.0, 1.1, 2.0)", name)
	}
	return w, nil
}

func (r *scenRig) do(f []string) error {
	switch f[0] {
	case "rec", "queue", "wm", "barrier", "end":
		if len(f) < 2 {
			return fmt.Errorf("%s: which producer?", f[0])
		}
		w, err := r.writer(f[1])
		if err != nil {
			return err
		}
		switch f[0] {
		case "rec":
			for _, v := range f[2:] {
				if err := w.ProcessBatch([]Record[string]{{Value: v}}); err != nil {
					return err
				}
			}
			err = w.Flush()
		case "queue":
			// Records that wait in the producer's buffer: they share a
			// batch with whatever the producer sends next.
			for _, v := range f[2:] {
				if err := w.ProcessBatch([]Record[string]{{Value: v}}); err != nil {
					return err
				}
			}
			return nil
		case "wm":
			var wm int64
			if wm, err = strconv.ParseInt(f[2], 10, 64); err == nil {
				err = w.ProcessWatermark(wm)
			}
		case "barrier":
			b := Barrier{Timestamp: r.clk.NowMillis(), Unalignable: true}
			if b.ID, err = strconv.ParseInt(f[2], 10, 64); err != nil {
				return err
			}
			for _, o := range f[3:] {
				switch {
				case o == "savepoint":
					b.Unalignable = false
				case strings.HasPrefix(o, "at="):
					if b.Timestamp, err = strconv.ParseInt(strings.TrimPrefix(o, "at="), 10, 64); err != nil {
						return err
					}
				default:
					return fmt.Errorf("barrier: unknown option %q", o)
				}
			}
			err = w.Barrier(b)
		case "end":
			err = w.EndInput()
		}
		if err != nil {
			return err
		}
		_, err = r.task.Drain()
		return err
	case "advance":
		ms, err := strconv.ParseInt(f[1], 10, 64)
		if err != nil {
			return err
		}
		r.clk.Advance(ms)
		return r.task.AdvanceProcessingTime(r.clk.NowMillis())
	case "state":
		a := r.task.aligner
		mode := "aligned"
		if a.Unaligned() {
			mode = "unaligned"
		}
		var rec []string
		for gi, g := range r.g {
			for ch := range g.Channels() {
				if a.recording(gi, ch) {
					rec = append(rec, fmt.Sprintf("%d.%d", gi+1, ch))
				}
			}
		}
		switch {
		case a.Current() < 0:
			fmt.Fprintf(&r.log, "idle, held %d\n", a.Held())
		case a.Unaligned():
			fmt.Fprintf(&r.log, "cp%d %s, held %d, recording %v\n", a.Current(), mode, a.Held(), rec)
		default:
			fmt.Fprintf(&r.log, "cp%d %s, held %d\n", a.Current(), mode, a.Held())
		}
		return nil
	}
	return fmt.Errorf("unknown command %q", f[0])
}

// collect logs the acknowledgements sent.
func (r *scenRig) collect() {
	for {
		select {
		case a := <-r.acks:
			r.acked[a.ID] = a
			fmt.Fprintf(&r.log, "ack cp%d\n", a.ID)
			for _, op := range a.Ops {
				if len(op.ChannelState) > 0 {
					r.log.WriteString(describeChannelState(r.t, op.ChannelState))
				}
			}
		default:
			return
		}
	}
}

func describeChannelState(t *testing.T, data []byte) string {
	var s taskChannelState
	if err := decodeGob(data, &s); err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for gi, g := range s.Gates {
		chans := make([]int, 0, len(g.Data))
		for ch := range g.Data {
			chans = append(chans, ch)
		}
		slices.Sort(chans)
		for _, ch := range chans {
			var elems []string
			dec := gob.NewDecoder(bytes.NewReader(g.Data[ch]))
			for {
				var e inflight[string]
				if err := dec.Decode(&e); err != nil {
					if !errors.Is(err, io.EOF) {
						t.Fatal(err)
					}
					break
				}
				if e.IsWM {
					elems = append(elems, fmt.Sprintf("wm:%d", e.WM))
				} else {
					elems = append(elems, values(e.Recs)...)
				}
			}
			fmt.Fprintf(&b, "  chan %d.%d: %v\n", gi+1, ch, elems)
		}
	}
	return b.String()
}

// restore returns a fresh task (same configuration) restored from the
// channel state of acknowledged checkpoint args[0], replayed.
func (r *scenRig) restore(args []string) *scenRig {
	r.t.Helper()
	id, err := strconv.ParseInt(args[0], 10, 64)
	if err != nil {
		r.t.Fatal(err)
	}
	a, ok := r.acked[id]
	if !ok {
		r.t.Fatalf("restore: checkpoint %d was not acknowledged", id)
	}
	n := newScenRig(r.t, r.args)
	replay, err := restoreChannelState(a.Ops, "two-input", 0, 1, []channelStateGate{n.g[0], n.g[1]})
	if err != nil {
		r.t.Fatal(err)
	}
	n.task.replay = replay
	fmt.Fprintf(&n.log, "restored cp%d\n", id)
	if err := n.task.ReplayChannelState(); err != nil {
		fmt.Fprintf(&n.log, "error: %v\n", err)
	}
	return n
}
