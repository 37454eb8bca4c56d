// Package kvstate is Weir's keyed-state backend on an ordered key-value
// store (a kv.Store of package github.com/weirstream/weir/state/kv), for
// keyed state larger than memory. It offers the same state primitives,
// with the same semantics, as the heap backend (internal/state): the
// handles implement the interfaces of the public state package. The store
// sees bytes only; the Pebble store is in package state/pebble, and any
// other kv.Opener works the same way.
//
// One Backend holds the keyed state of one operator in one subtask, for a
// contiguous range of key groups, in one store in a directory. Every
// entry is a key that starts with its key group (two bytes, big endian),
// so a key group is a contiguous key range. The layout is in
// state/kv/FORMAT.md.
//
// Snapshots come in two forms:
//
//   - SnapshotKeyGroup / RestoreKeyGroup write and read the heap backend's
//     portable per-key-group format (internal/state/FORMAT.md), byte for
//     byte, so either backend restores the other's snapshots and key groups
//     can move between subtasks (rescaling);
//   - Stage / RestoreImages are the two halves of the Weir runtime's
//     incremental job checkpoints, for stores that are kv.Checkpointers:
//     Stage takes the store's checkpoint at the barrier and names every
//     immutable file for sharing, so the checkpoint store, which uploads it
//     later, stores such a file once for all the checkpoints that have it;
//     RestoreImages lays out one old store, dropping the key groups outside
//     the new range, and merges in those of others (a restore at another
//     parallelism). See staged.go.
//
// Values are serialized on every write and deserialized on every read with
// the descriptor's codec (state.WithCodec) or internal/state's
// DefaultCodec. TTL follows the heap backend (Flink's TtlUtils): every
// update type and visibility is supported, with expired values dropped
// when they are read. Incremental cleanup (TTLConfig.CleanupEntries,
// CleanupEveryRecord) is accepted and not performed, as Flink's RocksDB
// backend ignores cleanupIncrementally; expired entries that are never read
// stay on disk and in snapshots, and expire after a restore by the same
// rule.
//
// The state interfaces return no errors: an error of the store or of a
// codec while a handle reads or writes panics with that error (operators
// turn the panic into a task failure). A Backend and its handles belong to
// one goroutine.
package kvstate

import (
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"reflect"
	"slices"
	"strings"

	"github.com/weirstream/weir/internal/clock"
	istate "github.com/weirstream/weir/internal/state"
	"github.com/weirstream/weir/state"
	"github.com/weirstream/weir/state/kv"
)

// MaxKeyGroup is the largest key group the backend stores; the key-group
// prefix 0xFFFF is reserved for the backend's metadata.
const MaxKeyGroup = 0xFFFE

// Options configures a Backend.
type Options struct {
	// Store opens the backend's store (and, for RestoreImages, the stores
	// of the checkpointed databases it merges). Required.
	Store kv.Opener
	// OnFault, if set, is called once with the store's fault (see
	// kv.Options.OnFault). It must not block or use the backend; the
	// owner should stop using the backend and Discard it (the runtime
	// fails the owning task).
	OnFault func(error)
}

// Backend holds the keyed state of one operator in one subtask, for key
// groups first..last (inclusive), in one kv.Store.
type Backend[K comparable] struct {
	db          kv.Store
	opener      kv.Opener
	dir         string
	first, last int
	clk         clock.Clock
	kc          state.Codec[K]
	keyType     string

	key    K
	kg     int
	keyBuf []byte // encoding of the current key
	keySet bool

	states  map[string]*registration // registered states
	meta    map[string]*stateMeta    // every state that has an id (persisted)
	nextID  uint16
	pending map[string]*pendingInfo // restored, not yet registered states

	restored []bool // key groups restored, by index

	// Incremental checkpoints (staged.go).
	instance string            // random name prefix of the shared files this DB writes
	uploaded map[string]string // local immutable file name -> shared file name
	staged   []*Staged         // staged checkpoints not yet discarded (staged.go)
}

// Open opens the backend's store in dir with opts.Store, creating dir and
// the store if needed, for the key groups first..last inclusive. clk is
// the processing-time source of state TTL.
//
// An existing store keeps its state (a restart from the same directory,
// or RestoreImages): its key type must be K, and entries of key groups
// outside first..last are deleted. Close the backend to release the
// store.
func Open[K comparable](dir string, first, last int, clk clock.Clock, opts Options) (*Backend[K], error) {
	if first < 0 || last < first || last > MaxKeyGroup {
		return nil, fmt.Errorf("kvstate: invalid key-group range [%d, %d]", first, last)
	}
	if clk == nil {
		return nil, errors.New("kvstate: nil clock")
	}
	if opts.Store == nil {
		return nil, errors.New("kvstate: no store")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("kvstate: %w", err)
	}
	db, err := opts.Store.Open(dir, kv.Options{OnFault: opts.OnFault})
	if err != nil {
		return nil, err
	}
	b := &Backend[K]{
		db: db, opener: opts.Store, dir: dir, first: first, last: last, clk: clk,
		kc:       istate.DefaultCodec[K](),
		keyType:  reflect.TypeFor[K]().String(),
		kg:       first,
		states:   make(map[string]*registration),
		meta:     make(map[string]*stateMeta),
		nextID:   1,
		pending:  make(map[string]*pendingInfo),
		instance: randomName(),
		uploaded: make(map[string]string),
	}
	if err := b.load(); err != nil {
		_ = db.Close()
		return nil, err
	}
	if err := b.Err(); err != nil {
		_ = db.Close()
		return nil, err
	}
	return b, nil
}

// deleteRange deletes the keys in [lo, hi) if there are any.
func (b *Backend[K]) deleteRange(lo, hi []byte) error {
	it, err := b.db.NewIter(lo, hi)
	if err != nil {
		return err
	}
	any := it.First()
	if err := it.Close(); err != nil {
		return err
	}
	if !any {
		return nil
	}
	return b.db.DeleteRange(lo, hi)
}

// Close flushes the store and closes it. The backend and its handles must
// not be used afterwards; the files stay in the directory, and Open finds
// the state again.
func (b *Backend[K]) Close() error {
	b.discardStaged()
	if b.db == nil {
		return nil
	}
	var err error
	if b.Err() == nil {
		err = b.db.Flush()
	}
	if cerr := b.db.Close(); err == nil {
		err = cerr
	}
	b.db = nil
	return err
}

// Discard closes the store without flushing it and removes its
// directory: the end of an operator whose state lives on in checkpoints.
func (b *Backend[K]) Discard() error {
	b.discardStaged()
	var err error
	if b.db != nil {
		err = b.db.Close()
		b.db = nil
	}
	if rerr := os.RemoveAll(b.dir); err == nil {
		err = rerr
	}
	return err
}

// Dir returns the directory of the backend's database.
func (b *Backend[K]) Dir() string { return b.dir }

// KeyGroupRange returns the first and last (inclusive) key group of the
// backend.
func (b *Backend[K]) KeyGroupRange() (first, last int) { return b.first, b.last }

// SetKeyCodec sets the codec of the backend's keys, in the database and in
// snapshots; nil restores the default, DefaultCodec[K](). Set it before
// any state is written or restored.
func (b *Backend[K]) SetKeyCodec(c state.Codec[K]) {
	if c == nil {
		c = istate.DefaultCodec[K]()
	}
	b.kc = c
	if b.keySet {
		b.SetCurrentKey(b.key, b.kg)
	}
}

// SetCurrentKey makes key, which belongs to keyGroup, the current key of all
// state handles of the backend. It panics if keyGroup is outside the
// backend's range or the key cannot be encoded.
func (b *Backend[K]) SetCurrentKey(key K, keyGroup int) {
	if keyGroup < b.first || keyGroup > b.last {
		panic(fmt.Sprintf("kvstate: key group %d outside the backend's range [%d, %d]", keyGroup, b.first, b.last))
	}
	buf, err := b.kc.Append(b.keyBuf[:0], key)
	if err != nil {
		panic(fmt.Errorf("kvstate: encoding key: %w", err))
	}
	b.key, b.kg, b.keyBuf, b.keySet = key, keyGroup, buf, true
}

// CurrentKey returns the current key (the zero K before the first
// SetCurrentKey).
func (b *Backend[K]) CurrentKey() K { return b.key }

// CurrentKeyGroup returns the key group of the current key.
func (b *Backend[K]) CurrentKeyGroup() int { return b.kg }

// Flush makes every write so far part of the store's files.
func (b *Backend[K]) Flush() error { return b.db.Flush() }

// Compact compacts the store if it is a kv.Compacter, and flushes it
// otherwise.
func (b *Backend[K]) Compact() error {
	if c, ok := b.db.(kv.Compacter); ok {
		return c.Compact()
	}
	return b.db.Flush()
}

// Err returns the store's fault (kv.Faulter), or nil. A backend with a
// fault must not be used for state any more; Discard it.
func (b *Backend[K]) Err() error {
	if f, ok := b.db.(kv.Faulter); ok {
		return f.Err()
	}
	return nil
}

// --- keys ---

const (
	metaPrefix0, metaPrefix1 = 0xFF, 0xFF
	metaState                = 's' // 0xFFFF 's' name -> state metadata
	metaKeyType              = 'k' // 0xFFFF 'k' -> key type name
	pendingID                = 0   // state id of restored, unregistered payloads
)

func appendPrefix(dst []byte, kg int, id uint16) []byte {
	return append(dst, byte(kg>>8), byte(kg), byte(id>>8), byte(id))
}

func metaKey(kind byte, name string) []byte {
	return append([]byte{metaPrefix0, metaPrefix1, kind}, name...)
}

// upperBound returns the smallest key greater than every key with prefix
// p, or nil if there is none (p is all 0xFF).
func upperBound(p []byte) []byte {
	end := slices.Clone(p)
	for i := len(end) - 1; i >= 0; i-- {
		end[i]++
		if end[i] != 0 {
			return end[:i+1]
		}
	}
	return nil
}

// --- state metadata ---

// stateMeta is the persisted description of a state: its id in keys, its
// kind, stored type names (as in snapshots) and whether its values carry
// TTL timestamps.
type stateMeta struct {
	name  string
	id    uint16
	kind  byte
	types []string
	names bool // types are type names (written before schemas were recorded)
	ts    bool
}

func (m *stateMeta) encode() []byte {
	dst := binary.BigEndian.AppendUint16(nil, m.id)
	flags := byte(0)
	if m.ts {
		flags = 1
	}
	if !m.names {
		flags |= 2 // the types are schemas
	}
	dst = append(dst, m.kind, flags)
	dst = binary.AppendUvarint(dst, uint64(len(m.types)))
	for _, t := range m.types {
		dst = appendString(dst, t)
	}
	return dst
}

func decodeMeta(name string, v []byte) (*stateMeta, error) {
	if len(v) < 4 {
		return nil, errors.New("short state metadata")
	}
	// Metadata written before schemas were recorded has no flag 2 and
	// holds type names.
	m := &stateMeta{name: name, id: binary.BigEndian.Uint16(v), kind: v[2], ts: v[3]&1 != 0, names: v[3]&2 == 0}
	src := v[4:]
	n, src, err := istate.ReadUvarint(src)
	if err != nil || n > 3 {
		return nil, fmt.Errorf("state metadata of %q: bad type count", name)
	}
	for range n {
		var s []byte
		if s, src, err = istate.ReadBytes(src); err != nil {
			return nil, fmt.Errorf("state metadata of %q: %w", name, err)
		}
		m.types = append(m.types, string(s))
	}
	return m, nil
}

// pendingInfo describes a restored state that is not registered yet: its
// snapshot header (kind, stored types, timestamps) and its entry count.
type pendingInfo struct {
	kind  byte
	types []string
	names bool // types are type names (a version-1 snapshot)
	ts    bool
	count int
}

// load reads the metadata of an existing database, deletes the key groups
// outside the backend's range and finds pending restored states.
func (b *Backend[K]) load() error {
	kt, found, err := b.db.Get(nil, metaKey(metaKeyType, ""))
	switch {
	case err != nil:
		return fmt.Errorf("kvstate: %w", err)
	case !found:
		if err := b.db.Set(metaKey(metaKeyType, ""), []byte(b.keyID())); err != nil {
			return fmt.Errorf("kvstate: %w", err)
		}
	default:
		got := string(kt)
		if !b.sameKeyType(got) {
			return fmt.Errorf("kvstate: the database in %s has keys of type %s, the backend of type %s", b.dir, got, b.keyID())
		}
	}
	lo := metaKey(metaState, "")
	it, err := b.db.NewIter(lo, upperBound(lo))
	if err != nil {
		return fmt.Errorf("kvstate: %w", err)
	}
	for ok := it.First(); ok; ok = it.Next() {
		name := string(it.Key()[len(lo):])
		v, err := it.Value()
		if err != nil {
			_ = it.Close()
			return fmt.Errorf("kvstate: %w", err)
		}
		m, err := decodeMeta(name, v)
		if err != nil {
			_ = it.Close()
			return fmt.Errorf("kvstate: %w", err)
		}
		b.meta[name] = m
		if m.id >= b.nextID {
			b.nextID = m.id + 1
		}
	}
	if err := it.Close(); err != nil {
		return fmt.Errorf("kvstate: %w", err)
	}
	// Drop the key groups outside the range (a restore at another
	// parallelism).
	// Only where there are such entries: a range tombstone may make
	// an LSM store rewrite files that checkpoints share.
	if b.first > 0 {
		if err := b.deleteRange([]byte{0, 0}, []byte{byte(b.first >> 8), byte(b.first)}); err != nil {
			return fmt.Errorf("kvstate: %w", err)
		}
	}
	if b.last < MaxKeyGroup {
		if err := b.deleteRange([]byte{byte((b.last + 1) >> 8), byte(b.last + 1)}, []byte{metaPrefix0, metaPrefix1}); err != nil {
			return fmt.Errorf("kvstate: %w", err)
		}
	}
	// Find pending restored states.
	for kg := b.first; kg <= b.last; kg++ {
		p := appendPrefix(nil, kg, pendingID)
		it, err := b.db.NewIter(p, upperBound(p))
		if err != nil {
			return fmt.Errorf("kvstate: %w", err)
		}
		for ok := it.First(); ok; ok = it.Next() {
			name := string(it.Key()[len(p):])
			v, err := it.Value()
			if err != nil {
				_ = it.Close()
				return fmt.Errorf("kvstate: %w", err)
			}
			h, _, err := decodePendingHeader(v)
			if err != nil {
				_ = it.Close()
				return fmt.Errorf("kvstate: pending state %q: %w", name, err)
			}
			if q := b.pending[name]; q != nil {
				q.count += h.count
			} else {
				b.pending[name] = h
			}
		}
		if err := it.Close(); err != nil {
			return fmt.Errorf("kvstate: %w", err)
		}
	}
	return nil
}

// --- registration ---

// registration is a registered state: its metadata, Go types, TTL config
// and the type-erased codecs that restores and snapshots need.
type registration struct {
	*stateMeta
	goTypes []reflect.Type
	ttl     state.TTLConfig
	skip    skippers
	stored  storedTypes
}

// resolve checks that entries stored as kind with types (names if names,
// else schemas) and timestamps ts can be restored into r and returns the
// transcoders that rewrite them (nil: copied as they are).
func (r *registration) resolve(kind byte, types []string, names, ts bool) (*transcoders, error) {
	if names {
		return nil, istate.Compatible(r.name, kind, types, ts, r.kind, r.stored.names, r.ttl.Enabled())
	}
	tx, err := istate.ResolveStored(r.name, kind, types, ts, r.kind, r.stored.schemas, r.ttl.Enabled(), r.stored.resolve)
	if tx == nil || err != nil {
		return nil, err
	}
	return tx.(*transcoders), nil
}

// keyID identifies the key type in the database: its name and schema.
func (b *Backend[K]) keyID() string { return b.keyType + "\x00" + istate.SchemaOf(b.kc) }

// sameKeyType reports whether got, a key type a database recorded, is the
// backend's: its name and schema, or, in a database written before
// schemas were recorded, its name.
func (b *Backend[K]) sameKeyType(got string) bool {
	if !strings.Contains(got, "\x00") {
		return got == b.keyType
	}
	return got == b.keyID()
}

// skippers find where encoded values end without keeping them.
type skippers struct {
	ns    func([]byte) ([]byte, error) // namespace
	value func([]byte) ([]byte, error) // value, list element, map value, accumulator
	mkey  func([]byte) ([]byte, error) // map key (map state only)
}

func skipperOf[T any](c state.Codec[T]) func([]byte) ([]byte, error) {
	return func(src []byte) ([]byte, error) {
		_, rest, err := c.Decode(src)
		return rest, err
	}
}

// register returns the registration of name, creating it on first use.
// Registrations under one name must agree in kind, Go types and TTL config.
// A state restored into the database (by RestoreImages or an earlier
// registration) must have been stored with the same kind, stored types and
// TTL timestamps; pending restored entries are converted into the layout.
func (b *Backend[K]) register(name string, kind byte, goTypes []reflect.Type, stored storedTypes,
	ttl state.TTLConfig, sk skippers) (*registration, error) {
	if r, ok := b.states[name]; ok {
		if r.kind != kind || !slices.Equal(r.goTypes, goTypes) {
			return nil, fmt.Errorf("state %q is already registered as %s state of %v; cannot register it as %s state of %v",
				name, istate.KindName(r.kind), r.goTypes, istate.KindName(kind), goTypes)
		}
		if r.ttl != ttl && (r.ttl.Enabled() || ttl.Enabled()) {
			return nil, fmt.Errorf("state %q is already registered with TTL config %+v; cannot register it with %+v", name, r.ttl, ttl)
		}
		return r, nil
	}
	ts := ttl.Enabled()
	m := b.meta[name]
	if m != nil {
		want := stored.schemas
		if m.names {
			want = stored.names
		}
		if m.kind != kind || !slices.Equal(m.types, want) {
			err := fmt.Errorf("state %q is stored as %s state of %v; cannot register it as %s state of %v",
				name, istate.KindName(m.kind), m.types, istate.KindName(kind), want)
			if !m.names && m.kind == kind {
				// The database of an incremental checkpoint holds values
				// as they were encoded; the Pebble backend migrates
				// values only when they are restored from a snapshot.
				if _, rerr := istate.ResolveStored(name, m.kind, m.types, m.ts, kind, stored.schemas, ttl.Enabled(), stored.resolve); rerr != nil {
					return nil, rerr
				}
				err = fmt.Errorf("state %q: its schema changed (%s), and the Pebble backend migrates state only from a savepoint, "+
					"not from an incremental checkpoint's database: take a savepoint with the old job and restore the new one from it", name, strings.Join(m.types[1:], ", "))
			}
			return nil, err
		}
		// Metadata written before schemas were recorded: the encodings
		// are the same, record the schemas from now on.
		m.types, m.names = stored.schemas, false
		if m.ts != ts && b.hasEntries(m.id) {
			return nil, fmt.Errorf("state %q is stored with TTL timestamps %v; cannot register it with TTL enabled %v (restore it from a full snapshot instead)",
				name, m.ts, ts)
		}
	} else {
		if b.nextID == 0xFFFF {
			return nil, errors.New("kvstate: too many states")
		}
		m = &stateMeta{name: name, id: b.nextID, kind: kind, types: stored.schemas}
		b.nextID++
	}
	m.ts = ts
	r := &registration{stateMeta: m, goTypes: goTypes, ttl: ttl, skip: sk, stored: stored}
	if p := b.pending[name]; p != nil {
		if err := b.convertPending(r, p); err != nil {
			return nil, err
		}
	}
	if err := b.db.Set(metaKey(metaState, name), m.encode()); err != nil {
		return nil, fmt.Errorf("kvstate: %w", err)
	}
	b.meta[name] = m
	b.states[name] = r
	return r, nil
}

// hasEntries reports whether the state with id has an entry in any key
// group of the range.
func (b *Backend[K]) hasEntries(id uint16) bool {
	for kg := b.first; kg <= b.last; kg++ {
		if b.groupHasEntries(kg, id) {
			return true
		}
	}
	return false
}

func (b *Backend[K]) groupHasEntries(kg int, id uint16) bool {
	p := appendPrefix(nil, kg, id)
	it, err := b.db.NewIter(p, upperBound(p))
	if err != nil {
		panic(fmt.Errorf("kvstate: %w", err))
	}
	ok := it.First()
	_ = it.Close()
	return ok
}

// ttlParams is a TTL configuration in the form the handles use.
type ttlParams struct {
	enabled       bool
	updateOnRead  bool
	returnExpired bool
	ttl           int64 // milliseconds
}

func newTTLParams(c state.TTLConfig) ttlParams {
	if !c.Enabled() {
		return ttlParams{}
	}
	return ttlParams{
		enabled:       true,
		updateOnRead:  c.Update == state.UpdateOnReadAndWrite,
		returnExpired: c.Visibility == state.ReturnExpiredIfNotCleanedUp,
		ttl:           c.TTL.Milliseconds(),
	}
}

// expired reports whether a value last accessed at ts has expired at now:
// ts + ttl <= now, the addition capped at MaxInt64 (Flink's TtlUtils).
func (p *ttlParams) expired(ts, now int64) bool {
	exp := ts + p.ttl
	if ts > 0 && p.ttl > (1<<63-1)-ts {
		exp = 1<<63 - 1
	}
	return exp <= now
}

func (p *ttlParams) usable(ts, now int64) bool { return p.returnExpired || !p.expired(ts, now) }

// --- small encoding helpers ---

func appendString(dst []byte, s string) []byte {
	dst = binary.AppendUvarint(dst, uint64(len(s)))
	return append(dst, s...)
}

func randomName() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
