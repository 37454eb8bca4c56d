package store

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"io/fs"
	"log/slog"
	"maps"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// backend is what differs between the local and the S3 store: where bytes
// go. core implements the Store semantics once on top of it.
//
// A checkpoint lives in a "directory" (a key prefix on S3) named by dirName;
// it is complete exactly when its manifest exists.
type backend interface {
	// location describes dir for messages (a path or an s3:// URL).
	location(dir string) string
	// list returns every checkpoint directory, complete or not.
	list(ctx context.Context) ([]dirState, error)
	// stat reports whether dir exists and whether it holds a manifest.
	stat(ctx context.Context, dir string) (dirState, error)
	// prepare makes dir empty and ready for put.
	prepare(ctx context.Context, dir string) error
	// put durably stores a data file in dir: size bytes read from r
	// (a reader at offsets, so that an upload can be retried or sent in
	// parts).
	put(ctx context.Context, dir, name string, r io.ReaderAt, size int64) error
	// publish durably and atomically stores dir's manifest, after every
	// data file put so far is durable.
	publish(ctx context.Context, dir string, manifest []byte) error
	// open reads a file (or the manifest) of dir; a missing file is
	// reported with an error matching fs.ErrNotExist.
	open(ctx context.Context, dir, name string) (io.ReadCloser, error)
	// remove deletes dir, its manifest first (durably) and then the rest.
	remove(ctx context.Context, dir string) error

	// putShared durably stores a shared file, size bytes read from r (its
	// directory entry may need syncShared to be durable).
	putShared(ctx context.Context, name string, r io.ReaderAt, size int64) error
	// syncShared makes the shared files put so far durable, entries
	// included.
	syncShared(ctx context.Context) error
	// listShared returns the names of the stored shared files.
	listShared(ctx context.Context) ([]string, error)
	// removeShared deletes shared files; missing ones are not an error.
	removeShared(ctx context.Context, names []string) error
}

// sharedDir is the directory (key prefix) of shared files under the root;
// it is not a checkpoint directory name, so listings of checkpoints skip it.
const sharedDir = "shared"

// dirState describes one checkpoint directory.
type dirState struct {
	id        int64
	kind      Kind
	exists    bool
	committed bool
}

func dirName(kind Kind, id int64) string {
	if kind == Savepoint {
		return "savepoint-" + strconv.FormatInt(id, 10)
	}
	return "chk-" + strconv.FormatInt(id, 10)
}

// parseDir parses a checkpoint directory name; names that dirName does not
// produce (other files, leading zeros) are not checkpoint directories.
func parseDir(name string) (id int64, kind Kind, ok bool) {
	var digits string
	switch {
	case strings.HasPrefix(name, "chk-"):
		kind, digits = Checkpoint, name[len("chk-"):]
	case strings.HasPrefix(name, "savepoint-"):
		kind, digits = Savepoint, name[len("savepoint-"):]
	default:
		return 0, 0, false
	}
	id, err := strconv.ParseInt(digits, 10, 64)
	if err != nil || id < 0 || strconv.FormatInt(id, 10) != digits {
		return 0, 0, false
	}
	return id, kind, true
}

type core struct {
	b   backend
	log *slog.Logger

	mu       sync.Mutex
	inflight map[int64]bool // ids with an open Writer
	// known holds the shared files the stored checkpoints reference, as
	// their manifests say (nil until first needed); ReuseShared consults
	// it. pinned counts, per shared file, the open Writers that wrote or
	// reused it: Retain never deletes those. gen counts commits, so that a
	// collection of shared files can tell that a checkpoint was committed
	// while it read the manifests.
	known  map[string]SharedFileInfo
	pinned map[string]int
	gen    uint64
}

func newCore(b backend, log *slog.Logger) *core {
	return &core{b: b, log: log, inflight: make(map[int64]bool), pinned: make(map[string]int)}
}

// sharedRefs reads the manifests of every completed checkpoint and
// savepoint and returns the shared files they reference. Damaged and
// incomplete checkpoints reference nothing (they can never be restored);
// any other failure is returned.
func (c *core) sharedRefs(ctx context.Context) (map[string]SharedFileInfo, error) {
	dirs, err := c.sortedDirs(ctx)
	if err != nil {
		return nil, err
	}
	refs := make(map[string]SharedFileInfo)
	for _, d := range dirs {
		if !d.committed {
			continue
		}
		m, err := c.readManifest(ctx, d.id, d.kind)
		if errors.Is(err, ErrCorrupt) || errors.Is(err, ErrIncomplete) {
			continue
		}
		if err != nil {
			return nil, err
		}
		for name, fi := range m.Shared {
			if _, ok := refs[name]; !ok {
				refs[name] = fi
			}
		}
	}
	return refs, nil
}

// reuse pins shared file name and returns what the stored checkpoints
// record for it, if any references it.
func (c *core) reuse(ctx context.Context, name string) (SharedFileInfo, bool, error) {
	c.mu.Lock()
	loaded := c.known != nil
	c.mu.Unlock()
	if !loaded {
		refs, err := c.sharedRefs(ctx)
		if err != nil {
			return SharedFileInfo{}, false, fmt.Errorf("checkpoint store: reading the shared files of %s: %w", c.b.location(""), err)
		}
		c.mu.Lock()
		if c.known == nil {
			c.known = refs
		}
		c.mu.Unlock()
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	fi, ok := c.known[name]
	if ok {
		c.pinned[name]++
	}
	return fi, ok, nil
}

func (c *core) pin(name string) {
	c.mu.Lock()
	c.pinned[name]++
	c.mu.Unlock()
}

// unpin releases the pins of a Writer that ended; committed lists the
// shared files of its published manifest (nil after an abort).
func (c *core) unpin(names []string, committed map[string]SharedFileInfo) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if committed != nil {
		c.gen++
		if c.known != nil {
			for name, fi := range committed {
				c.known[name] = fi
			}
		}
	}
	for _, n := range names {
		if c.pinned[n]--; c.pinned[n] <= 0 {
			delete(c.pinned, n)
		}
	}
}

// collectShared deletes the shared files that no stored checkpoint
// references and no open Writer has pinned.
func (c *core) collectShared(ctx context.Context) error {
	c.mu.Lock()
	gen := c.gen
	c.mu.Unlock()
	refs, err := c.sharedRefs(ctx)
	if err != nil {
		return fmt.Errorf("checkpoint store: retain: reading references to shared files: %w", err)
	}
	names, err := c.b.listShared(ctx)
	if err != nil {
		return fmt.Errorf("checkpoint store: retain: listing %s: %w", c.b.location(sharedDir), err)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.gen != gen {
		// A checkpoint was committed since the manifests were read: its
		// references may be missing from refs. The next Retain collects.
		return nil
	}
	c.known = refs
	var dead []string
	for _, name := range names {
		if _, ok := refs[name]; !ok && c.pinned[name] == 0 && CheckName(name) == nil {
			dead = append(dead, name)
		}
	}
	if len(dead) == 0 {
		return nil
	}
	if err := c.b.removeShared(ctx, dead); err != nil {
		return fmt.Errorf("checkpoint store: retain: deleting unreferenced shared files in %s: %w", c.b.location(sharedDir), err)
	}
	return nil
}

func (c *core) isInflight(id int64) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.inflight[id]
}

func (c *core) release(id int64) {
	c.mu.Lock()
	delete(c.inflight, id)
	c.mu.Unlock()
}

func (c *core) begin(ctx context.Context, id int64, kind Kind) (Writer, error) {
	if !kind.valid() {
		return nil, fmt.Errorf("checkpoint store: begin %d: invalid kind %d", id, uint8(kind))
	}
	if id < 0 {
		return nil, fmt.Errorf("checkpoint store: begin: negative checkpoint id %d", id)
	}
	c.mu.Lock()
	if c.inflight[id] {
		c.mu.Unlock()
		return nil, fmt.Errorf("%w: checkpoint %d already has an open writer", ErrInProgress, id)
	}
	c.inflight[id] = true
	c.mu.Unlock()
	dir := dirName(kind, id)
	if err := c.clearForBegin(ctx, id, kind); err != nil {
		c.release(id)
		return nil, err
	}
	if err := c.b.prepare(ctx, dir); err != nil {
		c.release(id)
		return nil, fmt.Errorf("checkpoint store: begin %s %d in %s: %w", kind, id, c.b.location(dir), err)
	}
	return &writer{c: c, id: id, kind: kind, dir: dir, files: make(map[string]FileInfo), busy: make(map[string]bool), shared: make(map[string]SharedFileInfo)}, nil
}

// clearForBegin fails if id is complete (as either kind) and removes
// leftovers of an incomplete attempt of the other kind.
func (c *core) clearForBegin(ctx context.Context, id int64, kind Kind) error {
	for _, k := range []Kind{Checkpoint, Savepoint} {
		dir := dirName(k, id)
		st, err := c.b.stat(ctx, dir)
		if err != nil {
			return fmt.Errorf("checkpoint store: begin %s %d: %w", kind, id, err)
		}
		if st.committed {
			return fmt.Errorf("%w: %s %d (%s)", ErrExists, k, id, c.b.location(dir))
		}
		if st.exists && k != kind {
			if err := c.b.remove(ctx, dir); err != nil {
				return fmt.Errorf("checkpoint store: begin %s %d: removing incomplete %s: %w", kind, id, c.b.location(dir), err)
			}
		}
	}
	return nil
}

// readManifest reads and decodes the manifest of dir, checking that it
// describes that directory.
func (c *core) readManifest(ctx context.Context, id int64, kind Kind) (*Manifest, error) {
	dir := dirName(kind, id)
	loc := c.b.location(dir)
	rc, err := c.b.open(ctx, dir, manifestName)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%w: %s %d (%s) has no manifest", ErrIncomplete, kind, id, loc)
	}
	if err != nil {
		return nil, fmt.Errorf("checkpoint store: reading manifest of %s: %w", loc, err)
	}
	data, err := io.ReadAll(rc)
	rc.Close()
	if err != nil {
		return nil, fmt.Errorf("checkpoint store: reading manifest of %s: %w", loc, err)
	}
	m, err := decodeManifest(data, loc)
	if err != nil {
		return nil, err
	}
	if m.ID != id || m.Kind != kind {
		return nil, fmt.Errorf("%w: %s: manifest describes %s %d", ErrCorrupt, loc, m.Kind, m.ID)
	}
	return m, nil
}

func (c *core) open(ctx context.Context, id int64) (*Manifest, error) {
	var found []Kind
	for _, k := range []Kind{Checkpoint, Savepoint} {
		st, err := c.b.stat(ctx, dirName(k, id))
		if err != nil {
			return nil, fmt.Errorf("checkpoint store: open %d: %w", id, err)
		}
		if st.committed {
			return c.readManifest(ctx, id, k)
		}
		if st.exists {
			found = append(found, k)
		}
	}
	if len(found) > 0 {
		loc := c.b.location(dirName(found[0], id))
		if c.isInflight(id) {
			return nil, fmt.Errorf("%w: %s %d (%s)", ErrInProgress, found[0], id, loc)
		}
		return nil, fmt.Errorf("%w: %s %d (%s) has no manifest: it was never committed", ErrIncomplete, found[0], id, loc)
	}
	return nil, fmt.Errorf("%w: checkpoint %d: neither %s nor %s exists", ErrNotFound, id,
		c.b.location(dirName(Checkpoint, id)), c.b.location(dirName(Savepoint, id)))
}

// check reads file name of m and verifies its size and checksum, keeping
// the contents if keep is set.
func (c *core) check(ctx context.Context, m *Manifest, name string, keep bool) ([]byte, error) {
	dir := dirName(m.Kind, m.ID)
	fi, ok := m.Files[name]
	if !ok {
		return nil, fmt.Errorf("%w: file %q is not part of %s %d (%s)", ErrNotFound, name, m.Kind, m.ID, c.b.location(dir))
	}
	return c.checkIn(ctx, dir, name, fi, keep, "file")
}

// checkShared is check for a shared file m references.
func (c *core) checkShared(ctx context.Context, m *Manifest, name string, keep bool) ([]byte, error) {
	buf, w := keeper(keep, m.Shared[name].Size)
	if err := c.checkSharedInto(ctx, m, name, w); err != nil {
		return nil, err
	}
	return *buf, nil
}

// keeper returns a writer collecting into a buffer sized for size bytes
// (at most 64 MiB ahead), and the buffer, if keep; else nil.
func keeper(keep bool, size int64) (*[]byte, io.Writer) {
	buf := new([]byte)
	if !keep {
		return buf, nil
	}
	*buf = make([]byte, 0, min(size, 64<<20))
	return buf, (*sliceWriter)(buf)
}

// checkSharedInto reads the shared file name that m references, copying
// it to w unless w is nil, and verifies it.
func (c *core) checkSharedInto(ctx context.Context, m *Manifest, name string, w io.Writer) error {
	sf, ok := m.Shared[name]
	if !ok {
		return fmt.Errorf("%w: shared file %q is not referenced by %s %d (%s)", ErrNotFound, name, m.Kind, m.ID, c.b.location(dirName(m.Kind, m.ID)))
	}
	if err := c.checkInto(ctx, sharedDir, name, FileInfo{Size: sf.Size, CRC32C: sf.CRC32C}, w, "shared file"); err != nil {
		return fmt.Errorf("%s %d: %w", m.Kind, m.ID, err)
	}
	return nil
}

// checkIn reads file name of dir and verifies it against fi, returning
// the contents if keep is set.
func (c *core) checkIn(ctx context.Context, dir, name string, fi FileInfo, keep bool, what string) ([]byte, error) {
	buf, w := keeper(keep, fi.Size)
	if err := c.checkInto(ctx, dir, name, fi, w, what); err != nil {
		return nil, err
	}
	return *buf, nil
}

// checkInto reads file name of dir, copying it to w unless w is nil, and
// verifies its size and checksum against fi.
func (c *core) checkInto(ctx context.Context, dir, name string, fi FileInfo, w io.Writer, what string) error {
	loc := c.b.location(dir)
	rc, err := c.b.open(ctx, dir, name)
	if errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("%w: %s: %s %q is listed in the manifest but missing", ErrCorrupt, loc, what, name)
	}
	if err != nil {
		return fmt.Errorf("checkpoint store: reading %s %q of %s: %w", what, name, loc, err)
	}
	defer rc.Close()
	h := crc32.New(crc32.MakeTable(crc32.Castagnoli))
	var dst io.Writer = h
	if w != nil {
		dst = io.MultiWriter(h, w)
	}
	// Read one byte more than recorded to detect a file that grew.
	n, err := io.Copy(dst, io.LimitReader(rc, fi.Size+1))
	if err != nil {
		return fmt.Errorf("checkpoint store: reading %q of %s: %w", name, loc, err)
	}
	if n != fi.Size {
		how := "truncated"
		if n > fi.Size {
			how = "longer than recorded"
		}
		return fmt.Errorf("%w: %s: %s %q is %s: manifest records %d bytes, read %d", ErrCorrupt, loc, what, name, how, fi.Size, n)
	}
	if got := h.Sum32(); got != fi.CRC32C {
		return fmt.Errorf("%w: %s: %s %q fails its checksum: crc32c %08x, manifest records %08x", ErrCorrupt, loc, what, name, got, fi.CRC32C)
	}
	return nil
}

type sliceWriter []byte

// Write appends p.
func (s *sliceWriter) Write(p []byte) (int, error) {
	*s = append(*s, p...)
	return len(p), nil
}

func (c *core) readFile(ctx context.Context, m *Manifest, name string) ([]byte, error) {
	if m == nil {
		return nil, errors.New("checkpoint store: ReadFile with a nil manifest")
	}
	return c.check(ctx, m, name, true)
}

func (c *core) readShared(ctx context.Context, m *Manifest, name string) ([]byte, error) {
	if m == nil {
		return nil, errors.New("checkpoint store: ReadShared with a nil manifest")
	}
	return c.checkShared(ctx, m, name, true)
}

func (c *core) verifyShared(ctx context.Context, m *Manifest, name string) error {
	if m == nil {
		return errors.New("checkpoint store: VerifyShared with a nil manifest")
	}
	_, err := c.checkShared(ctx, m, name, false)
	return err
}

// copyShared streams the shared file name that m references to a new
// file dst, verifying it: a restore lays out its own copy of every file,
// never a link, so that a database never shares a file with the store
// (damage to one never reaches the other).
func (c *core) copyShared(ctx context.Context, m *Manifest, name, dst string) (err error) {
	if m == nil {
		return errors.New("checkpoint store: CopyShared with a nil manifest")
	}
	f, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return fmt.Errorf("checkpoint store: copying shared file %q: %w", name, err)
	}
	defer func() {
		if cerr := f.Close(); err == nil && cerr != nil {
			err = fmt.Errorf("checkpoint store: copying shared file %q: %w", name, cerr)
		}
		if err != nil {
			_ = os.Remove(dst)
		}
	}()
	return c.checkSharedInto(ctx, m, name, f)
}

// sortedDirs lists the checkpoint directories, newest first.
func (c *core) sortedDirs(ctx context.Context) ([]dirState, error) {
	dirs, err := c.b.list(ctx)
	if err != nil {
		return nil, fmt.Errorf("checkpoint store: listing %s: %w", c.b.location(""), err)
	}
	slices.SortFunc(dirs, func(a, b dirState) int { return cmp.Or(cmp.Compare(b.id, a.id), cmp.Compare(a.kind, b.kind)) })
	return dirs, nil
}

func (c *core) latest(ctx context.Context) (*Manifest, error) {
	dirs, err := c.sortedDirs(ctx)
	if err != nil {
		return nil, err
	}
	for _, d := range dirs {
		if d.kind != Checkpoint || c.isInflight(d.id) {
			continue
		}
		loc := c.b.location(dirName(d.kind, d.id))
		if !d.committed {
			// The listing may predate a Commit that has finished since
			// (it releases the id only after publishing): look again.
			st, err := c.b.stat(ctx, dirName(d.kind, d.id))
			if err != nil {
				return nil, fmt.Errorf("checkpoint store: %s: %w", loc, err)
			}
			d.committed = st.committed
			if !st.exists {
				continue
			}
		}
		if !d.committed {
			c.log.Warn("checkpoint store: skipping incomplete checkpoint (no manifest: the writer crashed or failed before commit)",
				"checkpoint", d.id, "location", loc)
			continue
		}
		m, err := c.readManifest(ctx, d.id, d.kind)
		if err == nil {
			err = c.verify(ctx, m)
		}
		if err == nil {
			return m, nil
		}
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		if !errors.Is(err, ErrCorrupt) && !errors.Is(err, ErrIncomplete) {
			return nil, err
		}
		c.log.Warn("checkpoint store: skipping damaged checkpoint, falling back to an older one",
			"checkpoint", d.id, "location", loc, "reason", err.Error())
	}
	return nil, fmt.Errorf("%w in %s", ErrNoCheckpoint, c.b.location(""))
}

// verify checks every data file and every shared file of m.
func (c *core) verify(ctx context.Context, m *Manifest) error {
	for _, name := range slices.Sorted(maps.Keys(m.Files)) {
		if _, err := c.check(ctx, m, name, false); err != nil {
			return err
		}
	}
	for _, name := range slices.Sorted(maps.Keys(m.Shared)) {
		if _, err := c.checkShared(ctx, m, name, false); err != nil {
			return err
		}
	}
	return nil
}

func (c *core) list(ctx context.Context) ([]Entry, error) {
	dirs, err := c.sortedDirs(ctx)
	if err != nil {
		return nil, err
	}
	var out []Entry
	for _, d := range slices.Backward(dirs) {
		if d.committed {
			out = append(out, Entry{ID: d.id, Kind: d.kind})
		}
	}
	return out, nil
}

func (c *core) retain(ctx context.Context, n int) error {
	if n < 1 {
		return fmt.Errorf("checkpoint store: retain %d: must keep at least one checkpoint", n)
	}
	dirs, err := c.sortedDirs(ctx)
	if err != nil {
		return err
	}
	kept, cut := 0, int64(-1)
	for _, d := range dirs {
		if d.kind != Checkpoint || !d.committed {
			continue
		}
		_, err := c.readManifest(ctx, d.id, d.kind)
		if errors.Is(err, ErrCorrupt) || errors.Is(err, ErrIncomplete) {
			continue
		}
		if err != nil {
			return fmt.Errorf("checkpoint store: retain: %w", err)
		}
		if kept++; kept == n {
			cut = d.id
			break
		}
	}
	if cut < 0 {
		return nil
	}
	var errs []error
	for _, d := range dirs {
		if d.kind != Checkpoint || d.id >= cut || c.isInflight(d.id) {
			continue
		}
		dir := dirName(d.kind, d.id)
		if err := c.b.remove(ctx, dir); err != nil {
			errs = append(errs, fmt.Errorf("checkpoint store: retain: deleting %s: %w", c.b.location(dir), err))
		}
	}
	if len(errs) > 0 {
		// Keep every shared file: the references of a checkpoint that
		// could not be deleted are still wanted.
		return errors.Join(errs...)
	}
	return c.collectShared(ctx)
}

func (c *core) delete(ctx context.Context, id int64) error {
	if c.isInflight(id) {
		return fmt.Errorf("%w: cannot delete checkpoint %d", ErrInProgress, id)
	}
	deleted := false
	for _, k := range []Kind{Checkpoint, Savepoint} {
		dir := dirName(k, id)
		st, err := c.b.stat(ctx, dir)
		if err != nil {
			return fmt.Errorf("checkpoint store: delete %d: %w", id, err)
		}
		if !st.exists {
			continue
		}
		if err := c.b.remove(ctx, dir); err != nil {
			return fmt.Errorf("checkpoint store: delete %s: %w", c.b.location(dir), err)
		}
		deleted = true
	}
	if !deleted {
		return fmt.Errorf("%w: checkpoint %d: neither %s nor %s exists", ErrNotFound, id,
			c.b.location(dirName(Checkpoint, id)), c.b.location(dirName(Savepoint, id)))
	}
	return nil
}

// coreStore implements Store on a core; Local and S3 embed it.
type coreStore struct{ c *core }

// Begin implements Store.
func (s coreStore) Begin(ctx context.Context, id int64, kind Kind) (Writer, error) {
	return s.c.begin(ctx, id, kind)
}

// Latest implements Store.
func (s coreStore) Latest(ctx context.Context) (*Manifest, error) { return s.c.latest(ctx) }

// Open implements Store.
func (s coreStore) Open(ctx context.Context, id int64) (*Manifest, error) { return s.c.open(ctx, id) }

// ReadFile implements Store.
func (s coreStore) ReadFile(ctx context.Context, m *Manifest, name string) ([]byte, error) {
	return s.c.readFile(ctx, m, name)
}

// ReadShared implements Store.
func (s coreStore) ReadShared(ctx context.Context, m *Manifest, name string) ([]byte, error) {
	return s.c.readShared(ctx, m, name)
}

// VerifyShared implements Store.
func (s coreStore) VerifyShared(ctx context.Context, m *Manifest, name string) error {
	return s.c.verifyShared(ctx, m, name)
}

// CopyShared implements Store: a local store links the file when it can,
// otherwise (and always from S3) it is streamed into dst.
func (s coreStore) CopyShared(ctx context.Context, m *Manifest, name, dst string) error {
	return s.c.copyShared(ctx, m, name, dst)
}

// List implements Store.
func (s coreStore) List(ctx context.Context) ([]Entry, error) { return s.c.list(ctx) }

// Retain implements Store.
func (s coreStore) Retain(ctx context.Context, n int) error { return s.c.retain(ctx, n) }

// Delete implements Store.
func (s coreStore) Delete(ctx context.Context, id int64) error { return s.c.delete(ctx, id) }

// writer implements Writer for both stores.
type writer struct {
	c    *core
	id   int64
	kind Kind
	dir  string

	mu      sync.Mutex
	state   writerState
	files   map[string]FileInfo       // written
	busy    map[string]bool           // being written
	pending sync.WaitGroup            // WriteFile and WriteShared calls in progress
	shared  map[string]SharedFileInfo // shared files written or reused
	pins    []string                  // shared files pinned in core
	wrote   bool                      // a shared file was written
}

type writerState uint8

const (
	writerOpen writerState = iota
	writerCommitting
	writerFailed // commit failed: only Abort is allowed
	writerCommitted
	writerAborted
)

// WriteFile implements Writer.
func (w *writer) WriteFile(ctx context.Context, name string, data []byte) error {
	if err := CheckName(name); err != nil {
		return err
	}
	w.mu.Lock()
	if w.state != writerOpen {
		w.mu.Unlock()
		return fmt.Errorf("%w: WriteFile %q on %s %d", ErrClosed, name, w.kind, w.id)
	}
	if _, ok := w.files[name]; ok || w.busy[name] {
		w.mu.Unlock()
		return fmt.Errorf("checkpoint store: %s %d: file %q written twice", w.kind, w.id, name)
	}
	w.busy[name] = true
	w.pending.Add(1)
	w.mu.Unlock()
	defer w.pending.Done()

	err := w.c.b.put(ctx, w.dir, name, bytes.NewReader(data), int64(len(data)))
	w.mu.Lock()
	defer w.mu.Unlock()
	delete(w.busy, name)
	if err != nil {
		return fmt.Errorf("checkpoint store: writing %q of %s: %w", name, w.c.b.location(w.dir), err)
	}
	w.files[name] = FileInfo{Size: int64(len(data)), CRC32C: checksum(data)}
	return nil
}

// WriteShared implements Writer.
func (w *writer) WriteShared(ctx context.Context, name string, data []byte) error {
	return w.writeShared(ctx, name, func() (FileInfo, error) {
		return FileInfo{Size: int64(len(data)), CRC32C: checksum(data)}, w.c.b.putShared(ctx, name, bytes.NewReader(data), int64(len(data)))
	})
}

// WriteSharedFile implements Writer.
func (w *writer) WriteSharedFile(ctx context.Context, name, path string) error {
	return w.writeShared(ctx, name, func() (FileInfo, error) {
		// Streamed from the file (twice: once for the checksum, once
		// to store it), never held in memory; the store keeps its own
		// copy, never a link: the file belongs to a live database.
		f, err := os.Open(path)
		if err != nil {
			return FileInfo{}, err
		}
		defer f.Close()
		fi, err := readerInfo(f)
		if err != nil {
			return fi, err
		}
		return fi, w.c.b.putShared(ctx, name, f, fi.Size)
	})
}

// readerInfo returns the size and checksum of what r holds.
func readerInfo(r io.ReaderAt) (FileInfo, error) {
	h := crc32.New(crc32.MakeTable(crc32.Castagnoli))
	n, err := io.Copy(h, io.NewSectionReader(r, 0, 1<<62))
	return FileInfo{Size: n, CRC32C: h.Sum32()}, err
}

// writeShared stores the shared file name with put, which returns its
// size and checksum.
func (w *writer) writeShared(ctx context.Context, name string, put func() (FileInfo, error)) error {
	if err := CheckName(name); err != nil {
		return err
	}
	if w.kind != Checkpoint {
		return fmt.Errorf("checkpoint store: %s %d: a savepoint cannot have shared file %q", w.kind, w.id, name)
	}
	w.mu.Lock()
	if w.state != writerOpen {
		w.mu.Unlock()
		return fmt.Errorf("%w: WriteShared %q on %s %d", ErrClosed, name, w.kind, w.id)
	}
	if _, ok := w.shared[name]; ok || w.busy["/"+name] {
		w.mu.Unlock()
		return fmt.Errorf("checkpoint store: %s %d: shared file %q written or reused twice", w.kind, w.id, name)
	}
	w.busy["/"+name] = true
	w.pins = append(w.pins, name)
	w.wrote = true
	w.pending.Add(1)
	w.mu.Unlock()
	defer w.pending.Done()
	w.c.pin(name)

	fi, err := put()
	w.mu.Lock()
	defer w.mu.Unlock()
	delete(w.busy, "/"+name)
	if err != nil {
		return fmt.Errorf("checkpoint store: writing shared file %q of %s %d in %s: %w", name, w.kind, w.id, w.c.b.location(sharedDir), err)
	}
	w.shared[name] = SharedFileInfo{Size: fi.Size, CRC32C: fi.CRC32C, Checkpoint: w.id}
	return nil
}

// ReuseShared implements Writer.
func (w *writer) ReuseShared(ctx context.Context, name string) (bool, error) {
	if err := CheckName(name); err != nil {
		return false, err
	}
	if w.kind != Checkpoint {
		return false, fmt.Errorf("checkpoint store: %s %d: a savepoint cannot reference shared file %q", w.kind, w.id, name)
	}
	w.mu.Lock()
	if w.state != writerOpen {
		w.mu.Unlock()
		return false, fmt.Errorf("%w: ReuseShared %q on %s %d", ErrClosed, name, w.kind, w.id)
	}
	if _, ok := w.shared[name]; ok {
		// Another subtask's database has the file too (they were
		// restored from one database).
		w.mu.Unlock()
		return true, nil
	}
	if w.busy["/"+name] {
		w.mu.Unlock()
		return false, fmt.Errorf("checkpoint store: %s %d: shared file %q reused while it is being written", w.kind, w.id, name)
	}
	w.mu.Unlock()
	fi, ok, err := w.c.reuse(ctx, name)
	if err != nil || !ok {
		return false, err
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.pins = append(w.pins, name)
	if w.state != writerOpen {
		return false, fmt.Errorf("%w: ReuseShared %q on %s %d", ErrClosed, name, w.kind, w.id)
	}
	if _, ok := w.shared[name]; !ok {
		w.shared[name] = fi
	}
	return true, nil
}

// Commit implements Writer.
func (w *writer) Commit(ctx context.Context, m Manifest) (*Manifest, error) {
	w.mu.Lock()
	if w.state != writerOpen {
		w.mu.Unlock()
		return nil, fmt.Errorf("%w: Commit of %s %d", ErrClosed, w.kind, w.id)
	}
	w.state = writerCommitting
	w.mu.Unlock()
	w.pending.Wait()

	m.ID, m.Kind = w.id, w.kind
	m.Files = make(map[string]FileInfo, len(w.files))
	for name, fi := range w.files {
		m.Files[name] = fi
	}
	m.Shared = nil
	if len(w.shared) > 0 {
		m.Shared = maps.Clone(w.shared)
	}
	if m.CreatedAt.IsZero() {
		m.CreatedAt = time.Now()
	}
	m.CreatedAt = m.CreatedAt.UTC().Round(0)
	data, err := encodeManifest(&m)
	if err == nil {
		err = m.Validate()
	}
	if err != nil {
		w.setState(writerOpen)
		return nil, err
	}
	if w.wrote {
		// The shared files must be durable before the manifest that
		// references them.
		if err := w.c.b.syncShared(ctx); err != nil {
			w.setState(writerFailed)
			return nil, fmt.Errorf("checkpoint store: committing %s: syncing %s: %w", w.c.b.location(w.dir), w.c.b.location(sharedDir), err)
		}
	}
	if err := w.c.b.publish(ctx, w.dir, data); err != nil {
		w.setState(writerFailed)
		return nil, fmt.Errorf("checkpoint store: committing %s: %w", w.c.b.location(w.dir), err)
	}
	w.setState(writerCommitted)
	w.c.unpin(w.pins, m.Shared)
	w.c.release(w.id)
	return decodeManifest(data, w.c.b.location(w.dir))
}

func (w *writer) setState(s writerState) {
	w.mu.Lock()
	w.state = s
	w.mu.Unlock()
}

// Abort implements Writer.
func (w *writer) Abort(ctx context.Context) error {
	w.mu.Lock()
	switch w.state {
	case writerCommitted, writerAborted:
		w.mu.Unlock()
		return nil
	case writerCommitting:
		w.mu.Unlock()
		return fmt.Errorf("checkpoint store: Abort of %s %d during its Commit", w.kind, w.id)
	}
	w.state = writerAborted
	w.mu.Unlock()
	w.pending.Wait()
	defer w.c.release(w.id)
	// Shared files written by this Writer are referenced by no manifest:
	// the next Retain deletes them.
	defer w.c.unpin(w.pins, nil)
	if err := w.c.b.remove(ctx, w.dir); err != nil {
		return fmt.Errorf("checkpoint store: aborting %s: %w", w.c.b.location(w.dir), err)
	}
	return nil
}
