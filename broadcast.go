package weir

import (
	"fmt"
	"reflect"

	"github.com/weirstream/weir/internal/broadcaststate"
	"github.com/weirstream/weir/internal/engine"
	"github.com/weirstream/weir/internal/keyedsnap"
	"github.com/weirstream/weir/state"
)

// BroadcastStream is a stream sent whole to every subtask of the operator
// it is connected to, with the broadcast states it may write.
type BroadcastStream[T any] struct {
	ds    DataStream[T]
	names map[string]reflect.Type // declared states: the Go type of their maps
}

// Broadcast turns ds into a broadcast stream declaring its broadcast
// states (map descriptors).
func Broadcast[T any](ds DataStream[T], descs ...state.Named) BroadcastStream[T] {
	names := map[string]reflect.Type{}
	for _, d := range descs {
		if d == nil || d.StateName() == "" {
			ds.env.fail(fmt.Errorf("Broadcast: a broadcast state descriptor has no name"))
			continue
		}
		names[d.StateName()] = broadcaststate.MapType(d)
	}
	return BroadcastStream[T]{ds: ds.withPartition(engine.PartitionBroadcast, nil), names: names}
}

// BroadcastStates is implemented by every context of a broadcast-connected
// operator; ReadOnlyBroadcastStateOf reads through it.
type BroadcastStates interface {
	broadcastStore() *broadcaststate.Store
}

// WritableBroadcastStates is implemented by the contexts of the broadcast
// side, which may write broadcast state.
type WritableBroadcastStates interface {
	BroadcastStates
	writable()
}

// ReadOnlyBroadcastStateOf returns the broadcast state d as the element
// side (or a timer) sees it.
func ReadOnlyBroadcastStateOf[K comparable, V any](ctx BroadcastStates, d state.MapDescriptor[K, V]) (state.ReadOnlyBroadcastState[K, V], error) {
	return broadcaststate.Of(ctx.broadcastStore(), d)
}

// BroadcastStateOf returns the read-write broadcast state d on the
// broadcast side.
func BroadcastStateOf[K comparable, V any](ctx WritableBroadcastStates, d state.MapDescriptor[K, V]) (state.BroadcastState[K, V], error) {
	return broadcaststate.Of(ctx.broadcastStore(), d)
}

// ReadOnlyBroadcastContext is the element-side context of a non-keyed
// broadcast-connected operator.
type ReadOnlyBroadcastContext interface {
	Context
	BroadcastStates
}

// BroadcastContext is the broadcast-side context: read-write broadcast state.
type BroadcastContext interface {
	Context
	WritableBroadcastStates
}

// KeyedReadOnlyBroadcastContext is the element-side context of a keyed
// broadcast-connected operator: keyed state, timers, read-only broadcast state.
type KeyedReadOnlyBroadcastContext[K comparable] interface {
	KeyedContext[K]
	BroadcastStates
}

// KeyedBroadcastOnTimerContext is the timer context of a keyed
// broadcast-connected operator.
type KeyedBroadcastOnTimerContext[K comparable] interface {
	OnTimerContext[K]
	BroadcastStates
}

// KeyedBroadcastContext is the broadcast-side context of a keyed operator:
// read-write broadcast state and ApplyToKeyedState; no current key, no timers.
type KeyedBroadcastContext[K comparable] interface {
	Context
	WritableBroadcastStates
	// ApplyToKeyedState calls fn once for every key of this subtask that has
	// keyed state under stateName, with that key as the current key, so
	// the function's state handles read and write that key's state.
	ApplyToKeyedState(stateName string, fn func(key K) error) error
}

// BroadcastProcessFunction processes a non-keyed stream connected with a
// broadcast stream.
type BroadcastProcessFunction[IN, B, OUT any] interface {
	ProcessElement(v IN, ctx ReadOnlyBroadcastContext, out Collector[OUT]) error
	ProcessBroadcastElement(v B, ctx BroadcastContext, out Collector[OUT]) error
}

// KeyedBroadcastProcessFunction processes a keyed stream connected with a
// broadcast stream.
type KeyedBroadcastProcessFunction[K comparable, IN, B, OUT any] interface {
	ProcessElement(v IN, ctx KeyedReadOnlyBroadcastContext[K], out Collector[OUT]) error
	ProcessBroadcastElement(v B, ctx KeyedBroadcastContext[K], out Collector[OUT]) error
	OnTimer(ts int64, ctx KeyedBroadcastOnTimerContext[K], out Collector[OUT]) error
}

// BroadcastConnectedStreams is a non-keyed stream connected with a broadcast stream.
type BroadcastConnectedStreams[IN, B any] struct {
	in DataStream[IN]
	bs BroadcastStream[B]
}

// ConnectBroadcast connects a non-keyed stream with a broadcast stream.
func ConnectBroadcast[IN, B any](ds DataStream[IN], bs BroadcastStream[B]) BroadcastConnectedStreams[IN, B] {
	return BroadcastConnectedStreams[IN, B]{in: ds, bs: bs}
}

// KeyedBroadcastConnectedStreams is a keyed stream connected with a broadcast stream.
type KeyedBroadcastConnectedStreams[K comparable, IN, B any] struct {
	in KeyedStream[K, IN]
	bs BroadcastStream[B]
}

// ConnectKeyedBroadcast connects a keyed stream with a broadcast stream.
func ConnectKeyedBroadcast[K comparable, IN, B any](ks KeyedStream[K, IN], bs BroadcastStream[B]) KeyedBroadcastConnectedStreams[K, IN, B] {
	return KeyedBroadcastConnectedStreams[K, IN, B]{in: ks, bs: bs}
}

// bcastSide is the context of the broadcast side (and, read-only, of the
// element side in the non-keyed variant).
type bcastSide struct {
	*opContext
	store *broadcaststate.Store
}

func (b bcastSide) broadcastStore() *broadcaststate.Store { return b.store }
func (b bcastSide) writable()                             {}

type bcastReadOnly struct {
	*opContext
	store *broadcaststate.Store
}

func (b bcastReadOnly) broadcastStore() *broadcaststate.Store { return b.store }

type broadcastOp[IN, B, OUT any] struct {
	plainOut[OUT]
	endBoth
	fn    BroadcastProcessFunction[IN, B, OUT]
	store *broadcaststate.Store
	ro    bcastReadOnly
	rw    bcastSide
}

func (o *broadcastOp[IN, B, OUT]) Open() error  { return openFn(o.fn, &o.opBase, o.rc) }
func (o *broadcastOp[IN, B, OUT]) Close() error { return closeFn(o.fn, &o.opBase) }

// SnapshotState snapshots the broadcast state.
func (o *broadcastOp[IN, B, OUT]) SnapshotState(int64) (engine.OperatorSnapshot, error) {
	return o.store.Snapshot()
}

func (o *broadcastOp[IN, B, OUT]) ProcessBatch1(recs []engine.Record[IN]) error {
	return eachRecord(&o.opContext, &o.col, recs, func(v IN) error { return o.fn.ProcessElement(v, o.ro, &o.col) })
}

func (o *broadcastOp[IN, B, OUT]) ProcessBatch2(recs []engine.Record[B]) error {
	return eachRecord(&o.opContext, &o.col, recs, func(v B) error { return o.fn.ProcessBroadcastElement(v, o.rw, &o.col) })
}

func (o *broadcastOp[IN, B, OUT]) EndInput1() error { return o.end(0, o.out) }
func (o *broadcastOp[IN, B, OUT]) EndInput2() error { return o.end(1, o.out) }

// ProcessBroadcast processes a non-keyed stream (input 1) with a broadcast
// stream (input 2): the element side reads the broadcast state, the
// broadcast side writes it. No timers.
func ProcessBroadcast[IN, B, OUT any](cs BroadcastConnectedStreams[IN, B], fn BroadcastProcessFunction[IN, B, OUT]) DataStream[OUT] {
	if isNil(fn) {
		cs.in.env.fail(fmt.Errorf("operator %q: %w", "BroadcastProcess", nilFnError("broadcast process function")))
	}
	names := cs.bs.names
	return twoInput(cs.in, cs.bs.ds, "BroadcastProcess", func(bc *engine.BuildContext, out *engine.Output[OUT]) (engine.TwoInput[IN, B], engine.Lifecycle, error) {
		st, err := broadcaststate.New(names, bc.Restored)
		if err != nil {
			return nil, nil, err
		}
		o := &broadcastOp[IN, B, OUT]{plainOut: newPlainOut(bc, out), fn: cloneFunction(fn), store: st}
		o.ro = bcastReadOnly{&o.opContext, o.store}
		o.rw = bcastSide{&o.opContext, o.store}
		return o, o, nil
	})
}

// keyedBcastElem is the element-side context of the keyed variant.
type keyedBcastElem[K comparable] struct {
	*keyedBase[K]
	store *broadcaststate.Store
}

func (k keyedBcastElem[K]) broadcastStore() *broadcaststate.Store { return k.store }

type keyedBcastSide[K comparable] struct {
	*keyedBase[K]
	store *broadcaststate.Store
}

func (k keyedBcastSide[K]) broadcastStore() *broadcaststate.Store { return k.store }
func (k keyedBcastSide[K]) writable()                             {}
func (k keyedBcastSide[K]) Timestamp() (int64, bool)              { return k.opContext.Timestamp() }
func (k keyedBcastSide[K]) CurrentWatermark() int64               { return k.keyedBase.CurrentWatermark() }
func (k keyedBcastSide[K]) ApplyToKeyedState(name string, fn func(key K) error) error {
	b := k.Backend
	for key := range b.Keys(name) {
		k.SetKey(key)
		if err := fn(key); err != nil {
			return err
		}
	}
	return nil
}

type keyedBroadcastOp[K comparable, IN, B, OUT any] struct {
	keyedOut[K, OUT]
	endBoth
	fn    KeyedBroadcastProcessFunction[K, IN, B, OUT]
	keyFn func(IN) K
	store *broadcaststate.Store
	elem  keyedBcastElem[K]
	side  keyedBcastSide[K]
}

func (o *keyedBroadcastOp[K, IN, B, OUT]) Open() error  { return openKeyed[K](o.fn, &o.keyedBase) }
func (o *keyedBroadcastOp[K, IN, B, OUT]) Close() error { return closeFn(o.fn, &o.opBase) }

// SnapshotState snapshots keyed state, timers and the broadcast state.
func (o *keyedBroadcastOp[K, IN, B, OUT]) SnapshotState(id int64) (engine.OperatorSnapshot, error) {
	ks, err := o.keyedBase.SnapshotState(id)
	if err != nil {
		return ks, err
	}
	bs, err := o.store.Snapshot()
	ks.State = bs.State
	return ks, err
}

// SnapshotStateAsync is the asynchronous form of SnapshotState: the
// keyed part is keyedBase's, the broadcast state is encoded at once.
func (o *keyedBroadcastOp[K, IN, B, OUT]) SnapshotStateAsync(id int64) (engine.AsyncSnapshot, error) {
	keyed, err := o.keyedBase.SnapshotStateAsync(id)
	if err != nil {
		return nil, err
	}
	return keyedsnap.WithState(keyed, o.store.Snapshot)
}

func (o *keyedBroadcastOp[K, IN, B, OUT]) ProcessBatch1(recs []engine.Record[IN]) error {
	return eachRecord(&o.opContext, &o.col, recs, func(v IN) error {
		o.SetKey(o.keyFn(v))
		return o.fn.ProcessElement(v, o.elem, &o.col)
	})
}

func (o *keyedBroadcastOp[K, IN, B, OUT]) ProcessBatch2(recs []engine.Record[B]) error {
	return eachRecord(&o.opContext, &o.col, recs, func(v B) error { return o.fn.ProcessBroadcastElement(v, o.side, &o.col) })
}

func (o *keyedBroadcastOp[K, IN, B, OUT]) EndInput1() error { return o.end(0, o.out) }
func (o *keyedBroadcastOp[K, IN, B, OUT]) EndInput2() error { return o.end(1, o.out) }

// ProcessKeyedBroadcast processes a keyed stream (input 1) with a broadcast
// stream (input 2): keyed state and timers on the element side, read-write
// broadcast state and ApplyToKeyedState on the broadcast side. The order in
// which the two inputs' elements arrive is not coordinated, as in Flink: an
// element may arrive before the broadcast element it needs.
func ProcessKeyedBroadcast[K comparable, IN, B, OUT any](cs KeyedBroadcastConnectedStreams[K, IN, B], fn KeyedBroadcastProcessFunction[K, IN, B, OUT]) DataStream[OUT] {
	if isNil(fn) {
		cs.in.ds.env.fail(fmt.Errorf("operator %q: %w", "KeyedBroadcastProcess", nilFnError("keyed broadcast process function")))
	}
	names := cs.bs.names
	return twoInput(cs.in.ds, cs.bs.ds, "KeyedBroadcastProcess", func(bc *engine.BuildContext, out *engine.Output[OUT]) (engine.TwoInput[IN, B], engine.Lifecycle, error) {
		st, err := broadcaststate.New(names, bc.Restored)
		if err != nil {
			return nil, nil, err
		}
		o := &keyedBroadcastOp[K, IN, B, OUT]{keyedOut: keyedOut[K, OUT]{keyedBase: newKeyedBase(bc, cs.in.hashK)}, fn: cloneFunction(fn), keyFn: cs.in.key, store: st}
		o.elem = keyedBcastElem[K]{&o.keyedBase, o.store}
		o.side = keyedBcastSide[K]{&o.keyedBase, o.store}
		o.init(out, nil, func(ts int64) error { return o.fn.OnTimer(ts, o.elem, &o.col) }) // nil: heap state
		return o, o, nil
	})
}
