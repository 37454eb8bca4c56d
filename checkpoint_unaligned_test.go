package weir_test

import (
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"log/slog"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/connector"
	"github.com/weirstream/weir/connector/file"
	"github.com/weirstream/weir/state"
	"github.com/weirstream/weir/weirtest"
)

// coRunningCount is a keyed co-process function that reports every element
// it gets ("e L v" / "e R v") and the running count of its key ("c k n").
// The set of lines is the same in every fault-free run, whatever the
// interleaving of the two inputs: each element once, and the counts 1..N
// of every key. A lost in-flight record leaves a key's count short and its
// element missing; a record processed twice pushes a count past N. It
// sleeps 1 ms every 8 elements (about 8k elements/s per subtask), slower
// than the sources, so the inputs back up and the job lasts long enough
// for many checkpoints.
type coRunningCount struct {
	n     state.ValueState[int64]
	calls int
	// check runs before each element (failure injection).
	check func()
}

func (c *coRunningCount) Open(ctx weir.KeyedRuntimeContext[int64]) (err error) {
	c.n, err = weir.GetValueState(ctx, state.Value[int64]("n"))
	return err
}

func (c *coRunningCount) element(side string, v int64, ctx weir.KeyedContext[int64], out weir.Collector[string]) error {
	if c.check != nil {
		c.check()
	}
	if c.calls++; c.calls%8 == 0 {
		time.Sleep(time.Millisecond)
	}
	n, _ := c.n.Value()
	c.n.Update(n + 1)
	out.Collect(fmt.Sprintf("e %s %d", side, v))
	out.Collect(fmt.Sprintf("c %d %d", ctx.CurrentKey(), n+1))
	return nil
}

func (c *coRunningCount) ProcessElement1(v int64, ctx weir.KeyedContext[int64], out weir.Collector[string]) error {
	return c.element("L", v, ctx, out)
}

func (c *coRunningCount) ProcessElement2(v int64, ctx weir.KeyedContext[int64], out weir.Collector[string]) error {
	return c.element("R", v, ctx, out)
}

func (c *coRunningCount) OnTimer(int64, weir.OnTimerContext[int64], weir.Collector[string]) error {
	return nil
}

// hasChannelState reports whether a checkpoint stored in-flight data.
func hasChannelState(cp *weir.Checkpoint) bool {
	if cp == nil {
		return false
	}
	for _, subs := range cp.Operators {
		for _, s := range subs {
			if len(s.ChannelState) > 0 {
				return true
			}
		}
	}
	return false
}

// strideSource is an unbounded source until told otherwise: split s of p
// emits s, s+p, s+2p, ... below limit (read before each batch), checkpointing
// its position; max is the largest value any split emitted, plus 1. With
// hold > 0 a split waits at its first value >= hold until release is
// closed.
type strideSource struct {
	limit    *atomic.Int64
	max      atomic.Int64
	hold     int64
	release  chan struct{}
	released atomic.Bool
	once     sync.Once
}

// open releases the held splits.
func (src *strideSource) open() {
	src.once.Do(func() {
		src.released.Store(true)
		close(src.release)
	})
}

type strideSplit struct{ s, p int }

func (s strideSplit) SplitID() string { return fmt.Sprintf("stride-%d-of-%d", s.s, s.p) }

func (src *strideSource) Splits(p int) ([]connector.Split, error) {
	out := make([]connector.Split, p)
	for i := range p {
		out[i] = strideSplit{i, p}
	}
	return out, nil
}

func (src *strideSource) Reader(sp connector.Split) (connector.SplitReader[int64], error) {
	s := sp.(strideSplit)
	return &strideReader{src: src, next: int64(s.s), step: int64(s.p)}, nil
}

func (src *strideSource) ReaderAt(sp connector.Split, pos []byte) (connector.SplitReader[int64], error) {
	next, k := binary.Varint(pos)
	if k <= 0 {
		return nil, fmt.Errorf("bad position %x", pos)
	}
	r, _ := src.Reader(sp)
	r.(*strideReader).next = next
	return r, nil
}

type strideReader struct {
	src        *strideSource
	next, step int64
}

func (r *strideReader) Read(ctx context.Context, buf []weir.Record[int64]) ([]weir.Record[int64], error) {
	if r.held() {
		select {
		case <-r.src.release:
		case <-ctx.Done():
			return buf, ctx.Err()
		}
	}
	limit := r.src.limit.Load()
	for range max(cap(buf)-len(buf), 1) {
		if r.next >= limit || r.held() {
			break
		}
		buf = append(buf, weir.Record[int64]{Value: r.next, TS: weir.NoTimestamp})
		for m := r.src.max.Load(); m <= r.next && !r.src.max.CompareAndSwap(m, r.next+1); m = r.src.max.Load() {
		}
		r.next += r.step
	}
	if r.next >= limit {
		return buf, io.EOF
	}
	return buf, nil
}

// held reports whether the reader waits for its source's release.
func (r *strideReader) held() bool {
	return r.src.hold > 0 && r.next >= r.src.hold && !r.src.released.Load()
}

func (r *strideReader) Close() error { return nil }

// Position implements the runtime's PositionedReader: the next value.
func (r *strideReader) Position() ([]byte, error) { return binary.AppendVarint(nil, r.next), nil }

// unalignedRun is two sources -> keyed co-process -> exactly-once file sink
// under backpressure (batches of 8, one credit per channel, a co-process
// slower than the sources), with unaligned checkpoints into store (in
// memory if nil), on a manual clock that execute drives: the run takes
// its checkpoints one at a time, the next only once the last has been
// looked at. If fail is set, the sources are unbounded until the
// co-process fails, once, right after the first completed checkpoint that
// wanted accepts (by default one with in-flight data), however many
// checkpoints that takes: no later checkpoint can start before the
// failure (the clock stands still meanwhile), so a restart restores
// exactly that one, and the sources then end at n, the largest value
// emitted by then, plus 1. Without fail they end at the n given, and hold
// in the middle until a checkpoint has completed.
type unalignedRun struct {
	env    *weir.Environment
	clk    *weirtest.ManualClock
	store  weir.CheckpointStore
	fail   bool
	wanted func(*weir.Checkpoint) bool
	limit  atomic.Int64
	src    [2]*strideSource
	armed  atomic.Bool  // the co-process fails at its next element
	failed atomic.Bool  // it did
	failAt atomic.Int64 // after this checkpoint
}

// ckPause is the minimum pause between checkpoints of unalignedRun on its
// manual clock, which execute steps 1 ms at a time while a checkpoint is
// in flight (so that an aligned checkpoint can time out into an unaligned
// one) and jumps by ckPause to start the next.
const ckPause = 1000

func newUnalignedRun(t *testing.T, dir string, n, keys int64, timeout time.Duration, fail bool, opts ...jobOpt) *unalignedRun {
	o := jobOpts{p: 2, restarts: 1}
	for _, f := range opts {
		f(&o)
	}
	r := &unalignedRun{clk: weirtest.NewManualClock(0), store: o.store, fail: fail, wanted: o.failAfter}
	if r.store == nil {
		r.store = weir.NewMemoryCheckpointStore()
	}
	if r.wanted == nil {
		r.wanted = hasChannelState
	}
	r.limit.Store(n)
	if fail {
		r.limit.Store(math.MaxInt64)
	}
	r.env = weir.NewEnvironment(weir.WithParallelism(o.p), weir.WithBufferSize(8), weir.WithBufferCredits(1), weir.WithClock(r.clk),
		weir.WithRestartStrategy(weir.FixedDelayRestart(o.restarts, time.Millisecond)), weir.WithLogger(slog.New(slog.DiscardHandler)))
	r.env.EnableCheckpointing(2*time.Millisecond, weir.CheckpointStoreIn(r.store), weir.RestoreFromLatest(),
		weir.MinPauseBetweenCheckpoints(ckPause*time.Millisecond), weir.UnalignedCheckpoints(), weir.AlignedCheckpointTimeout(timeout))
	key := func(v int64) int64 { return v % keys }
	var in [2]weir.DataStream[int64]
	for i := range in {
		r.src[i] = &strideSource{limit: &r.limit, release: make(chan struct{})}
		if !fail {
			r.src[i].hold = n / 2 // until a checkpoint has completed
		}
		// The sources' splits depend on their parallelism: keep it at 2.
		in[i] = weir.FromSource[int64](r.env, r.src[i], weir.NoWatermarks[int64](), fmt.Sprintf("source-%d", i)).SetParallelism(2).UID(fmt.Sprintf("source-%d", i))
		if o.mid > 0 {
			// A map at another parallelism between the sources and the
			// co-process: rebalanced input, and o.mid channels per
			// co-process input.
			if o.midPart != nil {
				in[i] = o.midPart(in[i])
			}
			in[i] = weir.Map(in[i], func(v int64) int64 { return v }).SetParallelism(o.mid).UID([]string{"left-map", "right-map"}[i])
		}
	}
	fn := &coRunningCount{}
	if fail {
		fn.check = func() {
			if r.armed.Load() && r.failed.CompareAndSwap(false, true) {
				// The sources end where they are now, in every attempt.
				r.limit.Store(max(r.src[0].max.Load(), r.src[1].max.Load()))
				panic(fmt.Sprintf("injected failure after checkpoint %d", r.failAt.Load()))
			}
		}
	}
	out := weir.KeyedCoProcess(weir.ConnectKeyed(weir.KeyBy(in[0], key), weir.KeyBy(in[1], key)), fn)
	file.Sink(out, dir, func(s string) []byte { return []byte(s) })
	return r
}

// execute runs the job, driving its clock as newUnalignedRun describes.
func (r *unalignedRun) execute(t *testing.T, name string) error {
	h, err := r.env.ExecuteAsync(t.Context(), name)
	if err != nil {
		return err
	}
	var last int64
	for {
		select {
		case <-h.Done():
			return h.Wait()
		default:
		}
		if r.armed.Load() && !r.failed.Load() {
			time.Sleep(100 * time.Microsecond) // no checkpoint may start now
			continue
		}
		if cp, err := r.store.Latest(t.Context()); err == nil && cp != nil && cp.ID > last {
			last = cp.ID
			if r.fail && !r.armed.Load() && r.wanted(cp) {
				r.failAt.Store(cp.ID)
				r.armed.Store(true)
				continue
			}
			r.src[0].open()
			r.src[1].open()
			r.clk.Advance(ckPause)
			continue
		}
		r.clk.Advance(1)
		time.Sleep(100 * time.Microsecond)
	}
}

// n is where the sources end: the n given, or after a failure one more
// than the largest value emitted by then.
func (r *unalignedRun) n() int64 { return r.limit.Load() }

type jobOpts struct {
	p   int
	mid int // parallelism of a map before the co-process (0: none)
	// midPart partitions the generators' output into that map (nil: the
	// default, rebalance or forward).
	midPart  func(weir.DataStream[int64]) weir.DataStream[int64]
	restarts int
	store    weir.CheckpointStore
	// failAfter says which completed checkpoint the injected failure
	// waits for (nil: one with any in-flight data).
	failAfter func(*weir.Checkpoint) bool
}

type jobOpt func(*jobOpts)

// TestUnalignedCheckpointsExactlyOnce fails a backpressured keyed
// co-process job once, right after an unaligned checkpoint that stored
// in-flight data completed, restarts it from that checkpoint, and checks
// that the committed output is exactly the output of a fault-free run:
// the operator state and the replayed channel state together hold every
// record before the cut exactly once. Unaligned from the start (timeout 0)
// and aligned with a 1 ms timeout (which backpressure makes expire).
func TestUnalignedCheckpointsExactlyOnce(t *testing.T) {
	const n, keys = 2500, 20
	for _, c := range []struct {
		name     string
		timeout  time.Duration
		dirStore bool
	}{
		{"unaligned", 0, false},
		{"timeout=1ms", time.Millisecond, false},
		{"dir store", 0, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			var opts []jobOpt
			if c.dirStore {
				st, err := weir.NewDirCheckpointStore(t.TempDir())
				if err != nil {
					t.Fatal(err)
				}
				opts = append(opts, func(o *jobOpts) { o.store = st })
			}
			r := newUnalignedRun(t, dir, 0, keys, c.timeout, true, opts...)
			if err := r.execute(t, "unaligned"); err != nil {
				t.Fatal(err)
			}
			if !r.failed.Load() {
				t.Fatal("the injected failure never happened")
			}
			lines := committedSorted(t, dir)
			want := faultFreeLines(r.n(), keys)
			if len(lines) != len(want) {
				t.Errorf("%d lines committed, want %d", len(lines), len(want))
			}
			if diff := unalignedDiff(lines, want); diff != "" {
				t.Fatal(diff)
			}
		})
	}
}

// TestUnalignedFaultFreeRunMatchesModel checks the expectation the failure
// test compares against: a fault-free run of the same job with unaligned
// checkpoints commits exactly faultFreeLines.
func TestUnalignedFaultFreeRunMatchesModel(t *testing.T) {
	const n, keys = 1000, 20
	dir := t.TempDir()
	store := weir.NewMemoryCheckpointStore()
	r := newUnalignedRun(t, dir, n, keys, 0, false, func(o *jobOpts) { o.store = store })
	if err := r.execute(t, "fault-free"); err != nil {
		t.Fatal(err)
	}
	lines := committedSorted(t, dir)
	if diff := unalignedDiff(lines, faultFreeLines(n, keys)); diff != "" {
		t.Fatal(diff)
	}
	if len(store.IDs()) == 0 {
		t.Log("no checkpoint completed during the run")
	}
}

// faultFreeLines is the sorted output of a fault-free run.
func faultFreeLines(n, keys int64) []string {
	var out []string
	perKey := map[int64]int64{}
	for v := range n {
		out = append(out, "e L "+strconv.FormatInt(v, 10), "e R "+strconv.FormatInt(v, 10))
		perKey[v%keys] += 2
	}
	for k, c := range perKey {
		for i := int64(1); i <= c; i++ {
			out = append(out, fmt.Sprintf("c %d %d", k, i))
		}
	}
	slices.Sort(out)
	return out
}

// unalignedDiff describes the first difference of two sorted line lists.
func unalignedDiff(got, want []string) string {
	i, j := 0, 0
	for i < len(got) && j < len(want) {
		switch strings.Compare(got[i], want[j]) {
		case 0:
			i++
			j++
		case -1:
			return fmt.Sprintf("committed %q, which a fault-free run does not (duplicate or extra)", got[i])
		default:
			return fmt.Sprintf("%q is missing from the committed output", want[j])
		}
	}
	if i < len(got) {
		return fmt.Sprintf("committed %q, which a fault-free run does not", got[i])
	}
	if j < len(want) {
		return fmt.Sprintf("%q is missing from the committed output", want[j])
	}
	return ""
}

// TestUnalignedCheckpointOptions checks the build-time errors.
func TestUnalignedCheckpointOptions(t *testing.T) {
	for _, c := range []struct {
		name string
		opts []weir.CheckpointOption
		want string
	}{
		{"at-least-once", []weir.CheckpointOption{weir.UnalignedCheckpoints(), weir.AtLeastOnce()}, "exactly-once"},
		{"negative timeout", []weir.CheckpointOption{weir.UnalignedCheckpoints(), weir.AlignedCheckpointTimeout(-time.Second)}, "negative"},
		{"timeout without unaligned", []weir.CheckpointOption{weir.AlignedCheckpointTimeout(time.Second)}, "needs unaligned"},
	} {
		t.Run(c.name, func(t *testing.T) {
			env := weir.NewEnvironment(weir.WithParallelism(1))
			env.EnableCheckpointing(time.Second, c.opts...)
			weir.Discard(weir.Rebalance(weir.Map(weir.FromSlice(env, []int{1, 2}), func(v int) int { return v })))
			err := env.Execute(t.Context(), "bad")
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err %v, want one saying %q", err, c.want)
			}
		})
	}
}

// opaque cannot be gob-encoded: it has no exported fields.
type opaque struct{ v int }

func TestUnalignedCheckpointsNeedEncodableRecords(t *testing.T) {
	env := weir.NewEnvironment(weir.WithParallelism(2))
	env.EnableCheckpointing(time.Second, weir.UnalignedCheckpoints())
	src := weir.Map(weir.FromSlice(env, []int{1, 2}), func(v int) opaque { return opaque{v} })
	weir.Discard(weir.Rebalance(src))
	err := env.Execute(t.Context(), "opaque")
	if err == nil || !strings.Contains(err.Error(), "opaque") || !strings.Contains(err.Error(), "gob") {
		t.Fatalf("err %v, want one naming the record type and gob", err)
	}
}

// TestUnalignedRescale fails a backpressured job for good right after an
// unaligned checkpoint that stored in-flight data, then restores it from
// that checkpoint at other parallelisms of the keyed co-process (2 -> 3,
// 3 -> 1) and of the maps in front of it (which changes the number of the
// co-process's input channels and rescales the maps' rebalanced input):
// the committed output of the two runs is exactly that of a fault-free run,
// so every in-flight record was replayed once, by the subtask that owns its
// key now.
func TestUnalignedRescale(t *testing.T) {
	const n, keys = 2500, 20
	maps := []string{"left-map", "right-map"}
	for _, c := range []struct {
		name           string
		p1, p2         int
		mid1, mid2     int
		wantInFlightAt []string // UIDs one of which must have channel state in the checkpoint
		midPart        func(weir.DataStream[int64]) weir.DataStream[int64]
	}{
		{"keyed 2->3", 2, 3, 0, 0, nil, nil},
		{"keyed 3->1", 3, 1, 0, 0, nil, nil},
		{"upstream 3->1, keyed 2->3", 2, 3, 3, 1, maps, nil},
		{"upstream 1->3, keyed 3->2", 3, 2, 1, 3, nil, nil},
		// The generators (parallelism 2) feed the maps through the
		// partitionings of Rescale, Shuffle and PartitionCustom. A map
		// with one input channel records no in-flight data, so a rescale
		// edge's first run has one map reading both generators.
		{"rescale into the maps 1->3", 2, 3, 1, 3, maps, weir.Rescale[int64]},
		{"rescale into the maps 1->2", 2, 2, 1, 2, maps, weir.Rescale[int64]},
		{"shuffle into the maps 3->2", 2, 2, 3, 2, maps, weir.Shuffle[int64]},
		{"custom into the maps 2->3", 2, 2, 2, 3, maps, func(ds weir.DataStream[int64]) weir.DataStream[int64] {
			return weir.PartitionCustom(ds, func(k int64, n int) int { return int(k % int64(n)) }, func(v int64) int64 { return v })
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			st, err := weir.NewDirCheckpointStore(t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			dir := t.TempDir()
			wanted := func(cp *weir.Checkpoint) bool {
				if len(c.wantInFlightAt) == 0 {
					return hasChannelState(cp)
				}
				return slices.ContainsFunc(c.wantInFlightAt, func(uid string) bool { return opHasChannelState(cp, uid) })
			}
			first := newUnalignedRun(t, dir, 0, keys, 0, true, func(o *jobOpts) {
				o.store, o.restarts, o.p, o.mid, o.failAfter, o.midPart = st, 0, c.p1, c.mid1, wanted, c.midPart
			})
			if err := first.execute(t, "first"); err == nil || !first.failed.Load() {
				t.Fatalf("the first run should fail after a checkpoint with channel state (err %v)", err)
			}
			latest, err := st.Latest(t.Context())
			if err != nil {
				t.Fatal(err)
			}
			if latest == nil || latest.ID != first.failAt.Load() || !wanted(latest) {
				t.Fatalf("the latest checkpoint is %v, want %d, the one with the wanted in-flight data", latest, first.failAt.Load())
			}
			n := first.n()
			second := newUnalignedRun(t, dir, n, keys, 0, false, func(o *jobOpts) { o.store, o.p, o.mid, o.midPart = st, c.p2, c.mid2, c.midPart })
			if err := second.execute(t, "rescaled"); err != nil {
				t.Fatal(err)
			}
			lines := committedSorted(t, dir)
			if diff := unalignedDiff(lines, faultFreeLines(n, keys)); diff != "" {
				t.Fatalf("restored from checkpoint %d with in-flight data of %v: %s", latest.ID, channelStateOps(latest), diff)
			}
		})
	}
}

// opHasChannelState reports whether operator uid stored in-flight data in cp.
func opHasChannelState(cp *weir.Checkpoint, uid string) bool {
	for _, s := range cp.Operators[uid] {
		if len(s.ChannelState) > 0 {
			return true
		}
	}
	return false
}

// channelStateOps lists the UIDs with in-flight data in cp.
func channelStateOps(cp *weir.Checkpoint) []string {
	var out []string
	for uid := range cp.Operators {
		if opHasChannelState(cp, uid) {
			out = append(out, uid)
		}
	}
	slices.Sort(out)
	return out
}
