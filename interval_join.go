package weir

import (
	"context"
	"fmt"
	"math"
	"reflect"
	"sync/atomic"
	"time"

	"github.com/weirstream/weir/internal/runtime"
	istate "github.com/weirstream/weir/internal/state"
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

// processJoinFunc adapts a function to a ProcessJoinFunction
// (IntervalJoinFunc).
type processJoinFunc[L, R, OUT any] func(left L, right R, ctx JoinContext, out Collector[OUT]) error

func (f processJoinFunc[L, R, OUT]) ProcessElement(left L, right R, ctx JoinContext, out Collector[OUT]) error {
	return f(left, right, ctx, out)
}

// OuterJoinFunction is called for every matching pair of an outer interval
// join and, when its cleanup time passes, for every record that never
// matched, with a nil partner. The pointers are valid during the call only.
type OuterJoinFunction[L, R, OUT any] interface {
	ProcessElement(left *L, right *R, ctx JoinContext, out Collector[OUT]) error
}

// outerJoinFunc adapts a function to an OuterJoinFunction
// (IntervalOuterJoinFunc).
type outerJoinFunc[L, R, OUT any] func(left *L, right *R, ctx JoinContext, out Collector[OUT]) error

func (f outerJoinFunc[L, R, OUT]) ProcessElement(left *L, right *R, ctx JoinContext, out Collector[OUT]) error {
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
		return outerJoinFunc[L, R, OUT](func(l *L, r *R, ctx JoinContext, out Collector[OUT]) error {
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
	lower := env.millis(fmt.Sprintf("operator %q: lower bound", name), b.Lower)
	upper := env.millis(fmt.Sprintf("operator %q: upper bound", name), b.Upper)
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
		fn, user := newFn()
		o := newIntervalJoinOp(bc, out, lower, upper, kind, left.key, right.key, left.hashK, fn, user, cfg)
		return o, o, nil
	})
	// The late-data tags are side outputs of the join.
	registerSideType(ds, cfg.lateLeft, cfg.lateLeftType)
	registerSideType(ds, cfg.lateRight, cfg.lateRightType)
	return ds
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

// intervalJoinOp is the interval join of one subtask. Its keyed state is
// its own (interval_join_buffer.go, interval_join_index.go): an index from
// key to a slot holding both sides' timestamp-ordered buffers, and per side
// a queue of pending cleanups that fire exactly as Flink's cleanup timers
// would (same times, same order: timestamp, then registration), without a
// timer per record. Checkpoints: interval_join_snapshot.go.
type intervalJoinOp[K comparable, L, R, OUT any] struct {
	opBase
	endBoth
	lower, upper   int64 // normalised, inclusive
	kind           OuterJoinKind
	hash           func(K) int32
	maxP           int
	kgFirst        int
	kgLast         int
	keys           ijIndex[K] // key -> slot
	slots          ijSlab[ijKey[K, L, R]]
	flags          [][]ijFlags // joined flags by slot, in pages like slots (outer joins only)
	idle           []int32     // slots whose buffers became empty since the last watermark
	chunk          []int32     // the slots of the records of a chunk (processChunk)
	touched        int64       // what processChunk read to bring buffers into cache
	qL, qR         ijQueue     // pending cleanups of left and right buckets
	seq            uint64      // registration number of the last queued cleanup
	delayL, delayR int64       // cleanup time minus bucket timestamp
	trackL, trackR bool        // whether a side's unmatched records are emitted
	wm             int64
	fn             OuterJoinFunction[L, R, OUT]
	out            *runtime.Output[OUT]
	col            collector[OUT]
	ctx            joinCtx
	lateL, lateR   runtime.OutputPort
	sides          map[string]runtime.OutputPort
	fullScan       bool
	restored       *runtime.Restored
	leftSide       joinSide[K, L, R, L, R]
	rightSide      joinSide[K, L, R, R, L]
	user           any // the user's function, for Open and Close
	rc             runtimeCtx
	sample         ijSample // probes sampled for `weir doctor` (metrics_ops.go)
	// buffered counts the records in both sides' buffers; bufferedG and
	// peakG publish it and its highest value to the gauges after each
	// batch and watermark (read from any goroutine).
	buffered         int64
	bufferedG, peakG atomic.Int64
}

func newIntervalJoinOp[K comparable, L, R, OUT any](bc *runtime.BuildContext, out *runtime.Output[OUT], lower, upper int64,
	kind OuterJoinKind, keyL func(L) K, keyR func(R) K, hash func(K) int32, fn OuterJoinFunction[L, R, OUT], user any,
	cfg intervalJoinConfig) *intervalJoinOp[K, L, R, OUT] {
	o := &intervalJoinOp[K, L, R, OUT]{
		opBase: base(bc), lower: lower, upper: upper, kind: kind,
		hash: hash, maxP: bc.MaxParallelism, kgFirst: bc.KeyGroups.Start, kgLast: bc.KeyGroups.End,
		keys:   newIJIndex(hash),
		delayL: max(upper, 0), delayR: max(-lower, 0),
		trackL: kind == LeftOuter || kind == FullOuter, trackR: kind == RightOuter || kind == FullOuter,
		out: out, wm: math.MinInt64, fn: fn, user: user,
		lateL: bc.Side(cfg.lateLeft), lateR: bc.Side(cfg.lateRight), sides: bc.Sides,
		fullScan: cfg.fullScan, restored: bc.Restored,
	}
	o.rc = newRuntimeCtx(bc)
	if cfg.lateLeft == "" {
		o.lateL = nil
	}
	if cfg.lateRight == "" {
		o.lateR = nil
	}
	o.col.out = out
	o.ctx.op = &o.opBase
	o.ctx.sides = bc.Sides
	o.leftSide = joinSide[K, L, R, L, R]{name: "left", key: keyL, late: o.lateL,
		own:   func(k *ijKey[K, L, R]) *ijBuf[L] { return &k.left },
		other: func(k *ijKey[K, L, R]) *ijBuf[R] { return &k.right },
		ownJF: o.jfL, otherJF: o.jfR,
		track: o.trackL, otherTrack: o.trackR, queue: &o.qL,
		lo: o.lower, hi: o.upper, delay: o.delayL, emit: o.emit}
	o.rightSide = joinSide[K, L, R, R, L]{name: "right", key: keyR, late: o.lateR,
		own:   func(k *ijKey[K, L, R]) *ijBuf[R] { return &k.right },
		other: func(k *ijKey[K, L, R]) *ijBuf[L] { return &k.left },
		ownJF: o.jfR, otherJF: o.jfL,
		track: o.trackR, otherTrack: o.trackL, queue: &o.qR,
		lo: -o.upper, hi: -o.lower, delay: o.delayR,
		emit: func(r *R, l *L, rts, lts int64) error { return o.emit(l, r, lts, rts) }}
	return o
}

// Open restores the buffers and pending cleanups from a checkpoint and
// opens the user's function.
func (o *intervalJoinOp[K, L, R, OUT]) Open() (err error) {
	defer o.catch(&err)
	if o.restored != nil {
		if err := o.restore(o.restored.KeyGroups); err != nil {
			return err
		}
		o.publishBuffered()
	}
	if op, ok := o.user.(Opener); ok {
		return op.Open(o.rc)
	}
	return nil
}

// SnapshotState snapshots both sides' buffers and the pending cleanups.
func (o *intervalJoinOp[K, L, R, OUT]) SnapshotState(int64) (runtime.OperatorSnapshot, error) {
	kgs, err := o.snapshot()
	return runtime.OperatorSnapshot{KeyGroups: kgs}, err
}

// SnapshotStateAsync takes the synchronous part of the snapshot: when the
// key and record types cannot change in place (no pointers, slices or
// maps; strings are fine), a copy of every key's live buffers, joined
// flags and cleanup numbers (memory copies, no encoding), encoded on the
// snapshot goroutine; otherwise the whole snapshot, encoded at once.
func (o *intervalJoinOp[K, L, R, OUT]) SnapshotStateAsync(id int64) (runtime.AsyncSnapshot, error) {
	if !istate.IsPlain(reflect.TypeFor[K]()) || !istate.IsPlain(reflect.TypeFor[L]()) || !istate.IsPlain(reflect.TypeFor[R]()) {
		snap, err := o.SnapshotState(id)
		if err != nil {
			return nil, err
		}
		return func(ctx context.Context) (runtime.OperatorSnapshot, error) { return snap, ctx.Err() }, nil
	}
	v, err := o.view(true)
	if err != nil {
		return nil, err
	}
	return func(ctx context.Context) (runtime.OperatorSnapshot, error) {
		if err := ctx.Err(); err != nil {
			return runtime.OperatorSnapshot{}, err
		}
		kgs, err := v.encode()
		return runtime.OperatorSnapshot{KeyGroups: kgs}, err
	}, nil
}
func (o *intervalJoinOp[K, L, R, OUT]) Close() error { return closeFn(o.user, &o.opBase) }

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

// slotOf returns the slot of key k, taking a new one if k has none.
func (o *intervalJoinOp[K, L, R, OUT]) slotOf(k K) (int32, *ijKey[K, L, R]) {
	i := o.keys.getOrPut(k, o.newSlot)
	return i, o.slots.at(i)
}

// newSlot takes a slot for key k.
func (o *intervalJoinOp[K, L, R, OUT]) newSlot(k K) int32 {
	i := o.slots.alloc()
	o.slots.at(i).key = k
	return i
}

// flagsOf returns the joined flags of slot si.
func (o *intervalJoinOp[K, L, R, OUT]) flagsOf(si int32) *ijFlags {
	p := int(si >> ijPageBits)
	for p >= len(o.flags) {
		o.flags = append(o.flags, make([]ijFlags, 1<<ijPageBits))
	}
	return &o.flags[p][si&(1<<ijPageBits-1)]
}

// jfL returns the joined flags of slot si's left buffer, nil if the left
// side is not tracked; jfR those of the right buffer.
func (o *intervalJoinOp[K, L, R, OUT]) jfL(si int32) *[]bool {
	if !o.trackL {
		return nil
	}
	return &o.flagsOf(si).l
}

func (o *intervalJoinOp[K, L, R, OUT]) jfR(si int32) *[]bool {
	if !o.trackR {
		return nil
	}
	return &o.flagsOf(si).r
}

// joinSide is one input of the interval join: its records X probe the
// other side's buffer of Y for timestamps in [ts+lo, ts+hi], then wait in
// their own buffer until their cleanup time ts + delay is reached.
type joinSide[K comparable, L, R, X, Y any] struct {
	name              string
	key               func(X) K
	own               func(*ijKey[K, L, R]) *ijBuf[X]
	other             func(*ijKey[K, L, R]) *ijBuf[Y]
	ownJF, otherJF    func(si int32) *[]bool
	track, otherTrack bool // keep joined flags of own / other records
	queue             *ijQueue
	late              runtime.OutputPort
	lo, hi            int64
	delay             int64
	// emit calls the join function with the pair in (left, right) order.
	emit func(x *X, y *Y, xts, yts int64) error
	cur  X // the record being processed (its address goes to emit)
}

// ijChunk is the number of records processSide looks up before it joins
// them.
const ijChunk = 256

// processSide runs Flink's processElement for one side: the late check,
// the probe of the other side's buffer, buffering, the cleanup (queued
// when the record opens a new bucket, as Flink's timer de-duplicates).
//
// It works in chunks: first it finds (or makes) the slots of a chunk's
// keys and touches their buffers, independent loads the processor overlaps,
// then it joins and buffers the records, whose state is now in cache.
func processSide[K comparable, L, R, OUT, X, Y any](o *intervalJoinOp[K, L, R, OUT], s *joinSide[K, L, R, X, Y], recs []runtime.Record[X]) error {
	for len(recs) > 0 {
		n := min(len(recs), ijChunk)
		if err := processChunk(o, s, recs[:n]); err != nil {
			return err
		}
		recs = recs[n:]
	}
	return o.out.Err()
}

func processChunk[K comparable, L, R, OUT, X, Y any](o *intervalJoinOp[K, L, R, OUT], s *joinSide[K, L, R, X, Y], recs []runtime.Record[X]) error {
	slots := o.chunk[:0]
	var touch int64
	for i := range recs {
		ts := recs[i].TS
		if ts == NoTimestamp {
			break
		}
		if ts < o.wm {
			slots = append(slots, -1)
			continue
		}
		si := o.keys.getOrPut(s.key(recs[i].Value), o.newSlot)
		slots = append(slots, si)
		ks := o.slots.at(si)
		if b := s.other(ks); len(b.es) > 0 {
			touch += b.es[len(b.es)-1].ts
		}
		if b := s.own(ks); len(b.es) > 0 {
			touch += b.es[len(b.es)-1].ts
		}
	}
	o.chunk, o.touched = slots, touch
	for i := range recs {
		ts := recs[i].TS
		if i == len(slots) {
			return fmt.Errorf("interval join needs event timestamps: a %s record has none (assign timestamps and watermarks first)", s.name)
		}
		si := slots[i]
		if si < 0 {
			if s.late != nil {
				if err := s.late.EmitAny(recs[i].Value, ts); err != nil {
					return err
				}
			}
			continue
		}
		ks := o.slots.at(si)
		s.cur = recs[i].Value
		if o.sample.skip--; o.sample.skip < 0 {
			sampleProbe(&o.sample, ts, s.lo, s.hi, s.other(ks))
		}
		matched := false
		if other := s.other(ks); !other.empty() {
			lo, hi := ts+s.lo, ts+s.hi
			var jf []bool
			if s.otherTrack {
				jf = *s.otherJF(si)
			}
			j := int(other.head)
			if !o.fullScan {
				j = other.search(lo)
			}
			for es := other.es; j < len(es); j++ {
				e := &es[j]
				if e.ts > hi {
					if o.fullScan {
						continue
					}
					break
				}
				if e.ts < lo {
					continue
				}
				matched = true
				if jf != nil {
					jf[j] = true
				}
				if err := s.emit(&s.cur, &e.v, ts, e.ts); err != nil {
					return err
				}
			}
		}
		var jf *[]bool
		if s.track {
			jf = s.ownJF(si)
		}
		o.buffered++
		if s.own(ks).add(ts, &s.cur, matched, jf) {
			o.seq++
			s.queue.push(ts+s.delay, si, o.seq)
		}
	}
	return nil
}

func (o *intervalJoinOp[K, L, R, OUT]) ProcessBatch1(recs []runtime.Record[L]) (err error) {
	defer o.catch(&err)
	defer o.publishBuffered()
	return processSide(o, &o.leftSide, recs)
}

func (o *intervalJoinOp[K, L, R, OUT]) ProcessBatch2(recs []runtime.Record[R]) (err error) {
	defer o.catch(&err)
	defer o.publishBuffered()
	return processSide(o, &o.rightSide, recs)
}

// publishBuffered publishes the number of buffered records to the gauges.
func (o *intervalJoinOp[K, L, R, OUT]) publishBuffered() {
	o.bufferedG.Store(o.buffered)
	if o.buffered > o.peakG.Load() {
		o.peakG.Store(o.buffered)
	}
}

// Gauges implements runtime.GaugeReporter: the records both sides hold in
// their buffers (interval_join_buffered_records) and the most they held at
// once since the subtask started (interval_join_buffered_records_peak),
// the state that watermark alignment keeps bounded when one input runs
// ahead of the other.
func (o *intervalJoinOp[K, L, R, OUT]) Gauges() []runtime.Gauge {
	return []runtime.Gauge{
		{Name: "interval_join_buffered_records", Value: float64(o.bufferedG.Load())},
		{Name: "interval_join_buffered_records_peak", Value: float64(o.peakG.Load())},
	}
}

// cleanup removes the bucket ts of one side of slot si, emitting its
// unmatched records first if the side is tracked.
func cleanup[K comparable, L, R, OUT, X any](o *intervalJoinOp[K, L, R, OUT], si int32, b *ijBuf[X], ts int64, jf *[]bool,
	emit func(x *X, ts int64) error) error {
	i, j := b.bucket(ts)
	var err error
	if jf != nil {
		for e := i; e < j; e++ {
			if !(*jf)[e] {
				if err = emit(&b.es[e].v, ts); err != nil {
					break
				}
			}
		}
	}
	b.removeRange(i, j, jf)
	o.buffered -= int64(j - i)
	ks := o.slots.at(si)
	if !ks.left.idle && ks.left.empty() && ks.right.empty() {
		ks.left.idle = true
		o.idle = append(o.idle, si)
	}
	return err
}

func (o *intervalJoinOp[K, L, R, OUT]) emitLeft(l *L, ts int64) error {
	return o.emit(l, nil, ts, NoTimestamp)
}
func (o *intervalJoinOp[K, L, R, OUT]) emitRight(r *R, ts int64) error {
	return o.emit(nil, r, NoTimestamp, ts)
}

// drain runs every pending cleanup with time <= wm, in the order the
// cleanup timers would fire: by time, then registration. It stops at the
// first error; that cleanup is done, the others stay queued.
func (o *intervalJoinOp[K, L, R, OUT]) drain(wm int64) error {
	for {
		lt, ls, lok := o.qL.peek()
		rt, rs, rok := o.qR.peek()
		left := lok && (!rok || lt < rt || (lt == rt && ls < rs))
		if left {
			if lt > wm {
				return nil
			}
			ts, si := o.qL.pop()
			if err := cleanup(o, si, &o.slots.at(si).left, ts-o.delayL, o.jfL(si), o.emitLeft); err != nil {
				return err
			}
			continue
		}
		if !rok || rt > wm {
			return nil
		}
		ts, si := o.qR.pop()
		if err := cleanup(o, si, &o.slots.at(si).right, ts-o.delayR, o.jfR(si), o.emitRight); err != nil {
			return err
		}
	}
}

// sweep frees the slots of keys whose buffers became empty before the last
// watermark and stayed empty.
func (o *intervalJoinOp[K, L, R, OUT]) sweep() {
	for _, si := range o.idle {
		ks := o.slots.at(si)
		ks.left.idle = false
		if ks.left.empty() && ks.right.empty() {
			o.keys.delete(ks.key)
			var zero K
			ks.key = zero
			ks.left.reset(o.jfL(si))
			ks.right.reset(o.jfR(si))
			o.slots.release(si)
		}
	}
	o.idle = o.idle[:0]
}

func (o *intervalJoinOp[K, L, R, OUT]) ProcessWatermark(wm int64) (err error) {
	defer o.catch(&err)
	o.wm = wm
	o.sweep()
	defer o.publishBuffered()
	if err := o.drain(wm); err != nil {
		return err
	}
	return o.out.EmitWatermark(wm)
}

func (o *intervalJoinOp[K, L, R, OUT]) ProcessStatus(idle bool) error { return o.out.EmitStatus(idle) }
func (o *intervalJoinOp[K, L, R, OUT]) EndInput1() error              { return o.end(0, o.out) }
func (o *intervalJoinOp[K, L, R, OUT]) EndInput2() error              { return o.end(1, o.out) }
