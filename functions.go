package weir

import (
	"fmt"

	"github.com/weirstream/weir/internal/engine"
	istate "github.com/weirstream/weir/internal/state"
	"github.com/weirstream/weir/internal/userfn"
	"github.com/weirstream/weir/metrics"
)

// Collector receives the records a function emits. The record's timestamp
// is chosen by the operator (the input record's, or a timer's).
type Collector[T any] interface {
	Collect(v T)
}

// TimeDomain tells which clock fired a timer.
type TimeDomain int

const (
	// EventTime timers fire when the watermark passes them.
	EventTime TimeDomain = iota
	// ProcessingTime timers fire on the processing-time clock.
	ProcessingTime
)

// String returns Flink's name of the domain: EVENT_TIME or PROCESSING_TIME.
func (d TimeDomain) String() string {
	if d == ProcessingTime {
		return "PROCESSING_TIME"
	}
	return "EVENT_TIME"
}

// SideTag identifies a side output of any type; OutputTag implements it.
type SideTag interface {
	TagID() string
}

// SideOutputContext is implemented by the contexts of the functions that
// may emit to side outputs (process, keyed process, co-process, broadcast
// process, process window and join contexts); emit with Output.
type SideOutputContext interface {
	emitSide(id string, v any)
}

// Output emits v to the side output tag of the operator whose function
// was given ctx, at the context's timestamp; it is dropped if nobody
// consumes the tag. The compiler checks that v has the tag's type, as
// Flink's ctx.output(tag, v) does.
func Output[X any](ctx SideOutputContext, tag OutputTag[X], v X) {
	if ctx == nil || tag.id == "" {
		return
	}
	ctx.emitSide(tag.id, v)
}

// Context is given to a function with each element.
type Context interface {
	// Timestamp returns the element's event timestamp, if it has one.
	Timestamp() (int64, bool)
	// CurrentWatermark returns the operator's current watermark.
	CurrentWatermark() int64
	// CurrentProcessingTime returns the processing-time clock in ms.
	CurrentProcessingTime() int64
	// SideOutputContext lets the function emit to side outputs with
	// Output(ctx, tag, v).
	SideOutputContext
}

// TimerService registers and deletes timers for the current key.
type TimerService interface {
	CurrentProcessingTime() int64
	CurrentWatermark() int64
	RegisterEventTimeTimer(ts int64)
	RegisterProcessingTimeTimer(ts int64)
	DeleteEventTimeTimer(ts int64)
	DeleteProcessingTimeTimer(ts int64)
}

// KeyedContext is the Context of a keyed function.
type KeyedContext[K comparable] interface {
	Context
	CurrentKey() K
	TimerService() TimerService
}

// OnTimerContext is the context of a timer callback.
type OnTimerContext[K comparable] interface {
	KeyedContext[K]
	TimeDomain() TimeDomain
}

// ProcessFunction processes the elements of a non-keyed stream.
type ProcessFunction[IN, OUT any] interface {
	ProcessElement(v IN, ctx Context, out Collector[OUT]) error
}

// processFunc adapts a function to a ProcessFunction (ProcessStreamFunc).
type processFunc[IN, OUT any] func(v IN, ctx Context, out Collector[OUT]) error

func (f processFunc[IN, OUT]) ProcessElement(v IN, ctx Context, out Collector[OUT]) error {
	return f(v, ctx, out)
}

// KeyedProcessFunction processes the elements of a keyed stream, with keyed
// state and timers.
type KeyedProcessFunction[K comparable, IN, OUT any] interface {
	ProcessElement(v IN, ctx KeyedContext[K], out Collector[OUT]) error
	OnTimer(ts int64, ctx OnTimerContext[K], out Collector[OUT]) error
}

// keyedProcessFunc adapts a function to a KeyedProcessFunction whose
// OnTimer does nothing (ProcessFunc).
type keyedProcessFunc[K comparable, IN, OUT any] func(v IN, ctx KeyedContext[K], out Collector[OUT]) error

func (f keyedProcessFunc[K, IN, OUT]) ProcessElement(v IN, ctx KeyedContext[K], out Collector[OUT]) error {
	return f(v, ctx, out)
}

func (f keyedProcessFunc[K, IN, OUT]) OnTimer(int64, OnTimerContext[K], Collector[OUT]) error {
	return nil
}

// CoProcessFunction processes two connected non-keyed streams. Both methods
// run on one goroutine, never concurrently.
type CoProcessFunction[IN1, IN2, OUT any] interface {
	ProcessElement1(v IN1, ctx Context, out Collector[OUT]) error
	ProcessElement2(v IN2, ctx Context, out Collector[OUT]) error
}

// KeyedCoProcessFunction processes two connected keyed streams with keyed
// state and timers. ProcessElement1, ProcessElement2 and OnTimer never run
// concurrently for one instance.
type KeyedCoProcessFunction[K comparable, IN1, IN2, OUT any] interface {
	ProcessElement1(v IN1, ctx KeyedContext[K], out Collector[OUT]) error
	ProcessElement2(v IN2, ctx KeyedContext[K], out Collector[OUT]) error
	OnTimer(ts int64, ctx OnTimerContext[K], out Collector[OUT]) error
}

// RuntimeContext describes the subtask a function instance runs in.
type RuntimeContext interface {
	OperatorName() string
	Subtask() int
	Parallelism() int
	MaxParallelism() int
	// Metrics returns the operator's metric group in this subtask, to
	// register user metrics (Flink's getMetricGroup()); they show in
	// JobHandle.Metrics, the REST API and Prometheus (package metrics).
	Metrics() *metrics.Group
}

// KeyedRuntimeContext is the RuntimeContext of a keyed function; it gives
// access to keyed state (GetValueState and friends).
type KeyedRuntimeContext[K comparable] interface {
	RuntimeContext
	keyedBackend() *istate.Backend[K]
}

// Opener is implemented by non-keyed functions that set up at start.
type Opener interface {
	Open(ctx RuntimeContext) error
}

// KeyedOpener is implemented by keyed functions that set up at start,
// typically to get their state handles.
type KeyedOpener[K comparable] interface {
	Open(ctx KeyedRuntimeContext[K]) error
}

// Closer is implemented by functions that release resources at the end.
type Closer interface {
	Close() error
}

// cloneFunction gives each subtask its own copy of a function value
// (userfn.Clone).
func cloneFunction[F any](f F) F { return userfn.Clone(f) }

type runtimeCtx struct {
	name                 string
	subtask, par, maxPar int
	mg                   *metrics.Group
}

func (r runtimeCtx) OperatorName() string    { return r.name }
func (r runtimeCtx) Subtask() int            { return r.subtask }
func (r runtimeCtx) Parallelism() int        { return r.par }
func (r runtimeCtx) MaxParallelism() int     { return r.maxPar }
func (r runtimeCtx) Metrics() *metrics.Group { return r.mg }

// metricGroupOf returns the metric group of the operator bc builds.
func metricGroupOf(bc *engine.BuildContext) *metrics.Group {
	if bc.UserMetrics == nil { // outside a plan: the metrics are not reported
		return metrics.NewGroup(bc.Name)
	}
	return bc.UserMetrics
}

// newRuntimeCtx returns the RuntimeContext of the operator bc builds.
func newRuntimeCtx(bc *engine.BuildContext) runtimeCtx {
	return runtimeCtx{name: bc.Name, subtask: bc.Subtask, par: bc.Parallelism, maxPar: bc.MaxParallelism, mg: metricGroupOf(bc)}
}

type keyedRuntimeCtx[K comparable] struct {
	runtimeCtx
	b *istate.Backend[K]
}

func (k keyedRuntimeCtx[K]) keyedBackend() *istate.Backend[K] { return k.b }

func isNil(f any) bool { return userfn.IsNil(f) }

func nilFnError(what string) error { return fmt.Errorf("%s is nil", what) }
