// Package keyedop holds the keyed part of the root's keyed operators: the
// current key and its key group, keyed state (heap or disk backend) and
// the "user-timers" timer service. The root embeds Base in the contexts
// it hands to user functions, so their methods are Base's, promoted.
package keyedop

import (
	"github.com/weirstream/weir/internal/clock"
	"github.com/weirstream/weir/internal/engine"
	"github.com/weirstream/weir/internal/keyedsnap"
	"github.com/weirstream/weir/internal/keygroup"
	istate "github.com/weirstream/weir/internal/state"
	"github.com/weirstream/weir/internal/state/kvstate"
	"github.com/weirstream/weir/internal/timer"
)

// Void is the namespace of user timers and the functions' keyed state.
type Void = struct{}

// Base is the current key, keyed state and timers of a keyed operator.
type Base[K comparable] struct {
	Key     K
	KG      int
	Hash    func(K) int32
	MaxP    int
	Backend *istate.Backend[K]
	Timers  *timer.Service[K, Void]
	// Disk holds the functions' keyed state from Open to Close when the
	// job's state backend is on disk; Backend stays empty then.
	Disk       *kvstate.Backend[K]
	Drv        timer.Driver[K, Void] // fires timers, from Open (restore) on
	Registered int64                 // timers registered, for metrics
	// DiskBackend is the job's disk state backend (nil: heap), whose
	// store Disk is opened by Restore (disk.go).
	DiskBackend *DiskBackend
	Name        string // the operator's, for the store's directory
	Subtask     int
	Restored    *engine.Restored
	Clk         clock.Clock
	Fail        func(error) // fails the task from any goroutine (BuildContext.Fail)
}

// New returns the keyed part of the operator bc builds, keys hashed by hash.
func New[K comparable](bc *engine.BuildContext, hash func(K) int32) Base[K] {
	timers := timer.NewService[K, Void]()
	return Base[K]{
		Hash:     hash,
		MaxP:     bc.MaxParallelism,
		Backend:  istate.NewBackend[K](bc.KeyGroups.Start, bc.KeyGroups.End, bc.Clock),
		Timers:   timers,
		Drv:      timer.NewDriver[K, Void](timers, bc.Time),
		Name:     bc.Name,
		Subtask:  bc.Subtask,
		Restored: bc.Restored,
		Clk:      bc.Clock,
		Fail:     bc.Fail,
	}
}

// SetKey makes k the current key.
func (b *Base[K]) SetKey(k K) {
	b.Key = k
	b.KG = keygroup.Of(b.Hash(k), b.MaxP)
	b.SetBackendKey(k, b.KG)
}

// SetBackendKey sets the current key, of key group kg, of the backend in use.
func (b *Base[K]) SetBackendKey(k K, kg int) {
	if b.Disk != nil {
		b.Disk.SetCurrentKey(k, kg)
		return
	}
	b.Backend.SetCurrentKey(k, kg)
}

// SnapBackend is the state backend in use: both write the same snapshots.
func (b *Base[K]) SnapBackend() keyedsnap.Backend {
	if b.Disk != nil {
		return b.Disk
	}
	return b.Backend
}

// CurrentKey implements KeyedContext.
func (b *Base[K]) CurrentKey() K { return b.Key }

// RegisterEventTimeTimer implements TimerService.
func (b *Base[K]) RegisterEventTimeTimer(ts int64) {
	b.Registered++
	b.Timers.RegisterEventTime(b.Key, b.KG, Void{}, ts)
}

// DeleteEventTimeTimer implements TimerService.
func (b *Base[K]) DeleteEventTimeTimer(ts int64) { b.Timers.DeleteEventTime(b.Key, Void{}, ts) }

// RegisterProcessingTimeTimer implements TimerService.
func (b *Base[K]) RegisterProcessingTimeTimer(ts int64) {
	b.Registered++
	b.Timers.RegisterProcessingTime(b.Key, b.KG, Void{}, ts)
	b.Drv.Registered(ts)
}

// DeleteProcessingTimeTimer implements TimerService.
func (b *Base[K]) DeleteProcessingTimeTimer(ts int64) {
	b.Timers.DeleteProcessingTime(b.Key, Void{}, ts)
}

// ReportState implements engine.StateReporter: keyed-state entries
// (heap backend), registered timers, and whether the function uses TTL
// and timers.
func (b *Base[K]) ReportState(g *engine.StateGauges) {
	if b.Disk == nil {
		entries, noTTL := b.Backend.Stats()
		g.StateEntries.Store(int64(entries))
		g.StatesWithoutTTL.Store(int64(noTTL))
	}
	g.Timers.Store(int64(b.Timers.EventTimers().Len() + b.Timers.ProcessingTimers().Len()))
	g.TimersRegistered.Store(b.Registered)
}
