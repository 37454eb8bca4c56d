// Package durable keeps a job's checkpoints and savepoints in a
// store.Store (a local directory or a remote location), as the root
// package's durable checkpoint stores (weir.NewCheckpointStore,
// weir.CheckpointStorage) and its savepoints do: one file per operator
// subtask for its operator state and one for its keyed state (key groups
// back to back, located by the manifest), each with a checksum; the
// manifest is written last, so a crash never leaves a checkpoint that
// looks complete. A corrupt or truncated checkpoint is skipped for the
// previous one, with a log line.
package durable

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/weirstream/weir/internal/checkpoint/store"
	"github.com/weirstream/weir/internal/engine"
	"github.com/weirstream/weir/internal/hooks"
)

// Checkpoint is a completed checkpoint: every operator's snapshot by
// subtask (the engine's side of weir.Checkpoint).
type Checkpoint struct {
	ID             int64
	MaxParallelism int
	Operators      map[string][]engine.OperatorSnapshot
}

// Store keeps checkpoints in a store.Store.
type Store struct {
	s     store.Store
	jobID string
	log   *logSwitch
}

// FromStore returns a Store on s whose manifests name job jobID and
// whose warnings go nowhere.
func FromStore(s store.Store, jobID string) *Store { return &Store{s: s, jobID: jobID} }

// Inner returns the store.Store the checkpoints are kept in.
func (d *Store) Inner() store.Store { return d.s }

// UseLogger sends the store's warnings (skipped checkpoints) to l.
func (d *Store) UseLogger(l *slog.Logger) {
	if d.log != nil && l != nil {
		d.log.l.Store(l)
	}
}

// logSwitch is a slog.Handler that forwards to a logger set after the
// store was made (the environment's, once EnableCheckpointing gets the
// store), slog.Default() until then.
type logSwitch struct{ l atomic.Pointer[slog.Logger] }

func (s *logSwitch) handler() slog.Handler {
	if l := s.l.Load(); l != nil {
		return l.Handler()
	}
	return slog.Default().Handler()
}

// Enabled implements slog.Handler.
func (s *logSwitch) Enabled(ctx context.Context, lv slog.Level) bool {
	return s.handler().Enabled(ctx, lv)
}

// Handle implements slog.Handler.
func (s *logSwitch) Handle(ctx context.Context, r slog.Record) error {
	return s.handler().Handle(ctx, r)
}

// WithAttrs implements slog.Handler.
func (s *logSwitch) WithAttrs(as []slog.Attr) slog.Handler { return s.handler().WithAttrs(as) }

// WithGroup implements slog.Handler.
func (s *logSwitch) WithGroup(name string) slog.Handler { return s.handler().WithGroup(name) }

// New opens the store at location, reaching remote locations through r;
// option names the option that adds a storage, for messages.
func New(location string, r store.Remotes, option string) (*Store, error) {
	loc, err := hooks.CheckLocation(location, r, option)
	if err != nil {
		return nil, err
	}
	ls := &logSwitch{}
	s, err := loc.NewStore(r, store.WithCreateDir(), store.WithLogger(slog.New(ls)))
	if err != nil {
		return nil, err
	}
	return &Store{s: s, log: ls}, nil
}

// abortTimeout bounds the removal of a checkpoint that could not be
// stored.
const abortTimeout = 30 * time.Second

// fileName turns a UID into a safe file-name part.
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

// Save stores a completed checkpoint.
func (d *Store) Save(ctx context.Context, cp *Checkpoint) error {
	_, err := d.SaveAs(ctx, cp, store.Checkpoint)
	return err
}

// SaveAs writes cp as a checkpoint or a savepoint and returns its manifest.
func (d *Store) SaveAs(ctx context.Context, cp *Checkpoint, kind store.Kind) (*store.Manifest, error) {
	w, err := d.s.Begin(ctx, cp.ID, kind)
	if err != nil {
		return nil, err
	}
	defer func() {
		// Clean up even when ctx (the checkpoint timeout) has ended.
		actx, cancel := context.WithTimeout(context.WithoutCancel(ctx), abortTimeout)
		defer cancel()
		if err := w.Abort(actx); err != nil && d.log != nil {
			slog.New(d.log).Warn("could not remove a failed checkpoint; retention or the next attempt removes it", "checkpoint", cp.ID, "err", err)
		}
	}()
	m := store.Manifest{JobID: d.jobID}
	uids := make([]string, 0, len(cp.Operators))
	for uid := range cp.Operators {
		uids = append(uids, uid)
	}
	sort.Strings(uids)
	for _, uid := range uids {
		subs := cp.Operators[uid]
		op := store.OperatorState{UID: uid, Parallelism: len(subs)}
		if len(subs) > 0 {
			op.Kind, op.Name = subs[0].Kind, subs[0].Name
		}
		for i, sn := range subs {
			st := store.SubtaskState{Index: i}
			base := fileName(uid) + "." + strconv.Itoa(i)
			if len(sn.State) > 0 {
				st.OperatorState = base + ".op"
				if err := w.WriteFile(ctx, st.OperatorState, sn.State); err != nil {
					return nil, err
				}
			}
			if len(sn.ChannelState) > 0 {
				st.ChannelState = base + ".ch"
				if err := w.WriteFile(ctx, st.ChannelState, sn.ChannelState); err != nil {
					return nil, err
				}
			}
			if sn.KeyedFiles != nil {
				// Incremental keyed state (files.go); a savepoint
				// gets it back in KeyGroups.
				if st.DB, err = SaveFiles(ctx, w, kind, base, &sn); err != nil {
					return nil, err
				}
				op.MaxParallelism = cp.MaxParallelism
			}
			if len(sn.KeyGroups) > 0 {
				// Only keyed operators record the number of key groups,
				// which a restore must keep.
				op.MaxParallelism = cp.MaxParallelism
				kgs := make([]int, 0, len(sn.KeyGroups))
				for kg := range sn.KeyGroups {
					kgs = append(kgs, kg)
				}
				sort.Ints(kgs)
				var data []byte
				for _, kg := range kgs {
					st.KeyedState = append(st.KeyedState, store.KeyGroupSlice{KeyGroup: kg, File: base + ".kg", Offset: int64(len(data)), Length: int64(len(sn.KeyGroups[kg]))})
					data = append(data, sn.KeyGroups[kg]...)
				}
				if err := w.WriteFile(ctx, base+".kg", data); err != nil {
					return nil, err
				}
			}
			op.Subtasks = append(op.Subtasks, st)
		}
		m.Operators = append(m.Operators, op)
	}
	return w.Commit(ctx, m)
}

// Latest returns the newest intact checkpoint, or nil if there is none.
//
// A job that keeps checkpointing into the store retains only the newest
// ones, so the checkpoint the store found may be deleted while it is being
// read (a restore, a CLI or a test reading beside a running job). A read
// that fails on a file gone missing is retried while the store's latest
// checkpoint has changed since: a newer one was committed and the one read
// was retired, or the one read was damaged since the store verified it
// and the store now falls back to an older one, as it does for any
// damaged checkpoint. One that stays the latest still fails the read.
func (d *Store) Latest(ctx context.Context) (*Checkpoint, error) {
	m, err := d.s.Latest(ctx)
	for {
		if errors.Is(err, store.ErrNoCheckpoint) {
			return nil, nil
		}
		if err != nil {
			return nil, err
		}
		cp, lerr := d.Load(ctx, m)
		if lerr == nil || !errors.Is(lerr, store.ErrCorrupt) {
			return cp, lerr
		}
		next, nerr := d.s.Latest(ctx)
		if nerr == nil && next.ID == m.ID {
			return nil, lerr
		}
		m, err = next, nerr
	}
}

// LastID returns the largest id of any completed checkpoint or savepoint
// in the store, intact or not (new checkpoints are numbered after it).
func (d *Store) LastID(ctx context.Context) (int64, error) {
	es, err := d.s.List(ctx)
	if err != nil || len(es) == 0 {
		return 0, err
	}
	return es[len(es)-1].ID, nil
}

// Load reads the checkpoint m describes, verifying every file.
func (d *Store) Load(ctx context.Context, m *store.Manifest) (*Checkpoint, error) {
	var err error
	cp := &Checkpoint{ID: m.ID, Operators: map[string][]engine.OperatorSnapshot{}}
	files := map[string][]byte{}
	read := func(name string) ([]byte, error) {
		if b, ok := files[name]; ok {
			return b, nil
		}
		b, err := d.s.ReadFile(ctx, m, name)
		if err != nil {
			return nil, err
		}
		files[name] = b
		return b, nil
	}
	for _, op := range m.Operators {
		if op.MaxParallelism != 0 {
			if cp.MaxParallelism != 0 && cp.MaxParallelism != op.MaxParallelism {
				return nil, fmt.Errorf("%s %d: operators have different max parallelisms (%d, %d)", m.Kind, m.ID, cp.MaxParallelism, op.MaxParallelism)
			}
			cp.MaxParallelism = op.MaxParallelism
		}
		subs := make([]engine.OperatorSnapshot, op.Parallelism)
		for i := range subs {
			subs[i].UID, subs[i].Kind, subs[i].Name = op.UID, op.Kind, op.Name
		}
		for _, st := range op.Subtasks {
			if st.Index < 0 || st.Index >= len(subs) {
				return nil, fmt.Errorf("%s %d: operator %q has subtask %d of %d", m.Kind, m.ID, op.UID, st.Index, len(subs))
			}
			sn := engine.OperatorSnapshot{UID: op.UID, Kind: op.Kind, Name: op.Name}
			if st.OperatorState != "" {
				if sn.State, err = read(st.OperatorState); err != nil {
					return nil, err
				}
			}
			if st.ChannelState != "" {
				if sn.ChannelState, err = read(st.ChannelState); err != nil {
					return nil, err
				}
			}
			if st.DB != nil {
				if sn.KeyedFiles, err = d.loadFiles(ctx, m, st.DB, read); err != nil {
					return nil, err
				}
			}
			for _, sl := range st.KeyedState {
				data, err := read(sl.File)
				if err != nil {
					return nil, err
				}
				part, err := sl.Of(data)
				if err != nil {
					return nil, err
				}
				if sn.KeyGroups == nil {
					sn.KeyGroups = map[int][]byte{}
				}
				sn.KeyGroups[sl.KeyGroup] = part
			}
			subs[st.Index] = sn
		}
		cp.Operators[op.UID] = subs
	}
	return cp, nil
}

// Retain keeps the newest n checkpoints.
func (d *Store) Retain(ctx context.Context, n int) error { return d.s.Retain(ctx, n) }
