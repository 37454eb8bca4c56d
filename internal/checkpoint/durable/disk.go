package durable

import (
	"fmt"
	"os"
	"strings"

	"github.com/weirstream/weir/internal/clock"
	"github.com/weirstream/weir/internal/keyedsnap"
	"github.com/weirstream/weir/internal/state/kvstate"
	"github.com/weirstream/weir/state/kv"
)

// The keyed operators' side of a disk state backend's checkpoints: the
// store of a subtask, restored from the checkpointed stores of an
// incremental checkpoint, and the frames of its snapshots.

// DiskBackend is a disk state backend (weir.StateBackend other than the
// heap).
type DiskBackend interface {
	kv.Opener
	Name() string
	Dir() string
}

// OpenDisk opens the store of operator subtask name/subtask, for key
// groups first..last, in a new directory under the backend's Dir (the
// system's temporary directory if ""), restored from images if there are
// any; onFault fails the task when the store fails on a goroutine of its
// own.
func OpenDisk[K comparable](d DiskBackend, images []kvstate.Image, name string, subtask, first, last int, clk clock.Clock, onFault func(error)) (*kvstate.Backend[K], error) {
	root := d.Dir()
	if root == "" {
		root = os.TempDir()
	}
	if err := os.MkdirAll(root, 0o755); err != nil {
		return nil, fmt.Errorf("%s state backend: %w", d.Name(), err)
	}
	name = strings.Map(func(r rune) rune {
		if r == '/' || r == '\\' || r == os.PathSeparator || r < ' ' {
			return '_'
		}
		return r
	}, name)
	dir, err := os.MkdirTemp(root, fmt.Sprintf("%s-%d-*", name, subtask))
	if err != nil {
		return nil, fmt.Errorf("%s state backend: %w", d.Name(), err)
	}
	// A store failing on a goroutine of its own fails the task
	// (kv.Options.OnFault), never the process.
	kb, err := kvstate.RestoreImages[K](images, dir, first, last, clk,
		kvstate.Options{Store: d, OnFault: onFault})
	if err != nil {
		_ = os.RemoveAll(dir)
		return nil, err
	}
	return kb, nil
}

// Canonical returns the function that makes the state snapshot
// (internal/state/FORMAT.md) of every key group first..last of the staged
// checkpoint, for a savepoint: it restores a copy with opener.
func Canonical[K comparable](staged *kvstate.Staged, first, last int, clk clock.Clock, opener kv.Opener) func() (map[int][]byte, error) {
	return func() (map[int][]byte, error) {
		dir := staged.Dir + ".canonical"
		db, err := kvstate.RestoreImages[K]([]kvstate.Image{staged.Image()}, dir, first, last, clk, kvstate.Options{Store: opener})
		if err != nil {
			return nil, err
		}
		defer db.Discard()
		out := make(map[int][]byte, last-first+1)
		for kg := first; kg <= last; kg++ {
			if out[kg], err = db.SnapshotKeyGroup(kg); err != nil {
				return nil, err
			}
		}
		return out, nil
	}
}

// FilesBackend stands for keyed state kept as files in keyedsnap frames:
// it snapshots empty state, and its restore skips empty state snapshots
// (the heap and disk backends never write one) and passes the others to
// Next.
type FilesBackend struct {
	First, Last int
	Next        keyedsnap.Backend
}

// KeyGroupRange implements keyedsnap.Backend.
func (f FilesBackend) KeyGroupRange() (int, int) { return f.First, f.Last }

// SnapshotKeyGroup implements keyedsnap.Backend.
func (f FilesBackend) SnapshotKeyGroup(int) ([]byte, error) { return nil, nil }

// RestoreKeyGroup implements keyedsnap.Backend.
func (f FilesBackend) RestoreKeyGroup(kg int, data []byte) error {
	if len(data) == 0 || f.Next == nil {
		return nil
	}
	return f.Next.RestoreKeyGroup(kg, data)
}
