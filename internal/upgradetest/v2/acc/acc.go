// Package acc is version 2 of the upgrade tests' types: Key changed from
// int64 to uint64.
package acc

// Key is a named key type, now over uint64.
type Key uint64
