package weir

import (
	"context"
	"fmt"
	"time"

	"github.com/weirstream/weir/internal/engine"
	"github.com/weirstream/weir/internal/hooks"
	"github.com/weirstream/weir/internal/job"
	"github.com/weirstream/weir/internal/memstore"
)

// CheckpointOption configures checkpointing.
type CheckpointOption func(*checkpointConfig)

// checkpointConfig is the checkpointing setting as the engine reads it,
// with the store as the API gives it.
type checkpointConfig struct {
	cp    job.Checkpointing
	store CheckpointStore
}

// RestoreFromLatest starts the job from the latest completed checkpoint in
// the store, if there is one (as a restarted process resumes a job). As
// with RestoreFromSavepoint, the job refuses to start if the checkpoint
// holds state no operator of the job claims, unless AllowNonRestoredState
// is given.
func RestoreFromLatest(opts ...RestoreOption) CheckpointOption {
	var r savepointRestore
	for _, o := range opts {
		o(&r)
	}
	return func(c *checkpointConfig) { c.cp.Restore, c.cp.AllowNonRestored = true, r.allowNonRestored }
}

// CheckpointTimeout sets how long a checkpoint may take before it is
// abandoned (default 10 minutes, as Flink).
func CheckpointTimeout(d time.Duration) CheckpointOption {
	return func(c *checkpointConfig) { c.cp.Timeout = d }
}

// MinPauseBetweenCheckpoints sets the pause between the end of one
// checkpoint and the start of the next (default 0).
func MinPauseBetweenCheckpoints(d time.Duration) CheckpointOption {
	return func(c *checkpointConfig) { c.cp.MinPause = d }
}

// AtLeastOnce makes barriers pass without alignment: no input is blocked,
// and records after a barrier may be in the snapshot's past.
func AtLeastOnce() CheckpointOption { return func(c *checkpointConfig) { c.cp.ExactlyOnce = false } }

// CheckpointStoreIn keeps completed checkpoints in s (default:
// in memory, which survives task failures within one process only).
func CheckpointStoreIn(s CheckpointStore) CheckpointOption {
	return func(c *checkpointConfig) { c.store = s }
}

// CheckpointStorage keeps completed checkpoints at location, as Flink's
// checkpoint storage (execution.checkpointing.dir): a local directory
// ("/ckpt", "file:///ckpt") or a location of a scheme a storage reaches
// ("s3://bucket/prefix" with WithStorage(s3.New(...))). It is
// NewCheckpointStore(location, storages...) given to CheckpointStoreIn;
// an invalid location, or one whose scheme has no storage, fails the job
// when it is built.
func CheckpointStorage(location string) CheckpointOption {
	return func(c *checkpointConfig) { c.cp.Storage = location }
}

// RetainCheckpoints keeps the last n completed checkpoints (default 1).
// Savepoints are never deleted by retention.
func RetainCheckpoints(n int) CheckpointOption { return func(c *checkpointConfig) { c.cp.Retain = n } }

// TolerableCheckpointFailures sets how many consecutive checkpoint failures
// the job tolerates (default 0, as Flink's
// execution.checkpointing.tolerable-failed-checkpoints): a checkpoint that
// expires (CheckpointTimeout), is declined by a task, or cannot be stored
// counts; one more than n fails the job with an error wrapping
// ErrTooManyCheckpointFailures, and the restart strategy applies. A
// completed checkpoint resets the count. Failed savepoints, and checkpoints
// abandoned because a source was busy or the job finished, do not count
// (checkpoints go on after some tasks have finished). A
// snapshot that fails inside an operator fails its task at once, as a
// synchronous-phase failure does in Flink.
func TolerableCheckpointFailures(n int) CheckpointOption {
	return func(c *checkpointConfig) { c.cp.Tolerable = n }
}

// ErrTooManyCheckpointFailures is wrapped by the error of a job that had
// more consecutive checkpoint failures than TolerableCheckpointFailures
// allows.
var ErrTooManyCheckpointFailures = engine.ErrTooManyCheckpointFailures

// WithCheckpointing takes a checkpoint every interval, with the given
// checkpoint options, as EnableCheckpointing does; it is the same setting
// given with the environment's other options:
//
//	env := weir.NewEnvironment(weir.WithParallelism(4),
//		weir.WithCheckpointing(10*time.Second, weir.CheckpointStorage("checkpoints")))
func WithCheckpointing(interval time.Duration, opts ...CheckpointOption) Option {
	return func(c *config) { c.checkpointing = &checkpointing{interval, opts} }
}

// EnableCheckpointing takes a checkpoint every interval: barriers flow from
// the sources with the data, tasks with several inputs align them
// (exactly-once unless AtLeastOnce), every operator snapshots its state at
// the barrier, and a restart resumes from the latest completed checkpoint.
// It is Flink's env.enableCheckpointing; WithCheckpointing gives the same
// setting as an option of NewEnvironment. The later call wins.
func (e *Environment) EnableCheckpointing(interval time.Duration, opts ...CheckpointOption) {
	c := &checkpointConfig{cp: job.DefaultCheckpointing(interval)}
	for _, o := range opts {
		o(c)
	}
	c.cp.Check(e.fail, e.millis)
	switch {
	case c.cp.Storage != "" && c.store != nil:
		e.fail(fmt.Errorf("checkpoint storage %q and CheckpointStoreIn both given: use one", c.cp.Storage))
	case c.cp.Storage != "":
		var st CheckpointStore = NewMemoryCheckpointStore()
		if r, err := e.remotes(); err != nil {
			e.fail(err)
		} else if d, err := newDurableStore(c.cp.Storage, r, "weir.WithStorage"); err != nil {
			e.fail(fmt.Errorf("checkpoint storage: %w", err))
		} else {
			st = d
		}
		c.store = st
	case c.store == nil:
		c.store = NewMemoryCheckpointStore()
	}
	if d, ok := c.store.(*durableStore); ok {
		d.d.UseLogger(e.cfg.logger)
	}
	if c.cp.SavepointDir != "" {
		if r, err := e.remotes(); err == nil {
			if _, err := hooks.CheckLocation(c.cp.SavepointDir, r, "weir.WithStorage"); err != nil {
				e.fail(fmt.Errorf("default savepoint directory: %w", err))
			}
		}
	}
	e.checkpoint = c
}

// OperatorSnapshot is one operator's state in one subtask at a
// checkpoint, as a CheckpointStore keeps it. Its parts are opaque bytes
// written by the operator (see internal/state/FORMAT.md and
// internal/checkpoint/store/FORMAT.md for their layout).
type OperatorSnapshot struct {
	// UID is the operator's state id (its UID, or one derived from the
	// job graph).
	UID string
	// Kind and Name are the operator's kind and name, recorded so that a
	// restore gives state only to an operator of the same kind and names
	// what it cannot place; empty in checkpoints written before they were
	// recorded.
	Kind, Name string
	// KeyGroups holds keyed state and timers, one snapshot per key group,
	// so that a restore at another parallelism can move them.
	KeyGroups map[int][]byte
	// State is operator (non-keyed) state: source positions, broadcast
	// state, the pending transactions of exactly-once sinks.
	State []byte
	// ChannelState is the in-flight input data of an unaligned checkpoint,
	// on the snapshot of a task's first operator.
	ChannelState []byte
	// KeyedFiles is keyed state a state backend keeps as files (the Pebble
	// backend's incremental checkpoints); only the checkpoint store and
	// the operator read it.
	KeyedFiles any
}

// Checkpoint is a completed checkpoint: every operator's snapshot by
// subtask.
type Checkpoint struct {
	ID             int64
	MaxParallelism int
	Operators      map[string][]OperatorSnapshot
}

// CheckpointStore keeps completed checkpoints.
type CheckpointStore interface {
	// Save stores a completed checkpoint.
	Save(ctx context.Context, cp *Checkpoint) error
	// Latest returns the newest intact checkpoint, or nil if there is none.
	Latest(ctx context.Context) (*Checkpoint, error)
	// Retain keeps the newest n checkpoints.
	Retain(ctx context.Context, n int) error
}

// MemoryCheckpointStore keeps checkpoints in memory.
type MemoryCheckpointStore struct {
	s memstore.Store[Checkpoint]
}

// NewMemoryCheckpointStore returns an empty in-memory store.
func NewMemoryCheckpointStore() *MemoryCheckpointStore { return &MemoryCheckpointStore{} }

// Save implements CheckpointStore.
func (m *MemoryCheckpointStore) Save(_ context.Context, cp *Checkpoint) error {
	m.s.Save(cp.ID, cp)
	return nil
}

// Latest implements CheckpointStore.
func (m *MemoryCheckpointStore) Latest(context.Context) (*Checkpoint, error) {
	return m.s.Latest(), nil
}

// Retain implements CheckpointStore.
func (m *MemoryCheckpointStore) Retain(_ context.Context, n int) error {
	m.s.Retain(n)
	return nil
}

// IDs returns the ids of the stored checkpoints, oldest first.
func (m *MemoryCheckpointStore) IDs() []int64 { return m.s.IDs() }

// RestartStrategy decides whether and when a failed job restarts from its
// latest completed checkpoint.
type RestartStrategy interface {
	// Next returns the delay before restart number attempt (1, 2, ...), or
	// false to give up.
	Next(attempt int) (time.Duration, bool)
}

// FixedDelayRestart restarts up to attempts times, waiting delay each time.
func FixedDelayRestart(attempts int, delay time.Duration) RestartStrategy {
	return job.FixedDelay{Attempts: attempts, Delay: delay}
}

// ExponentialDelayRestart restarts up to attempts times, waiting initial,
// then twice as long each time, at most max.
func ExponentialDelayRestart(initial, max time.Duration, attempts int) RestartStrategy {
	return job.ExpDelay{Initial: initial, Max: max, Attempts: attempts}
}

// WithRestartStrategy sets how a failed job restarts (default: it does not).
func WithRestartStrategy(s RestartStrategy) Option { return func(c *config) { c.restart = s } }

// jobConfig returns the job's settings as the engine reads them.
func (e *Environment) jobConfig() job.Config {
	c := e.cfg
	jc := job.Config{
		Parallelism: c.parallelism, MaxParallelism: c.maxParallelism, BatchSize: c.batchSize, Credits: c.credits,
		Chaining: c.chaining, WMInterval: c.wmInterval, KeySample: c.keySample, Clock: c.clock, Logger: c.logger,
		RestartName: "none", StateBackend: e.stateBackendName(), Remotes: e.remotes,
	}
	if c.restart != nil {
		jc.Restart, jc.RestartName = c.restart.Next, job.RestartName(c.restart)
	}
	if r := c.savepoint; r != nil {
		jc.Savepoint = &job.Restore{Path: r.path, AllowNonRestored: r.allowNonRestored}
	}
	if k := e.checkpoint; k != nil {
		cp := k.cp
		cp.Store, cp.StoreName = engineStoreOf(k.store), storageName(k.store)
		jc.Checkpoint = &cp
	}
	return jc
}

// UnalignedCheckpoints makes checkpoints unaligned, as Flink's
// execution.checkpointing.unaligned.enabled: a task with several input
// channels does not wait for a barrier on every channel. On the first
// barrier of a checkpoint it snapshots its operators and forwards the
// barrier at once; the records and watermarks that then arrive on channels
// whose barrier has not come yet are processed as usual and also stored
// with the checkpoint as channel state. A restore replays that in-flight
// data, channel by channel in order, before any new input, so the output is
// still exactly once. Under backpressure checkpoints then complete without
// waiting for the buffered data to drain.
//
// Records must be gob-encodable to be stored (the job fails to start if a
// record type cannot be encoded at all, and a value that cannot, e.g. an
// unregistered type in an interface field, declines that checkpoint).
// Savepoints stay aligned. Exactly-once only: combined with AtLeastOnce,
// Execute fails. A checkpoint with channel state also restores at another
// parallelism (of an operator or of its upstream), as in Flink: in-flight
// records of keyed inputs go to the subtask that now owns their key group,
// broadcast inputs follow the broadcast state, other inputs go round robin,
// and watermarks recorded on rescaled inputs are dropped (see DESIGN.md,
// "Checkpoints").
func UnalignedCheckpoints() CheckpointOption {
	return func(c *checkpointConfig) { c.cp.Unaligned = true }
}

// AlignedCheckpointTimeout lets checkpoints start aligned and switch to
// unaligned when alignment has lasted d, as Flink's
// execution.checkpointing.aligned-checkpoint-timeout: d is measured on the
// environment's processing-time clock from the checkpoint's start at the
// sources, so a barrier that arrives later than d starts unaligned at
// once. At the switch the task snapshots, forwards the barrier and stores
// the data still arriving on channels without the barrier; the data
// already held behind a barrier is processed (it belongs after the
// checkpoint). d = 0 (the default) means unaligned from the start. It
// needs UnalignedCheckpoints; d must not be negative.
func AlignedCheckpointTimeout(d time.Duration) CheckpointOption {
	return func(c *checkpointConfig) { c.cp.AlignedTimeout = d }
}
