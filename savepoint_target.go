package weir

import (
	"github.com/weirstream/weir/internal/checkpoint/store"
	"github.com/weirstream/weir/internal/hooks"
)

// Storage reaches the checkpoint and savepoint locations of one URL
// scheme other than file ("s3" for s3://bucket/prefix), as Flink's file
// system plugins do. The storage packages of this module provide them
// (github.com/weirstream/weir/storage/s3); a job plugs one in with
// WithStorage, ReadSavepoint with ReadWithStorage. Local directories need
// none. Only the packages imported link their client libraries.
type Storage interface {
	// Scheme returns the URL scheme whose locations the storage reaches
	// ("s3").
	Scheme() string
	// CheckpointStore returns the checkpoint store at location
	// (scheme://bucket/prefix), as NewCheckpointStore does.
	CheckpointStore(location string) (CheckpointStore, error)
}

// WithStorage makes the job reach the locations of s's scheme wherever it
// takes one: CheckpointStorage, TriggerSavepoint, StopWithSavepoint, the
// control endpoint (weir savepoint --dir s3://...), DefaultSavepointDir,
// RestoreFromSavepoint and RunService. Give it once per scheme: a location
// whose scheme has no storage fails the job when it is built, naming this
// option.
func WithStorage(s Storage) Option {
	return func(c *config) { c.storages = append(c.storages, s) }
}

// remotes returns the openers of the job's storages (WithStorage).
func (e *Environment) remotes() (store.Remotes, error) {
	return hooks.Remotes(e.cfg.storages, "weir.WithStorage")
}

// ReadOption configures ReadSavepoint.
type ReadOption func(*readConfig)

type readConfig struct{ storages []Storage }

// ReadWithStorage makes ReadSavepoint reach the locations of s's scheme
// (as WithStorage for a job).
func ReadWithStorage(s Storage) ReadOption {
	return func(c *readConfig) { c.storages = append(c.storages, s) }
}

// DefaultSavepointDir is the target of savepoints requested without one
// (TriggerSavepoint or StopWithSavepoint with dir ""), as Flink's
// state.savepoints.dir: a local directory (a path or file:///dir) or a
// location of a scheme a storage reaches (WithStorage), as
// s3://bucket/prefix.
func DefaultSavepointDir(target string) CheckpointOption {
	return func(c *checkpointConfig) { c.SavepointDir = target }
}
