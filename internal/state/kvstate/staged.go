package kvstate

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"sync"

	"github.com/weirstream/weir/internal/clock"
	"github.com/weirstream/weir/state/kv"
)

// Job checkpoints are incremental in two steps, as Flink's RocksDB
// incremental snapshots: at the barrier, on the task goroutine, Stage
// takes the store's checkpoint (kv.Checkpointer) into a staging directory
// next to it (with Pebble: a flush, then hard links to the immutable SST
// and blob files and a fresh copy of MANIFEST and OPTIONS), which is cheap; later,
// off the task goroutine, the checkpoint store uploads the staged files
// that no stored checkpoint has yet and removes the staging directory
// (Claim, Release). Every immutable file has a shared name, unique for
// its contents: the backend instance's random prefix and the file's name
// in the database, or, for a file a restore brought in, the name it was
// stored under. A restore lays the files out again (Image, RestoreImages).

// Staged is a checkpoint of a backend's database staged at a barrier. Its
// files stay in Dir, unaffected by later writes and compactions, until
// Release (or, if no uploader claimed it, the backend's next Stage or its
// Close or Discard) removes them.
type Staged struct {
	// ID is the checkpoint id.
	ID int64
	// Dir is the staging directory holding the files.
	Dir string
	// FirstKeyGroup and LastKeyGroup (inclusive) are the backend's key
	// groups.
	FirstKeyGroup, LastKeyGroup int
	// KeyType is the Go type of the keys.
	KeyType string
	// Files are the database's files, sorted by name.
	Files []StagedFile

	mu    sync.Mutex
	state stagedState
}

type stagedState uint8

const (
	stagedOpen stagedState = iota
	stagedClaimed
	stagedGone // released or discarded
)

// StagedFile is one file of a staged checkpoint.
type StagedFile struct {
	// Name is the file's name in the database (and staging) directory.
	Name string
	// Shared is the shared name of an immutable file (SST or blob file),
	// which a checkpoint store may keep once for every checkpoint that
	// has the file; "" for the other files (MANIFEST, OPTIONS, markers),
	// which belong to this checkpoint only.
	Shared string
	// Size is the file's size in bytes.
	Size int64
}

// Path returns the path of file f of the staged checkpoint.
func (s *Staged) Path(f StagedFile) string { return filepath.Join(s.Dir, f.Name) }

// Claim hands the staged checkpoint to its uploader, which must Release
// it when done. It returns false if the checkpoint was already discarded
// (its backend took a newer one or closed).
func (s *Staged) Claim() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.state != stagedOpen {
		return false
	}
	s.state = stagedClaimed
	return true
}

// Release removes the staging directory.
func (s *Staged) Release() error {
	s.mu.Lock()
	s.state = stagedGone
	s.mu.Unlock()
	if err := os.RemoveAll(s.Dir); err != nil {
		return fmt.Errorf("kvstate: removing the staged checkpoint %d: %w", s.ID, err)
	}
	return nil
}

// Discard removes the staging directory unless an uploader claimed it
// (which then releases it).
func (s *Staged) Discard() { s.discard() }

func (s *Staged) discard() {
	s.mu.Lock()
	open := s.state == stagedOpen
	if open {
		s.state = stagedGone
	}
	s.mu.Unlock()
	if open {
		_ = os.RemoveAll(s.Dir)
	}
}

// Image returns the staged checkpoint as a restore would find it: its
// files laid out by hard links (or copies) from the staging directory.
// It is valid until the staged checkpoint is released.
func (s *Staged) Image() Image {
	img := Image{FirstKeyGroup: s.FirstKeyGroup, LastKeyGroup: s.LastKeyGroup, Shared: map[string]string{}}
	for _, f := range s.Files {
		if f.Shared != "" {
			img.Shared[f.Name] = f.Shared
		}
	}
	img.Layout = func(dir string) error {
		for _, f := range s.Files {
			src, dst := s.Path(f), filepath.Join(dir, f.Name)
			if f.Shared != "" {
				if err := os.Link(src, dst); err == nil {
					continue
				}
			}
			if err := copyFile(src, dst); err != nil {
				return err
			}
		}
		return nil
	}
	return img
}

// Stage stages checkpoint id of the store, a kv.Checkpointer (see
// Staged). Staged checkpoints of earlier ids that no uploader claimed are
// discarded. It must be called on the goroutine that uses the backend.
func (b *Backend[K]) Stage(id int64) (*Staged, error) {
	s, err := b.stage(id)
	if err != nil {
		return nil, fmt.Errorf("kvstate: staging checkpoint %d of %s: %w", id, b.dir, err)
	}
	return s, nil
}

func (b *Backend[K]) stage(id int64) (*Staged, error) {
	b.discardStaged()
	cp, ok := b.db.(kv.Checkpointer)
	if !ok {
		return nil, errors.New("the store takes no checkpoints (kv.Checkpointer)")
	}
	dir := fmt.Sprintf("%s.chk-%d-%s", filepath.Clean(b.dir), id, randomName())
	files, err := cp.Checkpoint(dir)
	if err != nil {
		_ = os.RemoveAll(dir)
		return nil, err
	}
	s := &Staged{ID: id, Dir: dir, FirstKeyGroup: b.first, LastKeyGroup: b.last, KeyType: b.keyID()}
	for _, kf := range files {
		f := StagedFile{Name: kf.Name, Size: kf.Size}
		if kf.Immutable {
			sh, ok := b.uploaded[f.Name]
			if !ok {
				sh = b.instance + "-" + f.Name
				b.uploaded[f.Name] = sh
			}
			f.Shared = sh
		}
		s.Files = append(s.Files, f)
	}
	sort.Slice(s.Files, func(i, j int) bool { return s.Files[i].Name < s.Files[j].Name })
	if err := b.Err(); err != nil {
		// The files may be damaged: no checkpoint of them.
		_ = os.RemoveAll(dir)
		return nil, err
	}
	b.staged = append(b.staged, s)
	return s, nil
}

// Incremental reports whether the backend's store takes checkpoints
// (kv.Checkpointer), so that Stage works.
func (b *Backend[K]) Incremental() bool {
	_, ok := b.db.(kv.Checkpointer)
	return ok
}

// TakeStaged returns the staged checkpoints that the backend would
// discard at its next Stage, Close or Discard, and forgets them: the
// caller discards them (Staged.Discard) once no uploader can claim them
// any more. An operator that ends while its last checkpoint may still be
// stored hands them over this way.
func (b *Backend[K]) TakeStaged() []*Staged {
	s := b.staged
	b.staged = nil
	return s
}

// discardStaged discards the staged checkpoints no uploader claimed.
func (b *Backend[K]) discardStaged() {
	for _, s := range b.staged {
		s.discard()
	}
	b.staged = b.staged[:0]
}

// Image is a checkpointed database as a restore finds it.
type Image struct {
	// FirstKeyGroup and LastKeyGroup (inclusive) are the key groups of
	// the backend that wrote it.
	FirstKeyGroup, LastKeyGroup int
	// Shared maps the names of the database's immutable files to their
	// shared names: a backend restored on these files gives them the same
	// shared names, so its checkpoints do not upload them again.
	Shared map[string]string
	// Layout writes the database's files into dir, an existing empty
	// directory.
	Layout func(dir string) error
}

// RestoreImages opens a backend in dbDir (which must not exist or be
// empty) for the key groups first..last, restored from the checkpointed
// databases of one or more old backends whose ranges, clipped to
// first..last, do not overlap; images that do not meet first..last are
// skipped. The image sharing the most key groups with first..last becomes
// the database (its entries outside the range are deleted); the entries of
// the others within the range are copied into it, their state ids mapped
// by state name. So a restore at the same parallelism lays out one image,
// a restore at a higher one lays out an image and drops the key groups
// other subtasks now own, and one at a lower one merges.
func RestoreImages[K comparable](images []Image, dbDir string, first, last int, clk clock.Clock, opts Options) (*Backend[K], error) {
	if entries, err := os.ReadDir(dbDir); err == nil && len(entries) > 0 {
		return nil, fmt.Errorf("kvstate: restore into %s: directory not empty", dbDir)
	} else if err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("kvstate: %w", err)
	}
	var use []Image
	base, most := -1, 0
	for _, img := range images {
		lo, hi := max(img.FirstKeyGroup, first), min(img.LastKeyGroup, last)
		if lo > hi {
			continue
		}
		for _, u := range use {
			if max(u.FirstKeyGroup, lo) <= min(u.LastKeyGroup, hi) {
				return nil, fmt.Errorf("kvstate: restore of [%d, %d]: the checkpointed databases of [%d, %d] and [%d, %d] overlap",
					first, last, u.FirstKeyGroup, u.LastKeyGroup, img.FirstKeyGroup, img.LastKeyGroup)
			}
		}
		if hi-lo+1 > most {
			base, most = len(use), hi-lo+1
		}
		use = append(use, img)
	}
	if len(use) == 0 {
		return Open[K](dbDir, first, last, clk, opts)
	}
	if err := os.MkdirAll(dbDir, 0o755); err != nil {
		return nil, fmt.Errorf("kvstate: %w", err)
	}
	if err := use[base].Layout(dbDir); err != nil {
		return nil, fmt.Errorf("kvstate: laying out the checkpointed database of key groups [%d, %d] in %s: %w",
			use[base].FirstKeyGroup, use[base].LastKeyGroup, dbDir, err)
	}
	b, err := Open[K](dbDir, first, last, clk, opts)
	if err != nil {
		return nil, err
	}
	for local, shared := range use[base].Shared {
		b.uploaded[local] = shared
	}
	for i, img := range use {
		if i == base {
			continue
		}
		tmp := fmt.Sprintf("%s.merge-%d-%s", filepath.Clean(dbDir), i, randomName())
		err := func() error {
			defer os.RemoveAll(tmp)
			if err := os.MkdirAll(tmp, 0o755); err != nil {
				return err
			}
			if err := img.Layout(tmp); err != nil {
				return fmt.Errorf("laying out the checkpointed database of key groups [%d, %d]: %w", img.FirstKeyGroup, img.LastKeyGroup, err)
			}

			return b.mergeFrom(tmp, fmt.Sprintf("the checkpointed database of key groups [%d, %d]", img.FirstKeyGroup, img.LastKeyGroup))
		}()
		if err != nil {
			_ = b.Discard()
			return nil, fmt.Errorf("kvstate: restore of [%d, %d]: %w", first, last, err)
		}
	}
	return b, nil
}

// copyFile copies src to dst, through a temporary file that is synced
// and renamed into place.
func copyFile(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	tmp := dst + ".tmp"
	out, err := os.Create(tmp)
	if err != nil {
		return err
	}
	_, err = io.Copy(out, in)
	if err == nil {
		err = out.Sync()
	}
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, dst)
	}
	if err != nil {
		_ = os.Remove(tmp)
	}
	return err
}
