package weir

import (
	"fmt"
	"time"

	"github.com/weirstream/weir/internal/intervaljoin"
	"github.com/weirstream/weir/internal/runtime"
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
	// SideOutputContext lets the function emit to side outputs with
	// Output(ctx, tag, v), at Timestamp().
	SideOutputContext
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
func (c *joinCtx) emitSide(id string, v any) {
	if p := c.sides[id]; p != nil {
		if err := p.EmitAny(v, c.Timestamp()); err != nil && c.sideErr == nil {
			c.sideErr = fmt.Errorf("side output %q: %w", id, err)
		}
	}
}

// intervalJoinOp is the interval join of one subtask: the engine
// (internal/intervaljoin) calling the user's function with each pair.
type intervalJoinOp[K comparable, L, R, OUT any] struct {
	opBase
	endBoth
	*intervaljoin.Op[K, L, R]
	fn       OuterJoinFunction[L, R, OUT]
	out      *runtime.Output[OUT]
	col      collector[OUT]
	ctx      joinCtx
	restored *runtime.Restored
	user     any // the user's function, for Open and Close
	rc       runtimeCtx
}

func newIntervalJoinOp[K comparable, L, R, OUT any](bc *runtime.BuildContext, out *runtime.Output[OUT], lower, upper int64,
	kind OuterJoinKind, keyL func(L) K, keyR func(R) K, hash func(K) int32, fn OuterJoinFunction[L, R, OUT], user any,
	cfg intervalJoinConfig) *intervalJoinOp[K, L, R, OUT] {
	o := &intervalJoinOp[K, L, R, OUT]{
		opBase: base(bc), out: out, fn: fn, user: user, restored: bc.Restored,
		rc: newRuntimeCtx(bc),
	}
	ec := intervaljoin.Config[K, L, R]{
		Lower: lower, Upper: upper, Kind: intervaljoin.Kind(kind),
		KeyL: keyL, KeyR: keyR, Hash: hash, MaxParallelism: bc.MaxParallelism,
		Emit: o.emit,
	}
	ec.KeyGroups.Start, ec.KeyGroups.End = bc.KeyGroups.Start, bc.KeyGroups.End
	if cfg.lateLeft != "" {
		ec.LateL = bc.Side(cfg.lateLeft)
	}
	if cfg.lateRight != "" {
		ec.LateR = bc.Side(cfg.lateRight)
	}
	o.Op = intervaljoin.New(ec)
	o.col.out = out
	o.ctx.op = &o.opBase
	o.ctx.sides = bc.Sides
	return o
}

// Open restores the buffers and pending cleanups from a checkpoint and
// opens the user's function.
func (o *intervalJoinOp[K, L, R, OUT]) Open() (err error) {
	defer o.catch(&err)
	if o.restored != nil {
		if err := o.Restore(o.restored.KeyGroups); err != nil {
			return err
		}
	}
	if op, ok := o.user.(Opener); ok {
		return op.Open(o.rc)
	}
	return nil
}

// SnapshotState snapshots both sides' buffers and the pending cleanups.
func (o *intervalJoinOp[K, L, R, OUT]) SnapshotState(int64) (runtime.OperatorSnapshot, error) {
	kgs, err := o.Snapshot()
	return runtime.OperatorSnapshot{KeyGroups: kgs}, err
}

// SnapshotStateAsync takes the synchronous part of the snapshot
// (intervaljoin.Op.SnapshotAsync).
func (o *intervalJoinOp[K, L, R, OUT]) SnapshotStateAsync(int64) (runtime.AsyncSnapshot, error) {
	return o.SnapshotAsync()
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

func (o *intervalJoinOp[K, L, R, OUT]) ProcessBatch1(recs []runtime.Record[L]) (err error) {
	defer o.catch(&err)
	if err := o.Op.ProcessBatch1(recs); err != nil {
		return err
	}
	return o.out.Err()
}

func (o *intervalJoinOp[K, L, R, OUT]) ProcessBatch2(recs []runtime.Record[R]) (err error) {
	defer o.catch(&err)
	if err := o.Op.ProcessBatch2(recs); err != nil {
		return err
	}
	return o.out.Err()
}

func (o *intervalJoinOp[K, L, R, OUT]) ProcessWatermark(wm int64) (err error) {
	defer o.catch(&err)
	if err := o.Advance(wm); err != nil {
		return err
	}
	return o.out.EmitWatermark(wm)
}

func (o *intervalJoinOp[K, L, R, OUT]) ProcessStatus(idle bool) error { return o.out.EmitStatus(idle) }
func (o *intervalJoinOp[K, L, R, OUT]) EndInput1() error              { return o.end(0, o.out) }
func (o *intervalJoinOp[K, L, R, OUT]) EndInput2() error              { return o.end(1, o.out) }
