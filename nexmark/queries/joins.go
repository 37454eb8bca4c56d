package queries

import (
	"github.com/weirstream/weir"
	"github.com/weirstream/weir/nexmark"
	"github.com/weirstream/weir/state"
)

// Q20Result is a bid joined with its auction (all columns of both).
type Q20Result struct {
	Bid     nexmark.Bid
	Auction *nexmark.Auction
}

// Q20 expands each bid with its auction, for auctions of category 10:
//
//	SELECT auction, bidder, price, channel, url, B.dateTime, B.extra,
//	  itemName, description, initialBid, reserve, A.dateTime, expires, seller, category, A.extra
//	FROM bid AS B INNER JOIN auction AS A ON B.auction = A.id WHERE A.category = 10
//
// A regular (unbounded) inner join, keyed by auction id, that nothing
// expires, as in SQL. Auction ids are unique, so once an auction is known
// its bids are joined (category 10) or dropped (other categories) as they
// come and are never stored; a bid that comes before its auction waits in
// list state until the auction arrives. SQL's join would keep every bid,
// since it does not know the key is unique; the result is the same.
func Q20(events weir.DataStream[nexmark.Event]) weir.DataStream[Q20Result] {
	bids := weir.KeyBy(Bids(events), func(b *nexmark.Bid) int64 { return b.Auction })
	auctions := weir.Map(weir.Filter(events, isAuction).Name("Auctions"), func(e nexmark.Event) *nexmark.Auction { return e.Auction }).Name("Auction")
	return weir.KeyedCoProcess(weir.ConnectKeyed(bids, weir.KeyBy(auctions, func(a *nexmark.Auction) int64 { return a.ID })),
		&expandBid{}).Name("Q20 join")
}

type expandBid struct {
	// auction is the key's auction if of category 10, nil if of another.
	auction state.ValueState[*nexmark.Auction]
	waiting state.ListState[nexmark.Bid]
}

func (j *expandBid) Open(ctx weir.KeyedRuntimeContext[int64]) (err error) {
	if j.auction, err = weir.GetValueState(ctx, state.Value[*nexmark.Auction]("auction")); err != nil {
		return err
	}
	j.waiting, err = weir.GetListState(ctx, state.List[nexmark.Bid]("waiting-bids"))
	return err
}

func (j *expandBid) ProcessElement1(b *nexmark.Bid, _ weir.KeyedContext[int64], out weir.Collector[Q20Result]) error {
	a, known := j.auction.Value()
	switch {
	case !known:
		j.waiting.Add(*b)
	case a != nil:
		out.Collect(Q20Result{Bid: *b, Auction: a})
	}
	return nil
}

func (j *expandBid) ProcessElement2(a *nexmark.Auction, _ weir.KeyedContext[int64], out weir.Collector[Q20Result]) error {
	if a.Category != 10 {
		a = nil
	}
	j.auction.Update(a)
	if a != nil {
		for b := range j.waiting.All() {
			out.Collect(Q20Result{Bid: b, Auction: a})
		}
	}
	j.waiting.Clear()
	return nil
}

func (j *expandBid) OnTimer(int64, weir.OnTimerContext[int64], weir.Collector[Q20Result]) error {
	return nil
}

// Q23Result is a bid joined with its bidder and with an auction the
// bidder sells.
type Q23Result struct {
	Bid     *nexmark.Bid
	Person  *nexmark.Person
	Auction *nexmark.Auction
}

// Q23 is a three-way regular join of bids with the person who made them
// and with every auction that person sells:
//
//	SELECT bidder, price, channel, url, B.extra, P.id, name, emailAddress, creditCard, city, state, P.extra,
//	  itemName, description, initialBid, reserve, A.dateTime, expires, seller, category, A.extra
//	FROM bid B JOIN person P ON P.id = B.bidder JOIN auction A ON A.seller = B.bidder
//
// All three join keys are one person id, so, as Flink 2.1's multi-way join
// operator, one keyed operator takes the three inputs (the event stream
// keyed by bidder, person id or seller): it keeps the person, every
// auction and every bid of the key forever (a regular join: nothing
// expires) and emits each (bid, person, auction) triple once, when its last
// member arrives. Like the person and the auctions, the bids are kept by
// pointer: an event's bid is never changed once emitted.
func Q23(events weir.DataStream[nexmark.Event]) weir.DataStream[Q23Result] {
	byPerson := weir.KeyBy(events, func(e nexmark.Event) int64 {
		switch e.Type {
		case nexmark.PersonEvent:
			return e.Person.ID
		case nexmark.AuctionEvent:
			return e.Auction.Seller
		}
		return e.Bid.Bidder
	})
	return weir.Process(byPerson, &multiJoin{}).Name("Q23 join")
}

type multiJoin struct {
	person   state.ValueState[*nexmark.Person]
	auctions state.ListState[*nexmark.Auction]
	bids     state.ListState[*nexmark.Bid]
}

func (j *multiJoin) Open(ctx weir.KeyedRuntimeContext[int64]) (err error) {
	if j.person, err = weir.GetValueState(ctx, state.Value[*nexmark.Person]("person")); err != nil {
		return err
	}
	if j.auctions, err = weir.GetListState(ctx, state.List[*nexmark.Auction]("auctions")); err != nil {
		return err
	}
	j.bids, err = weir.GetListState(ctx, state.List[*nexmark.Bid]("bids"))
	return err
}

func (j *multiJoin) ProcessElement(e nexmark.Event, _ weir.KeyedContext[int64], out weir.Collector[Q23Result]) error {
	switch e.Type {
	case nexmark.PersonEvent:
		p := e.Person
		j.person.Update(p)
		for a := range j.auctions.All() {
			for b := range j.bids.All() {
				out.Collect(Q23Result{Bid: b, Person: p, Auction: a})
			}
		}
	case nexmark.AuctionEvent:
		a := e.Auction
		j.auctions.Add(a)
		if p, ok := j.person.Value(); ok {
			for b := range j.bids.All() {
				out.Collect(Q23Result{Bid: b, Person: p, Auction: a})
			}
		}
	default:
		b := e.Bid
		j.bids.Add(b)
		if p, ok := j.person.Value(); ok {
			for a := range j.auctions.All() {
				out.Collect(Q23Result{Bid: b, Person: p, Auction: a})
			}
		}
	}
	return nil
}

func (j *multiJoin) OnTimer(int64, weir.OnTimerContext[int64], weir.Collector[Q23Result]) error {
	return nil
}
