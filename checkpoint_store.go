package weir

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sort"
	"strconv"
	"strings"

	"github.com/weirstream/weir/internal/checkpoint/store"
)

// durableStore keeps checkpoints in an internal/checkpoint/store.Store: one
// file per operator subtask for its operator state and one for its keyed
// state (key groups back to back, located by the manifest), each with a
// checksum; the manifest is written last, so a crash never leaves a
// checkpoint that looks complete. A corrupt or truncated checkpoint is
// skipped for the previous one, with a log line.
type durableStore struct {
	s     store.Store
	jobID string
}

// NewDirCheckpointStore keeps checkpoints in a local directory (created if
// missing). The on-disk format is documented in
// internal/checkpoint/store/FORMAT.md.
func NewDirCheckpointStore(dir string) (CheckpointStore, error) {
	s, err := store.NewLocal(dir, store.WithCreateDir())
	if err != nil {
		return nil, err
	}
	return &durableStore{s: s}, nil
}

// S3Credentials are the access keys of an S3-compatible store.
type S3Credentials = store.Credentials

// NewS3CheckpointStore keeps checkpoints in an S3-compatible object store
// under bucket/prefix (path-style requests, AWS Signature V4).
func NewS3CheckpointStore(endpoint, bucket, prefix string, creds S3Credentials, client *http.Client) (CheckpointStore, error) {
	s, err := store.NewS3(endpoint, bucket, prefix, creds, client)
	if err != nil {
		return nil, err
	}
	return &durableStore{s: s}, nil
}

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

// Save implements CheckpointStore.
func (d *durableStore) Save(ctx context.Context, cp *Checkpoint) error {
	w, err := d.s.Begin(ctx, cp.ID, store.Checkpoint)
	if err != nil {
		return err
	}
	defer w.Abort(ctx)
	m := store.Manifest{JobID: d.jobID}
	uids := make([]string, 0, len(cp.Operators))
	for uid := range cp.Operators {
		uids = append(uids, uid)
	}
	sort.Strings(uids)
	for _, uid := range uids {
		subs := cp.Operators[uid]
		op := store.OperatorState{UID: uid, Parallelism: len(subs), MaxParallelism: cp.MaxParallelism}
		for i, sn := range subs {
			st := store.SubtaskState{Index: i}
			base := fileName(uid) + "." + strconv.Itoa(i)
			if len(sn.State) > 0 {
				st.OperatorState = base + ".op"
				if err := w.WriteFile(ctx, st.OperatorState, sn.State); err != nil {
					return err
				}
			}
			if len(sn.KeyGroups) > 0 {
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
					return err
				}
			}
			op.Subtasks = append(op.Subtasks, st)
		}
		m.Operators = append(m.Operators, op)
	}
	_, err = w.Commit(ctx, m)
	return err
}

// Latest implements CheckpointStore.
func (d *durableStore) Latest(ctx context.Context) (*Checkpoint, error) {
	m, err := d.s.Latest(ctx)
	if errors.Is(err, store.ErrNoCheckpoint) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	cp := &Checkpoint{ID: m.ID, Operators: map[string][]OperatorSnapshot{}}
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
			cp.MaxParallelism = op.MaxParallelism
		}
		subs := make([]OperatorSnapshot, op.Parallelism)
		for _, st := range op.Subtasks {
			if st.Index < 0 || st.Index >= len(subs) {
				return nil, fmt.Errorf("checkpoint %d: operator %q has subtask %d of %d", m.ID, op.UID, st.Index, len(subs))
			}
			sn := OperatorSnapshot{UID: op.UID}
			if st.OperatorState != "" {
				if sn.State, err = read(st.OperatorState); err != nil {
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

// Retain implements CheckpointStore.
func (d *durableStore) Retain(ctx context.Context, n int) error { return d.s.Retain(ctx, n) }
