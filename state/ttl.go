package state

import (
	"errors"
	"fmt"
	"time"
)

// UpdateType says when the last-access timestamp of a TTL-enabled state value
// is refreshed. It mirrors Flink's StateTtlConfig.UpdateType.
type UpdateType int

const (
	// UpdateOnCreateAndWrite refreshes the timestamp on every write: create,
	// update, add and put. It is the default.
	UpdateOnCreateAndWrite UpdateType = iota
	// UpdateOnReadAndWrite refreshes the timestamp on every write and also on
	// every read of a value that has not expired yet.
	UpdateOnReadAndWrite
	// UpdateDisabled turns TTL off for the state.
	UpdateDisabled
)

// String returns the Flink name of the update type.
func (u UpdateType) String() string {
	switch u {
	case UpdateOnCreateAndWrite:
		return "OnCreateAndWrite"
	case UpdateOnReadAndWrite:
		return "OnReadAndWrite"
	case UpdateDisabled:
		return "Disabled"
	default:
		return fmt.Sprintf("UpdateType(%d)", int(u))
	}
}

// Visibility says whether an expired value that is still physically stored
// may be returned to the reader. It mirrors Flink's
// StateTtlConfig.StateVisibility.
type Visibility int

const (
	// NeverReturnExpired reports an expired value as absent (and removes it).
	// It is the default.
	NeverReturnExpired Visibility = iota
	// ReturnExpiredIfNotCleanedUp returns an expired value that has not been
	// cleaned up yet. The read that returns it also removes it, so it is
	// returned at most once.
	ReturnExpiredIfNotCleanedUp
)

// String returns the Flink name of the visibility.
func (v Visibility) String() string {
	switch v {
	case NeverReturnExpired:
		return "NeverReturnExpired"
	case ReturnExpiredIfNotCleanedUp:
		return "ReturnExpiredIfNotCleanedUp"
	default:
		return fmt.Sprintf("Visibility(%d)", int(v))
	}
}

// DefaultCleanupEntries is the number of entries that incremental cleanup
// examines per state access by default, as in Flink (cleanupIncrementally(5,
// false)).
const DefaultCleanupEntries = 5

// TTLConfig configures time-to-live of a state, as Flink's StateTtlConfig.
//
// Time is processing time in milliseconds read from the job's clock (Flink's
// TTL time provider), never the watermark. A value is expired when
// lastAccess + TTL <= now (inclusive). TTL has millisecond precision: a
// sub-millisecond remainder is truncated.
//
// The zero TTLConfig means "no TTL". Use TTL to obtain a config with Flink's
// defaults and adjust its fields.
type TTLConfig struct {
	// TTL is how long a value lives after its last access. It must be at
	// least one millisecond when TTL is enabled.
	TTL time.Duration
	// Update says when the last-access timestamp is refreshed.
	// UpdateDisabled turns TTL off.
	Update UpdateType
	// Visibility says whether expired, not yet cleaned-up values may be read.
	Visibility Visibility
	// CleanupEntries is the number of further entries of the state that
	// incremental cleanup examines (and drops if expired) on each access of
	// the state. Zero turns incremental cleanup off; expired values are then
	// dropped only lazily, when read.
	CleanupEntries int
	// CleanupEveryRecord also runs incremental cleanup once per processed
	// record (each time the operator sets the current key), not only when the
	// state is accessed.
	CleanupEveryRecord bool
	// DisableBackgroundCleanup turns incremental cleanup off regardless of
	// CleanupEntries, like Flink's disableCleanupInBackground(). Lazy cleanup
	// on read always stays on.
	DisableBackgroundCleanup bool
}

// TTL returns a TTL configuration with Flink's defaults: update on create and
// write, never return expired values, incremental cleanup of
// DefaultCleanupEntries entries per state access and not per record.
func TTL(d time.Duration) TTLConfig {
	return TTLConfig{
		TTL:            d,
		Update:         UpdateOnCreateAndWrite,
		Visibility:     NeverReturnExpired,
		CleanupEntries: DefaultCleanupEntries,
	}
}

// Enabled reports whether the configuration turns TTL on: it is not the zero
// TTLConfig and its update type is not UpdateDisabled.
func (c TTLConfig) Enabled() bool {
	return c.Update != UpdateDisabled && c != (TTLConfig{})
}

// IncrementalCleanup reports whether incremental cleanup runs: TTL is
// enabled, background cleanup is not disabled and CleanupEntries > 0.
func (c TTLConfig) IncrementalCleanup() bool {
	return c.Enabled() && !c.DisableBackgroundCleanup && c.CleanupEntries > 0
}

// Validate checks the configuration: known update type and visibility, a
// TTL of at least one millisecond when TTL is enabled, and a non-negative
// number of cleanup entries.
func (c TTLConfig) Validate() error {
	switch c.Update {
	case UpdateOnCreateAndWrite, UpdateOnReadAndWrite, UpdateDisabled:
	default:
		return fmt.Errorf("ttl: unknown update type %v", c.Update)
	}
	switch c.Visibility {
	case NeverReturnExpired, ReturnExpiredIfNotCleanedUp:
	default:
		return fmt.Errorf("ttl: unknown visibility %v", c.Visibility)
	}
	if c.CleanupEntries < 0 {
		return fmt.Errorf("ttl: cleanup entries must be >= 0, got %d", c.CleanupEntries)
	}
	if c.Enabled() {
		if c.TTL <= 0 {
			return fmt.Errorf("ttl: ttl must be > 0 when enabled, got %v", c.TTL)
		}
		if c.TTL < time.Millisecond {
			return errors.New("ttl: ttl must be at least 1ms (millisecond precision)")
		}
	}
	return nil
}
