package weir_test

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/state"
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

// unalignedJob builds two generators -> keyed co-process -> exactly-once
// file sink under backpressure (batches of 8, one credit per channel, a
// co-process slower than the sources), with
// unaligned checkpoints every 2 ms in store (in memory if nil). If fail is
// set, the co-process fails once, after a quarter of the input, as soon as the
// latest completed checkpoint holds channel state; the job restarts from
// it (restarts: how often it may).
func unalignedJob(t *testing.T, dir string, n int64, keys int64, timeout time.Duration, fail bool, opts ...jobOpt) (*weir.Environment, *atomic.Bool, weir.CheckpointStore) {
	o := jobOpts{p: 2, restarts: 1}
	for _, f := range opts {
		f(&o)
	}
	store := o.store
	if store == nil {
		store = weir.NewMemoryCheckpointStore()
	}
	env := weir.NewEnvironment(weir.WithParallelism(o.p), weir.WithBufferSize(8), weir.WithBufferCredits(1),
		weir.WithRestartStrategy(weir.FixedDelayRestart(o.restarts, time.Millisecond)))
	env.EnableCheckpointing(2*time.Millisecond, weir.WithCheckpointStore(store), weir.RestoreFromLatest(),
		weir.UnalignedCheckpoints(), weir.AlignedCheckpointTimeout(timeout))
	var failed atomic.Bool
	var seen atomic.Int64
	gen := func(i int64) int64 { return i }
	key := func(v int64) int64 { return v % keys }
	// A rate keeps the generators' batches small, so a source task takes
	// a checkpoint trigger soon (it takes it between batches).
	// The generators' splits depend on their parallelism: keep it at 2.
	left := weir.Generate(env, n, 10000, gen, weir.NoWatermarks[int64]()).SetParallelism(2)
	right := weir.Generate(env, n, 10000, gen, weir.NoWatermarks[int64]()).SetParallelism(2)
	if o.mid > 0 {
		// A map at another parallelism between the generators and the
		// co-process: rebalanced input, and o.mid channels per co-process
		// input.
		id := func(v int64) int64 { return v }
		if o.midPart != nil {
			left, right = o.midPart(left), o.midPart(right)
		}
		left = weir.Map(left, id).SetParallelism(o.mid).UID("left-map")
		right = weir.Map(right, id).SetParallelism(o.mid).UID("right-map")
	}
	fn := &coRunningCount{}
	failAfter := o.failAfter
	if failAfter == nil {
		failAfter = hasChannelState
	}
	if fail {
		fn.check = func() {
			if s := seen.Add(1); s > n/2 && s%16 == 0 && !failed.Load() {
				if latest, _ := store.Latest(context.Background()); latest != nil && failAfter(latest) && failed.CompareAndSwap(false, true) {
					panic(fmt.Sprintf("injected failure after checkpoint %d", latest.ID))
				}
			}
		}
	}
	out := weir.KeyedCoProcess(weir.ConnectKeyed(weir.KeyBy(left, key), weir.KeyBy(right, key)),
		fn)
	weir.FileSink(out, dir, func(s string) []byte { return []byte(s) })
	return env, &failed, store
}

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
			env, failed, _ := unalignedJob(t, dir, n, keys, c.timeout, true, opts...)
			if err := env.Execute(t.Context(), "unaligned"); err != nil {
				t.Fatal(err)
			}
			if !failed.Load() {
				t.Fatal("no checkpoint with in-flight data completed in the first half of the input; nothing was tested")
			}
			lines := committedSorted(t, dir)
			want := faultFreeLines(n, keys)
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
	env, _, _ := unalignedJob(t, dir, n, keys, 0, false, func(o *jobOpts) { o.store = store })
	if err := env.Execute(t.Context(), "fault-free"); err != nil {
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
			for attempt := 1; ; attempt++ {
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
				first := func(o *jobOpts) {
					o.store, o.restarts, o.p, o.mid, o.failAfter, o.midPart = st, 0, c.p1, c.mid1, wanted, c.midPart
				}
				env, failed, _ := unalignedJob(t, dir, n, keys, 0, true, first)
				if err := env.Execute(t.Context(), "first"); err == nil || !failed.Load() {
					t.Fatalf("the first run should fail after a checkpoint with channel state (err %v)", err)
				}
				latest, err := st.Latest(t.Context())
				if err != nil {
					t.Fatal(err)
				}
				if latest == nil || !wanted(latest) {
					// A later checkpoint without the wanted in-flight data
					// completed before the job stopped (the failing
					// subtask had acknowledged it): nothing would be
					// tested, so run again.
					if attempt == 5 {
						t.Fatal("no attempt ended with in-flight data in its last checkpoint")
					}
					t.Logf("attempt %d ended on a checkpoint without the wanted in-flight data; running again", attempt)
					continue
				}
				second := func(o *jobOpts) { o.store, o.p, o.mid, o.midPart = st, c.p2, c.mid2, c.midPart }
				env, _, _ = unalignedJob(t, dir, n, keys, 0, false, second)
				if err := env.Execute(t.Context(), "rescaled"); err != nil {
					t.Fatal(err)
				}
				lines := committedSorted(t, dir)
				if diff := unalignedDiff(lines, faultFreeLines(n, keys)); diff != "" {
					t.Fatalf("restored from checkpoint %d with in-flight data of %v: %s", latest.ID, channelStateOps(latest), diff)
				}
				return
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
