package weir_test

import (
	"encoding/binary"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/weirstream/weir"
	acc1 "github.com/weirstream/weir/internal/upgradetest/v1/acc"
	acc2 "github.com/weirstream/weir/internal/upgradetest/v2/acc"
	"github.com/weirstream/weir/state"
	"github.com/weirstream/weir/state/pebble"
	"github.com/weirstream/weir/weirtest"
	"github.com/weirstream/weir/window"
)

// The upgrade trial of issue 30: a keyed job keeps a struct in value, list
// and map state, is stopped with a savepoint after 2,000 of 5,000 records,
// changed, and restored. Every change either restores exactly (fields
// matched by name) or is refused by ExecuteAsync before any record moves.

const (
	upRecords = 5000
	upKeys    = 50
)

// upRow is what the trial's operator emits per record: the key's count and
// sum from its value state, and the counts and sums kept in its list and
// map states (which must agree with the value state).
type upRow struct {
	Key                 string
	Count, Sum          int64
	ListCount, ListSum  int64
	MapCount, MapSum    int64
	ListLen, MapEntries int64
	NewFieldSeenNonZero bool
	Final               bool // emitted by the timer at the end
}

// accOps folds a record into an accumulator of type A and reads one back.
type accOps[A any] struct {
	add  func(a A, v int64) A
	read func(a A) (count, sum int64)
	// fresh reports an accumulator whose field added by the upgrade holds
	// what it could not if it had started at its zero value; nil if there
	// is no such field.
	fresh func(a A) bool
	opts  []state.Option
	merge func(a, b A) A // for windows
}

type upProc[K comparable, A any] struct {
	ops accOps[A]
	v   state.ValueState[A]
	l   state.ListState[A]
	m   state.MapState[int64, A]
}

func (p *upProc[K, A]) Open(ctx weir.KeyedRuntimeContext[K]) (err error) {
	if p.v, err = weir.GetValueState(ctx, state.Value[A]("acc", p.ops.opts...)); err != nil {
		return err
	}
	if p.l, err = weir.GetListState(ctx, state.List[A]("history", p.ops.opts...)); err != nil {
		return err
	}
	p.m, err = weir.GetMapState(ctx, state.Map[int64, A]("byResidue", p.ops.opts...))
	return err
}

func (p *upProc[K, A]) ProcessElement(i int64, ctx weir.KeyedContext[K], out weir.Collector[upRow]) error {
	a, _ := p.v.Value()
	if p.ops.fresh != nil && p.ops.fresh(a) {
		out.Collect(upRow{Key: fmt.Sprint(ctx.CurrentKey()), NewFieldSeenNonZero: true})
	}
	p.v.Update(p.ops.add(a, i))
	var zero A
	p.l.Add(p.ops.add(zero, i))
	r, _ := p.m.Get(i % 3)
	p.m.Put(i%3, p.ops.add(r, i))
	// The key's numbers are emitted once, when the input ends (the final
	// watermark fires this timer); restored timers are part of the trial.
	ctx.TimerService().RegisterEventTimeTimer(0)
	out.Collect(upRow{Key: fmt.Sprint(ctx.CurrentKey())})
	return nil
}

func (p *upProc[K, A]) OnTimer(_ int64, ctx weir.OnTimerContext[K], out weir.Collector[upRow]) error {
	a, _ := p.v.Value()
	row := upRow{Key: fmt.Sprint(ctx.CurrentKey()), Final: true}
	row.Count, row.Sum = p.ops.read(a)
	for e := range p.l.All() {
		c, s := p.ops.read(e)
		row.ListCount += c
		row.ListSum += s
		row.ListLen++
	}
	for _, e := range p.m.All() {
		c, s := p.ops.read(e)
		row.MapCount += c
		row.MapSum += s
		row.MapEntries++
	}
	out.Collect(row)
	return nil
}

// upSink keeps the final row of each key, counts the other rows, and
// notes whether an added field was seen not zero.
type upSink struct {
	mu    sync.Mutex
	last  map[string]upRow
	n     int64
	fresh bool
	at    int64
	hit   chan struct{}
}

func newUpSink(at int64) *upSink {
	return &upSink{last: map[string]upRow{}, at: at, hit: make(chan struct{})}
}

func (s *upSink) add(r upRow) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case r.NewFieldSeenNonZero:
		s.fresh = true
		return nil
	case r.Final:
		if _, dup := s.last[r.Key]; dup {
			return fmt.Errorf("key %s: a second final row", r.Key)
		}
		s.last[r.Key] = r
		return nil
	}
	s.n++
	if s.n == s.at {
		close(s.hit)
	}
	return nil
}

// upJob builds the trial job with key type K and accumulator A.
func upJob[K comparable, A any](key func(int64) K, ops accOps[A]) func(env *weir.Environment, rate float64, sink *upSink) {
	return func(env *weir.Environment, rate float64, sink *upSink) {
		src := weir.Generate(env, upRecords, rate, func(i int64) int64 { return i }, weir.NoWatermarks[int64]()).UID("numbers")
		rows := weir.Process(weir.KeyBy(src, key), &upProc[K, A]{ops: ops}).Name("Accumulate").UID("accumulate")
		weir.SinkFunc(rows, sink.add)
	}
}

// upSavepoint runs job until its sink has seen 2,000 rows and stops it
// with a savepoint (see idTrialSavepoint for how the generator pauses).
func upSavepoint(t *testing.T, job func(*weir.Environment, float64, *upSink), backend weir.StateBackend) string {
	t.Helper()
	clk := weirtest.NewManualClock(0)
	env := weir.NewEnvironment(weir.WithParallelism(2), weir.WithClock(clk), weir.WithLogger(quietLogger()), weir.WithStateBackend(backend))
	env.EnableCheckpointing(time.Hour)
	sink := newUpSink(2000)
	job(env, 2_000_000, sink)
	h, err := env.ExecuteAsync(t.Context(), "v1")
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-sink.hit:
	case <-h.Done():
		t.Fatalf("the job ended early: %v", h.Wait())
	}
	path, err := h.StopWithSavepoint(t.Context(), filepath.Join(t.TempDir(), "sp"))
	if err != nil {
		t.Fatal(err)
	}
	if err := h.Wait(); !errors.Is(err, weir.ErrStopped) {
		t.Fatal(err)
	}
	if sink.n != 2000 {
		t.Fatalf("%d rows before the savepoint, want 2000", sink.n)
	}
	return path
}

// upExpected returns each key's count and sum over all records.
func upExpected() map[string][2]int64 {
	want := map[string][2]int64{}
	for i := int64(0); i < upRecords; i++ {
		k := fmt.Sprint(i % upKeys)
		w := want[k]
		want[k] = [2]int64{w[0] + 1, w[1] + i}
	}
	return want
}

// Accumulators: the same two numbers in many shapes.
type (
	accBase      struct{ Count, Sum int64 }
	accReordered struct{ Sum, Count int64 }
	accAdded     struct {
		Count int64
		Max   int64
		Sum   int64
	}
	accUnsigned struct {
		Count uint64
		Sum   int64
	}
	accFloat struct {
		Count float64
		Sum   int64
	}
	accString struct {
		Count string
		Sum   int64
	}
	accRenamed struct{ N, Sum int64 }
	// gob-encoded (a map field is not part of the compact encodings)
	accGob struct {
		Count, Sum int64
		Tags       map[string]int
	}
	accGobChanged struct {
		Tags  map[string]int
		Note  string
		Sum   int64
		Count int64
	}
	accGobRetyped struct {
		Count int32
		Sum   int64
		Tags  map[string]int
	}
)

func baseOps() accOps[accBase] {
	return accOps[accBase]{
		add:  func(a accBase, v int64) accBase { return accBase{a.Count + 1, a.Sum + v} },
		read: func(a accBase) (int64, int64) { return a.Count, a.Sum },
	}
}

// accCodec is a user codec of accBase: version 1 writes two varints;
// version 2 writes two fixed 8-byte integers, and reads version 1 when
// migrating is set.
type accCodec struct {
	version   uint32
	migrating bool
}

func (c accCodec) Version() uint32 { return c.version }

func (c accCodec) Append(dst []byte, a accBase) ([]byte, error) {
	if c.version == 1 {
		return binary.AppendVarint(binary.AppendVarint(dst, a.Count), a.Sum), nil
	}
	return binary.BigEndian.AppendUint64(binary.BigEndian.AppendUint64(dst, uint64(a.Count)), uint64(a.Sum)), nil
}

func (c accCodec) Decode(src []byte) (accBase, []byte, error) { return c.DecodeVersion(c.version, src) }

func (c accCodec) DecodeVersion(v uint32, src []byte) (accBase, []byte, error) {
	if v == 1 {
		n, k := binary.Varint(src)
		s, k2 := binary.Varint(src[max(k, 0):])
		if k <= 0 || k2 <= 0 {
			return accBase{}, src, errors.New("accCodec: truncated")
		}
		return accBase{n, s}, src[k+k2:], nil
	}
	if len(src) < 16 {
		return accBase{}, src, errors.New("accCodec: truncated")
	}
	return accBase{int64(binary.BigEndian.Uint64(src)), int64(binary.BigEndian.Uint64(src[8:]))}, src[16:], nil
}

func (c accCodec) ReadsVersion(v uint32) bool { return v == c.version || (c.migrating && v == 1) }

// accCodecPlain is version 2 of accCodec without the migration methods.
type accCodecPlain struct{ c accCodec }

func (c accCodecPlain) Version() uint32 { return c.c.Version() }
func (c accCodecPlain) Append(dst []byte, a accBase) ([]byte, error) {
	return c.c.Append(dst, a)
}
func (c accCodecPlain) Decode(src []byte) (accBase, []byte, error) { return c.c.Decode(src) }

func intKey(i int64) int64   { return i % upKeys }
func key1(i int64) acc1.Key  { return acc1.Key(i % upKeys) }
func key2(i int64) acc2.Key  { return acc2.Key(i % upKeys) }
func keyUint(i int64) uint64 { return uint64(i % upKeys) }
func withCodec[A any](o accOps[A], c state.Codec[A]) accOps[A] {
	o.opts = []state.Option{state.WithCodec(c)}
	return o
}

type upOutcome int

const (
	upExact   upOutcome = iota // every key's numbers as if never stopped
	upRenamed                  // Count restarts at zero (a new field), Sum is kept
	upRefused                  // ExecuteAsync refuses the restore
)

type upgradeCase struct {
	name   string
	v1, v2 func(*weir.Environment, float64, *upSink)
	want   upOutcome
	// for upRefused: what the error must name
	what, field, old, new string
}

func upgradeCases() []upgradeCase {
	base := upJob(intKey, baseOps())
	return []upgradeCase{
		{name: "unchanged", v1: base, v2: base, want: upExact},
		{name: "fields reordered", v1: base, want: upExact, v2: upJob(intKey, accOps[accReordered]{
			add:  func(a accReordered, v int64) accReordered { return accReordered{a.Sum + v, a.Count + 1} },
			read: func(a accReordered) (int64, int64) { return a.Count, a.Sum },
		})},
		{name: "field added", v1: base, want: upExact, v2: upJob(intKey, accOps[accAdded]{
			add:   func(a accAdded, v int64) accAdded { return accAdded{a.Count + 1, max(a.Max, v), a.Sum + v} },
			read:  func(a accAdded) (int64, int64) { return a.Count, a.Sum },
			fresh: func(a accAdded) bool { return a.Max < 0 || a.Max > a.Sum }, // Max starts at 0 on restore
		})},
		{name: "field removed", want: upExact, v2: base, v1: upJob(intKey, accOps[accAdded]{
			add:  func(a accAdded, v int64) accAdded { return accAdded{a.Count + 1, max(a.Max, v), a.Sum + v} },
			read: func(a accAdded) (int64, int64) { return a.Count, a.Sum },
		})},
		{name: "field renamed", v1: base, want: upRenamed, v2: upJob(intKey, accOps[accRenamed]{
			add:  func(a accRenamed, v int64) accRenamed { return accRenamed{a.N + 1, a.Sum + v} },
			read: func(a accRenamed) (int64, int64) { return a.N, a.Sum },
		})},
		{name: "signedness changed", v1: base, want: upRefused, what: "value", field: "Count", old: "int64", new: "uint64",
			v2: upJob(intKey, accOps[accUnsigned]{
				add:  func(a accUnsigned, v int64) accUnsigned { return accUnsigned{a.Count + 1, a.Sum + v} },
				read: func(a accUnsigned) (int64, int64) { return int64(a.Count), a.Sum },
			})},
		{name: "int64 to float64", v1: base, want: upRefused, what: "value", field: "Count", old: "int64", new: "float64",
			v2: upJob(intKey, accOps[accFloat]{
				add:  func(a accFloat, v int64) accFloat { return accFloat{a.Count + 1, a.Sum + v} },
				read: func(a accFloat) (int64, int64) { return int64(a.Count), a.Sum },
			})},
		{name: "int64 to string", v1: base, want: upRefused, what: "value", field: "Count", old: "int64", new: "string",
			v2: upJob(intKey, accOps[accString]{
				add: func(a accString, v int64) accString {
					var n int64
					fmt.Sscan(a.Count, &n)
					return accString{fmt.Sprint(n + 1), a.Sum + v}
				},
				read: func(a accString) (int64, int64) {
					var n int64
					fmt.Sscan(a.Count, &n)
					return n, a.Sum
				},
			})},
		{name: "named key type int64 to uint64", want: upRefused, what: "key", old: "acc.Key", new: "acc.Key",
			v1: upJob(key1, baseOps()), v2: upJob(key2, baseOps())},
		{name: "key type int64 to uint64", want: upRefused, what: "key", old: "int64", new: "uint64",
			v1: base, v2: upJob(keyUint, baseOps())},
		{name: "key type named", want: upRefused, what: "key", old: "int64", new: "acc.Key",
			v1: base, v2: upJob(key1, baseOps())},
		{name: "gob fields reordered and added", want: upExact,
			v1: upJob(intKey, accOps[accGob]{
				add: func(a accGob, v int64) accGob {
					return accGob{a.Count + 1, a.Sum + v, map[string]int{"n": int(a.Count + 1)}}
				},
				read: func(a accGob) (int64, int64) { return a.Count, a.Sum },
			}),
			v2: upJob(intKey, accOps[accGobChanged]{
				add: func(a accGobChanged, v int64) accGobChanged {
					return accGobChanged{map[string]int{"n": int(a.Count + 1)}, "x", a.Sum + v, a.Count + 1}
				},
				read:  func(a accGobChanged) (int64, int64) { return a.Count, a.Sum },
				fresh: func(a accGobChanged) bool { return a.Count > 0 && a.Note != "" && a.Note != "x" },
			})},
		{name: "gob field retyped", want: upRefused, what: "value", field: "Count", old: "int64", new: "int32",
			v1: upJob(intKey, accOps[accGob]{
				add:  func(a accGob, v int64) accGob { return accGob{a.Count + 1, a.Sum + v, nil} },
				read: func(a accGob) (int64, int64) { return a.Count, a.Sum },
			}),
			v2: upJob(intKey, accOps[accGobRetyped]{
				add:  func(a accGobRetyped, v int64) accGobRetyped { return accGobRetyped{a.Count + 1, a.Sum + v, nil} },
				read: func(a accGobRetyped) (int64, int64) { return int64(a.Count), a.Sum },
			})},
		{name: "built-in encoding to gob", want: upExact, v1: base,
			v2: upJob(intKey, accOps[accGob]{
				add:  func(a accGob, v int64) accGob { return accGob{a.Count + 1, a.Sum + v, nil} },
				read: func(a accGob) (int64, int64) { return a.Count, a.Sum },
			})},
		{name: "user codec, same version", want: upExact,
			v1: upJob(intKey, withCodec(baseOps(), state.Codec[accBase](accCodec{version: 1}))),
			v2: upJob(intKey, withCodec(baseOps(), state.Codec[accBase](accCodec{version: 1})))},
		{name: "user codec, new version that migrates", want: upExact,
			v1: upJob(intKey, withCodec(baseOps(), state.Codec[accBase](accCodec{version: 1}))),
			v2: upJob(intKey, withCodec(baseOps(), state.Codec[accBase](accCodec{version: 2, migrating: true})))},
		{name: "user codec, new version that does not migrate", want: upRefused, what: "value", old: "version 1", new: "version 2",
			v1: upJob(intKey, withCodec(baseOps(), state.Codec[accBase](accCodec{version: 1}))),
			v2: upJob(intKey, withCodec(baseOps(), state.Codec[accBase](accCodecPlain{accCodec{version: 2}})))},
		{name: "built-in encoding to user codec", want: upRefused, what: "value", v1: base,
			v2: upJob(intKey, withCodec(baseOps(), state.Codec[accBase](accCodec{version: 1})))},
	}
}

// TestUpgrades runs every case of the upgrade trial: each restores exactly
// by the rules (fields by name) or is refused before the job runs. Each
// case runs on the four pairs of state backends (savepoints are the same
// whichever backend wrote them).
func TestUpgrades(t *testing.T) {
	want := upExpected()
	backends := []struct {
		name string
		make func(t *testing.T) weir.StateBackend
	}{
		{"heap", func(*testing.T) weir.StateBackend { return weir.HeapStateBackend() }},
		{"pebble", func(t *testing.T) weir.StateBackend { return pebble.New(t.TempDir()) }},
	}
	for i, c := range upgradeCases() {
		// Alternate the pairs over the cases: every pair is covered
		// several times without running each case four times.
		from, to := backends[i%2], backends[(i/2)%2]
		t.Run(c.name+"/"+from.name+"-to-"+to.name, func(t *testing.T) {
			path := upSavepoint(t, c.v1, from.make(t))
			env := weir.NewEnvironment(weir.WithParallelism(2), weir.WithLogger(quietLogger()), weir.RestoreFromSavepoint(path),
				weir.WithStateBackend(to.make(t)), weir.WithRestartStrategy(weir.FixedDelayRestart(3, time.Millisecond)))
			env.EnableCheckpointing(time.Hour)
			sink := newUpSink(-1)
			c.v2(env, 0, sink)
			h, err := env.ExecuteAsync(t.Context(), "v2")
			if c.want == upRefused {
				checkRefusal(t, c, h, err, sink)
				return
			}
			if err != nil {
				t.Fatalf("ExecuteAsync: %v", err)
			}
			if err := h.Wait(); err != nil {
				t.Fatalf("the restored job failed: %v", err)
			}
			if sink.n != upRecords-2000 {
				t.Errorf("%d rows after the restore, want %d", sink.n, upRecords-2000)
			}
			var counted int64
			for k, w := range want {
				r, ok := sink.last[k]
				if !ok {
					t.Errorf("key %s: no row after the restore", k)
					continue
				}
				counted += r.Count
				wantCount := w[0]
				if c.want == upRenamed {
					wantCount = r.Count // checked in total below
				}
				if r.Count != wantCount || r.Sum != w[1] || r.ListCount != wantCount || r.ListSum != w[1] ||
					r.MapCount != wantCount || r.MapSum != w[1] || r.ListLen != w[0] || r.MapEntries != min(3, w[0]) {
					t.Errorf("key %s: got %+v, want count %d and sum %d in every state (%d list entries)", k, r, wantCount, w[1], w[0])
				}
			}
			if sink.fresh {
				t.Errorf("an added field did not start at its zero value")
			}
			if len(sink.last) != len(want) {
				t.Errorf("%d keys after the restore, want %d", len(sink.last), len(want))
			}
			if c.want == upRenamed && counted != upRecords-2000 {
				t.Errorf("the renamed field counts %d records in all, want the %d after the restore (it starts at zero)", counted, upRecords-2000)
			}
		})
	}
}

func checkRefusal(t *testing.T, c upgradeCase, h *weir.JobHandle, err error, sink *upSink) {
	t.Helper()
	if err == nil {
		werr := h.Wait()
		t.Fatalf("ExecuteAsync accepted the restore (Wait: %v; %d rows)", werr, sink.n)
	}
	if h != nil {
		t.Errorf("ExecuteAsync returned a handle with its error")
	}
	if !errors.Is(err, state.ErrIncompatible) {
		t.Errorf("the refusal does not wrap state.ErrIncompatible: %v", err)
	}
	var ie *state.IncompatibleError
	if !errors.As(err, &ie) {
		t.Fatalf("the refusal is not a *state.IncompatibleError: %v", err)
	}
	if ie.What != c.what || ie.Field != c.field || !strings.Contains(ie.Old, c.old) || !strings.Contains(ie.New, c.new) {
		t.Errorf("refused %+v, want what %q, field %q, old ~%q, new ~%q", *ie, c.what, c.field, c.old, c.new)
	}
	msg := err.Error()
	if !strings.Contains(msg, "Accumulate") {
		t.Errorf("the refusal does not name the operator: %v", err)
	}
	if c.what != "key" && !strings.Contains(msg, `"acc"`) {
		t.Errorf("the refusal does not name the state: %v", err)
	}
	if ie.Hint == "" {
		t.Errorf("the refusal does not say how to migrate: %v", err)
	}
	if sink.n != 0 {
		t.Errorf("the refused job emitted %d rows", sink.n)
	}
	t.Logf("refused: %v", err)
}

// winRow is one fired window of the window trial.
type winRow struct{ Key, End, Count, Sum int64 }

type winAgg[A any] struct{ ops accOps[A] }

func (f winAgg[A]) CreateAccumulator() A { var zero A; return zero }
func (f winAgg[A]) Add(v int64, a A) A   { return f.ops.add(a, v) }
func (f winAgg[A]) GetResult(a A) [2]int64 {
	c, s := f.ops.read(a)
	return [2]int64{c, s}
}
func (f winAgg[A]) Merge(a, b A) A { return f.ops.merge(a, b) }

type winLabel struct{}

func (winLabel) Process(key int64, ctx weir.ProcessWindowContext[window.TimeWindow], rs [][2]int64, out weir.Collector[winRow]) error {
	for _, r := range rs {
		out.Collect(winRow{key, ctx.Window().End, r[0], r[1]})
	}
	return nil
}

// winJob builds the window trial: sliding event-time windows (100 ms,
// sliding by 10 ms) aggregate each key's records into an A.
func winJob[A any](ops accOps[A]) func(env *weir.Environment, rate float64, sink *winSink) {
	return func(env *weir.Environment, rate float64, sink *winSink) {
		wm := weir.ForMonotonousTimestamps[int64]().WithTimestampAssigner(func(v, _ int64) int64 { return v })
		src := weir.Generate(env, upRecords, rate, func(i int64) int64 { return i }, wm).UID("numbers")
		weir.SinkFunc(src, func(int64) error { return sink.seen.add(upRow{}) })
		ws := weir.Window(weir.KeyBy(src, func(v int64) int64 { return v % 5 }), window.SlidingEventTime(100*time.Millisecond, 10*time.Millisecond))
		weir.SinkFunc(weir.AggregateWithProcess(ws, winAgg[A]{ops}, winLabel{}).Name("Windows").UID("windows"), sink.add)
	}
}

type winSink struct {
	mu   sync.Mutex
	rows map[[2]int64][2]int64
	err  error
	seen *upSink // counts the source's records
}

func (s *winSink) add(r winRow) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	k := [2]int64{r.Key, r.End}
	if _, dup := s.rows[k]; dup {
		s.err = fmt.Errorf("window %v fired twice", k)
	}
	s.rows[k] = [2]int64{r.Count, r.Sum}
	return nil
}

// TestUpgradeWindowAccumulator: the accumulators inside a window
// operator's state (the sliced engine's partials) follow the same rules:
// reordered fields restore exactly, a retyped field is refused.
func TestUpgradeWindowAccumulator(t *testing.T) {
	base := baseOps()
	base.merge = func(a, b accBase) accBase { return accBase{a.Count + b.Count, a.Sum + b.Sum} }
	reordered := accOps[accReordered]{
		add:   func(a accReordered, v int64) accReordered { return accReordered{a.Sum + v, a.Count + 1} },
		read:  func(a accReordered) (int64, int64) { return a.Count, a.Sum },
		merge: func(a, b accReordered) accReordered { return accReordered{a.Sum + b.Sum, a.Count + b.Count} },
	}
	unsigned := accOps[accUnsigned]{
		add:   func(a accUnsigned, v int64) accUnsigned { return accUnsigned{a.Count + 1, a.Sum + v} },
		read:  func(a accUnsigned) (int64, int64) { return int64(a.Count), a.Sum },
		merge: func(a, b accUnsigned) accUnsigned { return accUnsigned{a.Count + b.Count, a.Sum + b.Sum} },
	}
	want := map[[2]int64][2]int64{}
	for i := int64(0); i < upRecords; i++ {
		for end := i - i%10 + 10; end <= i+100-(i%10)+0 && end-100 <= i; end += 10 {
			k := [2]int64{i % 5, end}
			w := want[k]
			want[k] = [2]int64{w[0] + 1, w[1] + i}
		}
	}

	// Phase one, stopped with a savepoint.
	clk := weirtest.NewManualClock(0)
	env := weir.NewEnvironment(weir.WithParallelism(2), weir.WithClock(clk), weir.WithLogger(quietLogger()))
	env.EnableCheckpointing(time.Hour)
	first := &winSink{rows: map[[2]int64][2]int64{}, seen: newUpSink(2000)}
	winJob(base)(env, 2_000_000, first)
	h, err := env.ExecuteAsync(t.Context(), "v1")
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-first.seen.hit:
	case <-h.Done():
		t.Fatalf("the job ended early: %v", h.Wait())
	}
	path, err := h.StopWithSavepoint(t.Context(), filepath.Join(t.TempDir(), "sp"))
	if err != nil {
		t.Fatal(err)
	}
	if err := h.Wait(); !errors.Is(err, weir.ErrStopped) {
		t.Fatal(err)
	}

	restore := func(job func(*weir.Environment, float64, *winSink)) (*winSink, error) {
		env := weir.NewEnvironment(weir.WithParallelism(2), weir.WithLogger(quietLogger()), weir.RestoreFromSavepoint(path))
		env.EnableCheckpointing(time.Hour)
		s := &winSink{rows: map[[2]int64][2]int64{}, seen: newUpSink(-1)}
		job(env, 0, s)
		return s, env.Execute(t.Context(), "v2")
	}
	second, err := restore(winJob(reordered))
	if err != nil {
		t.Fatalf("restoring with the fields reordered: %v", err)
	}
	for k, v := range first.rows {
		if _, dup := second.rows[k]; dup {
			t.Errorf("window %v fired before and after the savepoint", k)
		}
		second.rows[k] = v
	}
	if second.err != nil {
		t.Error(second.err)
	}
	if len(second.rows) != len(want) {
		t.Errorf("%d windows fired, want %d", len(second.rows), len(want))
	}
	for k, w := range want {
		if got := second.rows[k]; got != w {
			t.Errorf("window %v: got count and sum %v, want %v", k, got, w)
		}
	}

	s, err := restore(winJob(unsigned))
	var ie *state.IncompatibleError
	if !errors.As(err, &ie) || ie.Field != "Count" || !strings.Contains(err.Error(), "Windows") {
		t.Errorf("restoring with Count retyped: got %v, want an IncompatibleError naming Count and the operator", err)
	}
	if len(s.rows) != 0 {
		t.Errorf("the refused job fired %d windows", len(s.rows))
	}
}
