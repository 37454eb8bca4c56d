// Package savepoint reads and writes Weir savepoints offline, as Flink's
// state processor API (SavepointReader, SavepointWriter): the keyed,
// broadcast and other operator state of a savepoint (or retained
// checkpoint) is read into Go values by operator UID and state name, and a
// new savepoint is written from Go values, either from scratch (bootstrap a
// job's state from a table) or from an existing one (read, change, write).
// A job started from the written savepoint with weir.RestoreFromSavepoint
// restores it as if it had written it itself.
//
// # Reading
//
// Read opens a savepoint; Savepoint.Operators lists its operators and their
// keyed states. ReadValueState, ReadListState, ReadMapState,
// ReadReducingState and ReadAggregatingState read the keyed state of a
// Process or KeyedCoProcess function (or of a keyed broadcast function)
// into an iterator over (key, value) pairs:
//
//	sp, err := savepoint.Read(ctx, "/savepoints/savepoint-7")
//	accs, err := savepoint.ReadValueState[string, Acc](sp, "counter", "acc")
//	for key, acc := range accs { ... }
//
// The state goes through the engine's own restore: the key groups are
// restored into a keyed state backend and the state is registered with the
// descriptor the type parameters (and any state.Option, such as
// state.WithCodec) make, exactly as a job's function registers it. So the
// key type must be the one the job keyed by (named types included), and the
// value type is resolved against the schema the savepoint recorded by the
// rules of a job's restore: struct fields are matched by name (added fields
// read as zero, removed ones are dropped), and a type the recorded schema
// cannot be read as is refused with an *IncompatibleError (which wraps
// ErrIncompatible). All decoding happens in the Read... call, so an error
// is returned there and the iterator it returns cannot fail. The iterator
// reads memory only and may be ranged over again, but not by two goroutines
// at once (each Read... call returns one of its own). Values are read as
// stored: a state with TTL is read with its expired entries unless a
// state.WithTTL is given, which then hides the entries that have expired by
// the current processing time (the wall clock, or WithClock's).
//
// ReadBroadcastState reads a broadcast state (the copy of the first
// subtask; every subtask holds the same).
//
// # Writing
//
// New starts an empty savepoint for a max parallelism (the number of key
// groups; the job must use the same, weir.WithMaxParallelism), and
// FromSavepoint one that holds every operator of an existing savepoint
// unchanged. WithOperator sets the whole state of an operator from
// transformations: ValueState, ListState, MapState, ReducingState and
// AggregatingState for keyed state (from any iterator of (key, value)
// pairs: maps.All of a Go map, a function, or what ReadValueState
// returned), BroadcastState for broadcast state. Keys are assigned to key
// groups with the hash the engine's KeyBy uses and each key group is
// written through the engine's own snapshot code (keyed state backend,
// per-key-group frame with an empty timer section, checkpoint manifest), so
// the job cannot tell the savepoint from one it took. Write stores the
// result as a savepoint directory.
//
// What is not supported: the keyed state of windows, window and interval
// joins (they keep their state in their own formats, which CopyOperator and
// FromSavepoint copy unchanged but the Read... functions do not read),
// operator state other than broadcast state (Weir's user functions have no
// operator list state; source positions and sink transactions are copied
// unchanged), timers (written keyed state has none; WithOperator drops an
// operator's timers), and the incremental checkpoints of the Pebble state
// backend (take a savepoint: savepoints are always full).
package savepoint
