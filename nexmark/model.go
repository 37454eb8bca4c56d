// Package nexmark is the Nexmark benchmark for Weir: an event generator with
// the logic of the nexmark/nexmark Flink generator (people, auctions and
// bids in proportions 1:3:46, hot sellers, bidders and auctions, log-uniform
// prices, synthetic event time from a configured rate, one generator per
// source split with disjoint id ranges), exposed as a connector.Source, and the
// benchmark's queries in nexmark/queries.
//
// Unlike Flink's generator, which uses an unseeded random number generator,
// each generator here is seeded from Config.Seed and its split index, so a
// run repeats exactly.
package nexmark

// EventType tells which of an Event's parts is set; the values are those of
// Flink's Event.Type (the event_type column of the Nexmark table).
type EventType uint8

const (
	// PersonEvent is a new person (Event.Person is set).
	PersonEvent EventType = 0
	// AuctionEvent is a new auction (Event.Auction is set).
	AuctionEvent EventType = 1
	// BidEvent is a bid (Event.Bid is set).
	BidEvent EventType = 2
)

// String returns "person", "auction" or "bid".
func (t EventType) String() string {
	switch t {
	case PersonEvent:
		return "person"
	case AuctionEvent:
		return "auction"
	case BidEvent:
		return "bid"
	}
	return "unknown"
}

// Person is a person who can sell or bid. Times are milliseconds of event
// time.
type Person struct {
	ID           int64
	Name         string
	EmailAddress string
	CreditCard   string
	City         string
	State        string
	DateTime     int64
	Extra        string
}

// Auction is an item put up for sale by a seller.
type Auction struct {
	ID          int64
	ItemName    string
	Description string
	InitialBid  int64
	Reserve     int64
	DateTime    int64
	Expires     int64
	Seller      int64
	Category    int64
	Extra       string
}

// Bid is a bid on an auction. Channel and URL are the fields Flink's port
// added (for queries 16, 21 and 22).
type Bid struct {
	Auction  int64
	Bidder   int64
	Price    int64
	Channel  string
	URL      string
	DateTime int64
	Extra    string
}

// Event is one Nexmark event, a tagged union: Type tells which part is
// set, and that part is held by pointer (the others are nil), as in
// Flink's Nexmark model. An Event is four words, so user functions that
// take it by value get it in registers (a Bid held inline made it 14
// words, copied through the stack on every call), and copying it from
// operator to operator moves 32 bytes.
//
// The pointed-to values are shared, not owned: the generator, the memory
// store and ParseLine never modify or reuse them after the event is
// handed out (the memory store replays the same events to every job), and
// a user function must not modify them either; to change a bid, copy it
// (b := *e.Bid). They are allocated in slabs (a bid or a person keeps its
// slab alive as long as it is referenced), never one by one.
type Event struct {
	Type    EventType
	Person  *Person
	Auction *Auction
	Bid     *Bid
}

// Timestamp returns the event's time (its part's DateTime), in ms.
func (e *Event) Timestamp() int64 {
	switch e.Type {
	case PersonEvent:
		return e.Person.DateTime
	case AuctionEvent:
		return e.Auction.DateTime
	}
	return e.Bid.DateTime
}
