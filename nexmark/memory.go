package nexmark

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/connector"
	"github.com/weirstream/weir/internal/invariants"
)

// Memory holds the events of a run generated in advance, one slice per
// generator, so that a job can replay them from memory as fast as it takes
// them: the engine-only mode of `weir nexmark --source memory`, where the
// generators' cost stays out of the measurement. The events are those the
// generator source would produce with the same config and number of
// generators.
//
// On Linux the events, the people, auctions and bids they point to and the
// bytes of all their strings are held outside the Go heap, in anonymous
// memory mappings, so that the garbage collector never marks them: a
// store of millions of events would otherwise be traced by every
// collection during the run it is replayed into (Flink keeps its events
// in an old generation its young collections do not trace). Nothing in
// that memory points into the Go heap. It stays mapped until Close, which
// a caller makes only when neither the Memory nor anything read from it
// (records, strings, people, auctions, bids, results holding them) is in use
// any more; a Memory dropped without Close keeps its mappings for the
// life of the process. Elsewhere the events are in the heap and Close
// only drops them.
//
// So that the collector still paces itself as it did with the events in
// the heap (its goal is a multiple of the live heap: without them a job
// would be collected several times as often), the Memory also holds a
// ballast in the heap, a byte slice as large as the events (the bytes
// allocated in its mappings): it counts towards the live heap, but it
// holds no pointers, so a collection marks it in one step and never scans
// it, and it is never written, so it costs no resident memory.
type Memory struct {
	cfg     Config
	splits  [][]weir.Record[Event]
	total   int64
	reg     *region // holding the events, or nil (off Linux)
	ballast []byte
}

// NewMemory generates every event of cfg's n generators (n > 0) into
// memory. It takes about as long as running the generators; the events
// (a 40-byte record each, plus 80 bytes for a bid's Bid, more for a person
// or an auction, and their strings, most of which are shared) stay until
// Close.
func NewMemory(cfg Config, n int) (*Memory, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.Events <= 0 {
		return nil, errors.New("nexmark: the memory source needs a bounded number of events (Config.Events > 0)")
	}
	m := &Memory{cfg: cfg}
	gens := NewGenerators(cfg, n)
	if offHeap {
		m.reg = new(region)
		tab := offHeapTables()
		for _, g := range gens {
			g.arena.reg, g.tab = m.reg, tab
		}
	}
	for _, g := range gens {
		recs := regionSlice[weir.Record[Event]](m.reg, int(g.Remaining()))
		for i := range recs {
			recs[i].TS = g.Next(&recs[i].Value)
		}
		m.splits = append(m.splits, recs)
		m.total += int64(len(recs))
	}
	if m.reg != nil {
		m.ballast = make([]byte, m.reg.used)
		if invariants.Enabled {
			if err := m.checkOffHeap(); err != nil {
				invariants.Violated("%v", err)
			}
		}
	}
	return m, nil
}

// Close releases the events: on Linux it unmaps them, so it must be
// called only when nothing read from the Memory (records and the strings,
// people, auctions and bids they point to) is in use any more, every job
// replaying it having ended. The Memory must not be used after Close.
// Closing twice does nothing.
func (m *Memory) Close() error {
	m.splits, m.total, m.ballast = nil, 0, nil
	if m.reg == nil {
		return nil
	}
	err := m.reg.release()
	m.reg = nil
	return err
}

// checkOffHeap checks that every pointer of every event (its person,
// auction or bid, and the bytes of every string) points into m's region or into
// offHeapTables', never into the Go heap.
func (m *Memory) checkOffHeap() error {
	tab := offHeapTables().reg
	in := func(p unsafe.Pointer) bool { return p == nil || m.reg.contains(p) || tab.contains(p) }
	strs := func(ss ...string) bool {
		for _, s := range ss {
			if !in(unsafe.Pointer(unsafe.StringData(s))) {
				return false
			}
		}
		return true
	}
	for i, recs := range m.splits {
		if len(recs) > 0 && !in(unsafe.Pointer(&recs[0])) {
			return fmt.Errorf("nexmark: memory split %d is not off the heap", i)
		}
		for j := range recs {
			e := &recs[j].Value
			ok := in(unsafe.Pointer(e.Person)) && in(unsafe.Pointer(e.Auction)) && in(unsafe.Pointer(e.Bid))
			if p := e.Person; ok && p != nil {
				ok = strs(p.Name, p.EmailAddress, p.CreditCard, p.City, p.State, p.Extra)
			}
			if a := e.Auction; ok && a != nil {
				ok = strs(a.ItemName, a.Description, a.Extra)
			}
			if b := e.Bid; ok && b != nil {
				ok = strs(b.Channel, b.URL, b.Extra)
			}
			if !ok {
				return fmt.Errorf("nexmark: memory event %d of split %d points into the Go heap: %+v", j, i, *e)
			}
		}
	}
	return nil
}

// Len returns the number of events held.
func (m *Memory) Len() int64 { return m.total }

// Generators returns the number of generators (splits).
func (m *Memory) Generators() int { return len(m.splits) }

// Checksum hashes every field of every event, generator 0 first, with
// EventChecksum; the Flink module computes the same value over its own
// events, so equal checksums mean both engines replay the same events.
func (m *Memory) Checksum() uint64 {
	h := ChecksumSeed
	for _, recs := range m.splits {
		for i := range recs {
			h = EventChecksum(h, &recs[i].Value)
		}
	}
	return h
}

// Source returns a source replaying the events: split i is generator i's
// events, in generation order, with their timestamps. Each call returns a
// new source with its own FirstRead; the events are never changed (handed
// out as read-only views of the Memory, or copied out), so a Memory can be
// replayed by any number of jobs, at once too.
func (m *Memory) Source() *MemorySource { return &MemorySource{m: m} }

// MemorySource is a source replaying a Memory (see Memory.Source).
type MemorySource struct {
	m     *Memory
	first atomic.Int64 // unix nanos of the first Read, 0 before
}

// Events adds the source with the Nexmark watermark strategy to env.
func (s *MemorySource) Events(env *weir.Environment) weir.DataStream[Event] {
	return weir.FromSource(env, connector.Source[Event](s), Watermarks(s.m.cfg), "Nexmark")
}

// FirstRead returns when a reader was first asked for events (false
// before): where an engine-only measurement starts.
func (s *MemorySource) FirstRead() (time.Time, bool) {
	n := s.first.Load()
	if n == 0 {
		return time.Time{}, false
	}
	return time.Unix(0, n), true
}

// Splits returns one split per generator, whatever the parallelism (split
// i goes to subtask i mod parallelism).
func (s *MemorySource) Splits(int) ([]connector.Split, error) {
	out := make([]connector.Split, len(s.m.splits))
	for i := range out {
		out[i] = split{index: i, of: len(out)}
	}
	return out, nil
}

// Reader returns a reader of split sp's events.
func (s *MemorySource) Reader(sp connector.Split) (connector.SplitReader[Event], error) {
	return &memoryReader{s: s, recs: s.m.splits[sp.(split).index]}, nil
}

type memoryReader struct {
	s    *MemorySource
	recs []weir.Record[Event] // what is left to read
}

// Read copies up to buf's free capacity (at least 1024) of the next events
// into buf, as a connector decodes into the batch it is given.
func (r *memoryReader) Read(ctx context.Context, buf []weir.Record[Event]) ([]weir.Record[Event], error) {
	if r.s.first.Load() == 0 {
		r.s.first.CompareAndSwap(0, time.Now().UnixNano())
	}
	n := cap(buf) - len(buf)
	if n <= 0 {
		n = 1024
	}
	n = min(n, len(r.recs))
	buf = append(buf, r.recs[:n]...)
	r.recs = r.recs[n:]
	if len(r.recs) == 0 {
		return buf, io.EOF
	}
	return buf, ctx.Err()
}

// ReadView returns up to limit of the next events as a view of the Memory:
// its slices are never written after NewMemory and live as long as the
// Memory, so the engine hands them on without a copy (connector.ViewReader).
func (r *memoryReader) ReadView(ctx context.Context, limit int) ([]weir.Record[Event], error) {
	if r.s.first.Load() == 0 {
		r.s.first.CompareAndSwap(0, time.Now().UnixNano())
	}
	n := min(max(limit, 1), len(r.recs))
	v := r.recs[:n:n]
	r.recs = r.recs[n:]
	if len(r.recs) == 0 {
		return v, io.EOF
	}
	return v, ctx.Err()
}

func (r *memoryReader) Close() error { return nil }

// ChecksumSeed is the initial value of an EventChecksum chain.
const ChecksumSeed uint64 = 14695981039346656037

const checksumPrime = 1099511628211

func mixWord(h, w uint64) uint64 { return (h ^ w) * checksumPrime }

func mixString(h uint64, s string) uint64 {
	h = mixWord(h, uint64(len(s)))
	for len(s) >= 8 {
		h = mixWord(h, uint64(s[0])|uint64(s[1])<<8|uint64(s[2])<<16|uint64(s[3])<<24|
			uint64(s[4])<<32|uint64(s[5])<<40|uint64(s[6])<<48|uint64(s[7])<<56)
		s = s[8:]
	}
	var w uint64
	for i := range len(s) {
		w |= uint64(s[i]) << (8 * i)
	}
	return mixWord(h, w)
}

// EventChecksum folds e into the running checksum h: the event type, then
// every field in the order of the generator check's line format, integers
// as 64-bit words and strings as their length then their bytes, 8 at a
// time little-endian (the last word zero-padded), each word mixed in as
// h = (h ^ word) * 1099511628211. weirbench.Checksum in bench/flink is the
// same function.
func EventChecksum(h uint64, e *Event) uint64 {
	h = mixWord(h, uint64(e.Type))
	switch e.Type {
	case PersonEvent:
		p := e.Person
		h = mixWord(h, uint64(p.ID))
		h = mixString(h, p.Name)
		h = mixString(h, p.EmailAddress)
		h = mixString(h, p.CreditCard)
		h = mixString(h, p.City)
		h = mixString(h, p.State)
		h = mixWord(h, uint64(p.DateTime))
		return mixString(h, p.Extra)
	case AuctionEvent:
		a := e.Auction
		h = mixWord(h, uint64(a.ID))
		h = mixString(h, a.ItemName)
		h = mixString(h, a.Description)
		h = mixWord(h, uint64(a.InitialBid))
		h = mixWord(h, uint64(a.Reserve))
		h = mixWord(h, uint64(a.DateTime))
		h = mixWord(h, uint64(a.Expires))
		h = mixWord(h, uint64(a.Seller))
		h = mixWord(h, uint64(a.Category))
		return mixString(h, a.Extra)
	}
	b := e.Bid
	h = mixWord(h, uint64(b.Auction))
	h = mixWord(h, uint64(b.Bidder))
	h = mixWord(h, uint64(b.Price))
	h = mixString(h, b.Channel)
	h = mixString(h, b.URL)
	h = mixWord(h, uint64(b.DateTime))
	return mixString(h, b.Extra)
}
