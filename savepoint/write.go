package savepoint

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"log/slog"
	"maps"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/internal/checkpoint/store"
	"github.com/weirstream/weir/internal/clock"
	"github.com/weirstream/weir/internal/hooks"
	"github.com/weirstream/weir/internal/keyedsnap"
	"github.com/weirstream/weir/internal/keygroup"
	istate "github.com/weirstream/weir/internal/state"
	"github.com/weirstream/weir/internal/timer"
	"github.com/weirstream/weir/state"
)

// Writer builds a new savepoint from Go values and the operators of
// existing savepoints, as Flink's SavepointWriter. Make one with New or
// FromSavepoint, set operators with WithOperator, CopyOperator and
// RemoveOperator, and store it with Write.
//
// The methods return the Writer so that calls can be chained; the first
// error met is kept, later calls do nothing, and Write (or Err) returns
// it. A Writer is used by one goroutine at a time.
type Writer struct {
	clk  clock.Clock
	maxP int
	ops  map[string][]weir.OperatorSnapshot
	set  map[string]bool // operators set by WithOperator or CopyOperator
	err  error
}

// New returns a Writer of an empty savepoint whose keyed operators have
// maxParallelism key groups (1 to 32768). A job restores it only with the
// same max parallelism (weir.WithMaxParallelism; the default is 128).
func New(maxParallelism int) *Writer {
	w := &Writer{clk: clock.System{}, maxP: maxParallelism, ops: map[string][]weir.OperatorSnapshot{}, set: map[string]bool{}}
	if maxParallelism < 1 || maxParallelism > keygroup.MaxParallelismLimit {
		w.err = fmt.Errorf("savepoint: max parallelism must be in [1, %d], got %d", keygroup.MaxParallelismLimit, maxParallelism)
	}
	return w
}

// FromSavepoint returns a Writer that starts with every operator of sp
// unchanged (its state in the same bytes) and sp's max parallelism (128
// if sp has no keyed state), as Flink's SavepointWriter.fromExistingSavepoint.
// WithOperator then replaces an operator's state, RemoveOperator drops
// it.
func FromSavepoint(sp *Savepoint) *Writer {
	maxP := sp.cp.MaxParallelism
	if maxP == 0 {
		maxP = 128
	}
	w := New(maxP)
	for uid, subs := range sp.cp.Operators {
		if err := copyable(uid, subs); err != nil {
			w.fail(err)
			continue
		}
		w.ops[uid] = subs
	}
	return w
}

// UseClock sets the processing time at which the values of state with TTL
// (state.WithTTL) count as written by later WithOperator calls; the
// default is the wall clock. A nil c restores the default.
func (w *Writer) UseClock(c weir.Clock) *Writer {
	if c == nil {
		w.clk = clock.System{}
	} else {
		w.clk = c
	}
	return w
}

// Err returns the first error met by the Writer's calls, or nil.
func (w *Writer) Err() error { return w.err }

func (w *Writer) fail(err error) {
	if w.err == nil {
		w.err = fmt.Errorf("savepoint: %w", err)
	}
}

func copyable(uid string, subs []weir.OperatorSnapshot) error {
	for _, sn := range subs {
		if sn.KeyedFiles != nil {
			return fmt.Errorf("operator %q: its keyed state is in the database files of an incremental checkpoint (Pebble state backend); copy from a savepoint instead, which holds it in full", uid)
		}
	}
	return nil
}

// CopyOperator copies operator uid of sp unchanged into the savepoint
// (replacing an operator of the same UID that FromSavepoint copied). sp
// must have the Writer's max parallelism if the operator has keyed state.
func (w *Writer) CopyOperator(sp *Savepoint, uid string) *Writer {
	if w.err != nil {
		return w
	}
	subs, ok := sp.cp.Operators[uid]
	switch {
	case !ok:
		w.fail(sp.unknownOperator(uid))
	case w.set[uid]:
		w.fail(fmt.Errorf("operator %q is set twice", uid))
	case hasKeyGroups(subs) && sp.cp.MaxParallelism != w.maxP:
		w.fail(fmt.Errorf("operator %q: savepoint %s has max parallelism %d, the new savepoint %d; key groups cannot be remapped", uid, sp.path, sp.cp.MaxParallelism, w.maxP))
	default:
		if err := copyable(uid, subs); err != nil {
			w.fail(err)
			return w
		}
		w.ops[uid] = subs
		w.set[uid] = true
	}
	return w
}

func hasKeyGroups(subs []weir.OperatorSnapshot) bool {
	return slices.ContainsFunc(subs, func(sn weir.OperatorSnapshot) bool { return len(sn.KeyGroups) > 0 })
}

// RemoveOperator drops operator uid from the savepoint (as Flink's
// removeOperator); a job restoring the savepoint then starts that operator
// without state. Removing a UID the savepoint does not have is an error.
func (w *Writer) RemoveOperator(uid string) *Writer {
	if w.err != nil {
		return w
	}
	if _, ok := w.ops[uid]; !ok {
		w.fail(fmt.Errorf("cannot remove operator %q: the savepoint has no operator with that UID", uid))
		return w
	}
	delete(w.ops, uid)
	delete(w.set, uid)
	return w
}

// Transformation is state to write into an operator: keyed state
// (ValueState, ListState, MapState) or broadcast state (BroadcastState).
type Transformation interface {
	apply(b *operatorBuild) error
}

// operatorBuild collects the state of the operator WithOperator writes.
type operatorBuild struct {
	clk       clock.Clock
	uid       string
	maxP      int
	keyed     keyedWriter
	broadcast map[string][]byte
}

// keyedWriter is a keyedBuild[K] of any K.
type keyedWriter interface {
	keyType() reflect.Type
	snapshot() (map[int][]byte, error)
}

// keyedBuild holds an operator's keyed state with keys of type K in a
// heap backend that owns every key group, as one subtask of parallelism 1
// would.
type keyedBuild[K comparable] struct {
	b     *istate.Backend[K]
	hash  func(K) int32
	maxP  int
	names map[string]bool
}

func (kb *keyedBuild[K]) keyType() reflect.Type { return reflect.TypeFor[K]() }

// setKey makes k the current key, in the key group the job's KeyBy puts
// it in.
func (kb *keyedBuild[K]) setKey(k K) { kb.b.SetCurrentKey(k, keygroup.Of(kb.hash(k), kb.maxP)) }

// snapshot writes every key group as a keyed operator does: the state
// backend's snapshot and an empty timer section, in keyedsnap's frame.
func (kb *keyedBuild[K]) snapshot() (map[int][]byte, error) {
	return keyedsnap.Snapshot[K, void](kb.b, timer.NewService[K, void]())
}

// keyedFor returns the operator's keyed state with keys of type K,
// making it on first use, and reserves the state name.
func keyedFor[K comparable](b *operatorBuild, name string) (*keyedBuild[K], error) {
	if b.keyed == nil {
		hash, err := keygroup.HasherFor[K]()
		if err != nil {
			return nil, err
		}
		b.keyed = &keyedBuild[K]{b: istate.NewBackend[K](0, b.maxP-1, b.clk), hash: hash, maxP: b.maxP, names: map[string]bool{}}
	}
	kb, ok := b.keyed.(*keyedBuild[K])
	if !ok {
		return nil, fmt.Errorf("keyed state %q has keys of type %v and another keyed state of the operator keys of type %v; an operator has one key type",
			name, reflect.TypeFor[K](), b.keyed.keyType())
	}
	if name == "" {
		return nil, errors.New("a keyed state has an empty name")
	}
	if kb.names[name] {
		return nil, fmt.Errorf("keyed state %q is given twice", name)
	}
	kb.names[name] = true
	return kb, nil
}

// KeyedState is a keyed state to write, with keys of type K: a
// Transformation made by ValueState, ListState or MapState.
type KeyedState[K comparable] struct {
	name  string
	write func(kb *keyedBuild[K]) error
}

func (s KeyedState[K]) apply(b *operatorBuild) error {
	if s.write == nil {
		return errors.New("a KeyedState was not made by ValueState, ListState or MapState")
	}
	kb, err := keyedFor[K](b, s.name)
	if err != nil {
		return err
	}
	if err := s.write(kb); err != nil {
		return fmt.Errorf("keyed state %q: %w", s.name, err)
	}
	return nil
}

// ValueState is the value state name holding, for each key of values, its
// value (the last one if a key comes more than once), as a job's
// function declares it with state.Value[V](name, opts...): opts set the
// codec (state.WithCodec) and TTL the job uses (values then count as
// written at the time of the WithOperator call, see Writer.UseClock).
func ValueState[K comparable, V any](name string, values iter.Seq2[K, V], opts ...state.Option) KeyedState[K] {
	return KeyedState[K]{name: name, write: func(kb *keyedBuild[K]) error {
		h, err := istate.GetValue[K, void, V](kb.b, state.Value[V](name, opts...))
		if err != nil {
			return err
		}
		if values == nil {
			return nil
		}
		for k, v := range values {
			kb.setKey(k)
			h.Update(v)
		}
		return nil
	}}
}

// ListState is the list state name holding, for each key of lists, its
// list (lists given for the same key more than once are concatenated; an
// empty list writes nothing), as a job's function declares it with
// state.List[V](name, opts...).
func ListState[K comparable, V any](name string, lists iter.Seq2[K, []V], opts ...state.Option) KeyedState[K] {
	return KeyedState[K]{name: name, write: func(kb *keyedBuild[K]) error {
		h, err := istate.GetList[K, void, V](kb.b, state.List[V](name, opts...))
		if err != nil {
			return err
		}
		if lists == nil {
			return nil
		}
		for k, l := range lists {
			if len(l) == 0 {
				continue
			}
			kb.setKey(k)
			h.AddAll(l)
		}
		return nil
	}}
}

// MapState is the map state name holding, for each key of m, its map
// (maps given for the same key more than once are merged; an empty map
// writes nothing), as a job's function declares it with
// state.Map[UK, UV](name, opts...).
func MapState[K comparable, UK comparable, UV any](name string, m iter.Seq2[K, map[UK]UV], opts ...state.Option) KeyedState[K] {
	return KeyedState[K]{name: name, write: func(kb *keyedBuild[K]) error {
		h, err := istate.GetMap[K, void, UK, UV](kb.b, state.Map[UK, UV](name, opts...))
		if err != nil {
			return err
		}
		if m == nil {
			return nil
		}
		for k, entries := range m {
			if len(entries) == 0 {
				continue
			}
			kb.setKey(k)
			h.PutAll(entries)
		}
		return nil
	}}
}

type broadcastState struct {
	name string
	data []byte
	err  error
}

func (s broadcastState) apply(b *operatorBuild) error {
	if s.err != nil {
		return fmt.Errorf("broadcast state %q: %w", s.name, s.err)
	}
	if s.name == "" {
		return errors.New("a broadcast state has an empty name")
	}
	if b.broadcast == nil {
		b.broadcast = map[string][]byte{}
	}
	if _, ok := b.broadcast[s.name]; ok {
		return fmt.Errorf("broadcast state %q is given twice", s.name)
	}
	b.broadcast[s.name] = s.data
	return nil
}

// BroadcastState is the broadcast state name (declared by the job with
// state.Map[K, V](name)) holding m, given to every subtask of the
// operator. It is encoded by the call.
func BroadcastState[K comparable, V any](name string, m map[K]V) Transformation {
	data, err := encodeBroadcastMap(m)
	return broadcastState{name: name, data: data, err: err}
}

// WithOperator sets the whole state of operator uid, with the given
// parallelism (the job may restore it at any other), to the state the
// transformations give: keyed states (all with the same key type) and
// broadcast states. The iterators are read by the call. It replaces an
// operator FromSavepoint copied, keeping its recorded kind and name, so
// that a restore still checks that the job's operator is of the same
// kind; the state of that operator that the transformations do not give
// (other keyed states, timers) is dropped. Setting the same UID twice is
// an error.
func (w *Writer) WithOperator(uid string, parallelism int, ts ...Transformation) *Writer {
	if w.err != nil {
		return w
	}
	if err := w.withOperator(uid, parallelism, ts); err != nil {
		w.fail(fmt.Errorf("operator %q: %w", uid, err))
	}
	return w
}

func (w *Writer) withOperator(uid string, parallelism int, ts []Transformation) (err error) {
	defer recoverTo(&err, "writing the state")
	switch {
	case uid == "":
		return errors.New("empty UID")
	case w.set[uid]:
		return errors.New("set twice")
	case parallelism < 1 || parallelism > w.maxP:
		return fmt.Errorf("parallelism must be in [1, max parallelism %d], got %d", w.maxP, parallelism)
	case len(ts) == 0:
		return errors.New("no state given (RemoveOperator drops an operator)")
	}
	b := &operatorBuild{clk: w.clk, uid: uid, maxP: w.maxP}
	for _, t := range ts {
		if t == nil {
			return errors.New("nil Transformation")
		}
		if err := t.apply(b); err != nil {
			return err
		}
	}
	var kgs map[int][]byte
	if b.keyed != nil {
		var err error
		if kgs, err = b.keyed.snapshot(); err != nil {
			return err
		}
	}
	var opState []byte
	if b.broadcast != nil {
		var err error
		if opState, err = encodeBroadcast(b.broadcast); err != nil {
			return err
		}
	}
	var kind, name string
	if old := w.ops[uid]; len(old) > 0 {
		kind, name = old[0].Kind, old[0].Name
	}
	subs := make([]weir.OperatorSnapshot, parallelism)
	for i := range subs {
		sn := weir.OperatorSnapshot{UID: uid, Kind: kind, Name: name, State: opState}
		if kgs != nil {
			r := keygroup.RangeFor(w.maxP, parallelism, i)
			sn.KeyGroups = make(map[int][]byte, r.End-r.Start+1)
			for kg := r.Start; kg <= r.End; kg++ {
				sn.KeyGroups[kg] = kgs[kg]
			}
		}
		subs[i] = sn
	}
	w.ops[uid] = subs
	w.set[uid] = true
	return nil
}

// Write stores the savepoint under dir, a local directory (created if
// needed) or an s3://bucket/prefix location (see WithStorage), as
// dir/savepoint-<id>, id being one more than the largest id of a
// checkpoint or savepoint already in dir (1 in an empty one), and returns
// its path, for weir.RestoreFromSavepoint. The files are in the format a
// job's savepoint has (internal/checkpoint/store/FORMAT.md); the manifest
// is written last, so a failed Write leaves nothing that looks complete.
// Write fails with the first error of the Writer's earlier calls.
func (w *Writer) Write(ctx context.Context, dir string, opts ...Option) (string, error) {
	if w.err != nil {
		return "", w.err
	}
	if dir == "" {
		return "", errors.New("savepoint: no directory given")
	}
	path, err := w.write(ctx, dir, configOf(opts))
	if err != nil {
		return "", fmt.Errorf("savepoint: writing to %s: %w", dir, err)
	}
	return path, nil
}

func (w *Writer) write(ctx context.Context, dir string, c config) (string, error) {
	r, err := hooks.Remotes(c.storages, "savepoint.WithStorage")
	if err != nil {
		return "", err
	}
	loc, err := hooks.CheckLocation(dir, r, "savepoint.WithStorage")
	if err != nil {
		return "", err
	}
	if loc, err = loc.Abs(); err != nil {
		return "", err
	}
	s, err := loc.NewStore(r, store.WithCreateDir(), store.WithLogger(slog.Default()))
	if err != nil {
		return "", err
	}
	es, err := s.List(ctx)
	if err != nil {
		return "", err
	}
	id := int64(1)
	if len(es) > 0 {
		id = es[len(es)-1].ID + 1
	}
	sw, err := s.Begin(ctx, id, store.Savepoint)
	if err != nil {
		return "", err
	}
	defer func() {
		actx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
		defer cancel()
		_ = sw.Abort(actx) // nothing after a successful Commit
	}()
	m := store.Manifest{Properties: map[string]string{"written-by": "github.com/weirstream/weir/savepoint"}}
	for _, uid := range slices.Sorted(maps.Keys(w.ops)) {
		op, err := writeOperator(ctx, sw, uid, w.ops[uid], w.maxP)
		if err != nil {
			return "", err
		}
		m.Operators = append(m.Operators, op)
	}
	if _, err := sw.Commit(ctx, m); err != nil {
		return "", err
	}
	return loc.Child(store.DirName(store.Savepoint, id)).String(), nil
}

// writeOperator writes the files of one operator's subtasks, laid out as
// the runtime's checkpoint store lays them out (checkpoint_store.go), and
// returns its manifest entry.
func writeOperator(ctx context.Context, sw store.Writer, uid string, subs []weir.OperatorSnapshot, maxP int) (store.OperatorState, error) {
	op := store.OperatorState{UID: uid, Parallelism: len(subs)}
	if len(subs) > 0 {
		op.Kind, op.Name = subs[0].Kind, subs[0].Name
	}
	for i, sn := range subs {
		st := store.SubtaskState{Index: i}
		base := fileName(uid) + "." + strconv.Itoa(i)
		if len(sn.State) > 0 {
			st.OperatorState = base + ".op"
			if err := sw.WriteFile(ctx, st.OperatorState, sn.State); err != nil {
				return op, err
			}
		}
		if len(sn.ChannelState) > 0 {
			st.ChannelState = base + ".ch"
			if err := sw.WriteFile(ctx, st.ChannelState, sn.ChannelState); err != nil {
				return op, err
			}
		}
		if len(sn.KeyGroups) > 0 {
			op.MaxParallelism = maxP
			var data []byte
			for _, kg := range slices.Sorted(maps.Keys(sn.KeyGroups)) {
				st.KeyedState = append(st.KeyedState, store.KeyGroupSlice{KeyGroup: kg, File: base + ".kg", Offset: int64(len(data)), Length: int64(len(sn.KeyGroups[kg]))})
				data = append(data, sn.KeyGroups[kg]...)
			}
			if err := sw.WriteFile(ctx, base+".kg", data); err != nil {
				return op, err
			}
		}
		op.Subtasks = append(op.Subtasks, st)
	}
	return op, nil
}

// fileName turns a UID into a safe file-name part, as the runtime does.
func fileName(uid string) string {
	var b strings.Builder
	for _, r := range uid {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '-':
			b.WriteRune(r)
		default:
			fmt.Fprintf(&b, "_%x_", r)
		}
	}
	return "op-" + b.String()
}
