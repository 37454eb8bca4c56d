package store

import (
	"io"
	"io/fs"
	"os"
)

// FS is the file system a Local store works through: the operating
// system's (OSFS) in production, a fault-injecting one in tests. Missing
// files must be reported with errors that match fs.ErrNotExist.
type FS interface {
	// Create creates or truncates the file name for writing.
	Create(name string) (File, error)
	// Open opens the file name for reading.
	Open(name string) (io.ReadCloser, error)
	// Mkdir creates the directory name; its parent must exist.
	Mkdir(name string) error
	// MkdirAll creates the directory name and any missing parents.
	MkdirAll(name string) error
	// ReadDir lists the directory name, sorted by file name.
	ReadDir(name string) ([]fs.DirEntry, error)
	// Stat describes the file or directory name.
	Stat(name string) (fs.FileInfo, error)
	// Rename atomically replaces newname by oldname.
	Rename(oldname, newname string) error
	// Remove removes the file or empty directory name.
	Remove(name string) error
	// RemoveAll removes name and everything under it; a missing name is
	// not an error.
	RemoveAll(name string) error
	// SyncDir makes the entries of directory name (creations, renames and
	// removals in it) durable.
	SyncDir(name string) error
}

// File is a file open for writing.
type File interface {
	io.Writer
	// Sync makes the file's contents durable.
	Sync() error
	// Close closes the file.
	Close() error
}

// OSFS is the operating system's file system.
type OSFS struct{}

// Create implements FS.
func (OSFS) Create(name string) (File, error) {
	return os.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
}

// Open implements FS.
func (OSFS) Open(name string) (io.ReadCloser, error) { return os.Open(name) }

// Mkdir implements FS.
func (OSFS) Mkdir(name string) error { return os.Mkdir(name, 0o755) }

// MkdirAll implements FS.
func (OSFS) MkdirAll(name string) error { return os.MkdirAll(name, 0o755) }

// ReadDir implements FS.
func (OSFS) ReadDir(name string) ([]fs.DirEntry, error) { return os.ReadDir(name) }

// Stat implements FS.
func (OSFS) Stat(name string) (fs.FileInfo, error) { return os.Stat(name) }

// Rename implements FS.
func (OSFS) Rename(oldname, newname string) error { return os.Rename(oldname, newname) }

// Remove implements FS.
func (OSFS) Remove(name string) error { return os.Remove(name) }

// RemoveAll implements FS.
func (OSFS) RemoveAll(name string) error { return os.RemoveAll(name) }

// SyncDir implements FS by fsyncing the directory.
func (OSFS) SyncDir(name string) error { return fsync(name) }

// fsync opens the file or directory name and fsyncs it.
func fsync(name string) error {
	d, err := os.Open(name)
	if err != nil {
		return err
	}
	serr := d.Sync()
	if cerr := d.Close(); serr == nil {
		serr = cerr
	}
	return serr
}
