package state

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"reflect"
	"slices"

	"github.com/weirstream/weir/state"
)

// Snapshots of keyed state are taken and restored per key group, so that
// key groups can move between subtasks when a job is rescaled. The binary
// format is documented in FORMAT.md.
//
// Lifecycle on restore: build the backend for the new key-group range,
// call RestoreKeyGroup for each key group of the range that has a
// snapshot, then register the states (the operator's Open). Restored
// entries of a state that is not registered yet are kept as raw bytes and
// decoded, with the codecs of the registration, when it is registered; a
// state registered before the restore is decoded at once. Restored states
// that are never registered are written unchanged into later snapshots.

// ErrCorrupt is wrapped by the errors of RestoreKeyGroup (and of the timer
// service's restore) that report malformed input: a bad checksum, a
// truncated or inconsistent structure. Codec errors met while decoding
// values are reported without it.
var ErrCorrupt = errors.New("corrupt snapshot")

const (
	// snapshotMagic starts every key-group snapshot of keyed state.
	snapshotMagic = "WKGS"
	// snapshotVersion is the version of the format written: 2 records
	// schemas (schema.go); 1 recorded type names and is still read.
	snapshotVersion = 2
	// flagTTL marks a state whose entries carry TTL timestamps.
	flagTTL = 1
	// flagNames marks a state whose stored types are recorded by name, as
	// version 1 did (a restored version-1 state written again without
	// being registered).
	flagNames = 2
)

// castagnoli is the CRC-32C table of the snapshot checksums.
var castagnoli = crc32.MakeTable(crc32.Castagnoli)

func corruptf(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrCorrupt, fmt.Sprintf(format, args...))
}

// codecOr returns c, or DefaultCodec[T]() if c is nil.
func codecOr[T any](c state.Codec[T]) state.Codec[T] {
	if c != nil {
		return c
	}
	return DefaultCodec[T]()
}

// storedTypes returns the names of the types a snapshot of a state of kind
// with the registration types holds: the namespace and the value types
// (for aggregating state the accumulator, not the input and result).
func storedTypes(kind stateKind, types []reflect.Type) []string {
	if kind == kindAggregating && len(types) == 4 {
		types = []reflect.Type{types[0], types[2]}
	}
	names := make([]string, len(types))
	for i, t := range types {
		names[i] = t.String()
	}
	return names
}

// storedTypeCount is the number of stored types of each kind.
func storedTypeCount(kind stateKind) int {
	if kind == kindMap {
		return 3
	}
	return 2
}

// pendingState is a restored state that is not registered yet: the raw
// entries of each restored key group.
type pendingState struct {
	kind   stateKind
	types  []string
	names  bool // types are type names (version 1), not schemas
	ts     bool // entries carry TTL timestamps
	groups map[int]rawGroup
	count  int // entries in all groups
}

// rawGroup is the payload of one state in one key group.
type rawGroup struct {
	count   int
	payload []byte
}

// SetKeyCodec sets the codec of the backend's keys in snapshots; nil
// restores the default, DefaultCodec[K](). Set it before the first
// snapshot or restore.
func (b *Backend[K]) SetKeyCodec(c state.Codec[K]) { b.keyCodec, b.keySchemaText = c, "" }

func (b *Backend[K]) codecForKeys() state.Codec[K] {
	if b.keyCodec == nil {
		b.keyCodec = DefaultCodec[K]()
	}
	return b.keyCodec
}

func keyTypeName[K any]() string { return reflect.TypeFor[K]().String() }

// keySchema returns the schema of the backend's keys.
func (b *Backend[K]) keySchema() string {
	if b.keySchemaText == "" {
		b.keySchemaText = SchemaOf(b.codecForKeys())
	}
	return b.keySchemaText
}

// SnapshotKeyGroup returns a snapshot of every state's entries in key
// group kg, in the format of FORMAT.md. See AppendKeyGroupSnapshot.
func (b *Backend[K]) SnapshotKeyGroup(kg int) ([]byte, error) {
	return b.AppendKeyGroupSnapshot(nil, kg)
}

// AppendKeyGroupSnapshot appends a snapshot of key group kg to dst and
// returns the extended slice: for every state with entries in the key
// group, its name, kind, stored types and entries (key, namespace, value
// and TTL timestamps), followed by a CRC-32C checksum. Restored states not
// registered yet are included as they were restored.
//
// The snapshot is taken synchronously and reflects the state exactly as it
// is at the call; it reads the state and changes nothing (expired TTL
// entries are written with their timestamps and expire after a restore as
// before). Its cost is one pass over the key group's entries, encoding
// each; the result is independent of the backend, so it can be written out
// asynchronously while processing goes on. On error, dst is returned
// unextended.
//
// It must be called on the goroutine that uses the backend.
func (b *Backend[K]) AppendKeyGroupSnapshot(dst []byte, kg int) ([]byte, error) {
	if kg < b.first || kg > b.last {
		return dst, fmt.Errorf("state: snapshot of key group %d outside the backend's range [%d, %d]", kg, b.first, b.last)
	}
	idx := kg - b.first
	kc := b.codecForKeys()
	names := make([]string, 0, len(b.states)+len(b.pending))
	for name, r := range b.states {
		if r.ops.groupLen(idx) > 0 {
			names = append(names, name)
		}
	}
	for name, p := range b.pending {
		if _, ok := p.groups[idx]; ok {
			names = append(names, name)
		}
	}
	slices.Sort(names)

	start := len(dst)
	dst = appendKeyGroupHeader(dst, kg, b.keySchema(), len(names))
	for _, name := range names {
		if r := b.states[name]; r != nil {
			n := r.ops.groupLen(idx)
			dst = appendStateHeader(dst, name, r.kind, r.ttl.Enabled(), false, r.schemas, n)
			at := len(dst)
			dst = binary.LittleEndian.AppendUint64(dst, 0)
			var err error
			if dst, err = r.ops.appendGroup(dst, idx, kc); err != nil {
				return dst[:start], fmt.Errorf("state: snapshot of key group %d: state %q: %w", kg, name, err)
			}
			binary.LittleEndian.PutUint64(dst[at:], uint64(len(dst)-at-8))
			continue
		}
		p := b.pending[name]
		g := p.groups[idx]
		dst = appendStateHeader(dst, name, p.kind, p.ts, p.names, p.types, g.count)
		dst = binary.LittleEndian.AppendUint64(dst, uint64(len(g.payload)))
		dst = append(dst, g.payload...)
	}
	return binary.LittleEndian.AppendUint32(dst, crc32.Checksum(dst[start:], castagnoli)), nil
}

func appendStateHeader(dst []byte, name string, kind stateKind, ts, names bool, types []string, count int) []byte {
	dst = appendString(dst, name)
	var flags byte
	if ts {
		flags |= flagTTL
	}
	if names {
		flags |= flagNames
	}
	dst = append(dst, byte(kind), flags)
	dst = binary.AppendUvarint(dst, uint64(len(types)))
	for _, t := range types {
		dst = appendString(dst, t)
	}
	return binary.AppendUvarint(dst, uint64(count))
}

// parsedState is one state of a parsed key-group snapshot.
type parsedState struct {
	name    string
	kind    stateKind
	ts      bool
	names   bool // types are type names (version 1)
	types   []string
	count   int
	payload []byte
}

// reader reads the framing of a snapshot; every method fails on truncated
// or out-of-range input instead of panicking.
type reader struct {
	b []byte
}

func (r *reader) uvarint(what string) (uint64, error) {
	v, rest, err := readUvarint(r.b)
	if err != nil {
		return 0, corruptf("%s: %v", what, err)
	}
	r.b = rest
	return v, nil
}

// count reads a uvarint that must not exceed max.
func (r *reader) count(what string, max uint64) (int, error) {
	v, err := r.uvarint(what)
	if err != nil {
		return 0, err
	}
	if v > max {
		return 0, corruptf("%s %d exceeds %d", what, v, max)
	}
	return int(v), nil
}

func (r *reader) byte(what string) (byte, error) {
	if len(r.b) == 0 {
		return 0, corruptf("%s: %v", what, errTruncated)
	}
	c := r.b[0]
	r.b = r.b[1:]
	return c, nil
}

func (r *reader) string(what string) (string, error) {
	b, rest, err := readBytes(r.b)
	if err != nil {
		return "", corruptf("%s: %v", what, err)
	}
	r.b = rest
	return string(b), nil
}

func (r *reader) bytes(what string, n uint64) ([]byte, error) {
	if n > uint64(len(r.b)) {
		return nil, corruptf("%s: %d bytes announced, %d left", what, n, len(r.b))
	}
	b := r.b[:n:n]
	r.b = r.b[n:]
	return b, nil
}

// keyType identifies the type of a backend's keys: its name, which
// version 1 of the format recorded, and its schema, which version 2 does.
type keyType struct{ name, schema string }

// checkFrame verifies the checksum and the header of a snapshot (magic,
// version, key group and the key type) and returns a reader positioned
// after the header, limited to the bytes before the checksum, and the
// format version.
func checkFrame(data []byte, magic string, kg int, kt keyType) (*reader, int, error) {
	if len(data) < len(magic)+4 {
		return nil, 0, corruptf("%d bytes are too short for a snapshot", len(data))
	}
	body, sum := data[:len(data)-4], binary.LittleEndian.Uint32(data[len(data)-4:])
	if string(body[:len(magic)]) != magic {
		return nil, 0, corruptf("bad magic %q, want %q", body[:len(magic)], magic)
	}
	if got := crc32.Checksum(body, castagnoli); got != sum {
		return nil, 0, corruptf("checksum mismatch: stored %08x, computed %08x", sum, got)
	}
	r := &reader{b: body[len(magic):]}
	v, err := r.uvarint("version")
	if err != nil {
		return nil, 0, err
	}
	if v != 1 && v != snapshotVersion {
		return nil, 0, fmt.Errorf("unsupported snapshot version %d (this build reads versions 1 and %d)", v, snapshotVersion)
	}
	g, err := r.uvarint("key group")
	if err != nil {
		return nil, 0, err
	}
	if g != uint64(kg) {
		return nil, 0, fmt.Errorf("the snapshot is of key group %d", g)
	}
	k, err := r.string("key type")
	if err != nil {
		return nil, 0, err
	}
	if v == 1 {
		if k != kt.name {
			return nil, 0, &IncompatibleError{What: "key", Reason: "the key type changed", Old: k, New: kt.name, Hint: hintKey}
		}
	} else if err := CheckExact("key", k, kt.schema); err != nil {
		return nil, 0, err
	}
	return r, int(v), nil
}

// maxStoredTypeCount bounds the stored type names of a state.
const maxStoredTypeCount = 3

// parseKeyGroup checks the checksum and framing of a key-group snapshot
// and returns its states. Payloads alias data.
func parseKeyGroup(data []byte, kg int, kt keyType) ([]parsedState, error) {
	r, version, err := checkFrame(data, snapshotMagic, kg, kt)
	if err != nil {
		return nil, err
	}
	n, err := r.count("state count", uint64(len(r.b)))
	if err != nil {
		return nil, err
	}
	states := make([]parsedState, 0, n)
	seen := make(map[string]bool, n)
	for i := range n {
		var ps parsedState
		if ps.name, err = r.string(fmt.Sprintf("state %d: name", i)); err != nil {
			return nil, err
		}
		if ps.name == "" || seen[ps.name] {
			return nil, corruptf("state %d: empty or repeated name %q", i, ps.name)
		}
		seen[ps.name] = true
		what := fmt.Sprintf("state %q", ps.name)
		kind, err := r.byte(what + ": kind")
		if err != nil {
			return nil, err
		}
		ps.kind = stateKind(kind)
		if ps.kind < kindValue || ps.kind > kindAggregating {
			return nil, corruptf("%s: unknown kind %d", what, kind)
		}
		flags, err := r.byte(what + ": flags")
		if err != nil {
			return nil, err
		}
		known := byte(flagTTL | flagNames)
		if version == 1 {
			known = flagTTL
		}
		if flags&^known != 0 {
			return nil, corruptf("%s: unknown flags %#x", what, flags)
		}
		ps.ts = flags&flagTTL != 0
		ps.names = version == 1 || flags&flagNames != 0
		nt, err := r.count(what+": type count", maxStoredTypeCount)
		if err != nil {
			return nil, err
		}
		if nt != storedTypeCount(ps.kind) {
			return nil, corruptf("%s: %d stored types for %v state", what, nt, ps.kind)
		}
		ps.types = make([]string, nt)
		for j := range ps.types {
			if ps.types[j], err = r.string(what + ": type"); err != nil {
				return nil, err
			}
		}
		count, err := r.uvarint(what + ": entry count")
		if err != nil {
			return nil, err
		}
		if len(r.b) < 8 {
			return nil, corruptf("%s: payload length: %v", what, errTruncated)
		}
		size := binary.LittleEndian.Uint64(r.b)
		r.b = r.b[8:]
		if ps.payload, err = r.bytes(what+": payload", size); err != nil {
			return nil, err
		}
		// Every entry takes at least one byte unless all its parts have
		// zero size, and then a key group holds one entry at most.
		if count == 0 || (count > size && count > 1) {
			return nil, corruptf("%s: %d entries in %d bytes", what, count, size)
		}
		ps.count = int(count)
		states = append(states, ps)
	}
	if len(r.b) != 0 {
		return nil, corruptf("%d unexpected bytes after the last state", len(r.b))
	}
	return states, nil
}

// resolve checks that a state snapshotted as kind with stored types
// (type names if names, else schemas) and timestamps ts can be restored
// into the registration r, and returns the cells that decode its entries:
// nil for the table's own, or a reader of older schemas (ReaderFor).
func (r *registration[K]) resolve(name string, kind stateKind, types []string, names, ts bool) (any, error) {
	if names {
		return nil, Compatible(name, byte(kind), types, ts, byte(r.kind), r.names, r.ttl.Enabled())
	}
	return ResolveStored(name, byte(kind), types, ts, byte(r.kind), r.schemas, r.ttl.Enabled(), r.ops.readerFor)
}

// ResolveStored checks that the state name, snapshotted as kind with the
// stored schemas types (namespace first) and (if ts) access timestamps,
// can be restored into a registration of wantKind with the schemas want
// and TTL on if ttl, and returns what reader(types[1:]) returns when the
// value schemas differ (nil when they are equal). The kinds must be equal,
// the namespaces exactly so; value schemas are resolved by the rules of
// resolve.go. Errors of schemas wrap ErrIncompatible and name the state
// and the part of it.
func ResolveStored(name string, kind byte, types []string, ts bool, wantKind byte, want []string, ttl bool,
	reader func(old []string) (any, int, error)) (any, error) {
	if kind != wantKind {
		return nil, &IncompatibleError{State: name, Reason: fmt.Sprintf("it was saved as %v state and the job has %v state", stateKind(kind), stateKind(wantKind)),
			Hint: "A state's kind cannot change; give the new state another name (the old one is then not restored: restore with weir.AllowNonRestoredState() to drop it)"}
	}
	if len(types) != len(want) {
		return nil, corruptf("state %q: %d stored types, want %d", name, len(types), len(want))
	}
	if !ts && ttl {
		return nil, fmt.Errorf("state %q was snapshotted without TTL; cannot restore it with TTL enabled", name)
	}
	if err := CheckExact("namespace", types[0], want[0]); err != nil {
		return nil, named(err, name, "")
	}
	if slices.Equal(types[1:], want[1:]) {
		return nil, nil
	}
	cells, i, err := reader(types[1:])
	if err != nil {
		return nil, named(err, name, partName(stateKind(kind), i))
	}
	return cells, nil
}

// partName names stored type i (after the namespace) of a state of kind.
func partName(kind stateKind, i int) string {
	switch kind {
	case kindList:
		return "list element"
	case kindMap:
		if i == 0 {
			return "map key"
		}
		return "map value"
	case kindAggregating:
		return "accumulator"
	}
	return "value"
}

// named fills the state and part names of an IncompatibleError.
func named(err error, state, what string) error {
	var ie *IncompatibleError
	if errors.As(err, &ie) {
		c := *ie
		c.State = state
		if c.What == "" {
			c.What = what
		}
		return &c
	}
	return fmt.Errorf("state %q: %w", state, err)
}

// RestoreKeyGroup restores the snapshot data of key group kg, taken by
// SnapshotKeyGroup of a backend with the same key type and any key-group
// range, into this backend, whose range must contain kg. Each key group
// can be restored once, and the registered states must have no entries in
// it.
//
// The checksum and structure of data are verified first; on any error
// nothing is restored. Entries of registered states are decoded at once.
// Entries of states that are not registered yet are kept as they are (data
// is retained, so the caller must not modify it afterwards) and decoded
// when the state is registered; a registration whose kind, types or codecs
// cannot read them fails with an error.
//
// A state snapshotted with TTL may be restored without TTL (the timestamps
// are dropped), not the other way round. Errors that report malformed data
// wrap ErrCorrupt.
func (b *Backend[K]) RestoreKeyGroup(kg int, data []byte) error {
	if err := b.restoreKeyGroup(kg, data); err != nil {
		return fmt.Errorf("state: restore of key group %d: %w", kg, err)
	}
	return nil
}

func (b *Backend[K]) restoreKeyGroup(kg int, data []byte) error {
	if kg < b.first || kg > b.last {
		return fmt.Errorf("key group outside the backend's range [%d, %d]", b.first, b.last)
	}
	idx := kg - b.first
	if b.restored != nil && b.restored[idx] {
		return errors.New("key group already restored")
	}
	states, err := parseKeyGroup(data, kg, keyType{keyTypeName[K](), b.keySchema()})
	if err != nil {
		return err
	}
	for name, r := range b.states {
		if r.ops.groupLen(idx) > 0 {
			return fmt.Errorf("state %q already has entries in the key group", name)
		}
	}
	kc := b.codecForKeys()
	var installs []func()
	for _, ps := range states {
		if r := b.states[ps.name]; r != nil {
			cells, err := r.resolve(ps.name, ps.kind, ps.types, ps.names, ps.ts)
			if err != nil {
				return err
			}
			inst, err := r.ops.decodeGroup(idx, ps.payload, ps.count, ps.ts, kc, cells)
			if err != nil {
				return fmt.Errorf("state %q: %w", ps.name, err)
			}
			installs = append(installs, inst)
			continue
		}
		if p := b.pending[ps.name]; p != nil && (p.kind != ps.kind || !slices.Equal(p.types, ps.types) || p.ts != ps.ts || p.names != ps.names) {
			return fmt.Errorf("state %q: snapshot as %v state of %v (TTL %v) disagrees with another key group's, %v state of %v (TTL %v)",
				ps.name, ps.kind, ps.types, ps.ts, p.kind, p.types, p.ts)
		}
	}

	for _, inst := range installs {
		inst()
	}
	for _, ps := range states {
		if b.states[ps.name] != nil {
			continue
		}
		if b.pending == nil {
			b.pending = make(map[string]*pendingState)
		}
		p := b.pending[ps.name]
		if p == nil {
			p = &pendingState{kind: ps.kind, types: ps.types, names: ps.names, ts: ps.ts, groups: make(map[int]rawGroup)}
			b.pending[ps.name] = p
		}
		p.groups[idx] = rawGroup{count: ps.count, payload: ps.payload}
		p.count += ps.count
	}
	if b.restored == nil {
		b.restored = make([]bool, b.last-b.first+1)
	}
	b.restored[idx] = true
	return nil
}

// restorePending decodes the restored entries of state name, if any, into
// the new, empty table of r. On error the table is left empty and the
// restored entries stay pending.
func (b *Backend[K]) restorePending(name string, r *registration[K]) error {
	p := b.pending[name]
	if p == nil {
		return nil
	}
	cells, err := r.resolve(name, p.kind, p.types, p.names, p.ts)
	if err != nil {
		return err
	}
	kc := b.codecForKeys()
	installs := make([]func(), 0, len(p.groups))
	for idx, g := range p.groups {
		inst, err := r.ops.decodeGroup(idx, g.payload, g.count, p.ts, kc, cells)
		if err != nil {
			return fmt.Errorf("state %q: restore of key group %d: %w", name, b.first+idx, err)
		}
		installs = append(installs, inst)
	}
	for _, inst := range installs {
		inst()
	}
	delete(b.pending, name)
	return nil
}

// appendKeyGroupHeader writes the header of a key group's snapshot: magic,
// version, key group, the keys' schema and number of states (FORMAT.md).
func appendKeyGroupHeader(dst []byte, kg int, keySchema string, states int) []byte {
	dst = append(dst, snapshotMagic...)
	dst = binary.AppendUvarint(dst, snapshotVersion)
	dst = binary.AppendUvarint(dst, uint64(kg))
	dst = appendString(dst, keySchema)
	return binary.AppendUvarint(dst, uint64(states))
}
