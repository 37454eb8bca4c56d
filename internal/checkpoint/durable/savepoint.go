package durable

import (
	"context"
	"errors"
	"log/slog"

	"github.com/weirstream/weir/internal/checkpoint/store"
	"github.com/weirstream/weir/internal/hooks"
)

// ReadSavepoint reads the savepoint at path (a savepoint's or
// checkpoint's directory, a renamed copy, or a directory of savepoints
// standing for its newest); option names the option that adds a storage,
// for messages.
func ReadSavepoint(ctx context.Context, path string, r store.Remotes, option string, log *slog.Logger) (*Checkpoint, error) {
	if path == "" {
		return nil, errors.New("no savepoint path given")
	}
	s, m, err := OpenSavepoint(ctx, path, r, option, log)
	if err != nil {
		return nil, err
	}
	d := &Store{s: s}
	return d.Load(ctx, m)
}

// SavepointTarget opens the store a savepoint into target is written to
// and returns it with the path savepoint id will have there, in the form
// target was given in.
func SavepointTarget(target string, r store.Remotes, log *slog.Logger) (store.Store, func(id int64) string, error) {
	loc, err := hooks.CheckLocation(target, r, "weir.WithStorage")
	if err != nil {
		return nil, nil, err
	}
	if loc, err = loc.Abs(); err != nil {
		return nil, nil, err
	}
	s, err := loc.NewStore(r, store.WithCreateDir(), store.WithLogger(log))
	if err != nil {
		return nil, nil, err
	}
	return s, func(id int64) string { return loc.Child(store.DirName(store.Savepoint, id)).String() }, nil
}

// OpenSavepoint opens the savepoint or checkpoint at path (the forms of
// weir.RestoreFromSavepoint) and returns its store and manifest.
// option names the option that adds a storage, for messages.
func OpenSavepoint(ctx context.Context, path string, r store.Remotes, option string, log *slog.Logger) (store.Store, *store.Manifest, error) {
	loc, err := hooks.CheckLocation(path, r, option)
	if err != nil {
		return nil, nil, err
	}
	if log == nil {
		log = slog.Default()
	}
	return store.OpenLocation(ctx, loc, r, store.WithLogger(log))
}
