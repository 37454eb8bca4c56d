package savepoint

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"iter"
	"maps"
	"reflect"
	"slices"
	"sort"
	"strings"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/internal/clock"
	"github.com/weirstream/weir/internal/keygroup"
	istate "github.com/weirstream/weir/internal/state"
	"github.com/weirstream/weir/internal/timer"
	"github.com/weirstream/weir/state"
)

// void is the namespace of the keyed state of process functions (the
// root package's too).
type void = struct{}

// Savepoint is a savepoint (or retained checkpoint) opened by Read. Its
// files have been read and verified; reading state from it does no I/O. A
// Savepoint is not changed by reading or by writers made from it, and may
// be read from several goroutines.
type Savepoint struct {
	path string
	cp   *weir.Checkpoint
	ops  map[string]*OperatorInfo
	clk  clock.Clock
}

// Option configures Read and Writer.Write.
type Option func(*config)

type config struct {
	storages []weir.Storage
	clk      clock.Clock
}

// WithStorage makes Read and Write reach the locations of s's scheme (as
// weir.WithStorage for a job): s3://bucket/prefix with
// WithStorage(s3.New(...)) of package storage/s3.
func WithStorage(s weir.Storage) Option {
	return func(c *config) { c.storages = append(c.storages, s) }
}

// WithClock sets the processing time that reads of state with TTL
// (state.WithTTL) compare the stored timestamps against; the default is
// the wall clock. Write ignores it (see Writer.UseClock).
func WithClock(c weir.Clock) Option { return func(cf *config) { cf.clk = c } }

func configOf(opts []Option) config {
	c := config{clk: clock.System{}}
	for _, o := range opts {
		if o != nil {
			o(&c)
		}
	}
	return c
}

// Read opens the savepoint or checkpoint at path: a savepoint's directory
// (".../savepoint-7"), a retained checkpoint's (".../chk-12"), or a
// directory holding savepoints, which stands for its newest one; a local
// path or a location of a scheme a storage reaches (see WithStorage). Every file is read
// and its checksum verified, as weir.ReadSavepoint does.
func Read(ctx context.Context, path string, opts ...Option) (*Savepoint, error) {
	c := configOf(opts)
	var ropts []weir.ReadOption
	for _, s := range c.storages {
		ropts = append(ropts, weir.ReadWithStorage(s))
	}
	cp, err := weir.ReadSavepoint(ctx, path, ropts...)
	if err != nil {
		return nil, fmt.Errorf("savepoint: %w", err)
	}
	sp := &Savepoint{path: path, cp: cp, ops: map[string]*OperatorInfo{}, clk: c.clk}
	for uid, subs := range cp.Operators {
		sp.ops[uid] = describe(uid, subs, cp.MaxParallelism)
	}
	return sp, nil
}

// Path returns the path Read was given.
func (sp *Savepoint) Path() string { return sp.path }

// ID returns the savepoint's (or checkpoint's) id.
func (sp *Savepoint) ID() int64 { return sp.cp.ID }

// MaxParallelism returns the number of key groups of the savepoint's keyed
// operators, or 0 if it has no keyed state.
func (sp *Savepoint) MaxParallelism() int { return sp.cp.MaxParallelism }

// OperatorInfo describes the state of one operator of a savepoint.
type OperatorInfo struct {
	// UID is the operator's id: the UID the job gave it, or the id derived
	// from the job's graph.
	UID string
	// Kind is what the operator is ("KeyedProcess", "Window(Aggregate)",
	// "source weir.generatorSource", ...; "" if not recorded) and Name its
	// name when the savepoint was taken.
	Kind, Name string
	// Parallelism is the operator's parallelism when the savepoint was
	// taken.
	Parallelism int
	// KeyGroups is the number of key groups with keyed state (0 for an
	// operator without keyed state).
	KeyGroups int
	// KeyType describes the type of the operator's keys as recorded ("" if
	// the operator has no keyed state in the format of process functions).
	KeyType string
	// KeyedStates are the operator's keyed states in the format of process
	// functions (readable with ReadValueState, ReadListState and
	// ReadMapState), in name order. Windows and joins keep their state in
	// their own formats, not listed here.
	KeyedStates []StateInfo
	// OperatorStateBytes is the size of the operator (non-keyed) state of
	// all subtasks: broadcast state, source positions, sink transactions.
	OperatorStateBytes int
	// EventTimers and ProcessingTimers count the operator's timers (of a
	// process function; -1 when the savepoint's encoding of the keys
	// cannot be walked without the job's types, e.g. a user key codec or
	// the format of version 1).
	EventTimers, ProcessingTimers int
}

// StateInfo describes one keyed state of an operator.
type StateInfo struct {
	// Name is the state's descriptor name.
	Name string
	// Kind is "value", "list", "map", "reducing" or "aggregating".
	Kind string
	// TTL says whether the state was written with a time-to-live.
	TTL bool
	// Types describe the stored types as recorded (their schemas): the
	// value (list element; map key and map value; accumulator).
	Types []string
	// Entries is the number of keys with a value (a list, a map) in all
	// key groups.
	Entries int
}

// Operators returns the savepoint's operators in UID order.
func (sp *Savepoint) Operators() []OperatorInfo {
	uids := slices.Sorted(maps.Keys(sp.ops))
	out := make([]OperatorInfo, len(uids))
	for i, uid := range uids {
		out[i] = sp.ops[uid].clone()
	}
	return out
}

// Operator returns the description of the operator uid, or an error
// naming the savepoint's operators if it has none of that UID.
func (sp *Savepoint) Operator(uid string) (OperatorInfo, error) {
	op := sp.ops[uid]
	if op == nil {
		return OperatorInfo{}, sp.unknownOperator(uid)
	}
	return op.clone(), nil
}

func (o *OperatorInfo) clone() OperatorInfo {
	c := *o
	c.KeyedStates = slices.Clone(o.KeyedStates)
	for i := range c.KeyedStates {
		c.KeyedStates[i].Types = slices.Clone(c.KeyedStates[i].Types)
	}
	return c
}

func (sp *Savepoint) unknownOperator(uid string) error {
	uids := slices.Sorted(maps.Keys(sp.ops))
	return fmt.Errorf("savepoint %s has no operator with UID %q (its operators: %s)", sp.path, uid, quoteAll(uids))
}

func quoteAll(s []string) string {
	if len(s) == 0 {
		return "none"
	}
	q := make([]string, len(s))
	for i, x := range s {
		q[i] = fmt.Sprintf("%q", x)
	}
	return strings.Join(q, ", ")
}

// describe summarizes an operator's state.
func describe(uid string, subs []weir.OperatorSnapshot, maxP int) *OperatorInfo {
	info := &OperatorInfo{UID: uid, Parallelism: len(subs)}
	if len(subs) > 0 {
		info.Kind, info.Name = subs[0].Kind, subs[0].Name
	}
	states := map[string]*StateInfo{}
	readable := true
	for _, sn := range subs {
		info.OperatorStateBytes += len(sn.State)
		info.KeyGroups += len(sn.KeyGroups)
		for kg, frame := range sn.KeyGroups {
			if !readable {
				break
			}
			keyType, ps, err := peekFrame(frame, kg)
			if err != nil {
				readable = false
				break
			}
			info.KeyType = istate.DescribeSchema(keyType)
			countTimers(info, frame, keyType)
			for _, s := range ps {
				si := states[s.Name]
				if si == nil {
					si = &StateInfo{Name: s.Name, Kind: istate.KindName(s.Kind), TTL: s.TTL}
					for _, t := range s.Types[1:] {
						if s.Names {
							si.Types = append(si.Types, t)
						} else {
							si.Types = append(si.Types, istate.DescribeSchema(t))
						}
					}
					states[s.Name] = si
				}
				si.Entries += s.Count
			}
		}
	}
	if !readable {
		info.KeyType = ""
		return info
	}
	for _, name := range slices.Sorted(maps.Keys(states)) {
		info.KeyedStates = append(info.KeyedStates, *states[name])
	}
	return info
}

// splitFrame returns the state snapshot of a key group's frame
// (internal/keyedsnap: uvarint length, state snapshot, timers).
// countTimers adds the timers of a key group's frame to info's counts.
func countTimers(info *OperatorInfo, frame []byte, keySchema string) {
	if info.ProcessingTimers < 0 {
		return
	}
	n, k := binary.Uvarint(frame)
	if k <= 0 || uint64(len(frame)-k) < n {
		info.EventTimers, info.ProcessingTimers = -1, -1
		return
	}
	ev, pr, err := timer.CountKeyGroup(frame[k+int(n):], func(_, nsType string) (key, ns func([]byte) ([]byte, error), ok bool) {
		key, ok = istate.SkipperFor(keySchema)
		// Process functions' timers have no namespace (struct{}, no bytes).
		return key, func(b []byte) ([]byte, error) { return b, nil }, ok && nsType == "struct {}"
	})
	if err != nil || pr < 0 {
		info.EventTimers, info.ProcessingTimers = -1, -1
		return
	}
	info.EventTimers += ev
	info.ProcessingTimers += pr
}

func splitFrame(frame []byte) ([]byte, error) {
	n, k := binary.Uvarint(frame)
	if k <= 0 || uint64(len(frame)-k) < n {
		return nil, errors.New("corrupt key-group frame")
	}
	return frame[k : k+int(n)], nil
}

// peekFrame returns the key type (schema, or name in version 1 of the
// format) and the states of a key group's frame, whatever the key type.
func peekFrame(frame []byte, kg int) (string, []istate.KeyGroupState, error) {
	st, err := splitFrame(frame)
	if err != nil {
		return "", nil, err
	}
	if len(st) == 0 {
		return "", nil, errors.New("empty state snapshot (the keyed state is in database files)")
	}
	const magic = "WKGS"
	if len(st) < len(magic) || string(st[:len(magic)]) != magic {
		return "", nil, errors.New("not keyed state of a process function")
	}
	rest := st[len(magic):]
	if _, rest, err = istate.ReadUvarint(rest); err != nil { // version
		return "", nil, err
	}
	if _, rest, err = istate.ReadUvarint(rest); err != nil { // key group
		return "", nil, err
	}
	kt, _, err := istate.ReadBytes(rest)
	if err != nil {
		return "", nil, err
	}
	ps, err := istate.ParseKeyGroupFrame(st, kg, string(kt), string(kt))
	if err != nil {
		return "", nil, err
	}
	return string(kt), ps, nil
}

// restored is the keyed state of one operator restored into a heap
// backend whose key groups are all of the savepoint's.
type restored[K comparable] struct {
	b    *istate.Backend[K]
	hash func(K) int32
	maxP int
}

// restoreKeyed restores the keyed state of operator uid into a backend
// with keys of type K, after checking that it has a state name.
func restoreKeyed[K comparable](sp *Savepoint, uid, name string) (_ *restored[K], err error) {
	defer recoverTo(&err, fmt.Sprintf("operator %q: restoring the keyed state", uid))
	info := sp.ops[uid]
	if info == nil {
		return nil, sp.unknownOperator(uid)
	}
	subs := sp.cp.Operators[uid]
	for _, sn := range subs {
		if sn.KeyedFiles != nil {
			return nil, fmt.Errorf("operator %q: its keyed state is in the database files of an incremental checkpoint (Pebble state backend); read a savepoint instead, which holds it in full", uid)
		}
	}
	if info.KeyGroups == 0 {
		return nil, fmt.Errorf("operator %q (%s) has no keyed state", uid, kindOf(info))
	}
	if info.KeyType == "" && len(info.KeyedStates) == 0 {
		return nil, fmt.Errorf("operator %q (%s) keeps its keyed state in a format of its own (windows and joins), which the state processor API does not read", uid, kindOf(info))
	}
	if !slices.ContainsFunc(info.KeyedStates, func(s StateInfo) bool { return s.Name == name }) {
		names := make([]string, len(info.KeyedStates))
		for i, s := range info.KeyedStates {
			names[i] = s.Name
		}
		return nil, fmt.Errorf("operator %q (%s) has no keyed state named %q (its keyed states: %s)", uid, kindOf(info), name, quoteAll(names))
	}
	hash, err := keygroup.HasherFor[K]()
	if err != nil {
		return nil, err
	}
	maxP := sp.cp.MaxParallelism
	if maxP < 1 || maxP > keygroup.MaxParallelismLimit {
		return nil, fmt.Errorf("operator %q has keyed state but the savepoint records max parallelism %d", uid, maxP)
	}
	b := istate.NewBackend[K](0, maxP-1, sp.clk)
	kgs := make([]int, 0, info.KeyGroups)
	frames := map[int][]byte{}
	for _, sn := range subs {
		for kg, frame := range sn.KeyGroups {
			kgs = append(kgs, kg)
			frames[kg] = frame
		}
	}
	sort.Ints(kgs)
	for _, kg := range kgs {
		if kg < 0 || kg >= maxP {
			return nil, fmt.Errorf("operator %q: key group %d outside [0, %d)", uid, kg, maxP)
		}
		st, err := splitFrame(frames[kg])
		if err != nil {
			return nil, fmt.Errorf("operator %q: key group %d: %w", uid, kg, err)
		}
		if err := b.RestoreKeyGroup(kg, st); err != nil {
			return nil, operatorError(uid, err)
		}
	}
	return &restored[K]{b: b, hash: hash, maxP: maxP}, nil
}

func kindOf(info *OperatorInfo) string {
	if info.Kind == "" {
		return "kind not recorded"
	}
	return info.Kind
}

// keys iterates over the keys of state name, making each the backend's
// current key.
func (r *restored[K]) keys(name string) iter.Seq[K] {
	return func(yield func(K) bool) {
		for k := range r.b.Keys(name) {
			r.b.SetCurrentKey(k, keygroup.Of(r.hash(k), r.maxP))
			if !yield(k) {
				return
			}
		}
	}
}

// ReadValueState reads the value state name of operator uid, whose keys
// have type K and values type V, into an iterator over the keys with a
// value and their values, in no particular order. opts are those of the
// job's descriptor (state.Value[V](name, opts...)): state.WithCodec for a
// value codec the job sets, state.WithTTL to leave out expired values.
//
// The state is restored and decoded by the call; errors are returned
// here: an unknown operator or state name, another kind of state, a key
// type other than the job's, or a V the recorded schema cannot be read as
// (an *IncompatibleError). The iterator reads memory only and may be
// ranged over again, but not by two goroutines at once.
func ReadValueState[K comparable, V any](sp *Savepoint, uid, name string, opts ...state.Option) (iter.Seq2[K, V], error) {
	r, err := restoreKeyed[K](sp, uid, name)
	if err != nil {
		return nil, err
	}
	h, err := register(uid, func() (*istate.Value[K, void, V], error) {
		return istate.GetValue[K, void, V](r.b, state.Value[V](name, opts...))
	})
	if err != nil {
		return nil, err
	}
	return func(yield func(K, V) bool) {
		for k := range r.keys(name) {
			if v, ok := h.Value(); ok && !yield(k, v) {
				return
			}
		}
	}, nil
}

// ReadListState reads the list state name of operator uid (keys of type K,
// elements of type V) into an iterator over the keys with a list and
// their lists, in no particular order; each list is a new slice the
// caller may keep. opts and errors are those of ReadValueState.
func ReadListState[K comparable, V any](sp *Savepoint, uid, name string, opts ...state.Option) (iter.Seq2[K, []V], error) {
	r, err := restoreKeyed[K](sp, uid, name)
	if err != nil {
		return nil, err
	}
	h, err := register(uid, func() (*istate.List[K, void, V], error) {
		return istate.GetList[K, void, V](r.b, state.List[V](name, opts...))
	})
	if err != nil {
		return nil, err
	}
	return func(yield func(K, []V) bool) {
		for k := range r.keys(name) {
			if l := h.Get(); len(l) > 0 && !yield(k, l) {
				return
			}
		}
	}, nil
}

// ReadMapState reads the map state name of operator uid (keys of type K,
// map keys of type UK, map values of type UV) into an iterator over the
// keys with a map and their maps, in no particular order; each map is a
// new map the caller may keep. opts (state.WithKeyCodec too) and errors
// are those of ReadValueState.
func ReadMapState[K comparable, UK comparable, UV any](sp *Savepoint, uid, name string, opts ...state.Option) (iter.Seq2[K, map[UK]UV], error) {
	r, err := restoreKeyed[K](sp, uid, name)
	if err != nil {
		return nil, err
	}
	h, err := register(uid, func() (*istate.Map[K, void, UK, UV], error) {
		return istate.GetMap[K, void, UK, UV](r.b, state.Map[UK, UV](name, opts...))
	})
	if err != nil {
		return nil, err
	}
	return func(yield func(K, map[UK]UV) bool) {
		for k := range r.keys(name) {
			m := maps.Collect(h.All())
			if len(m) > 0 && !yield(k, m) {
				return
			}
		}
	}, nil
}

// ReadBroadcastState reads the broadcast state name of operator uid (a
// BroadcastProcess or KeyedBroadcastProcess operator), declared with
// state.Map[K, V](name), as the job's first subtask restores it (every
// subtask holds the same). Values are decoded with encoding/gob, as the
// job decodes them: struct fields are matched by name.
func ReadBroadcastState[K comparable, V any](sp *Savepoint, uid, name string) (map[K]V, error) {
	info := sp.ops[uid]
	if info == nil {
		return nil, sp.unknownOperator(uid)
	}
	subs := sp.cp.Operators[uid]
	var data []byte
	for _, sn := range subs {
		if len(sn.State) > 0 {
			data = sn.State
			break
		}
	}
	if data == nil {
		return nil, fmt.Errorf("operator %q (%s) has no broadcast state", uid, kindOf(info))
	}
	all, schemas, err := decodeBroadcast(data)
	if err != nil {
		return nil, fmt.Errorf("operator %q (%s): its operator state is not broadcast state: %w", uid, kindOf(info), err)
	}
	enc, ok := all[name]
	if !ok {
		return nil, fmt.Errorf("operator %q (%s) has no broadcast state named %q (its broadcast states: %s)", uid, kindOf(info), name, quoteAll(slices.Sorted(maps.Keys(all))))
	}
	if sc, ok := schemas[name]; ok {
		if err := istate.ResolveGob(reflect.TypeFor[map[K]V](), sc); err != nil {
			var ie *istate.IncompatibleError
			if errors.As(err, &ie) {
				c := *ie
				c.State, c.What = name, "broadcast state"
				err = &c
			}
			return nil, operatorError(uid, err)
		}
	}
	m, err := decodeBroadcastMap[K, V](enc)
	if err != nil {
		return nil, fmt.Errorf("operator %q: broadcast state %q: %w", uid, name, err)
	}
	return m, nil
}
