// Package broadcaststate is the broadcast state of a broadcast-connected
// operator's subtask: one typed map per declared map descriptor, its
// snapshot and its restore (Flink's broadcast state: every subtask holds
// the same copy).
package broadcaststate

import (
	"bytes"
	"encoding/gob"
	"errors"
	"fmt"
	"iter"
	"maps"
	"reflect"

	"github.com/weirstream/weir/internal/engine"
	istate "github.com/weirstream/weir/internal/state"
	"github.com/weirstream/weir/state"
)

// MapType returns the Go type map[K]V of a map descriptor
// (state.MapDescriptor[K, V]: its codec fields' Append methods take a K
// and a V), or nil for another descriptor.
func MapType(d state.Named) reflect.Type {
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

// schemasEntry is the reserved entry of a broadcast snapshot that
// holds the gob schema of each state's map (gob of map[string]string).
// Snapshots written before schemas were recorded have none.
const schemasEntry = "\x00weir.schemas"

// Store is the broadcast state of one subtask: one typed map per
// declared descriptor.
type Store struct {
	declared map[string]reflect.Type
	maps     map[string]any
	restored map[string][]byte // encoded maps from a checkpoint, decoded on first use
	schemas  map[string]string // of the restored maps
}

type encodedMap interface{ encode() ([]byte, error) }

func (b *Map[K, V]) encode() ([]byte, error) {
	var buf bytes.Buffer
	err := gob.NewEncoder(&buf).Encode(b.m)
	return buf.Bytes(), err
}

// Snapshot encodes every broadcast state (and restored ones not used yet).
func (s *Store) Snapshot() (engine.OperatorSnapshot, error) {
	all := map[string][]byte{}
	for name, data := range s.restored {
		all[name] = data
	}
	for name, m := range s.maps {
		data, err := m.(encodedMap).encode()
		if err != nil {
			return engine.OperatorSnapshot{}, fmt.Errorf("broadcast state %q: %w", name, err)
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
		return engine.OperatorSnapshot{}, err
	}
	all[schemasEntry] = sb.Bytes()
	var buf bytes.Buffer
	if err := gob.NewEncoder(&buf).Encode(all); err != nil {
		return engine.OperatorSnapshot{}, err
	}
	return engine.OperatorSnapshot{State: buf.Bytes()}, nil
}

// New makes a subtask's store of the declared states names (their map
// types), restoring the copy of old subtask i mod the old parallelism
// (every copy is the same), as Flink.
//
// The schema each restored map recorded is resolved against its
// declared type before the job runs (gob reads struct fields by name; a
// changed type is refused with a state.IncompatibleError).
func New(names map[string]reflect.Type, r *engine.Restored) (*Store, error) {
	s := &Store{declared: names, maps: map[string]any{}}
	if r != nil && len(r.State) > 0 {
		if err := gob.NewDecoder(bytes.NewReader(r.State)).Decode(&s.restored); err != nil {
			return nil, fmt.Errorf("restoring broadcast state: %w", err)
		}
		if data, ok := s.restored[schemasEntry]; ok {
			delete(s.restored, schemasEntry)
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

// Map is one broadcast state: state.BroadcastState[K, V].
type Map[K comparable, V any] struct{ m map[K]V }

// Get returns the value of k.
func (b *Map[K, V]) Get(k K) (V, bool) { v, ok := b.m[k]; return v, ok }

// Contains reports whether k has a value.
func (b *Map[K, V]) Contains(k K) bool { _, ok := b.m[k]; return ok }

// All iterates over the entries.
func (b *Map[K, V]) All() iter.Seq2[K, V] { return maps.All(b.m) }

// Len returns the number of entries.
func (b *Map[K, V]) Len() int { return len(b.m) }

// Put sets the value of k.
func (b *Map[K, V]) Put(k K, v V) { b.m[k] = v }

// Remove removes k.
func (b *Map[K, V]) Remove(k K) { delete(b.m, k) }

// Clear removes every entry.
func (b *Map[K, V]) Clear() { clear(b.m) }

// Of returns the broadcast state d of s, decoding its restored copy on
// first use.
func Of[K comparable, V any](s *Store, d state.MapDescriptor[K, V]) (*Map[K, V], error) {
	if _, ok := s.declared[d.Name]; !ok {
		return nil, fmt.Errorf("broadcast state %q was not declared in Broadcast(...)", d.Name)
	}
	if m, ok := s.maps[d.Name]; ok {
		bm, ok := m.(*Map[K, V])
		if !ok {
			return nil, fmt.Errorf("broadcast state %q is used with two different types", d.Name)
		}
		return bm, nil
	}
	bm := &Map[K, V]{m: map[K]V{}}
	if data, ok := s.restored[d.Name]; ok {
		if err := gob.NewDecoder(bytes.NewReader(data)).Decode(&bm.m); err != nil {
			return nil, fmt.Errorf("restoring broadcast state %q: %w", d.Name, err)
		}
		delete(s.restored, d.Name)
	}
	s.maps[d.Name] = bm
	return bm, nil
}
