package job

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/weirstream/weir/internal/checkpoint/durable"
	"github.com/weirstream/weir/internal/checkpoint/store"
	"github.com/weirstream/weir/internal/engine"
	"github.com/weirstream/weir/internal/hooks"
)

// checkpointConfig returns the coordinator's settings, numbering the
// checkpoints after firstID (nil without checkpointing).
func (r *Runner) checkpointConfig(firstID int64) *engine.CheckpointConfig {
	c := r.Cfg.Checkpoint
	if c == nil {
		return nil
	}
	return &engine.CheckpointConfig{
		Interval: c.Interval, Timeout: c.Timeout, MinPause: c.MinPause, ExactlyOnce: c.ExactlyOnce,
		FirstID: firstID, Logger: r.Logger(),
		TolerableFailures: c.Tolerable, Fail: r.failAttempt, Savepoints: r.Savepoints,
		Unaligned: c.Unaligned, AlignedTimeout: c.AlignedTimeout, Stats: r.Stats,
		Persist: func(ctx context.Context, id int64, acks []engine.TaskAck) error {
			if err := c.Store.Save(ctx, r.Assemble(id, acks)); err != nil {
				return err
			}
			if err := c.Store.Retain(ctx, c.Retain); err != nil {
				// The checkpoint is complete; only older ones linger.
				r.Logger().Warn("old checkpoints could not be deleted", "checkpoint", id, "err", err)
			}
			return nil
		},
	}
}

// Assemble turns the tasks' acknowledgements into a checkpoint: every
// operator's snapshots by subtask.
func (r *Runner) Assemble(id int64, acks []engine.TaskAck) *durable.Checkpoint {
	cp := &durable.Checkpoint{ID: id, MaxParallelism: r.Cfg.MaxParallelism, Operators: map[string][]engine.OperatorSnapshot{}}
	byID := map[string]*engine.Node{}
	for _, n := range r.Nodes {
		byID[engine.UIDOf(n)] = n
	}
	for _, a := range acks {
		for _, op := range a.Ops {
			var kind, name string
			if n := byID[op.UID]; n != nil {
				kind, name = n.Operator, n.Name
			}
			op.Kind, op.Name = kind, name
			subs := cp.Operators[op.UID]
			for len(subs) <= a.Subtask {
				subs = append(subs, engine.OperatorSnapshot{UID: op.UID, Kind: kind, Name: name})
			}
			subs[a.Subtask] = op
			cp.Operators[op.UID] = subs
		}
	}
	return cp
}

// lastCheckpointID returns the largest checkpoint id in the store.
func lastCheckpointID(ctx context.Context, s Store) (int64, error) {
	if d, ok := s.(*durable.Store); ok {
		return d.LastID(ctx)
	}
	latest, err := s.Latest(ctx)
	if err != nil || latest == nil {
		return 0, err
	}
	return latest.ID, nil
}

// Savepoint takes a savepoint of the running job named name into dir
// ("" means the default savepoint directory) and returns its path; with
// stop, stopped is called with the path once it is stored, before the job
// ends. done is closed when the job has ended.
func (r *Runner) Savepoint(ctx context.Context, name, dir string, stop bool, done <-chan struct{}, stopped func(path string)) (string, error) {
	c := r.Cfg.Checkpoint
	if c == nil {
		return "", errors.New("weir: savepoints need checkpointing: call EnableCheckpointing on the environment")
	}
	if dir == "" {
		dir = c.SavepointDir
	}
	if dir == "" {
		return "", fmt.Errorf("weir: savepoint: %w (set one with DefaultSavepointDir)", hooks.ErrNoSavepointTarget)
	}
	rm, err := r.Cfg.Remotes()
	if err != nil {
		return "", fmt.Errorf("weir: savepoint: %w", err)
	}
	s, pathOf, err := durable.SavepointTarget(dir, rm, r.Logger())
	if err != nil {
		return "", fmt.Errorf("weir: savepoint: %w", err)
	}
	ds := durable.FromStore(s, name)
	type result struct {
		path string
		err  error
	}
	res := make(chan result, 1)
	req := &engine.SavepointRequest{
		Stop: stop,
		Persist: func(ctx context.Context, id int64, acks []engine.TaskAck) error {
			_, err := ds.SaveAs(ctx, r.Assemble(id, acks), store.Savepoint)
			return err
		},
		Done: func(id int64, err error) {
			if err != nil {
				res <- result{err: fmt.Errorf("weir: %w", err)}
				return
			}
			path := pathOf(id)
			r.Stats.SetExternalPath(id, path)
			r.Logger().Info("savepoint completed", "savepoint", id, "path", path, "stop", stop)
			res <- result{path: path} // before the job ends (done)
			if stop {
				stopped(path)
			}
		},
	}
	select {
	case r.Savepoints <- req:
	case <-done:
		return "", errors.New("weir: savepoint: the job has ended")
	case <-ctx.Done():
		return "", ctx.Err()
	}
	select {
	case res := <-res:
		return res.path, res.err
	case <-done:
		select {
		case res := <-res:
			return res.path, res.err
		default:
			return "", errors.New("weir: savepoint: the job ended before the savepoint was taken")
		}
	case <-ctx.Done():
		return "", ctx.Err()
	}
}

// Checkpoint triggers a checkpoint of the running job now (Flink's REST
// checkpoint trigger), as soon as none is in flight, and returns its id
// once it started; its outcome shows in the checkpoint statistics. done
// is closed when the job has ended.
func (r *Runner) Checkpoint(ctx context.Context, done <-chan struct{}) (int64, error) {
	if r.Cfg.Checkpoint == nil {
		return 0, errors.New("weir: checkpoints need checkpointing: call EnableCheckpointing on the environment")
	}
	type result struct {
		id  int64
		err error
	}
	res := make(chan result, 1)
	req := &engine.SavepointRequest{Checkpoint: true, Done: func(id int64, err error) { res <- result{id, err} }}
	select {
	case r.Savepoints <- req:
	case <-done:
		return 0, errors.New("weir: checkpoint: the job has ended")
	case <-ctx.Done():
		return 0, ctx.Err()
	}
	select {
	case res := <-res:
		if res.err != nil {
			return 0, fmt.Errorf("weir: %w", res.err)
		}
		return res.id, nil
	case <-done:
		return 0, errors.New("weir: checkpoint: the job ended before the checkpoint started")
	case <-ctx.Done():
		return 0, ctx.Err()
	}
}

// ConvertOps converts a checkpoint's snapshots with f (between the API's
// snapshots and the engine's), keeping a nil map nil.
func ConvertOps[A, B any](ops map[string][]A, f func(A) B) map[string][]B {
	if ops == nil {
		return nil
	}
	out := make(map[string][]B, len(ops))
	for uid, subs := range ops {
		bs := make([]B, len(subs))
		for i, s := range subs {
			bs[i] = f(s)
		}
		out[uid] = bs
	}
	return out
}

// StoreAdapter is a store of the API's checkpoints (P: *weir.Checkpoint)
// as the engine's Store, converting with In and Out. A restore that drops
// state of the checkpoint Latest returned last drops it from that
// checkpoint too (Drop).
type StoreAdapter[P comparable] struct {
	S interface {
		Save(ctx context.Context, cp P) error
		Latest(ctx context.Context) (P, error)
		Retain(ctx context.Context, n int) error
	}
	In   func(P) *durable.Checkpoint
	Out  func(*durable.Checkpoint) P
	Drop func(cp P, uids []string)

	mu   sync.Mutex
	last P
	conv *durable.Checkpoint
}

// Save implements Store.
func (a *StoreAdapter[P]) Save(ctx context.Context, cp *durable.Checkpoint) error {
	return a.S.Save(ctx, a.Out(cp))
}

// Latest implements Store.
func (a *StoreAdapter[P]) Latest(ctx context.Context) (*durable.Checkpoint, error) {
	cp, err := a.S.Latest(ctx)
	conv := a.In(cp)
	a.mu.Lock()
	a.last, a.conv = cp, conv
	a.mu.Unlock()
	return conv, err
}

// Retain implements Store.
func (a *StoreAdapter[P]) Retain(ctx context.Context, n int) error { return a.S.Retain(ctx, n) }

// Dropped implements Dropper.
func (a *StoreAdapter[P]) Dropped(cp *durable.Checkpoint, uids []string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	var zero P
	if cp == a.conv && a.last != zero {
		a.Drop(a.last, uids)
	}
}
