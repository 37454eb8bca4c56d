package weir

import (
	"bytes"
	"encoding/gob"
	"fmt"
	"math"
	"sort"
	"time"

	"github.com/weirstream/weir/internal/keyedsnap"
	"github.com/weirstream/weir/internal/keygroup"
	"github.com/weirstream/weir/internal/runtime"
	istate "github.com/weirstream/weir/internal/state"
	"github.com/weirstream/weir/internal/timer"
	"github.com/weirstream/weir/state"
)

// JoinContext is given to a join function with each pair.
type JoinContext interface {
	// LeftTimestamp is the left element's timestamp (NoTimestamp if absent
	// in an outer join).
	LeftTimestamp() int64
	// RightTimestamp is the right element's timestamp (NoTimestamp if absent).
	RightTimestamp() int64
	// Timestamp is the output timestamp: the larger of both.
	Timestamp() int64
	// Output emits v to a side output at Timestamp().
	Output(tag SideTag, v any)
}

// ProcessJoinFunction is called once per matching (left, right) pair of an
// interval join; what it emits carries the pair's timestamp.
type ProcessJoinFunction[L, R, OUT any] interface {
	ProcessElement(left L, right R, ctx JoinContext, out Collector[OUT]) error
}

// ProcessJoinFunc adapts a function to a ProcessJoinFunction.
type ProcessJoinFunc[L, R, OUT any] func(left L, right R, ctx JoinContext, out Collector[OUT]) error

// ProcessElement calls f.
func (f ProcessJoinFunc[L, R, OUT]) ProcessElement(left L, right R, ctx JoinContext, out Collector[OUT]) error {
	return f(left, right, ctx, out)
}

// OuterJoinFunction is called for every matching pair of an outer interval
// join and, when its cleanup time passes, for every record that never
// matched, with a nil partner. The pointers are valid during the call only.
type OuterJoinFunction[L, R, OUT any] interface {
	ProcessElement(left *L, right *R, ctx JoinContext, out Collector[OUT]) error
}

// OuterJoinFunc adapts a function to an OuterJoinFunction.
type OuterJoinFunc[L, R, OUT any] func(left *L, right *R, ctx JoinContext, out Collector[OUT]) error

// ProcessElement calls f.
func (f OuterJoinFunc[L, R, OUT]) ProcessElement(left *L, right *R, ctx JoinContext, out Collector[OUT]) error {
	return f(left, right, ctx, out)
}

// OuterJoinKind chooses which unmatched records an outer interval join emits.
type OuterJoinKind int

const (
	innerJoin OuterJoinKind = iota
	// LeftOuter also emits left records that never matched.
	LeftOuter
	// RightOuter also emits right records that never matched.
	RightOuter
	// FullOuter emits unmatched records of both sides.
	FullOuter
)

// IntervalBounds are the relative bounds of an interval join: a pair
// (left, right) matches when right.ts - left.ts is in [Lower, Upper].
type IntervalBounds struct {
	Lower, Upper time.Duration
}

// Between returns the bounds [lower, upper] (both inclusive unless an
// option says otherwise). The rule is: right minus left in [lower, upper].
// "The payment comes 0 to 10 minutes after its order", with orders on the
// left, is Between(0, 10*time.Minute); with payments on the left it is
// Between(-10*time.Minute, 0).
func Between(lower, upper time.Duration) IntervalBounds { return IntervalBounds{lower, upper} }

// IntervalJoinOption configures an interval join.
type IntervalJoinOption func(*intervalJoinConfig)

type intervalJoinConfig struct {
	lowerExclusive, upperExclusive bool
	lateLeft, lateRight            string
	lateLeftType, lateRightType    string
	fullScan                       bool // probe like Flink: scan every bucket (benchmarks only)
}

// LowerBoundExclusive excludes the lower bound.
func LowerBoundExclusive() IntervalJoinOption {
	return func(c *intervalJoinConfig) { c.lowerExclusive = true }
}

// UpperBoundExclusive excludes the upper bound.
func UpperBoundExclusive() IntervalJoinOption {
	return func(c *intervalJoinConfig) { c.upperExclusive = true }
}

// SideOutputLeftLateData sends left records that arrive late (timestamp
// strictly below the operator's watermark) to tag instead of dropping them.
func SideOutputLeftLateData[L any](tag OutputTag[L]) IntervalJoinOption {
	return func(c *intervalJoinConfig) { c.lateLeft, c.lateLeftType = tag.id, fmt.Sprintf("%T", *new(L)) }
}

// SideOutputRightLateData sends late right records to tag.
func SideOutputRightLateData[R any](tag OutputTag[R]) IntervalJoinOption {
	return func(c *intervalJoinConfig) { c.lateRight, c.lateRightType = tag.id, fmt.Sprintf("%T", *new(R)) }
}

// IntervalJoin joins two keyed streams on equal keys where right.ts -
// left.ts is in the bounds, with Flink's exact semantics: a record is late
// (not joined, sent to the late side output if configured) when its
// timestamp is strictly below the operator's watermark; each buffered
// record has one cleanup timer (left at ts + upper if upper > 0, else ts;
// right at ts - lower if lower < 0, else ts); the output timestamp is the
// larger of the pair's. Unlike Flink, each side's buffer is ordered by
// timestamp and a record probes only [ts + lower, ts + upper] of the other
// side, so a hot key with a large buffer costs O(log n + matches).
func IntervalJoin[K comparable, L, R, OUT any](left KeyedStream[K, L], right KeyedStream[K, R], b IntervalBounds,
	fn ProcessJoinFunction[L, R, OUT], opts ...IntervalJoinOption) DataStream[OUT] {
	if isNil(fn) {
		left.ds.env.fail(fmt.Errorf("operator %q: %w", "IntervalJoin", nilFnError("join function")))
	}
	// Each subtask gets its own copy of the user's function, then wrapped.
	perSubtask := func() (OuterJoinFunction[L, R, OUT], any) {
		u := cloneFunction(fn)
		return OuterJoinFunc[L, R, OUT](func(l *L, r *R, ctx JoinContext, out Collector[OUT]) error {
			return u.ProcessElement(*l, *r, ctx, out)
		}), u
	}
	return intervalJoin(left, right, b, innerJoin, perSubtask, "IntervalJoin", opts)
}

// IntervalOuterJoin is IntervalJoin that also emits the records of the
// chosen side(s) that never matched, with a nil partner, when their cleanup
// timer fires (never earlier), at their own timestamp. Flink's DataStream
// API has no such join (FLINK-8483).
func IntervalOuterJoin[K comparable, L, R, OUT any](left KeyedStream[K, L], right KeyedStream[K, R], b IntervalBounds,
	kind OuterJoinKind, fn OuterJoinFunction[L, R, OUT], opts ...IntervalJoinOption) DataStream[OUT] {
	if isNil(fn) {
		left.ds.env.fail(fmt.Errorf("operator %q: %w", "IntervalOuterJoin", nilFnError("join function")))
	}
	if kind < LeftOuter || kind > FullOuter {
		left.ds.env.fail(fmt.Errorf("operator %q: unknown outer join kind %d", "IntervalOuterJoin", kind))
	}
	perSubtask := func() (OuterJoinFunction[L, R, OUT], any) {
		u := cloneFunction(fn)
		return u, u
	}
	return intervalJoin(left, right, b, kind, perSubtask, "IntervalOuterJoin", opts)
}

func intervalJoin[K comparable, L, R, OUT any](left KeyedStream[K, L], right KeyedStream[K, R], b IntervalBounds,
	kind OuterJoinKind, newFn func() (OuterJoinFunction[L, R, OUT], any), name string, opts []IntervalJoinOption) DataStream[OUT] {
	env := left.ds.env
	var cfg intervalJoinConfig
	for _, o := range opts {
		o(&cfg)
	}
	lower, upper := b.Lower.Milliseconds(), b.Upper.Milliseconds()
	if lower > upper {
		env.fail(fmt.Errorf("operator %q: lower bound %v is above upper bound %v; the rule is right.ts - left.ts in [lower, upper]", name, b.Lower, b.Upper))
	}
	if cfg.lowerExclusive {
		lower++
	}
	if cfg.upperExclusive {
		upper--
	}
	ds := twoInput(left.ds, right.ds, name, func(bc *runtime.BuildContext, out *runtime.Output[OUT]) (runtime.TwoInput[L, R], runtime.Lifecycle, error) {
		o := &intervalJoinOp[K, L, R, OUT]{
			opBase: base(bc), lower: lower, upper: upper, kind: kind,
			keyL: left.key, keyR: right.key, hash: left.hashK, maxP: bc.MaxParallelism,
			backend: istate.NewBackend[K](bc.KeyGroups.Start, bc.KeyGroups.End, bc.Clock),
			timers:  timer.NewService[K, int8](),
			out:     out, wm: math.MinInt64,
			lateL: bc.Side(cfg.lateLeft), lateR: bc.Side(cfg.lateRight), sides: bc.Sides,
			fullScan: cfg.fullScan, restored: bc.Restored,
		}
		o.fn, o.user = newFn()
		o.rc = runtimeCtx{name: bc.Name, subtask: bc.Subtask, par: bc.Parallelism, maxPar: bc.MaxParallelism}
		if cfg.lateLeft == "" {
			o.lateL = nil
		}
		if cfg.lateRight == "" {
			o.lateR = nil
		}
		o.col.out = out
		o.ctx.op = &o.opBase
		o.ctx.sides = bc.Sides
		var err error
		if o.left, err = istate.GetValue[K, void](o.backend, state.Value[*tsBuffer[L]]("LEFT_BUFFER")); err != nil {
			return nil, nil, err
		}
		if o.right, err = istate.GetValue[K, void](o.backend, state.Value[*tsBuffer[R]]("RIGHT_BUFFER")); err != nil {
			return nil, nil, err
		}
		o.initSides()
		return o, o, nil
	})
	// The late-data tags are side outputs of the join.
	if n := ds.single(name); n != nil {
		for _, tt := range [][2]string{{cfg.lateLeft, cfg.lateLeftType}, {cfg.lateRight, cfg.lateRightType}} {
			if tt[0] == "" {
				continue
			}
			key := fmt.Sprintf("%d/%s", n.ID, tt[0])
			if prev, ok := env.tagTypes[key]; ok && prev != tt[1] {
				env.fail(fmt.Errorf("operator %q: side output %q used with types %s and %s", name, tt[0], prev, tt[1]))
			}
			env.tagTypes[key] = tt[1]
		}
	}
	return ds
}

// tsBuffer holds one key's records of one side, ordered by timestamp:
// buckets of equal timestamps in arrival order.
type tsBuffer[T any] struct {
	buckets []tsBucket[T]
}

type tsBucket[T any] struct {
	ts      int64
	entries []tsEntry[T]
}

type tsEntry[T any] struct {
	v      T
	joined bool
}

// search returns the index of the first bucket with ts >= t.
func (b *tsBuffer[T]) search(t int64) int {
	return sort.Search(len(b.buckets), func(i int) bool { return b.buckets[i].ts >= t })
}

func (b *tsBuffer[T]) add(ts int64, v T, joined bool) {
	i := b.search(ts)
	if i < len(b.buckets) && b.buckets[i].ts == ts {
		b.buckets[i].entries = append(b.buckets[i].entries, tsEntry[T]{v, joined})
		return
	}
	b.buckets = append(b.buckets, tsBucket[T]{})
	copy(b.buckets[i+1:], b.buckets[i:])
	b.buckets[i] = tsBucket[T]{ts: ts, entries: []tsEntry[T]{{v, joined}}}
}

// remove takes out the bucket with timestamp ts.
func (b *tsBuffer[T]) remove(ts int64) (tsBucket[T], bool) {
	i := b.search(ts)
	if i == len(b.buckets) || b.buckets[i].ts != ts {
		return tsBucket[T]{}, false
	}
	bk := b.buckets[i]
	if i == 0 {
		b.buckets[0] = tsBucket[T]{}
		b.buckets = b.buckets[1:]
	} else {
		copy(b.buckets[i:], b.buckets[i+1:])
		b.buckets[len(b.buckets)-1] = tsBucket[T]{}
		b.buckets = b.buckets[:len(b.buckets)-1]
	}
	return bk, true
}

// tsBufferWire is the encoded form of a tsBuffer.
type tsBufferWire[T any] struct {
	TS     []int64
	Values [][]T
	Joined [][]bool
}

// GobEncode encodes the buffer (for checkpoints).
func (b tsBuffer[T]) GobEncode() ([]byte, error) {
	w := tsBufferWire[T]{}
	for _, bk := range b.buckets {
		w.TS = append(w.TS, bk.ts)
		vs := make([]T, len(bk.entries))
		js := make([]bool, len(bk.entries))
		for i, e := range bk.entries {
			vs[i], js[i] = e.v, e.joined
		}
		w.Values, w.Joined = append(w.Values, vs), append(w.Joined, js)
	}
	var buf bytes.Buffer
	err := gob.NewEncoder(&buf).Encode(w)
	return buf.Bytes(), err
}

// GobDecode decodes what GobEncode wrote.
func (b *tsBuffer[T]) GobDecode(data []byte) error {
	var w tsBufferWire[T]
	if err := gob.NewDecoder(bytes.NewReader(data)).Decode(&w); err != nil {
		return err
	}
	if len(w.Values) != len(w.TS) || len(w.Joined) != len(w.TS) {
		return fmt.Errorf("corrupt join buffer")
	}
	b.buckets = make([]tsBucket[T], len(w.TS))
	for i, ts := range w.TS {
		if len(w.Joined[i]) != len(w.Values[i]) {
			return fmt.Errorf("corrupt join buffer")
		}
		es := make([]tsEntry[T], len(w.Values[i]))
		for j := range es {
			es[j] = tsEntry[T]{w.Values[i][j], w.Joined[i][j]}
		}
		b.buckets[i] = tsBucket[T]{ts: ts, entries: es}
	}
	return nil
}

// size returns the number of buffered records.
func (b *tsBuffer[T]) size() int {
	n := 0
	for _, bk := range b.buckets {
		n += len(bk.entries)
	}
	return n
}

type joinCtx struct {
	op       *opBase
	lts, rts int64
	sides    map[string]runtime.OutputPort
	sideErr  error
}

func (c *joinCtx) LeftTimestamp() int64  { return c.lts }
func (c *joinCtx) RightTimestamp() int64 { return c.rts }
func (c *joinCtx) Timestamp() int64      { return max(c.lts, c.rts) }
func (c *joinCtx) Output(tag SideTag, v any) {
	if tag == nil {
		return
	}
	if p := c.sides[tag.TagID()]; p != nil {
		if err := p.EmitAny(v, c.Timestamp()); err != nil && c.sideErr == nil {
			c.sideErr = fmt.Errorf("side output %q: %w", tag.TagID(), err)
		}
	}
}

const (
	nsLeft  int8 = 0
	nsRight int8 = 1
)

type intervalJoinOp[K comparable, L, R, OUT any] struct {
	opBase
	endBoth
	lower, upper int64 // normalised, inclusive
	kind         OuterJoinKind
	keyL         func(L) K
	keyR         func(R) K
	hash         func(K) int32
	maxP         int
	backend      *istate.Backend[K]
	left         *istate.Value[K, void, *tsBuffer[L]]
	right        *istate.Value[K, void, *tsBuffer[R]]
	timers       *timer.Service[K, int8]
	wm           int64
	fn           OuterJoinFunction[L, R, OUT]
	out          *runtime.Output[OUT]
	col          collector[OUT]
	ctx          joinCtx
	lateL, lateR runtime.OutputPort
	sides        map[string]runtime.OutputPort
	key          K
	kg           int
	fullScan     bool
	restored     *runtime.Restored
	leftSide     joinSide[K, L, R]
	rightSide    joinSide[K, R, L]
	user         any // the user's function, for Open and Close
	rc           runtimeCtx
}

// first returns the index of the first bucket to probe for [lo, hi]: by
// binary search, or 0 for the full-scan variant, which then skips buckets
// outside the range one by one as Flink does.
func first[T any](b *tsBuffer[T], lo int64, fullScan bool) int {
	if fullScan {
		return 0
	}
	return b.search(lo)
}

// past reports whether the probe can stop at bucket j.
func past[T any](b *tsBuffer[T], j int, hi int64, fullScan bool) bool {
	return j >= len(b.buckets) || (!fullScan && b.buckets[j].ts > hi)
}

// Open restores the buffers and cleanup timers from a checkpoint and opens
// the user's function.
func (o *intervalJoinOp[K, L, R, OUT]) Open() (err error) {
	defer o.catch(&err)
	if o.restored != nil {
		if err := keyedsnap.Restore(o.backend, o.timers, o.restored.KeyGroups); err != nil {
			return err
		}
	}
	if op, ok := o.user.(Opener); ok {
		return op.Open(o.rc)
	}
	return nil
}

// SnapshotState snapshots both sides' buffers and the cleanup timers.
func (o *intervalJoinOp[K, L, R, OUT]) SnapshotState(int64) (runtime.OperatorSnapshot, error) {
	kgs, err := keyedsnap.Snapshot(o.backend, o.timers)
	return runtime.OperatorSnapshot{KeyGroups: kgs}, err
}
func (o *intervalJoinOp[K, L, R, OUT]) Close() error { return closeFn(o.user, &o.opBase) }

func (o *intervalJoinOp[K, L, R, OUT]) setKey(k K) {
	o.key = k
	o.kg = keygroup.Of(o.hash(k), o.maxP)
	o.backend.SetCurrentKey(k, o.kg)
}

func (o *intervalJoinOp[K, L, R, OUT]) emit(l *L, r *R, lts, rts int64) error {
	o.ctx.lts, o.ctx.rts = lts, rts
	o.col.ts = max(lts, rts)
	if err := o.fn.ProcessElement(l, r, &o.ctx, &o.col); err != nil {
		return err
	}
	if o.ctx.sideErr != nil {
		err := o.ctx.sideErr
		o.ctx.sideErr = nil
		return err
	}
	return nil
}

// joinSide is one input of the interval join: its records X probe the
// other side's buffer of Y for timestamps in [ts+lo, ts+hi], then wait in
// their own buffer until their cleanup timer (ts + delay) fires.
type joinSide[K comparable, X, Y any] struct {
	name   string
	key    func(X) K
	own    *istate.Value[K, void, *tsBuffer[X]]
	other  *istate.Value[K, void, *tsBuffer[Y]]
	late   runtime.OutputPort
	lo, hi int64
	delay  int64
	ns     int8
	// emit calls the join function with the pair in (left, right) order.
	emit func(x *X, y *Y, xts, yts int64) error
}

func (o *intervalJoinOp[K, L, R, OUT]) initSides() {
	o.leftSide = joinSide[K, L, R]{name: "left", key: o.keyL, own: o.left, other: o.right, late: o.lateL,
		lo: o.lower, hi: o.upper, delay: max(o.upper, 0), ns: nsLeft, emit: o.emit}
	o.rightSide = joinSide[K, R, L]{name: "right", key: o.keyR, own: o.right, other: o.left, late: o.lateR,
		lo: -o.upper, hi: -o.lower, delay: max(-o.lower, 0), ns: nsRight,
		emit: func(r *R, l *L, rts, lts int64) error { return o.emit(l, r, lts, rts) }}
}

// processSide runs Flink's processElement for one side: the late check,
// the probe of the other side's buffer, buffering, the cleanup timer.
func processSide[K comparable, L, R, OUT, X, Y any](o *intervalJoinOp[K, L, R, OUT], s *joinSide[K, X, Y], recs []runtime.Record[X]) error {
	for i := range recs {
		v, ts := recs[i].Value, recs[i].TS
		if ts == NoTimestamp {
			return fmt.Errorf("interval join needs event timestamps: a %s record has none (assign timestamps and watermarks first)", s.name)
		}
		if ts < o.wm {
			if s.late != nil {
				if err := s.late.EmitAny(v, ts); err != nil {
					return err
				}
			}
			continue
		}
		o.setKey(s.key(v))
		matched := false
		if other, ok := s.other.Value(); ok && other != nil {
			lo, hi := ts+s.lo, ts+s.hi
			for j := first(other, lo, o.fullScan); !past(other, j, hi, o.fullScan); j++ {
				bk := &other.buckets[j]
				if bk.ts < lo || bk.ts > hi {
					continue
				}
				for e := range bk.entries {
					bk.entries[e].joined = true
					matched = true
					if err := s.emit(&v, &bk.entries[e].v, ts, bk.ts); err != nil {
						return err
					}
				}
			}
		}
		buf, ok := s.own.Value()
		if !ok || buf == nil {
			buf = &tsBuffer[X]{}
			s.own.Update(buf)
		}
		buf.add(ts, v, matched)
		o.timers.RegisterEventTime(o.key, o.kg, s.ns, ts+s.delay)
	}
	return o.out.Err()
}

func (o *intervalJoinOp[K, L, R, OUT]) ProcessBatch1(recs []runtime.Record[L]) (err error) {
	defer o.catch(&err)
	return processSide(o, &o.leftSide, recs)
}

func (o *intervalJoinOp[K, L, R, OUT]) ProcessBatch2(recs []runtime.Record[R]) (err error) {
	defer o.catch(&err)
	return processSide(o, &o.rightSide, recs)
}

func (o *intervalJoinOp[K, L, R, OUT]) onTimer(t timer.Timer[K, int8]) error {
	o.key, o.kg = t.Key, t.KeyGroup
	o.backend.SetCurrentKey(t.Key, t.KeyGroup)
	if t.Namespace == nsLeft {
		bucket := t.Timestamp
		if o.upper > 0 {
			bucket -= o.upper
		}
		buf, ok := o.left.Value()
		if !ok || buf == nil {
			return nil
		}
		bk, found := buf.remove(bucket)
		if len(buf.buckets) == 0 {
			o.left.Clear()
		}
		if found && (o.kind == LeftOuter || o.kind == FullOuter) {
			for i := range bk.entries {
				if !bk.entries[i].joined {
					if err := o.emit(&bk.entries[i].v, nil, bk.ts, NoTimestamp); err != nil {
						return err
					}
				}
			}
		}
		return nil
	}
	bucket := t.Timestamp
	if o.lower <= 0 {
		bucket += o.lower
	}
	buf, ok := o.right.Value()
	if !ok || buf == nil {
		return nil
	}
	bk, found := buf.remove(bucket)
	if len(buf.buckets) == 0 {
		o.right.Clear()
	}
	if found && (o.kind == RightOuter || o.kind == FullOuter) {
		for i := range bk.entries {
			if !bk.entries[i].joined {
				if err := o.emit(nil, &bk.entries[i].v, NoTimestamp, bk.ts); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

func (o *intervalJoinOp[K, L, R, OUT]) ProcessWatermark(wm int64) (err error) {
	defer o.catch(&err)
	o.wm = wm
	if err := o.timers.AdvanceWatermark(wm, o.onTimer); err != nil {
		return err
	}
	return o.out.EmitWatermark(wm)
}

func (o *intervalJoinOp[K, L, R, OUT]) ProcessStatus(idle bool) error { return o.out.EmitStatus(idle) }
func (o *intervalJoinOp[K, L, R, OUT]) EndInput1() error              { return o.end(0, o.out) }
func (o *intervalJoinOp[K, L, R, OUT]) EndInput2() error              { return o.end(1, o.out) }
