package nexmark

import (
	"context"
	"io"
	"runtime"
	"strings"
	"testing"
	"unsafe"

	"github.com/weirstream/weir"
)

// heapEvents generates cfg's events with n generators into the heap, as
// the generator source does.
func heapEvents(cfg Config, n int) [][]weir.Record[Event] {
	var out [][]weir.Record[Event]
	for _, g := range NewGenerators(cfg, n) {
		var recs []weir.Record[Event]
		for g.HasNext() {
			var r weir.Record[Event]
			r.TS = g.Next(&r.Value)
			recs = append(recs, r)
		}
		out = append(out, recs)
	}
	return out
}

// equalEvents reports whether two records hold the same event, field by
// field (people, auctions and bids by value).
func equalEvents(a, b *weir.Record[Event]) bool {
	x, y := &a.Value, &b.Value
	if a.TS != b.TS || x.Type != y.Type || (x.Person == nil) != (y.Person == nil) || (x.Auction == nil) != (y.Auction == nil) || (x.Bid == nil) != (y.Bid == nil) {
		return false
	}
	return (x.Person == nil || *x.Person == *y.Person) && (x.Auction == nil || *x.Auction == *y.Auction) && (x.Bid == nil || *x.Bid == *y.Bid)
}

// The Memory holds exactly the events the generators give in the heap,
// every field, and they survive collections: on Linux nothing of them is
// in the Go heap (its live heap does not grow by their size) and no
// pointer of theirs points into it. Replayed with Read and ReadView after
// collections, they are still the same; Close releases them.
func TestMemoryOffHeap(t *testing.T) {
	cfg := Config{Events: 60_000, Seed: 11}
	const n = 3
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	m, err := NewMemory(cfg, n)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	runtime.GC()
	runtime.GC()
	runtime.ReadMemStats(&after)
	if offHeap {
		if err := m.checkOffHeap(); err != nil {
			t.Fatal(err)
		}
		// The records and bids alone are about 110 bytes an event (a
		// 40-byte record, and an 80-byte Bid for 92% of them): 6.7 MB in
		// the heap; the live heap grows by the ballast only.
		if grew := int64(after.HeapAlloc) - int64(before.HeapAlloc) - int64(len(m.ballast)); grew > 1<<20 {
			t.Errorf("the live heap grew by %d bytes more than the ballast holding %d events", grew, m.Len())
		}
		if int64(len(m.ballast)) != m.reg.used || m.reg.used > m.reg.size {
			t.Errorf("a ballast of %d bytes for %d allocated, %d mapped", len(m.ballast), m.reg.used, m.reg.size)
		}
		if heap := new(Person); m.reg.contains(unsafe.Pointer(heap)) {
			t.Error("a heap pointer is in the region")
		}
		// Every bid is a Bid of its own in the region.
		seen := map[*Bid]bool{}
		for _, recs := range m.splits {
			for i := range recs {
				e := &recs[i].Value
				if b := e.Bid; (b != nil) != (e.Type == BidEvent) || b != nil && (seen[b] || !m.reg.contains(unsafe.Pointer(b))) {
					t.Fatalf("event %+v: a bid not in the region, or seen before", *e)
				}
				seen[e.Bid] = true
			}
		}
		if m.reg.size < m.Len()*int64(unsafe.Sizeof(weir.Record[Event]{})+unsafe.Sizeof(Bid{})*9/10) {
			t.Errorf("%d bytes mapped for %d events", m.reg.size, m.Len())
		}
	}
	want := heapEvents(cfg, n)
	h := ChecksumSeed
	for _, recs := range want {
		for i := range recs {
			h = EventChecksum(h, &recs[i].Value)
		}
	}
	if got := m.Checksum(); got != h {
		t.Errorf("checksum %#x, the heap events' %#x", got, h)
	}
	if m.Len() != cfg.Events || m.Generators() != n {
		t.Fatalf("%d events in %d generators", m.Len(), m.Generators())
	}
	var kinds [3]int
	for s := range want {
		if len(m.splits[s]) != len(want[s]) {
			t.Fatalf("split %d: %d events, want %d", s, len(m.splits[s]), len(want[s]))
		}
		for i := range want[s] {
			if !equalEvents(&m.splits[s][i], &want[s][i]) {
				t.Fatalf("split %d event %d: %+v, want %+v", s, i, m.splits[s][i], want[s][i])
			}
			kinds[want[s][i].Value.Type]++
		}
	}
	if kinds[PersonEvent] == 0 || kinds[AuctionEvent] == 0 || kinds[BidEvent] == 0 {
		t.Fatalf("event types %v", kinds)
	}

	// Replay every split, alternately with Read (into a heap buffer, kept
	// across collections) and ReadView, with collections and garbage in
	// between.
	src := m.Source()
	splits, _ := src.Splits(2)
	var garbage [][]byte
	for s, sp := range splits {
		rd, err := src.Reader(sp)
		if err != nil {
			t.Fatal(err)
		}
		var got []weir.Record[Event]
		for k := 0; ; k++ {
			var batch []weir.Record[Event]
			if k%2 == 0 {
				batch, err = rd.(*memoryReader).Read(context.Background(), make([]weir.Record[Event], 0, 1000))
			} else {
				batch, err = rd.(*memoryReader).ReadView(context.Background(), 700)
			}
			got = append(got, batch...)
			garbage = append(garbage, make([]byte, 64<<10))
			if k%5 == 0 {
				garbage = nil
				runtime.GC()
			}
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
		}
		runtime.GC()
		if len(got) != len(want[s]) {
			t.Fatalf("split %d: read %d events, want %d", s, len(got), len(want[s]))
		}
		for i := range got {
			if !equalEvents(&got[i], &want[s][i]) {
				t.Fatalf("split %d: read event %d %+v, want %+v", s, i, got[i], want[s][i])
			}
		}
	}
	_ = garbage

	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	if err := m.Close(); err != nil || m.Len() != 0 || m.Generators() != 0 {
		t.Fatalf("closed twice: %v, %d events in %d generators", err, m.Len(), m.Generators())
	}
}

// Strings and people copied out of a Memory stay intact across
// collections while it is open, and the tables the events' strings come
// from are off the heap too.
func TestMemoryStringsSurviveGC(t *testing.T) {
	m, err := NewMemory(Config{Events: 10_000, Seed: 2}, 2)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	var people []*Person
	var urls []string
	for _, recs := range m.splits {
		for i := range recs {
			if p := recs[i].Value.Person; p != nil {
				people = append(people, p)
			}
			if b := recs[i].Value.Bid; b != nil {
				urls = append(urls, b.URL)
			}
		}
	}
	copies := make([]Person, len(people))
	for i, p := range people {
		copies[i] = Person{ID: p.ID, Name: strings.Clone(p.Name), EmailAddress: strings.Clone(p.EmailAddress),
			CreditCard: strings.Clone(p.CreditCard), City: strings.Clone(p.City), State: strings.Clone(p.State),
			DateTime: p.DateTime, Extra: strings.Clone(p.Extra)}
	}
	for range 3 {
		_ = make([]byte, 8<<20)
		runtime.GC()
	}
	for i, p := range people {
		if *p != copies[i] {
			t.Fatalf("person %d changed: %+v, was %+v", i, *p, copies[i])
		}
	}
	for _, u := range urls {
		if u != "" && !strings.HasPrefix(u, "https://www.nexmark.com/") {
			t.Fatalf("url %q", u)
		}
	}
	if offHeap {
		tab := offHeapTables()
		for _, s := range append(append([]string{tab.extra}, tab.channelURLs...), tab.names...) {
			if !tab.reg.contains(unsafe.Pointer(unsafe.StringData(s))) {
				t.Fatalf("table string %.20q is not off the heap", s)
			}
		}
	}
}
