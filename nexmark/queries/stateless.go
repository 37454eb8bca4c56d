package queries

import (
	"github.com/weirstream/weir"
	"github.com/weirstream/weir/nexmark"
)

// Q0 is the pass-through query: every bid, unchanged
// (`SELECT auction, bidder, price, dateTime, extra FROM bid`; the bid's
// channel and url come along). It measures the source and the framework.
func Q0(events weir.DataStream[nexmark.Event]) weir.DataStream[nexmark.Bid] {
	return Bids(events)
}

// Q1Result is a bid with its price converted to euros.
type Q1Result struct {
	Auction  int64
	Bidder   int64
	Price    float64 // 0.908 * the bid's price
	DateTime int64
	Extra    string
}

// Q1 is currency conversion: each bid's price times 0.908
// (`SELECT auction, bidder, 0.908 * price, dateTime, extra FROM bid`).
func Q1(events weir.DataStream[nexmark.Event]) weir.DataStream[Q1Result] {
	return weir.Map(weir.Filter(events, isBid).Name("Bids"), func(e nexmark.Event) Q1Result {
		b := &e.Bid
		return Q1Result{Auction: b.Auction, Bidder: b.Bidder, Price: 0.908 * float64(b.Price), DateTime: b.DateTime, Extra: b.Extra}
	}).Name("Q1 convert")
}

// Q2Result is an auction id and a bid price.
type Q2Result struct {
	Auction int64
	Price   int64
}

// Q2 is selection: the bids on every 123rd auction
// (`SELECT auction, price FROM bid WHERE MOD(auction, 123) = 0`).
func Q2(events weir.DataStream[nexmark.Event]) weir.DataStream[Q2Result] {
	sel := weir.Filter(events, func(e nexmark.Event) bool {
		return e.Type == nexmark.BidEvent && e.Bid.Auction%123 == 0
	}).Name("Q2 select")
	return weir.Map(sel, func(e nexmark.Event) Q2Result {
		return Q2Result{Auction: e.Bid.Auction, Price: e.Bid.Price}
	}).Name("Q2 project")
}
