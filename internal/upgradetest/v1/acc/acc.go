// Package acc is version 1 of the upgrade tests' types.
package acc

// Key is a named key type over int64.
type Key int64
