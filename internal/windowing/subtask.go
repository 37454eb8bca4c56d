package windowing

import (
	"github.com/weirstream/weir/internal/engine"
	istate "github.com/weirstream/weir/internal/state"
	"github.com/weirstream/weir/window"
)

// Spec is a window operator as the builder validated it: what each of its
// subtasks builds its task and engine from.
type Spec[K comparable, T, V, OUT any, W window.Window] struct {
	Assigner window.Assigner[W]
	// Trigger is the trigger in effect; DefaultTrigger tells that the user
	// set none.
	Trigger        window.Trigger
	DefaultTrigger bool
	Evictor        window.Evictor
	Lateness       int64
	// Merging tells that the assigner merges windows (no per-window state).
	Merging bool
	Key     func(T) K
	Hash    func(K) int32
	// LateTag is the late side output's tag if HasLate.
	LateTag string
	HasLate bool
	Fns     Fns[K, T, V, OUT, W]
}

// Hooks are a subtask's side of the user's function (see Task and
// EngineConfig); Clear is nil unless the function clears windows. Ctx is
// the function's context, whose state Subtask sets.
type Hooks[K comparable, V any, W window.Window] struct {
	Settle      func(r any, err *error)
	SideErr     *error
	Watermark   *int64
	Open, Close func() error
	Emit        func(key K, w W, v V) error
	Clear       func(key K, w W) error
	Ctx         *Ctx[K, W]
}

// Subtask fills in t, the task of the subtask bc builds, emitting to out,
// with its keyed state in backend, and builds its engine.
func (s *Spec[K, T, V, OUT, W]) Subtask(bc *engine.BuildContext, out *engine.Output[OUT], backend *istate.Backend[K],
	t *Task[K, T, OUT], h Hooks[K, V, W]) (Engine[K, T], error) {
	*t = Task[K, T, OUT]{Name: bc.Name, KeyFn: s.Key, Out: out, Restored: bc.Restored,
		Clock: NewBatchClock(bc.Time.Now), Settle: h.Settle, SideErr: h.SideErr, Watermark: h.Watermark,
		OpenFn: h.Open, CloseFn: h.Close}
	h.Ctx.WinState, h.Ctx.Global = NewStores[K, W](backend, s.Merging)
	var late func(v T, ts int64)
	if s.HasLate {
		late = LateOutput[T](bc.Sides[s.LateTag], h.SideErr)
	}
	eng, err := NewEngine(EngineConfig[K, T, V, OUT, W]{
		Assigner: s.Assigner, Trigger: s.Trigger, DefaultTrigger: s.DefaultTrigger, Evictor: s.Evictor,
		Lateness: s.Lateness, Backend: backend, Hash: s.Hash, MaxParallelism: bc.MaxParallelism,
		Now: t.Clock.Now, EvictorNow: bc.Time.Now, Schedule: t.Schedule(bc.Time), Late: late, ClearWindow: h.Clear,
		Emit: h.Emit, Fns: s.Fns, Out: out,
	})
	if err != nil {
		return nil, err
	}
	t.Eng = eng
	return eng, nil
}

// Ctx is the window side of a window function's context (the root's
// ProcessWindowContext): the window being fired and the per-window and
// global state of the current key.
type Ctx[K comparable, W window.Window] struct {
	Win      W
	WinState *Store[K, W]
	Global   *Store[K, struct{}]
}

// Window returns the window being fired.
func (c *Ctx[K, W]) Window() W { return c.Win }

// WindowState is the state of the current key and window.
func (c *Ctx[K, W]) WindowState() window.StateStore {
	c.WinState.SetNamespace(c.Win)
	return c.WinState
}

// GlobalState is the state of the current key, across windows.
func (c *Ctx[K, W]) GlobalState() window.StateStore { return c.Global }
