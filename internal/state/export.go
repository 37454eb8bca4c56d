package state

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"slices"
)

// This file exports the framing of key-group snapshots (FORMAT.md) so that
// another keyed-state backend (internal/state/kvstate) can write and
// read the same bytes as Backend.SnapshotKeyGroup and RestoreKeyGroup, and
// each backend can restore the other's snapshots.

// Kind numbers of the state primitives in key-group snapshots (FORMAT.md).
const (
	KindValue       = byte(kindValue)
	KindList        = byte(kindList)
	KindMap         = byte(kindMap)
	KindReducing    = byte(kindReducing)
	KindAggregating = byte(kindAggregating)
)

// KeyGroupState is one state of a key-group snapshot: its name, kind, the
// names of its stored types, whether its entries carry TTL timestamps, and
// its entry count and payload (the entries, encoded as in FORMAT.md).
type KeyGroupState struct {
	// Name is the descriptor name.
	Name string
	// Kind is one of KindValue ... KindAggregating.
	Kind byte
	// TTL says whether the entries carry TTL timestamps.
	TTL bool
	// Types are the stored types' schemas (namespace first; see FORMAT.md),
	// or their names if Names.
	Types []string
	// Names says that Types are type names, as version 1 of the format
	// recorded them, rather than schemas.
	Names bool
	// Count is the number of entries in Payload; at least 1.
	Count int
	// Payload holds the entries: key, namespace and body each.
	Payload []byte
}

// AppendKeyGroupFrame appends a key-group snapshot of key group kg with
// keys of the schema keySchema (SchemaOf the key codec) holding states to
// dst: header, the states in ascending name order (states is sorted in
// place) and the checksum. It is the format Backend.SnapshotKeyGroup
// writes.
func AppendKeyGroupFrame(dst []byte, kg int, keySchema string, states []KeyGroupState) ([]byte, error) {
	slices.SortFunc(states, func(a, b KeyGroupState) int {
		switch {
		case a.Name < b.Name:
			return -1
		case a.Name > b.Name:
			return 1
		}
		return 0
	})
	for i, s := range states {
		if s.Name == "" || (i > 0 && states[i-1].Name == s.Name) {
			return dst, fmt.Errorf("state: key-group snapshot: empty or repeated state name %q", s.Name)
		}
		if s.Count < 1 {
			return dst, fmt.Errorf("state: key-group snapshot: state %q has no entries", s.Name)
		}
		if s.Kind < KindValue || s.Kind > KindAggregating || len(s.Types) != storedTypeCount(stateKind(s.Kind)) {
			return dst, fmt.Errorf("state: key-group snapshot: state %q has kind %d and %d types", s.Name, s.Kind, len(s.Types))
		}
	}
	start := len(dst)
	dst = appendKeyGroupHeader(dst, kg, keySchema, len(states))
	for _, s := range states {
		dst = appendStateHeader(dst, s.Name, stateKind(s.Kind), s.TTL, s.Names, s.Types, s.Count)
		dst = binary.LittleEndian.AppendUint64(dst, uint64(len(s.Payload)))
		dst = append(dst, s.Payload...)
	}
	return binary.LittleEndian.AppendUint32(dst, crc32.Checksum(dst[start:], castagnoli)), nil
}

// ParseKeyGroupFrame verifies the checksum and framing of a key-group
// snapshot of key group kg with keys of the Go type named keyName and of
// the schema keySchema (version 1 of the format recorded the name, version
// 2 the schema) and returns its states; payloads alias data. Errors for
// malformed input wrap ErrCorrupt, as those of RestoreKeyGroup; a key type
// that differs wraps ErrIncompatible.
func ParseKeyGroupFrame(data []byte, kg int, keyName, keySchema string) ([]KeyGroupState, error) {
	ps, err := parseKeyGroup(data, kg, keyType{keyName, keySchema})
	if err != nil {
		return nil, err
	}
	out := make([]KeyGroupState, len(ps))
	for i, p := range ps {
		out[i] = KeyGroupState{Name: p.name, Kind: byte(p.kind), TTL: p.ts, Names: p.names, Types: p.types, Count: p.count, Payload: p.payload}
	}
	return out, nil
}

// KindName returns the name of a kind number ("value", "list", ...).
func KindName(kind byte) string { return stateKind(kind).String() }

// Compatible checks that the state name, snapshotted by version 1 of the
// format as kind with stored type names types and (if ts) access
// timestamps, can be restored into a registration of wantKind and
// wantTypes (names), with TTL on if ttl: the kinds and names must be equal
// (version 1 recorded no more), and a state snapshotted without TTL cannot
// be restored with TTL enabled (the other way round drops the timestamps).
// Both backends check restores of version-1 snapshots with it;
// ResolveStored checks those of version 2.
func Compatible(name string, kind byte, types []string, ts bool, wantKind byte, wantTypes []string, ttl bool) error {
	if kind != wantKind {
		return fmt.Errorf("state %q was snapshotted as %v state; cannot restore it as %v state", name, stateKind(kind), stateKind(wantKind))
	}
	if !slices.Equal(types, wantTypes) {
		return fmt.Errorf("state %q was snapshotted with types %v; cannot restore it with types %v", name, types, wantTypes)
	}
	if !ts && ttl {
		return fmt.Errorf("state %q was snapshotted without TTL; cannot restore it with TTL enabled", name)
	}
	return nil
}

// ErrTruncated reports input that ends inside a value.
var ErrTruncated = errTruncated

// ReadUvarint decodes a uvarint from the front of src and returns it and
// the rest of src.
func ReadUvarint(src []byte) (uint64, []byte, error) { return readUvarint(src) }

// ReadVarint decodes a varint from the front of src and returns it and the
// rest of src.
func ReadVarint(src []byte) (int64, []byte, error) { return readVarint(src) }

// ReadBytes reads a uvarint length and that many bytes (aliasing src) from
// the front of src and returns them and the rest of src.
func ReadBytes(src []byte) ([]byte, []byte, error) { return readBytes(src) }
