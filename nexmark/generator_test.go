package nexmark

import (
	"context"
	"hash/fnv"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/weirstream/weir"
)

// SplitMix64's published test vector: seed 0 gives these outputs, the
// same as java.util.SplittableRandom(0).nextLong().
func TestSplitRandVector(t *testing.T) {
	r := newSplitRand(0)
	for _, want := range []uint64{0xe220a8397b1dcdaf, 0x6e789e6aa1b965f4, 0x06c45d188009454f} {
		if got := uint64(r.nextLong()); got != want {
			t.Fatalf("nextLong = %#x, want %#x", got, want)
		}
	}
	// Bounded draws stay in range and cover it.
	seen := make([]int, 7)
	for range 7000 {
		v := r.intn(7)
		if v < 0 || v >= 7 {
			t.Fatalf("intn(7) = %d", v)
		}
		seen[v]++
	}
	for i, n := range seen {
		if n < 800 || n > 1200 {
			t.Errorf("intn(7): value %d drawn %d times of 7000", i, n)
		}
	}
}

type stats struct {
	n, persons, auctions, bids     int
	hotAuction, hotBidder, hotSell int
	personSize, auctionSize        int
	bidSize                        int
	bidExtraMin, bidExtraMax       int
	categories                     map[int64]int
	states                         map[string]int
	cheap                          int // bids with price < 1e4
	q2                             int // bids with auction % 123 == 0
	bidders                        map[int64]bool
	auctionLen                     int64
}

// collectStats runs the generators of cfg over all their events, checking
// per-event invariants, and returns the statistics of the stream.
func collectStats(t *testing.T, cfg Config, n int) stats {
	t.Helper()
	s := stats{categories: map[int64]int{}, states: map[string]int{}, bidders: map[int64]bool{}, bidExtraMin: math.MaxInt}
	personOwner := map[int64]int{}
	auctionOwner := map[int64]int{}
	offset := int64(FirstPersonID)
	if cfg.DoubleBidderOffset {
		offset += FirstPersonID
	}
	for _, g := range NewGenerators(cfg, n) {
		var e Event
		lastTS := int64(math.MinInt64)
		var lastPerson, lastAuction int64 = -1, -1
		for g.HasNext() {
			id := g.NextEventID()
			ts := g.Next(&e)
			if ts < lastTS || ts != e.Timestamp() {
				t.Fatalf("generator %d: timestamp %d after %d (event %d)", g.Index(), ts, lastTS, e.Timestamp())
			}
			lastTS = ts
			s.n++
			switch e.Type {
			case PersonEvent:
				p := e.Person
				s.persons++
				if lastPerson >= 0 && p.ID != lastPerson+1 {
					t.Fatalf("generator %d: person id %d after %d", g.Index(), p.ID, lastPerson)
				}
				if o, dup := personOwner[p.ID]; dup {
					t.Fatalf("person id %d from generators %d and %d", p.ID, o, g.Index())
				}
				personOwner[p.ID] = g.Index()
				lastPerson = p.ID
				s.personSize += 8 + len(p.Name) + len(p.EmailAddress) + len(p.CreditCard) + len(p.City) + len(p.State) + len(p.Extra)
				s.states[p.State]++
				if len(p.CreditCard) != 19 || !strings.Contains(p.EmailAddress, "@") || !strings.HasSuffix(p.EmailAddress, ".com") {
					t.Fatalf("bad person %+v", p)
				}
			case AuctionEvent:
				a := e.Auction
				s.auctions++
				if lastAuction >= 0 && a.ID != lastAuction+1 {
					t.Fatalf("generator %d: auction id %d after %d", g.Index(), a.ID, lastAuction)
				}
				if o, dup := auctionOwner[a.ID]; dup {
					t.Fatalf("auction id %d from generators %d and %d", a.ID, o, g.Index())
				}
				auctionOwner[a.ID] = g.Index()
				lastAuction = a.ID
				if a.Seller == (g.lastBase0PersonID(g.posOf(id))/100)*100+FirstPersonID {
					s.hotSell++
				}
				s.auctionSize += 8 + len(a.ItemName) + len(a.Description) + 40 + len(a.Extra)
				s.categories[a.Category]++
				s.auctionLen += a.Expires - a.DateTime
				if a.Expires <= a.DateTime || a.Reserve < a.InitialBid || a.InitialBid < 100 || a.InitialBid > 1e8 {
					t.Fatalf("bad auction %+v", a)
				}
				if a.Seller < FirstPersonID || a.Seller > g.lastBase0PersonID(g.posOf(id))+FirstPersonID+personIDLead {
					t.Fatalf("auction %d: seller %d outside the generator's people", a.ID, a.Seller)
				}
			case BidEvent:
				b := e.Bid
				s.bids++
				if b.Auction == (g.lastBase0AuctionID(g.posOf(id))/100)*100+FirstAuctionID {
					s.hotAuction++
				}
				if b.Bidder == (g.lastBase0PersonID(g.posOf(id))/100)*100+1+offset {
					s.hotBidder++
				}
				maxA := g.lastBase0AuctionID(g.posOf(id)) + FirstAuctionID + auctionIDLead
				if b.Auction < FirstAuctionID || b.Auction > maxA || b.Auction < maxA-auctionIDLead-int64(DefaultNumInFlightAuctions) {
					t.Fatalf("bid auction %d outside the in-flight range ending at %d", b.Auction, maxA)
				}
				maxP := g.lastBase0PersonID(g.posOf(id)) + offset + personIDLead
				if b.Bidder < offset || b.Bidder > maxP || b.Bidder < maxP-personIDLead-int64(DefaultNumActivePeople) {
					t.Fatalf("bidder %d outside the active range ending at %d", b.Bidder, maxP)
				}
				s.bidSize += 32 + len(b.Extra)
				s.bidExtraMin = min(s.bidExtraMin, len(b.Extra))
				s.bidExtraMax = max(s.bidExtraMax, len(b.Extra))
				if b.Price < 1e4 {
					s.cheap++
				}
				if b.Auction%123 == 0 {
					s.q2++
				}
				s.bidders[b.Bidder] = true
				if b.Channel == "" || !strings.HasPrefix(b.URL, "https://www.nexmark.com/") {
					t.Fatalf("bad bid %+v", b)
				}
			default:
				t.Fatalf("bad event type %d", e.Type)
			}
		}
	}
	// Generators own disjoint, consecutive id ranges.
	if n > 1 {
		for id, o := range personOwner {
			if o2, ok := personOwner[id+1]; ok && o2 < o {
				t.Fatalf("person ids of generator %d follow generator %d's", o2, o)
			}
		}
	}
	return s
}

func near(t *testing.T, what string, got, want, tol float64) {
	t.Helper()
	if math.Abs(got-want) > tol {
		t.Errorf("%s = %.4f, want %.4f ± %.4f", what, got, want, tol)
	}
}

// TestGeneratorStatistics checks the stream against the expected table of
// the reference (nexmark.md §1.10) and the generator's design values.
func TestGeneratorStatistics(t *testing.T) {
	for _, n := range []int{1, 2} {
		cfg := Config{Events: 500_000, Rate: 10_000_000}
		s := collectStats(t, cfg, n)
		if s.n != 500_000 {
			t.Fatalf("p=%d: %d events, want 500000", n, s.n)
		}
		// Each generator starts at event id first+1, over whole cycles of
		// 50: the proportions are exact.
		if s.persons != 10_000 || s.auctions != 30_000 || s.bids != 460_000 {
			t.Errorf("p=%d: persons/auctions/bids = %d/%d/%d, want 10000/30000/460000", n, s.persons, s.auctions, s.bids)
		}
		bids, auctions, persons := float64(s.bids), float64(s.auctions), float64(s.persons)
		// Hot: 1-1/ratio by the branch, plus the random pick landing on the
		// hot id (1 in 111 auctions, 1 in 1010 people).
		near(t, "hot auction share", float64(s.hotAuction)/bids, 0.5+0.5/111, 0.005)
		near(t, "hot bidder share", float64(s.hotBidder)/bids, 0.75+0.25/1010, 0.005)
		near(t, "hot seller share", float64(s.hotSell)/auctions, 0.75+0.25/1010, 0.01)
		near(t, "mean person size", float64(s.personSize)/persons, DefaultAvgPersonByteSize, 4)
		near(t, "mean auction size", float64(s.auctionSize)/auctions, DefaultAvgAuctionByteSize, 4)
		near(t, "mean bid size", float64(s.bidSize)/bids, 99.5, 0.5)
		if s.bidExtraMin != 54 || s.bidExtraMax != 81 {
			t.Errorf("bid extra lengths %d..%d, want 54..81", s.bidExtraMin, s.bidExtraMax)
		}
		near(t, "bids priced below 1e4", float64(s.cheap)/bids, 1.0/3, 0.01)
		near(t, "q2 selectivity (auction % 123 == 0)", float64(s.q2)/bids, 1.0/123, 0.004)
		if len(s.categories) != NumCategories {
			t.Errorf("categories %v, want 10..14", s.categories)
		}
		for c, k := range s.categories {
			if c < FirstCategoryID || c >= FirstCategoryID+NumCategories {
				t.Errorf("category %d", c)
			}
			near(t, "category share", float64(k)/auctions, 0.2, 0.015)
		}
		if len(s.states) != len(usStates) {
			t.Errorf("states %v", s.states)
		}
		for _, k := range s.states {
			near(t, "state share", float64(k)/persons, 1.0/6, 0.02)
		}
		// About one distinct bidder per person (active window of 1000 + 10).
		near(t, "distinct bidders per person", float64(len(s.bidders))/persons, 1, 0.05)
		// Mean auction length: the event time of 1666 events of one
		// generator, 1666 * n / rate seconds (plus the +1 ms and rounding).
		wantLen := float64(1666*n)/10_000_000*1000 + 1
		near(t, "mean auction length (ms)", float64(s.auctionLen)/auctions, wantLen, 0.5)
	}
}

func TestDoubleBidderOffset(t *testing.T) {
	s := collectStats(t, Config{Events: 50_000, DoubleBidderOffset: true}, 2)
	near(t, "hot bidder share", float64(s.hotBidder)/float64(s.bids), 0.75, 0.02)
	for b := range s.bidders {
		if b < 2*FirstPersonID {
			t.Fatalf("bidder %d with the double offset", b)
		}
	}
}

func TestTimestampsFromRate(t *testing.T) {
	// 1000 events/s over 2 generators: each generator's event n is at n*2 ms.
	gs := NewGenerators(Config{Events: 1000, Rate: 1000, BaseTime: 5000}, 2)
	var e Event
	for _, g := range gs {
		for i := int64(1); g.HasNext(); i++ {
			if ts := g.Next(&e); ts != 5000+2*i {
				t.Fatalf("generator %d event %d at %d, want %d", g.Index(), i, ts, 5000+2*i)
			}
		}
		if g.Count() != 500 {
			t.Fatalf("generator %d made %d events", g.Index(), g.Count())
		}
	}
	// The first event of generator 0 is event id 2: auction 1001 (id 1 would
	// be the auction of event id 1) by seller 1000.
	g := NewGenerators(Config{Events: 100}, 2)[0]
	if g.NextEventID() != 2 {
		t.Fatalf("first event id %d", g.NextEventID())
	}
	g.Next(&e)
	if e.Type != AuctionEvent || e.Auction.ID != FirstAuctionID+1 || e.Auction.Seller != FirstPersonID {
		t.Fatalf("first event %v %+v", e.Type, e.Auction)
	}
	// Generator 1 starts at id 1 + 50.
	if id := NewGenerators(Config{Events: 100}, 2)[1].NextEventID(); id != 52 {
		t.Fatalf("generator 1 starts at id %d, want 52", id)
	}
}

func hashEvent(h interface{ Write([]byte) (int, error) }, e *Event, ts int64) {
	var b []byte
	switch e.Type {
	case PersonEvent:
		p := e.Person
		b = append(b, p.Name+p.EmailAddress+p.CreditCard+p.City+p.State+p.Extra...)
		b = appendInts(b, p.ID, p.DateTime)
	case AuctionEvent:
		a := e.Auction
		b = append(b, a.ItemName+a.Description+a.Extra...)
		b = appendInts(b, a.ID, a.InitialBid, a.Reserve, a.DateTime, a.Expires, a.Seller, a.Category)
	case BidEvent:
		x := e.Bid
		b = append(b, x.Channel+x.URL+x.Extra...)
		b = appendInts(b, x.Auction, x.Bidder, x.Price, x.DateTime)
	}
	b = appendInts(b, int64(e.Type), ts)
	h.Write(b)
}

func appendInts(b []byte, vs ...int64) []byte {
	for _, v := range vs {
		for i := range 8 {
			b = append(b, byte(v>>(8*i)))
		}
	}
	return b
}

func streamHash(cfg Config, n int) uint64 {
	h := fnv.New64a()
	var e Event
	for _, g := range NewGenerators(cfg, n) {
		for g.HasNext() {
			ts := g.Next(&e)
			hashEvent(h, &e, ts)
		}
	}
	return h.Sum64()
}

func TestDeterminism(t *testing.T) {
	cfg := Config{Events: 20_000, Seed: 7}
	a, b := streamHash(cfg, 2), streamHash(cfg, 2)
	if a != b {
		t.Fatalf("same seed, different streams: %x %x", a, b)
	}
	cfg.Seed = 8
	if c := streamHash(cfg, 2); c == a {
		t.Fatalf("different seeds, same stream %x", c)
	}
}

// TestSourceMatchesGenerators runs the source, and the memory source
// twice over the same Memory, in a job: each produces exactly the
// generators' events, with their timestamps, and ends.
func TestSourceMatchesGenerators(t *testing.T) {
	cfg := Config{Events: 30_000, Seed: 3}
	mem, err := NewMemory(cfg, 2)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { mem.Close() })
	for _, src := range []string{"generator", "memory", "memory again"} {
		env := weir.NewEnvironment(weir.WithParallelism(2))
		var ms *MemorySource
		var events weir.DataStream[Event]
		if src == "generator" {
			events = Events(env, cfg)
		} else {
			ms = mem.Source()
			events = ms.Events(env)
		}
		got := weir.Collect(events)
		if err := env.Execute(context.Background(), "nexmark-source"); err != nil {
			t.Fatal(err)
		}
		if ms != nil {
			if _, read := ms.FirstRead(); !read {
				t.Errorf("%s: no first read time", src)
			}
		}
		sameEvents(t, src, cfg, got.Records())
	}
}

func sameEvents(t *testing.T, what string, cfg Config, got []weir.Record[Event]) {
	t.Helper()
	key := func(r weir.Record[Event]) string {
		h := fnv.New64a()
		hashEvent(h, &r.Value, r.TS)
		return string(h.Sum(nil))
	}
	var gotKeys, wantKeys []string
	for _, r := range got {
		gotKeys = append(gotKeys, key(r))
	}
	var e Event
	for _, g := range NewGenerators(cfg, 2) {
		for g.HasNext() {
			ts := g.Next(&e)
			wantKeys = append(wantKeys, key(weir.Record[Event]{Value: e, TS: ts}))
		}
	}
	slices.Sort(gotKeys)
	slices.Sort(wantKeys)
	if !slices.Equal(gotKeys, wantKeys) {
		t.Fatalf("%s: source produced %d events, generators %d; contents differ", what, len(gotKeys), len(wantKeys))
	}
}

func TestConfigValidation(t *testing.T) {
	for _, c := range []Config{{Events: -1}, {Rate: -5}, {Generators: -1}, {HotAuctionRatio: -1}} {
		if c.Validate() == nil {
			t.Errorf("%+v: no error", c)
		}
	}
	env := weir.NewEnvironment(weir.WithParallelism(1))
	weir.Discard(Events(env, Config{Events: -1}))
	if err := env.Execute(context.Background(), "bad"); err == nil {
		t.Fatal("a job with an invalid config ran")
	}
	if d := DefaultConfig(10); d.HotAuctionRatio != 2 || d.Rate != DefaultRate || d.WatermarkDelay != DefaultWatermarkDelay {
		t.Errorf("defaults %+v", d)
	}
}

func TestGeneratorAllocations(t *testing.T) {
	g := NewGenerators(Config{}, 1)[0]
	var e Event
	for range 10_000 { // warm up tables, slabs and arena
		g.Next(&e)
	}
	allocs := testing.AllocsPerRun(5, func() {
		for range 10_000 {
			g.Next(&e)
		}
	})
	// Slabs and arena chunks: a few allocations per 10,000 events, and a
	// bid slab per bidSlabSize bids (9,200 of the 10,000 events).
	if allocs > 10+10_000/bidSlabSize {
		t.Fatalf("%v allocations per 10,000 events", allocs)
	}
}

func BenchmarkGenerator(b *testing.B) {
	g := NewGenerators(Config{}, 1)[0]
	var e Event
	b.ReportAllocs()
	for b.Loop() {
		g.Next(&e)
	}
}

func mustDraw(r *splitRand, bound int32) int32 {
	var v int32
	if bound == 13 {
		v, r.seed = draw13(r.seed)
	} else {
		v, r.seed = draw26(r.seed)
	}
	return v
}

// The constant-divisor draws are intn(13) and intn(26) exactly.
func TestConstantDraws(t *testing.T) {
	a, b := newSplitRand(42), newSplitRand(42)
	for i := range 10_000 {
		if i%2 == 0 {
			if x, y := a.intn(13), mustDraw(&b, 13); x != y {
				t.Fatalf("draw %d: intn(13) %d, draw13 %d", i, x, y)
			}
		} else if x, y := a.intn(26), mustDraw(&b, 26); x != y {
			t.Fatalf("draw %d: intn(26) %d, draw26 %d", i, x, y)
		}
	}
}

// pow10Frac agrees with math.Pow; prices round the same but for values
// within a few ulps of a half cent.
func TestPow10(t *testing.T) {
	r := newSplitRand(1)
	diff := 0
	for i := range 1_000_000 {
		x := r.nextDouble() * 6
		if i < 7 {
			x = float64(i) * (6.0 - 1e-15) / 6 // 0, ~1, ... and near 6
		}
		want := math.Pow(10, x)
		got := pow10Frac(x)
		if math.Abs(got-want) > 1e-15*want {
			t.Fatalf("10^%v = %v, math.Pow %v", x, got, want)
		}
		if math.Floor(got*100+0.5) != math.Floor(want*100+0.5) {
			diff++
		}
	}
	if diff > 2 {
		t.Fatalf("%d of 1e6 prices round differently from math.Pow", diff)
	}
}

// The memory checksum is pinned: bench/flink's MemoryStoreTest pins the
// same values for its Java port, so both engines hash the same events the
// same way (compare.sh compares the checksums each run reports).
func TestMemoryChecksum(t *testing.T) {
	for _, c := range []struct {
		cfg  Config
		n    int
		want uint64
	}{
		{Config{Events: 200_000}, 2, 0xf4575f4f18c423d3},
		{Config{Events: 50_000, Seed: 7, Rate: 1_000_000}, 3, 0x0c8bd3220601f40a},
	} {
		m, err := NewMemory(c.cfg, c.n)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { m.Close() })
		if got := m.Checksum(); got != c.want {
			t.Errorf("%+v x%d: checksum %#x, want %#x", c.cfg, c.n, got, c.want)
		}
		if m.Len() != c.cfg.Events || m.Generators() != c.n {
			t.Errorf("%d events in %d generators", m.Len(), m.Generators())
		}
		// Any changed field changes the checksum.
		e := m.splits[0][len(m.splits[0])-1].Value
		for i := len(m.splits[0]) - 2; e.Type != BidEvent; i-- {
			e = m.splits[0][i].Value
		}
		base := EventChecksum(ChecksumSeed, &e)
		b := *e.Bid // a copy: the Memory's bids must stay as they are
		b.Extra += "x"
		e.Bid = &b
		if EventChecksum(ChecksumSeed, &e) == base {
			t.Error("a longer extra keeps the checksum")
		}
	}
	if _, err := NewMemory(Config{}, 2); err == nil {
		t.Error("an unbounded memory source was accepted")
	}
}
