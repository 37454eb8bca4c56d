package nexmark

import "math"

// Generator produces the events of one split: a contiguous range of event
// ids, on its own timeline (all generators of a run share the base time and
// start at event number 1, as Flink's GeneratorConfig.split).
type Generator struct {
	// split parameters
	index, of    int
	firstEventID int64
	firstNumber  int64
	maxEvents    int64
	count        int64 // events generated so far

	// config, pre-converted
	baseTime       int64
	interEventUs   float64
	pProp, aProp   int64
	total          int64
	groupSize      int64
	hotAuction     int32
	hotSeller      int32
	hotBidder      int32
	activePeople   int64
	inFlight       int64
	avgPerson      int
	avgAuction     int
	avgBid         int
	eventsAhead    int64 // events until numInFlightAuctions more auctions
	doubleBidderID bool

	// next is the position of the next event's id when ids are
	// consecutive (groupSize 1), so Next needs no division.
	next idPos

	rnd     splitRand
	tab     *stringTables
	arena   arena
	people  []Person  // slab; people[0] is handed out next
	auction []Auction // slab
	bids    []Bid     // slab
	scratch [160]byte
}

// slabSize is the number of people or auctions in a slab; bids, 92% of
// the events, come in slabs of bidSlabSize (20 kB).
const slabSize = 128

// bidSlabSize is the number of bids in one of the generator's slabs.
const bidSlabSize = 256

// idPos is an event id's position in the proportions' cycle: id =
// epoch*total + offset, 0 <= offset < total.
type idPos struct{ epoch, offset int64 }

func (g *Generator) posOf(id int64) idPos { return idPos{id / g.total, id % g.total} }

// NewGenerators returns the n generators of cfg (n > 0), generator i
// owning split i: events [i*Events/n, (i+1)*Events/n) in Flink's split
// (the last one takes the remainder), seeded from (cfg.Seed, i). A source
// with n splits produces the same events.
func NewGenerators(cfg Config, n int) []*Generator {
	cfg = cfg.withDefaults()
	out := make([]*Generator, n)
	for i := range n {
		out[i] = newGenerator(cfg, i, n)
	}
	return out
}

func newGenerator(cfg Config, i, n int) *Generator {
	events := cfg.maxEvents()
	sub := events / int64(n)
	first := 1 + int64(i)*sub
	if i == n-1 {
		sub = events - sub*int64(n-1)
	}
	total := cfg.totalProportion()
	g := &Generator{
		index: i, of: n,
		firstEventID: first, firstNumber: 1, maxEvents: sub,
		baseTime:     cfg.BaseTime,
		interEventUs: 1_000_000.0 / cfg.Rate * float64(n),
		pProp:        int64(cfg.PersonProportion), aProp: int64(cfg.AuctionProportion), total: total,
		groupSize:  int64(cfg.OutOfOrderGroupSize),
		hotAuction: int32(cfg.HotAuctionRatio), hotSeller: int32(cfg.HotSellersRatio), hotBidder: int32(cfg.HotBiddersRatio),
		activePeople: int64(cfg.NumActivePeople), inFlight: int64(cfg.NumInFlightAuctions),
		avgPerson: cfg.AvgPersonByteSize, avgAuction: cfg.AvgAuctionByteSize, avgBid: cfg.AvgBidByteSize,
		eventsAhead:    int64(cfg.NumInFlightAuctions) * total / int64(cfg.AuctionProportion),
		doubleBidderID: cfg.DoubleBidderOffset,
		rnd:            newSplitRand(mix64(cfg.Seed ^ mix64(uint64(i)+1))),
		tab:            tables(),
	}
	g.next = g.posOf(g.firstEventID + g.adjustedNumber(0))
	return g
}

// Index returns the generator's split index.
func (g *Generator) Index() int { return g.index }

// HasNext reports whether the generator has events left.
func (g *Generator) HasNext() bool { return g.count < g.maxEvents }

// Remaining returns the number of events left.
func (g *Generator) Remaining() int64 { return g.maxEvents - g.count }

// Count returns the number of events generated so far.
func (g *Generator) Count() int64 { return g.count }

// adjustedNumber is GeneratorConfig.nextAdjustedEventNumber.
func (g *Generator) adjustedNumber(count int64) int64 {
	num := g.firstNumber + count
	if g.groupSize == 1 {
		return num
	}
	n := g.groupSize
	return (num/n)*n + (num*953)%n
}

// timestampFor is GeneratorConfig.timestampForEvent.
func (g *Generator) timestampFor(number int64) int64 {
	return g.baseTime + int64(float64(number)*g.interEventUs)/1000
}

// NextEventID returns the id of the next event (it decides its type).
func (g *Generator) NextEventID() int64 { return g.firstEventID + g.adjustedNumber(g.count) }

// Next writes the next event into e and returns its timestamp. Call it only
// while HasNext is true. In the steady state it does not allocate: strings
// come from tables, from a shared padding string, or from a chunked arena,
// and people, auctions and bids from slabs.
func (g *Generator) Next(e *Event) int64 {
	number := g.adjustedNumber(g.count)
	ts := g.timestampFor(number)
	at := g.next
	if g.groupSize == 1 {
		if g.next.offset++; g.next.offset == g.total {
			g.next = idPos{g.next.epoch + 1, 0}
		}
	} else {
		at = g.posOf(g.firstEventID + number)
	}
	switch rem := at.offset; {
	case rem < g.pProp:
		p := g.newPerson()
		g.nextPerson(p, at, ts)
		*e = Event{Type: PersonEvent, Person: p}
	case rem < g.pProp+g.aProp:
		a := g.newAuction()
		g.nextAuction(a, number, at, ts)
		*e = Event{Type: AuctionEvent, Auction: a}
	default:
		b := g.newBid()
		g.nextBid(b, at, ts)
		*e = Event{Type: BidEvent, Bid: b}
	}
	g.count++
	return ts
}

func (g *Generator) newPerson() *Person   { return fromSlab(&g.people, g.arena.reg, slabSize) }
func (g *Generator) newAuction() *Auction { return fromSlab(&g.auction, g.arena.reg, slabSize) }
func (g *Generator) newBid() *Bid         { return fromSlab(&g.bids, g.arena.reg, bidSlabSize) }

// fromSlab hands out the next value of *slab, first allocating a new slab
// of n values in reg (nil: the Go heap) when it is used up.
func fromSlab[T any](slab *[]T, reg *region, n int) *T {
	if len(*slab) == 0 {
		*slab = regionSlice[T](reg, n)
	}
	v := &(*slab)[0]
	*slab = (*slab)[1:]
	return v
}

// lastBase0PersonID is the id (from 0) of the last person at the event
// id at, or of the person being generated at it.
func (g *Generator) lastBase0PersonID(at idPos) int64 {
	epoch, offset := at.epoch, at.offset
	if offset >= g.pProp {
		offset = g.pProp - 1
	}
	return epoch*g.pProp + offset
}

// lastBase0AuctionID is the id (from 0) of the last auction at the event
// id at, or of the auction being generated at it.
func (g *Generator) lastBase0AuctionID(at idPos) int64 {
	epoch, offset := at.epoch, at.offset
	switch {
	case offset < g.pProp:
		epoch--
		offset = g.aProp - 1
	case offset >= g.pProp+g.aProp:
		offset = g.aProp - 1
	default:
		offset -= g.pProp
	}
	return epoch*g.aProp + offset
}

// nextBase0PersonID picks one of the active people, up to personIDLead
// ids in the future.
func (g *Generator) nextBase0PersonID(at idPos) int64 {
	numPeople := g.lastBase0PersonID(at) + 1
	active := min(numPeople, g.activePeople)
	return numPeople - active + g.rnd.longn(active+personIDLead)
}

// nextBase0AuctionID picks one of the in-flight auctions, up to
// auctionIDLead ids in the future.
func (g *Generator) nextBase0AuctionID(at idPos) int64 {
	maxA := g.lastBase0AuctionID(at)
	minA := max(maxA-g.inFlight, 0)
	return minA + g.rnd.longn(maxA-minA+1+auctionIDLead)
}

// nextExtra returns padding so that currentSize plus its length is on
// average avg: a slice of the shared padding string at a random offset.
func (g *Generator) nextExtra(currentSize, avg int) string {
	if currentSize > avg {
		return ""
	}
	d := avg - currentSize
	delta := int(math.Floor(float64(d)*0.2 + 0.5))
	size := d - delta
	if delta != 0 {
		size += int(g.rnd.intn(int32(2 * delta)))
	}
	if size == 0 {
		// Flink still draws an offset for an empty string.
		g.rnd.intn(extraStringSize)
		return ""
	}
	off := int(g.rnd.intn(int32(extraStringSize - size)))
	return g.tab.extra[off : off+size]
}

func (g *Generator) nextPerson(p *Person, at idPos, ts int64) {
	t := g.tab
	id := g.lastBase0PersonID(at) + FirstPersonID
	name := t.names[int(g.rnd.intn(int32(len(firstNames))))*len(lastNames)+int(g.rnd.intn(int32(len(lastNames))))]
	b := randString(&g.rnd, g.scratch[:0], 7, ' ')
	b = append(b, '@')
	b = randString(&g.rnd, b, 5, ' ')
	b = append(b, ".com"...)
	email := g.arena.str(b)
	b = g.scratch[:0]
	for i := range 4 {
		if i > 0 {
			b = append(b, ' ')
		}
		v := g.rnd.intn(10000)
		b = append(b, byte('0'+v/1000), byte('0'+v/100%10), byte('0'+v/10%10), byte('0'+v%10))
	}
	card := g.arena.str(b)
	city := t.cities[g.rnd.intn(int32(len(t.cities)))]
	state := t.states[g.rnd.intn(int32(len(t.states)))]
	size := 8 + len(name) + len(email) + len(card) + len(city) + len(state)
	*p = Person{ID: id, Name: name, EmailAddress: email, CreditCard: card, City: city, State: state,
		DateTime: ts, Extra: g.nextExtra(size, g.avgPerson)}
}

func (g *Generator) nextAuction(a *Auction, number int64, at idPos, ts int64) {
	id := g.lastBase0AuctionID(at) + FirstAuctionID
	var seller int64
	if g.rnd.intn(g.hotSeller) > 0 {
		seller = (g.lastBase0PersonID(at) / hotSellerBatch) * hotSellerBatch
	} else {
		seller = g.nextBase0PersonID(at)
	}
	seller += FirstPersonID
	category := FirstCategoryID + int64(g.rnd.intn(NumCategories))
	initialBid := g.nextPrice()
	// Auction length: uniform with mean the event time until
	// numInFlightAuctions more auctions have been generated.
	horizon := g.timestampFor(number+g.eventsAhead) - ts
	expires := ts + 1 + g.rnd.longn(max(horizon*2, 1))
	name := g.arena.str(randString(&g.rnd, g.scratch[:0], 20, ' '))
	desc := g.arena.str(randString(&g.rnd, g.scratch[:0], 100, ' '))
	reserve := initialBid + g.nextPrice()
	size := 8 + len(name) + len(desc) + 8 + 8 + 8 + 8 + 8
	*a = Auction{ID: id, ItemName: name, Description: desc, InitialBid: initialBid, Reserve: reserve,
		DateTime: ts, Expires: expires, Seller: seller, Category: category, Extra: g.nextExtra(size, g.avgAuction)}
}

func (g *Generator) nextBid(b *Bid, at idPos, ts int64) {
	var auction int64
	if g.rnd.intn(g.hotAuction) > 0 {
		auction = (g.lastBase0AuctionID(at) / hotAuctionBatch) * hotAuctionBatch
	} else {
		auction = g.nextBase0AuctionID(at)
	}
	auction += FirstAuctionID
	var bidder int64
	if g.rnd.intn(g.hotBidder) > 0 {
		// The second person of the batch, so hot bidders and hot sellers differ.
		bidder = (g.lastBase0PersonID(at)/hotBidderBatch)*hotBidderBatch + 1
	} else {
		bidder = g.nextBase0PersonID(at)
	}
	bidder += FirstPersonID
	price := g.nextPrice()
	var channel, url string
	if g.rnd.intn(2) > 0 {
		i := g.rnd.intn(int32(len(g.tab.hotChannels)))
		channel, url = g.tab.hotChannels[i], g.tab.hotURLs[i]
	} else {
		c := g.rnd.intn(numChannels)
		channel, url = g.tab.channels[c], g.tab.channelURLs[c]
	}
	if g.doubleBidderID {
		bidder += FirstPersonID
	}
	b.Auction, b.Bidder, b.Price, b.Channel, b.URL, b.DateTime = auction, bidder, price, channel, url, ts
	b.Extra = g.nextExtra(8+8+8+8, g.avgBid)
}
