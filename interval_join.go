package weir

import (
	"fmt"
	"time"

	"github.com/weirstream/weir/internal/engine"
	"github.com/weirstream/weir/internal/intervaljoin"
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
	lower, upper, err := intervaljoin.Bounds(env.millis(fmt.Sprintf("operator %q: lower bound", name), b.Lower),
		env.millis(fmt.Sprintf("operator %q: upper bound", name), b.Upper), b.Lower, b.Upper, cfg.lowerExclusive, cfg.upperExclusive)
	if err != nil {
		env.fail(fmt.Errorf("operator %q: %w", name, err))
	}
	ds := twoInput(left.ds, right.ds, name, func(bc *engine.BuildContext, out *engine.Output[OUT]) (engine.TwoInput[L, R], engine.Lifecycle, error) {
		fn, user := newFn()
		ob, rc := base(bc), newRuntimeCtx(bc)
		ctx := &joinCtx{sides: bc.Sides}
		col := &collector[OUT]{out: out}
		emit := func(l *L, r *R, lts, rts int64) error {
			ctx.lts, ctx.rts = lts, rts
			col.ts = max(lts, rts)
			if err := fn.ProcessElement(l, r, ctx, col); err != nil {
				return err
			}
			err := ctx.sideErr
			ctx.sideErr = nil
			return err
		}
		open := func() error {
			if op, ok := user.(Opener); ok {
				return op.Open(rc)
			}
			return nil
		}
		t := intervaljoin.NewTask(bc, out, intervaljoin.Config[K, L, R]{Lower: lower, Upper: upper, Kind: intervaljoin.Kind(kind),
			KeyL: left.key, KeyR: right.key, Hash: left.hashK, Emit: emit},
			cfg.lateLeft, cfg.lateRight, ob.settle, open, func() error { return closeFn(user, &ob) })
		return t, t, nil
	})
	// The late-data tags are side outputs of the join.
	registerSideType(ds, cfg.lateLeft, cfg.lateLeftType)
	registerSideType(ds, cfg.lateRight, cfg.lateRightType)
	return ds
}

// joinCtx is the JoinContext of an interval join.
type joinCtx struct {
	lts, rts int64
	sides    map[string]engine.OutputPort
	sideErr  error
}

func (c *joinCtx) LeftTimestamp() int64  { return c.lts }
func (c *joinCtx) RightTimestamp() int64 { return c.rts }
func (c *joinCtx) Timestamp() int64      { return max(c.lts, c.rts) }
func (c *joinCtx) emitSide(id string, v any) {
	intervaljoin.EmitSide(c.sides[id], id, v, c.Timestamp(), &c.sideErr)
}
