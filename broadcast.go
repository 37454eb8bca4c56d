package weir

import (
	"bytes"
	"context"
	"encoding/gob"
	"errors"
	"fmt"
	"iter"
	"maps"
	"reflect"

	"github.com/weirstream/weir/internal/runtime"
	istate "github.com/weirstream/weir/internal/state"
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
		names[d.StateName()] = broadcastMapType(d)
	}
	return BroadcastStream[T]{ds: ds.withPartition(runtime.PartitionBroadcast, nil), names: names}
}

// broadcastMapType returns the Go type map[K]V of a map descriptor
// (state.MapDescriptor[K, V]: its codec fields' Append methods take a K
// and a V), or nil for another descriptor.
func broadcastMapType(d state.Named) reflect.Type {
	t := reflect.TypeOf(d)
	if t.Kind() != reflect.Struct {
		return nil
	}
	vf, ok1 := t.FieldByName("Codec")
	kf, ok2 := t.FieldByName("KeyCodec")
	if !ok1 || !ok2 || vf.Type.Kind() != reflect.Interface || kf.Type.Kind() != reflect.Interface {
		return nil
	}
	vm, ok1 := vf.Type.MethodByName("Append")
	km, ok2 := kf.Type.MethodByName("Append")
	if !ok1 || !ok2 || vm.Type.NumIn() != 2 || km.Type.NumIn() != 2 || !km.Type.In(1).Comparable() {
		return nil
	}
	return reflect.MapOf(km.Type.In(1), vm.Type.In(1))
}

// broadcastSchemas is the reserved entry of a broadcast snapshot that
// holds the gob schema of each state's map (gob of map[string]string).
// Snapshots written before schemas were recorded have none.
const broadcastSchemas = "\x00weir.schemas"

// broadcastStore is the broadcast state of one subtask: one typed map per
// declared descriptor.
type broadcastStore struct {
	declared map[string]reflect.Type
	maps     map[string]any
	restored map[string][]byte // encoded maps from a checkpoint, decoded on first use
	schemas  map[string]string // of the restored maps
}

type encodedMap interface{ encode() ([]byte, error) }

func (b *bcastMap[K, V]) encode() ([]byte, error) {
	var buf bytes.Buffer
	err := gob.NewEncoder(&buf).Encode(b.m)
	return buf.Bytes(), err
}

// snapshot encodes every broadcast state (and restored ones not used yet).
func (s *broadcastStore) snapshot() (runtime.OperatorSnapshot, error) {
	all := map[string][]byte{}
	for name, data := range s.restored {
		all[name] = data
	}
	for name, m := range s.maps {
		data, err := m.(encodedMap).encode()
		if err != nil {
			return runtime.OperatorSnapshot{}, fmt.Errorf("broadcast state %q: %w", name, err)
		}
		all[name] = data
	}
	schemas := map[string]string{}
	for name := range s.restored {
		if sc, ok := s.schemas[name]; ok {
			schemas[name] = sc
		}
	}
	for name := range s.maps {
		if t := s.declared[name]; t != nil {
			schemas[name] = istate.GobSchema(t)
		}
	}
	var sb bytes.Buffer
	if err := gob.NewEncoder(&sb).Encode(schemas); err != nil {
		return runtime.OperatorSnapshot{}, err
	}
	all[broadcastSchemas] = sb.Bytes()
	var buf bytes.Buffer
	if err := gob.NewEncoder(&buf).Encode(all); err != nil {
		return runtime.OperatorSnapshot{}, err
	}
	return runtime.OperatorSnapshot{State: buf.Bytes()}, nil
}

// newBroadcastStore makes a subtask's store, restoring the copy of old
// subtask i mod the old parallelism (every copy is the same), as Flink.
//
// The schema each restored map recorded is resolved against its
// declared type before the job runs (gob reads struct fields by name; a
// changed type is refused with a state.IncompatibleError).
func newBroadcastStore(names map[string]reflect.Type, r *runtime.Restored) (*broadcastStore, error) {
	s := &broadcastStore{declared: names, maps: map[string]any{}}
	if r != nil && len(r.State) > 0 {
		if err := gob.NewDecoder(bytes.NewReader(r.State)).Decode(&s.restored); err != nil {
			return nil, fmt.Errorf("restoring broadcast state: %w", err)
		}
		if data, ok := s.restored[broadcastSchemas]; ok {
			delete(s.restored, broadcastSchemas)
			if err := gob.NewDecoder(bytes.NewReader(data)).Decode(&s.schemas); err != nil {
				return nil, fmt.Errorf("restoring broadcast state: schemas: %w", err)
			}
		}
		for name, sc := range s.schemas {
			t := names[name]
			if t == nil {
				continue
			}
			if err := istate.ResolveGob(t, sc); err != nil {
				var ie *state.IncompatibleError
				if errors.As(err, &ie) {
					c := *ie
					c.State, c.What = name, "broadcast state"
					return nil, &c
				}
				return nil, fmt.Errorf("restoring broadcast state %q: %w", name, err)
			}
		}
	}
	return s, nil
}

type bcastMap[K comparable, V any] struct{ m map[K]V }

func (b *bcastMap[K, V]) Get(k K) (V, bool)    { v, ok := b.m[k]; return v, ok }
func (b *bcastMap[K, V]) Contains(k K) bool    { _, ok := b.m[k]; return ok }
func (b *bcastMap[K, V]) All() iter.Seq2[K, V] { return maps.All(b.m) }
func (b *bcastMap[K, V]) Len() int             { return len(b.m) }
func (b *bcastMap[K, V]) Put(k K, v V)         { b.m[k] = v }
func (b *bcastMap[K, V]) Remove(k K)           { delete(b.m, k) }
func (b *bcastMap[K, V]) Clear()               { clear(b.m) }

func storeMap[K comparable, V any](s *broadcastStore, d state.MapDescriptor[K, V]) (*bcastMap[K, V], error) {
	if _, ok := s.declared[d.Name]; !ok {
		return nil, fmt.Errorf("broadcast state %q was not declared in Broadcast(...)", d.Name)
	}
	if m, ok := s.maps[d.Name]; ok {
		bm, ok := m.(*bcastMap[K, V])
		if !ok {
			return nil, fmt.Errorf("broadcast state %q is used with two different types", d.Name)
		}
		return bm, nil
	}
	bm := &bcastMap[K, V]{m: map[K]V{}}
	if data, ok := s.restored[d.Name]; ok {
		if err := gob.NewDecoder(bytes.NewReader(data)).Decode(&bm.m); err != nil {
			return nil, fmt.Errorf("restoring broadcast state %q: %w", d.Name, err)
		}
		delete(s.restored, d.Name)
	}
	s.maps[d.Name] = bm
	return bm, nil
}

// BroadcastStates is implemented by every context of a broadcast-connected
// operator; ReadOnlyBroadcastStateOf reads through it.
type BroadcastStates interface {
	broadcastStore() *broadcastStore
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
	return storeMap(ctx.broadcastStore(), d)
}

// BroadcastStateOf returns the read-write broadcast state d on the
// broadcast side.
func BroadcastStateOf[K comparable, V any](ctx WritableBroadcastStates, d state.MapDescriptor[K, V]) (state.BroadcastState[K, V], error) {
	return storeMap(ctx.broadcastStore(), d)
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
	store *broadcastStore
}

func (b bcastSide) broadcastStore() *broadcastStore { return b.store }
func (b bcastSide) writable()                       {}

type bcastReadOnly struct {
	*opContext
	store *broadcastStore
}

func (b bcastReadOnly) broadcastStore() *broadcastStore { return b.store }

type broadcastOp[IN, B, OUT any] struct {
	opContext
	endBoth
	fn    BroadcastProcessFunction[IN, B, OUT]
	store *broadcastStore
	out   *runtime.Output[OUT]
	col   collector[OUT]
	rc    runtimeCtx
	ro    bcastReadOnly
	rw    bcastSide
}

func (o *broadcastOp[IN, B, OUT]) Open() (err error) {
	defer o.catch(&err)
	if op, ok := o.fn.(Opener); ok {
		return op.Open(o.rc)
	}
	return nil
}
func (o *broadcastOp[IN, B, OUT]) Close() error { return closeFn(o.fn, &o.opBase) }

// SnapshotState snapshots the broadcast state.
func (o *broadcastOp[IN, B, OUT]) SnapshotState(int64) (runtime.OperatorSnapshot, error) {
	return o.store.snapshot()
}

func (o *broadcastOp[IN, B, OUT]) ProcessBatch1(recs []runtime.Record[IN]) (err error) {
	defer o.catch(&err)
	for i := range recs {
		o.ts, o.col.ts = recs[i].TS, recs[i].TS
		if err := o.fn.ProcessElement(recs[i].Value, o.ro, &o.col); err != nil {
			return err
		}
		if o.sideErr != nil {
			return o.takeSideErr()
		}
	}
	return o.out.Err()
}

func (o *broadcastOp[IN, B, OUT]) ProcessBatch2(recs []runtime.Record[B]) (err error) {
	defer o.catch(&err)
	for i := range recs {
		o.ts, o.col.ts = recs[i].TS, recs[i].TS
		if err := o.fn.ProcessBroadcastElement(recs[i].Value, o.rw, &o.col); err != nil {
			return err
		}
		if o.sideErr != nil {
			return o.takeSideErr()
		}
	}
	return o.out.Err()
}

func (o *broadcastOp[IN, B, OUT]) ProcessWatermark(wm int64) error {
	o.wm = wm
	return o.out.EmitWatermark(wm)
}
func (o *broadcastOp[IN, B, OUT]) ProcessStatus(idle bool) error { return o.out.EmitStatus(idle) }
func (o *broadcastOp[IN, B, OUT]) EndInput1() error              { return o.end(0, o.out) }
func (o *broadcastOp[IN, B, OUT]) EndInput2() error              { return o.end(1, o.out) }

// ProcessBroadcast processes a non-keyed stream (input 1) with a broadcast
// stream (input 2): the element side reads the broadcast state, the
// broadcast side writes it. No timers.
func ProcessBroadcast[IN, B, OUT any](cs BroadcastConnectedStreams[IN, B], fn BroadcastProcessFunction[IN, B, OUT]) DataStream[OUT] {
	if isNil(fn) {
		cs.in.env.fail(fmt.Errorf("operator %q: %w", "BroadcastProcess", nilFnError("broadcast process function")))
	}
	names := cs.bs.names
	return twoInput(cs.in, cs.bs.ds, "BroadcastProcess", func(bc *runtime.BuildContext, out *runtime.Output[OUT]) (runtime.TwoInput[IN, B], runtime.Lifecycle, error) {
		st, err := newBroadcastStore(names, bc.Restored)
		if err != nil {
			return nil, nil, err
		}
		o := &broadcastOp[IN, B, OUT]{opContext: newOpContext(bc), fn: cloneFunction(fn), out: out, store: st}
		o.col.out = out
		o.rc = newRuntimeCtx(bc)
		o.ro = bcastReadOnly{&o.opContext, o.store}
		o.rw = bcastSide{&o.opContext, o.store}
		return o, o, nil
	})
}

// keyedBcastElem is the element-side context of the keyed variant.
type keyedBcastElem[K comparable] struct {
	*keyedBase[K]
	store *broadcastStore
}

func (k keyedBcastElem[K]) broadcastStore() *broadcastStore { return k.store }

type keyedBcastSide[K comparable] struct {
	*keyedBase[K]
	store *broadcastStore
}

func (k keyedBcastSide[K]) broadcastStore() *broadcastStore { return k.store }
func (k keyedBcastSide[K]) writable()                       {}
func (k keyedBcastSide[K]) Timestamp() (int64, bool)        { return k.opContext.Timestamp() }
func (k keyedBcastSide[K]) CurrentWatermark() int64         { return k.keyedBase.CurrentWatermark() }
func (k keyedBcastSide[K]) ApplyToKeyedState(name string, fn func(key K) error) error {
	b := k.backend
	for key := range b.Keys(name) {
		k.setKey(key)
		if err := fn(key); err != nil {
			return err
		}
	}
	return nil
}

type keyedBroadcastOp[K comparable, IN, B, OUT any] struct {
	keyedBase[K]
	endBoth
	fn    KeyedBroadcastProcessFunction[K, IN, B, OUT]
	keyFn func(IN) K
	store *broadcastStore
	out   *runtime.Output[OUT]
	col   collector[OUT]
	elem  keyedBcastElem[K]
	side  keyedBcastSide[K]
}

func (o *keyedBroadcastOp[K, IN, B, OUT]) Open() error  { return openKeyed[K](o.fn, &o.keyedBase) }
func (o *keyedBroadcastOp[K, IN, B, OUT]) Close() error { return closeFn(o.fn, &o.opBase) }

// SnapshotState snapshots keyed state, timers and the broadcast state.
func (o *keyedBroadcastOp[K, IN, B, OUT]) SnapshotState(id int64) (runtime.OperatorSnapshot, error) {
	ks, err := o.keyedBase.SnapshotState(id)
	if err != nil {
		return ks, err
	}
	bs, err := o.store.snapshot()
	ks.State = bs.State
	return ks, err
}

// SnapshotStateAsync is the asynchronous form of SnapshotState: the
// keyed part is keyedBase's, the broadcast state is encoded at once.
func (o *keyedBroadcastOp[K, IN, B, OUT]) SnapshotStateAsync(id int64) (runtime.AsyncSnapshot, error) {
	keyed, err := o.keyedBase.SnapshotStateAsync(id)
	if err != nil {
		return nil, err
	}
	bs, err := o.store.snapshot()
	if err != nil {
		keyed(canceledContext()) //nolint:errcheck // releases the view
		return nil, err
	}
	return func(ctx context.Context) (runtime.OperatorSnapshot, error) {
		ks, err := keyed(ctx)
		ks.State = bs.State
		return ks, err
	}, nil
}

// canceledContext returns a context that has ended.
func canceledContext() context.Context {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	return ctx
}

func (o *keyedBroadcastOp[K, IN, B, OUT]) ProcessBatch1(recs []runtime.Record[IN]) (err error) {
	defer o.catch(&err)
	for i := range recs {
		o.setKey(o.keyFn(recs[i].Value))
		o.ts, o.col.ts = recs[i].TS, recs[i].TS
		if err := o.fn.ProcessElement(recs[i].Value, o.elem, &o.col); err != nil {
			return err
		}
		if o.sideErr != nil {
			return o.takeSideErr()
		}
	}
	return o.out.Err()
}

func (o *keyedBroadcastOp[K, IN, B, OUT]) ProcessBatch2(recs []runtime.Record[B]) (err error) {
	defer o.catch(&err)
	for i := range recs {
		o.ts, o.col.ts = recs[i].TS, recs[i].TS
		if err := o.fn.ProcessBroadcastElement(recs[i].Value, o.side, &o.col); err != nil {
			return err
		}
		if o.sideErr != nil {
			return o.takeSideErr()
		}
	}
	return o.out.Err()
}

func (o *keyedBroadcastOp[K, IN, B, OUT]) ProcessWatermark(wm int64) error {
	if err := o.advanceWatermark(wm); err != nil {
		return err
	}
	return o.out.EmitWatermark(wm)
}
func (o *keyedBroadcastOp[K, IN, B, OUT]) ProcessStatus(idle bool) error {
	return o.out.EmitStatus(idle)
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
	return twoInput(cs.in.ds, cs.bs.ds, "KeyedBroadcastProcess", func(bc *runtime.BuildContext, out *runtime.Output[OUT]) (runtime.TwoInput[IN, B], runtime.Lifecycle, error) {
		st, err := newBroadcastStore(names, bc.Restored)
		if err != nil {
			return nil, nil, err
		}
		o := &keyedBroadcastOp[K, IN, B, OUT]{keyedBase: newKeyedBase(bc, cs.in.hashK), fn: cloneFunction(fn), keyFn: cs.in.key, out: out, store: st}
		o.col.out = out
		o.elem = keyedBcastElem[K]{&o.keyedBase, o.store}
		o.side = keyedBcastSide[K]{&o.keyedBase, o.store}
		o.timerTS = func(ts int64) { o.col.ts = ts }
		o.onTimer = func(ts int64) error { return o.fn.OnTimer(ts, o.elem, &o.col) }
		return o, o, nil
	})
}
