package store

import (
	"bytes"
	"errors"
	"io"
	"io/fs"
	"maps"
	"math/rand/v2"
	"path"
	"slices"
	"strings"
	"sync"
	"time"
)

// memFS is an in-memory FS that models what survives a power loss: a
// file's contents are durable once Sync returns, a directory's entries
// (creations, renames, removals in it) once SyncDir returns. crash builds
// the file system a machine could find after losing power: every durable
// thing survives, and every change not yet made durable may or may not
// have reached the disk (a file may even keep a prefix of its unsynced
// contents). That is stricter than ext4 or xfs, so code that survives
// memFS crashes does not depend on lucky ordering.
type memFS struct {
	mu   sync.Mutex
	root *memNode
}

type memNode struct {
	dir bool
	// Files.
	data, synced []byte
	// Directories.
	entries, syncedEntries map[string]*memNode
}

func newDirNode() *memNode {
	return &memNode{dir: true, entries: map[string]*memNode{}, syncedEntries: map[string]*memNode{}}
}

func newMemFS() *memFS { return &memFS{root: newDirNode()} }

func pathErr(op, name string, err error) error { return &fs.PathError{Op: op, Path: name, Err: err} }

func splitPath(name string) []string {
	name = path.Clean("/" + name)
	if name == "/" {
		return nil
	}
	return strings.Split(name[1:], "/")
}

// lookup returns the node at name (nil if missing) and its parent
// directory (nil if the parent is missing).
func (m *memFS) lookup(name string) (parent, node *memNode, base string) {
	parts := splitPath(name)
	if len(parts) == 0 {
		return nil, m.root, ""
	}
	dir := m.root
	for _, p := range parts[:len(parts)-1] {
		next := dir.entries[p]
		if next == nil || !next.dir {
			return nil, nil, ""
		}
		dir = next
	}
	base = parts[len(parts)-1]
	return dir, dir.entries[base], base
}

func (m *memFS) Create(name string) (File, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	parent, node, base := m.lookup(name)
	switch {
	case parent == nil:
		return nil, pathErr("create", name, fs.ErrNotExist)
	case node != nil && node.dir:
		return nil, pathErr("create", name, errors.New("is a directory"))
	case node == nil:
		node = &memNode{}
		parent.entries[base] = node
	default:
		node.data = nil
	}
	return &memFile{fs: m, node: node}, nil
}

type memFile struct {
	fs     *memFS
	node   *memNode
	closed bool
}

func (f *memFile) Write(p []byte) (int, error) {
	f.fs.mu.Lock()
	defer f.fs.mu.Unlock()
	if f.closed {
		return 0, fs.ErrClosed
	}
	f.node.data = append(f.node.data, p...)
	return len(p), nil
}

func (f *memFile) Sync() error {
	f.fs.mu.Lock()
	defer f.fs.mu.Unlock()
	if f.closed {
		return fs.ErrClosed
	}
	f.node.synced = slices.Clone(f.node.data)
	if f.node.synced == nil {
		f.node.synced = []byte{}
	}
	return nil
}

func (f *memFile) Close() error {
	f.fs.mu.Lock()
	defer f.fs.mu.Unlock()
	if f.closed {
		return fs.ErrClosed
	}
	f.closed = true
	return nil
}

func (m *memFS) Open(name string) (io.ReadCloser, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	_, node, _ := m.lookup(name)
	if node == nil {
		return nil, pathErr("open", name, fs.ErrNotExist)
	}
	if node.dir {
		return nil, pathErr("open", name, errors.New("is a directory"))
	}
	return io.NopCloser(bytes.NewReader(slices.Clone(node.data))), nil
}

func (m *memFS) Mkdir(name string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	parent, node, base := m.lookup(name)
	switch {
	case parent == nil:
		return pathErr("mkdir", name, fs.ErrNotExist)
	case node != nil:
		return pathErr("mkdir", name, fs.ErrExist)
	}
	parent.entries[base] = newDirNode()
	return nil
}

func (m *memFS) MkdirAll(name string) error {
	parts := splitPath(name)
	for i := range parts {
		err := m.Mkdir("/" + strings.Join(parts[:i+1], "/"))
		if err != nil && !errors.Is(err, fs.ErrExist) {
			return err
		}
	}
	return nil
}

type memInfo struct {
	name string
	size int64
	dir  bool
}

func (i memInfo) Name() string { return i.name }
func (i memInfo) Size() int64  { return i.size }
func (i memInfo) Mode() fs.FileMode {
	if i.dir {
		return fs.ModeDir | 0o755
	}
	return 0o644
}
func (i memInfo) ModTime() time.Time { return time.Time{} }
func (i memInfo) IsDir() bool        { return i.dir }
func (i memInfo) Sys() any           { return nil }

func (m *memFS) ReadDir(name string) ([]fs.DirEntry, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	_, node, _ := m.lookup(name)
	if node == nil || !node.dir {
		return nil, pathErr("readdir", name, fs.ErrNotExist)
	}
	var out []fs.DirEntry
	for _, n := range slices.Sorted(maps.Keys(node.entries)) {
		c := node.entries[n]
		out = append(out, fs.FileInfoToDirEntry(memInfo{name: n, size: int64(len(c.data)), dir: c.dir}))
	}
	return out, nil
}

func (m *memFS) Stat(name string) (fs.FileInfo, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	_, node, base := m.lookup(name)
	if node == nil {
		return nil, pathErr("stat", name, fs.ErrNotExist)
	}
	return memInfo{name: base, size: int64(len(node.data)), dir: node.dir}, nil
}

func (m *memFS) Rename(oldname, newname string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	op, node, ob := m.lookup(oldname)
	np, target, nb := m.lookup(newname)
	switch {
	case node == nil || np == nil:
		return pathErr("rename", oldname, fs.ErrNotExist)
	case target != nil && target.dir:
		return pathErr("rename", newname, errors.New("is a directory"))
	}
	delete(op.entries, ob)
	np.entries[nb] = node
	return nil
}

func (m *memFS) Remove(name string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	parent, node, base := m.lookup(name)
	switch {
	case node == nil:
		return pathErr("remove", name, fs.ErrNotExist)
	case node.dir && len(node.entries) > 0:
		return pathErr("remove", name, errors.New("directory not empty"))
	}
	delete(parent.entries, base)
	return nil
}

func (m *memFS) RemoveAll(name string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	parent, node, base := m.lookup(name)
	if node != nil {
		// Removing a tree removes the entries inside each directory too
		// (each one durable only once that directory is synced).
		var clear func(n *memNode)
		clear = func(n *memNode) {
			if !n.dir {
				return
			}
			for _, c := range n.entries {
				clear(c)
			}
			n.entries = map[string]*memNode{}
		}
		clear(node)
		delete(parent.entries, base)
	}
	return nil
}

func (m *memFS) SyncDir(name string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	_, node, _ := m.lookup(name)
	if node == nil || !node.dir {
		return pathErr("syncdir", name, fs.ErrNotExist)
	}
	node.syncedEntries = make(map[string]*memNode, len(node.entries))
	for k, v := range node.entries {
		node.syncedEntries[k] = v
	}
	return nil
}

// crash returns the file system as found after a power loss. With rng nil
// only durable state survives; otherwise each unsynced change survives or
// not at random.
func (m *memFS) crash(rng *rand.Rand) *memFS {
	m.mu.Lock()
	defer m.mu.Unlock()
	seen := map[*memNode]*memNode{}
	var cp func(n *memNode) *memNode
	cp = func(n *memNode) *memNode {
		if c, ok := seen[n]; ok {
			return c
		}
		if !n.dir {
			data := n.synced
			if rng != nil && !bytes.Equal(n.data, n.synced) {
				switch rng.IntN(3) {
				case 0:
					data = n.data
				case 1:
					data = n.data[:rng.IntN(len(n.data)+1)]
				}
			}
			c := &memNode{data: slices.Clone(data), synced: slices.Clone(data)}
			seen[n] = c
			return c
		}
		c := newDirNode()
		seen[n] = c
		names := map[string]bool{}
		for k := range n.entries {
			names[k] = true
		}
		for k := range n.syncedEntries {
			names[k] = true
		}
		for _, k := range slices.Sorted(maps.Keys(names)) {
			child := n.syncedEntries[k]
			if live := n.entries[k]; live != child && rng != nil && rng.IntN(2) == 0 {
				child = live
			}
			if child != nil {
				cc := cp(child)
				c.entries[k], c.syncedEntries[k] = cc, cc
			}
		}
		return c
	}
	return &memFS{root: cp(m.root)}
}

// errCrashed is what every operation of a faultFS returns once it crashed.
var errCrashed = errors.New("injected crash")

// faultFS wraps an FS and injects faults: an error for chosen operations,
// a short write, or a crash after which every operation fails.
type faultFS struct {
	FS
	mu sync.Mutex
	// ops counts the operations so far.
	ops int
	// crashAt is the operation (counted from 0) at which the file system
	// dies; -1 for never.
	crashAt int
	// fail, if set, returns an error to inject for an operation.
	fail func(op, name string) error
	// short, if set, makes a write to the named file write half its bytes
	// and report no error (a misbehaving file system).
	short func(name string) bool
}

func newFaultFS(inner FS) *faultFS { return &faultFS{FS: inner, crashAt: -1} }

func (f *faultFS) before(op, name string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := f.ops
	f.ops++
	if f.crashAt >= 0 && n >= f.crashAt {
		return pathErr(op, name, errCrashed)
	}
	if f.fail != nil {
		if err := f.fail(op, name); err != nil {
			return pathErr(op, name, err)
		}
	}
	return nil
}

func (f *faultFS) opCount() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.ops
}

func (f *faultFS) Create(name string) (File, error) {
	if err := f.before("create", name); err != nil {
		return nil, err
	}
	file, err := f.FS.Create(name)
	if err != nil {
		return nil, err
	}
	return &faultFile{File: file, fs: f, name: name}, nil
}

func (f *faultFS) Open(name string) (io.ReadCloser, error) {
	if err := f.before("open", name); err != nil {
		return nil, err
	}
	return f.FS.Open(name)
}

func (f *faultFS) Mkdir(name string) error {
	if err := f.before("mkdir", name); err != nil {
		return err
	}
	return f.FS.Mkdir(name)
}

func (f *faultFS) MkdirAll(name string) error {
	if err := f.before("mkdirall", name); err != nil {
		return err
	}
	return f.FS.MkdirAll(name)
}

func (f *faultFS) ReadDir(name string) ([]fs.DirEntry, error) {
	if err := f.before("readdir", name); err != nil {
		return nil, err
	}
	return f.FS.ReadDir(name)
}

func (f *faultFS) Stat(name string) (fs.FileInfo, error) {
	if err := f.before("stat", name); err != nil {
		return nil, err
	}
	return f.FS.Stat(name)
}

func (f *faultFS) Rename(oldname, newname string) error {
	if err := f.before("rename", newname); err != nil {
		return err
	}
	return f.FS.Rename(oldname, newname)
}

func (f *faultFS) Remove(name string) error {
	if err := f.before("remove", name); err != nil {
		return err
	}
	return f.FS.Remove(name)
}

func (f *faultFS) RemoveAll(name string) error {
	if err := f.before("removeall", name); err != nil {
		return err
	}
	return f.FS.RemoveAll(name)
}

func (f *faultFS) SyncDir(name string) error {
	if err := f.before("syncdir", name); err != nil {
		return err
	}
	return f.FS.SyncDir(name)
}

type faultFile struct {
	File
	fs   *faultFS
	name string
}

func (f *faultFile) Write(p []byte) (int, error) {
	if err := f.fs.before("write", f.name); err != nil {
		return 0, err
	}
	if f.fs.short != nil && f.fs.short(f.name) && len(p) > 0 {
		return f.File.Write(p[:len(p)/2])
	}
	return f.File.Write(p)
}

func (f *faultFile) Sync() error {
	if err := f.fs.before("sync", f.name); err != nil {
		return err
	}
	return f.File.Sync()
}
