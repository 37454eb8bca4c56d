package windowing

import (
	"errors"
	"fmt"
	"reflect"

	istate "github.com/weirstream/weir/internal/state"
	"github.com/weirstream/weir/state"
	"github.com/weirstream/weir/window"
)

// Store implements window.StateStore over a keyed backend, in a namespace
// the operator sets (the window for trigger and per-window state, the void
// namespace for global state).
type Store[K, N comparable] struct {
	b      *istate.Backend[K]
	ns     N
	regs   map[string]*storeReg[K, N]
	forbid error
}

type storeReg[K, N comparable] struct {
	kind window.StateKind
	typ  reflect.Type
	i64  *istate.Reducing[K, N, int64]
	red  *istate.Reducing[K, N, any]
	val  *istate.Value[K, N, any]
	list *istate.List[K, N, any]
}

// NewStore returns a store over b. A non-nil forbid makes every access
// fail with it (per-window state on merging windows).
func NewStore[K, N comparable](b *istate.Backend[K], forbid error) *Store[K, N] {
	return &Store[K, N]{b: b, regs: map[string]*storeReg[K, N]{}, forbid: forbid}
}

// NewStores returns the per-window and the global state of a window
// operator's user function; the per-window state fails with a merging
// assigner.
func NewStores[K comparable, W window.Window](b *istate.Backend[K], merging bool) (*Store[K, W], *Store[K, struct{}]) {
	var forbid error
	if merging {
		forbid = fmt.Errorf("per-window state is not supported with merging window assigners")
	}
	return NewStore[K, W](b, forbid), NewStore[K, struct{}](b, nil)
}

// SetNamespace sets the namespace of the states handed out next.
func (s *Store[K, N]) SetNamespace(ns N) { s.ns = ns }

var int64Type = reflect.TypeFor[int64]()

func (s *Store[K, N]) lookup(name string, kind window.StateKind, typ reflect.Type) (*storeReg[K, N], bool, error) {
	if s.forbid != nil {
		return nil, false, s.forbid
	}
	r := s.regs[name]
	if r == nil {
		return nil, false, nil
	}
	if r.kind != kind || r.typ != typ {
		return nil, false, fmt.Errorf("state %q is already registered with another kind or type (%v)", name, r.typ)
	}
	return r, true, nil
}

// Int64Reducing implements window.StateStore.
func (s *Store[K, N]) Int64Reducing(d state.ReducingDescriptor[int64]) (state.ReducingState[int64], error) {
	r, ok, err := s.lookup(d.Name, window.ReducingKind, int64Type)
	if err != nil {
		return nil, err
	}
	if !ok {
		h, err := istate.GetReducing[K, N, int64](s.b, d)
		if err != nil {
			return nil, err
		}
		r = &storeReg[K, N]{kind: window.ReducingKind, typ: int64Type, i64: h}
		s.regs[d.Name] = r
	}
	r.i64.SetNamespace(s.ns)
	return r.i64, nil
}

// Erased implements window.StateStore.
func (s *Store[K, N]) Erased(d window.ErasedState) (any, error) {
	if d.Kind == window.ReducingKind && d.Type == int64Type {
		return nil, errors.New("int64 reducing state goes through Int64Reducing")
	}
	r, ok, err := s.lookup(d.Name, d.Kind, d.Type)
	if err != nil {
		return nil, err
	}
	if !ok {
		r = &storeReg[K, N]{kind: d.Kind, typ: d.Type}
		switch d.Kind {
		case window.ValueKind:
			r.val, err = istate.GetValue[K, N, any](s.b, state.ValueDescriptor[any]{Name: d.Name, TTL: d.TTL})
		case window.ListKind:
			r.list, err = istate.GetList[K, N, any](s.b, state.ListDescriptor[any]{Name: d.Name, TTL: d.TTL})
		case window.ReducingKind:
			r.red, err = istate.GetReducing[K, N, any](s.b, state.ReducingDescriptor[any]{Name: d.Name, TTL: d.TTL, Reduce: d.Reduce})
		default:
			err = fmt.Errorf("unknown state kind %d", d.Kind)
		}
		if err != nil {
			return nil, err
		}
		s.regs[d.Name] = r
	}
	switch d.Kind {
	case window.ValueKind:
		r.val.SetNamespace(s.ns)
		return state.ValueState[any](r.val), nil
	case window.ListKind:
		r.list.SetNamespace(s.ns)
		return state.ListState[any](r.list), nil
	default:
		r.red.SetNamespace(s.ns)
		return state.ReducingState[any](r.red), nil
	}
}

// Merge merges the reducing or list state name of sources into target for
// the current key; an unregistered name is a no-op.
func (s *Store[K, N]) Merge(name string, target N, sources []N) error {
	if s.forbid != nil {
		return s.forbid
	}
	r := s.regs[name]
	if r == nil {
		return nil
	}
	switch {
	case r.i64 != nil:
		r.i64.MergeNamespaces(target, sources)
	case r.red != nil:
		r.red.MergeNamespaces(target, sources)
	case r.list != nil:
		r.list.MergeNamespaces(target, sources)
	default:
		return fmt.Errorf("state %q is a value state and cannot be merged", name)
	}
	return nil
}
