package hooks

// The storage hooks: what the root package (and package savepoint) need of
// a checkpoint storage plugin (weir.Storage, as package storage/s3 gives
// one) beyond its public interface.

import (
	"fmt"

	"github.com/weirstream/weir/internal/checkpoint/store"
)

// Storage is implemented by the values storage plugins of this module
// return besides weir.Storage: it opens the store at a remote location of
// its scheme.
type Storage interface {
	// Scheme returns the URL scheme whose locations the storage reaches.
	Scheme() string
	// OpenStore opens the store in bucket under key prefix prefix.
	OpenStore(bucket, prefix string, opts ...store.Option) (store.Store, error)
}

// Remotes returns the openers of the storages ss (weir.Storage values) by
// scheme. A storage that is nil, is not one of this module's, or is given
// twice for a scheme is an error; option names the option that gave them,
// for messages.
func Remotes[S interface{ Scheme() string }](ss []S, option string) (store.Remotes, error) {
	r := store.Remotes{}
	for _, s := range ss {
		var h Storage
		switch v := any(s).(type) {
		case nil:
			return nil, fmt.Errorf("%s(nil)", option)
		case Storage:
			h = v
		default:
			return nil, fmt.Errorf("%s: storage %T (scheme %s://) does not come from a storage package of this module (storage/s3), so it cannot hold savepoints or be restored from", option, s, s.Scheme())
		}
		sc := h.Scheme()
		if _, dup := r[sc]; dup {
			return nil, fmt.Errorf("%s: two storages for scheme %s://", option, sc)
		}
		r[sc] = func(bucket, prefix string, opts ...store.Option) (store.Store, error) {
			return h.OpenStore(bucket, prefix, opts...)
		}
	}
	return r, nil
}

// NoStorage returns the error for a location whose scheme no storage
// reaches, naming option as the way to add one ("weir.WithStorage").
func NoStorage(location, scheme, option string) error {
	plugin := "a Storage for " + scheme + "://"
	if scheme == "s3" {
		plugin = "s3.New(...)"
	}
	return fmt.Errorf("location %s: %w %s://: add %s(%s)", location, store.ErrNoStorage, scheme, option, plugin)
}

// CheckLocation parses location and reports an error if it is a remote
// location whose scheme r has no opener for (see NoStorage).
func CheckLocation(location string, r store.Remotes, option string) (store.Location, error) {
	loc, err := store.ParseLocation(location)
	if err != nil {
		return loc, err
	}
	if loc.IsRemote() && r[loc.Scheme] == nil {
		return loc, NoStorage(location, loc.Scheme, option)
	}
	return loc, nil
}
