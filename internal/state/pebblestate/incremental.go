package pebblestate

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/weirstream/weir/internal/clock"
)

// Incremental checkpoints copy the database's files into a checkpoint
// directory laid out as
//
//	dir/shared/<instance>-<file>.sst    immutable files (SSTs, blob files), shared by checkpoints
//	dir/chk-<id>/                       the other files of checkpoint id (MANIFEST, OPTIONS, ...)
//	dir/chk-<id>/weir-checkpoint.json   the checkpoint's Manifest, written last
//
// A backend remembers which of its immutable files it has copied, so a
// checkpoint copies only the SST files written since the previous one
// (Pebble never changes an SST file after writing it). Shared files are
// prefixed with a random name per backend instance, so backends of several
// subtasks, and a backend restored from a checkpoint, can share dir
// without clashing. Files that no checkpoint needs any more are not deleted
// (no garbage collection yet).

// ManifestName is the name of the manifest file in a checkpoint's
// directory.
const ManifestName = "weir-checkpoint.json"

// Manifest describes one incremental checkpoint.
type Manifest struct {
	// ID is the checkpoint id.
	ID int64 `json:"id"`
	// KeyType is the Go type of the keys.
	KeyType string `json:"keyType"`
	// FirstKeyGroup is the first key group of the backend that took the
	// checkpoint.
	FirstKeyGroup int `json:"firstKeyGroup"`
	// LastKeyGroup is the last key group (inclusive) of that backend.
	LastKeyGroup int `json:"lastKeyGroup"`
	// Private lists the files of the checkpoint in its own directory.
	Private []string `json:"private"`
	// Shared lists the immutable files of the checkpoint in dir/shared.
	Shared []SharedFile `json:"shared"`
	// Uploaded lists the shared files that this checkpoint copied; the
	// other shared files were copied by an earlier checkpoint.
	Uploaded []string `json:"uploaded"`
	// UploadedBytes is the size of the files this checkpoint copied,
	// private ones included.
	UploadedBytes int64 `json:"uploadedBytes"`
}

// SharedFile is an immutable database file of a checkpoint.
type SharedFile struct {
	// Local is the file's name in the database directory.
	Local string `json:"local"`
	// Name is the file's name in dir/shared.
	Name string `json:"name"`
	// Size is the file's size in bytes.
	Size int64 `json:"size"`
}

func checkpointDir(dir string, id int64) string {
	return filepath.Join(dir, fmt.Sprintf("chk-%d", id))
}

func immutable(name string) bool {
	return strings.HasSuffix(name, ".sst") || strings.HasSuffix(name, ".blob")
}

// CheckpointIncremental flushes the memtable and writes checkpoint id of
// the database into dir: the immutable files not yet copied by an earlier
// checkpoint of this backend into dir/shared, the other files into
// dir/chk-<id>, and the manifest, which it also returns. The checkpoint
// directory appears only when complete. It must be called on the goroutine
// that uses the backend.
func (b *Backend[K]) CheckpointIncremental(dir string, id int64) (Manifest, error) {
	m, err := b.checkpointIncremental(dir, id)
	if err != nil {
		return Manifest{}, fmt.Errorf("pebblestate: checkpoint %d: %w", id, err)
	}
	return m, nil
}

func (b *Backend[K]) checkpointIncremental(dir string, id int64) (Manifest, error) {
	final := checkpointDir(dir, id)
	if _, err := os.Stat(final); err == nil {
		return Manifest{}, fmt.Errorf("%s exists", final)
	}
	if err := b.db.Flush(); err != nil {
		return Manifest{}, err
	}
	// Pebble's checkpoint hard-links the files next to the database (same
	// file system), then only the new ones are copied into dir.
	staging := fmt.Sprintf("%s.chk-%d-%s", filepath.Clean(b.dir), id, randomName())
	if err := b.db.Checkpoint(staging); err != nil {
		return Manifest{}, err
	}
	defer os.RemoveAll(staging)
	shared := filepath.Join(dir, "shared")
	if err := os.MkdirAll(shared, 0o755); err != nil {
		return Manifest{}, err
	}
	tmp := final + ".tmp-" + randomName()
	if err := os.MkdirAll(tmp, 0o755); err != nil {
		return Manifest{}, err
	}
	defer os.RemoveAll(tmp)
	files, err := os.ReadDir(staging)
	if err != nil {
		return Manifest{}, err
	}
	m := Manifest{ID: id, KeyType: b.keyType, FirstKeyGroup: b.first, LastKeyGroup: b.last}
	newly := map[string]string{}
	for _, f := range files {
		if f.IsDir() {
			continue
		}
		name := f.Name()
		src := filepath.Join(staging, name)
		if !immutable(name) {
			n, err := copyFile(src, filepath.Join(tmp, name))
			if err != nil {
				return Manifest{}, err
			}
			m.Private = append(m.Private, name)
			m.UploadedBytes += n
			continue
		}
		info, err := f.Info()
		if err != nil {
			return Manifest{}, err
		}
		if s, ok := b.uploaded[name]; ok {
			if st, err := os.Stat(filepath.Join(shared, s)); err == nil && st.Size() == info.Size() {
				m.Shared = append(m.Shared, SharedFile{Local: name, Name: s, Size: info.Size()})
				continue
			}
		}
		s := b.instance + "-" + name
		n, err := copyFile(src, filepath.Join(shared, s))
		if err != nil {
			return Manifest{}, err
		}
		newly[name] = s
		m.Shared = append(m.Shared, SharedFile{Local: name, Name: s, Size: n})
		m.Uploaded = append(m.Uploaded, s)
		m.UploadedBytes += n
	}
	data, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return Manifest{}, err
	}
	if err := writeFileSync(filepath.Join(tmp, ManifestName), data); err != nil {
		return Manifest{}, err
	}
	if err := os.Rename(tmp, final); err != nil {
		return Manifest{}, err
	}
	syncDir(dir)
	for k, v := range newly {
		b.uploaded[k] = v
	}
	return m, nil
}

// ReadManifest reads the manifest of checkpoint id in dir.
func ReadManifest(dir string, id int64) (Manifest, error) {
	data, err := os.ReadFile(filepath.Join(checkpointDir(dir, id), ManifestName))
	if err != nil {
		return Manifest{}, fmt.Errorf("pebblestate: %w", err)
	}
	var m Manifest
	if err := json.Unmarshal(data, &m); err != nil {
		return Manifest{}, fmt.Errorf("pebblestate: manifest of checkpoint %d: %w", id, err)
	}
	if m.ID != id {
		return Manifest{}, fmt.Errorf("pebblestate: the manifest of checkpoint %d names checkpoint %d", id, m.ID)
	}
	return m, nil
}

// RestoreIncremental lays out the files of checkpoint id in dir (written
// by CheckpointIncremental) in dbDir, which must not exist or be empty,
// and opens a backend on them for the key groups first..last. The range may
// differ from the checkpointed one: entries of key groups outside it are
// deleted, and key groups not in the checkpoint start empty. A backend
// whose range spans several old backends' ranges restores with
// RestoreIncrementalMerged.
//
// Shared files are hard-linked where the file system allows, else copied.
// The restored backend knows which of its files are in dir/shared, so its
// next checkpoint into dir copies only the files written after the restore.
func RestoreIncremental[K comparable](dir string, id int64, dbDir string, first, last int, clk clock.Clock, opts Options) (*Backend[K], error) {
	m, err := ReadManifest(dir, id)
	if err != nil {
		return nil, err
	}
	if entries, err := os.ReadDir(dbDir); err == nil && len(entries) > 0 {
		return nil, fmt.Errorf("pebblestate: restore into %s: directory not empty", dbDir)
	} else if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("pebblestate: %w", err)
	}
	if err := layout(dir, m, dbDir); err != nil {
		return nil, err
	}
	b, err := Open[K](dbDir, first, last, clk, opts)
	if err != nil {
		return nil, err
	}
	for _, s := range m.Shared {
		b.uploaded[s.Local] = s.Name
	}
	return b, nil
}

// layout copies the files of checkpoint m in dir into dbDir.
func layout(dir string, m Manifest, dbDir string) error {
	if err := os.MkdirAll(dbDir, 0o755); err != nil {
		return fmt.Errorf("pebblestate: %w", err)
	}
	chk := checkpointDir(dir, m.ID)
	for _, p := range m.Private {
		if _, err := copyFile(filepath.Join(chk, p), filepath.Join(dbDir, p)); err != nil {
			return fmt.Errorf("pebblestate: restore of checkpoint %d: %w", m.ID, err)
		}
	}
	for _, s := range m.Shared {
		src, dst := filepath.Join(dir, "shared", s.Name), filepath.Join(dbDir, s.Local)
		if err := os.Link(src, dst); err != nil {
			if _, err := copyFile(src, dst); err != nil {
				return fmt.Errorf("pebblestate: restore of checkpoint %d: %w", m.ID, err)
			}
		}
	}
	return nil
}

// copyFile copies src to dst (through a temporary file renamed into place,
// synced) and returns the number of bytes copied.
func copyFile(src, dst string) (int64, error) {
	in, err := os.Open(src)
	if err != nil {
		return 0, err
	}
	defer in.Close()
	tmp := dst + ".tmp"
	out, err := os.Create(tmp)
	if err != nil {
		return 0, err
	}
	n, err := io.Copy(out, in)
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
		return 0, err
	}
	return n, nil
}

func writeFileSync(path string, data []byte) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

func syncDir(dir string) {
	if d, err := os.Open(dir); err == nil {
		_ = d.Sync()
		_ = d.Close()
	}
}
