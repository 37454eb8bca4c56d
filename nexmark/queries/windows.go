package queries

import (
	"time"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/nexmark"
	"github.com/weirstream/weir/window"
)

// count is an AggregateFunction counting elements.
type count[T any] struct{}

func (count[T]) CreateAccumulator() int64  { return 0 }
func (count[T]) Add(_ T, acc int64) int64  { return acc + 1 }
func (count[T]) GetResult(acc int64) int64 { return acc }
func (count[T]) Merge(a, b int64) int64    { return a + b }

// Q5Result is an auction with the most bids in a sliding window.
type Q5Result struct {
	Auction int64
	Num     int64 // bids on it in the window
	Start   int64 // the window
	End     int64
}

// Q5 is hot items: per sliding window of 10 s every 2 s, the auctions with
// the most bids (all of them on a tie):
//
//	SELECT AuctionBids.auction, AuctionBids.num FROM (
//	  SELECT auction, count(*) AS num, window_start, window_end FROM TABLE(HOP(TABLE bid, DESCRIPTOR(dateTime), INTERVAL '2' SECOND, INTERVAL '10' SECOND))
//	  GROUP BY auction, window_start, window_end) AuctionBids
//	JOIN (SELECT max(num) AS maxn, window_start, window_end FROM (...same...) GROUP BY window_start, window_end) MaxBids
//	ON AuctionBids.window_start = MaxBids.window_start AND AuctionBids.window_end = MaxBids.window_end AND AuctionBids.num >= MaxBids.maxn
//
// Bids are counted per auction in sliding windows (an incremental
// aggregate, which Weir slices); each count carries its window's max
// timestamp, so a tumbling 2 s window over all counts gathers exactly one
// sliding window's counts and keeps the largest.
func Q5(events weir.DataStream[nexmark.Event]) weir.DataStream[Q5Result] {
	return HotItems(events, 10*time.Second, 2*time.Second)
}

// HotItems is Q5 with a window size and slide of your choice.
func HotItems(events weir.DataStream[nexmark.Event], size, slide time.Duration) weir.DataStream[Q5Result] {
	byAuction := weir.KeyBy(Bids(events), func(b *nexmark.Bid) int64 { return b.Auction })
	counts := weir.Aggregate(weir.Window(byAuction, window.SlidingEventTime(size, slide)), auctionCount{}).Name("Q5 count")
	hottest := weir.AggregateWithProcessFunc(weir.WindowAll(counts, window.TumblingEventTime(slide)), hottestAuctions{},
		func(_ weir.NoKey, ctx weir.ProcessWindowContext[window.TimeWindow], top [][]auctionBids, out weir.Collector[Q5Result]) error {
			end := ctx.Window().End
			for _, a := range top[0] {
				out.Collect(Q5Result{Auction: a.Auction, Num: a.Num, Start: end - size.Milliseconds(), End: end})
			}
			return nil
		}).Name("Q5 hottest")
	return hottest
}

// auctionBids is the number of bids on an auction in one window.
type auctionBids struct{ Auction, Num int64 }

// auctionCount counts the bids of one auction (the key) in a window.
type auctionCount struct{}

func (auctionCount) CreateAccumulator() auctionBids { return auctionBids{} }
func (auctionCount) Add(b *nexmark.Bid, acc auctionBids) auctionBids {
	return auctionBids{Auction: b.Auction, Num: acc.Num + 1}
}
func (auctionCount) GetResult(acc auctionBids) auctionBids { return acc }
func (auctionCount) Merge(a, b auctionBids) auctionBids {
	return auctionBids{Auction: max(a.Auction, b.Auction), Num: a.Num + b.Num}
}

// hottestAuctions keeps the counts equal to the largest seen.
type hottestAuctions struct{}

func (hottestAuctions) CreateAccumulator() []auctionBids { return nil }
func (hottestAuctions) Add(c auctionBids, acc []auctionBids) []auctionBids {
	switch {
	case len(acc) == 0 || c.Num > acc[0].Num:
		return append(acc[:0], c)
	case c.Num == acc[0].Num:
		return append(acc, c)
	}
	return acc
}
func (hottestAuctions) GetResult(acc []auctionBids) []auctionBids { return acc }
func (h hottestAuctions) Merge(a, b []auctionBids) []auctionBids {
	out := append([]auctionBids(nil), a...)
	for _, c := range b {
		out = h.Add(c, out)
	}
	return out
}

// Q7 is highest bid: the bids with the highest price of each tumbling 10 s
// window (all of them on a tie). Flink's SQL joins every bid with the
// window maxima on price, with B.dateTime BETWEEN window_end - 10 s AND
// window_end; here a bid belongs to its own window [start, end) only, so a
// bid exactly at a window's end is not compared with the window before.
//
// It is a two-phase maximum: per auction and window (parallel, keyed),
// then over those partial maxima per window (WindowAll).
func Q7(events weir.DataStream[nexmark.Event]) weir.DataStream[*nexmark.Bid] {
	size := 10 * time.Second
	byAuction := weir.KeyBy(Bids(events), func(b *nexmark.Bid) int64 { return b.Auction })
	partial := weir.Aggregate(weir.Window(byAuction, window.TumblingEventTime(size)), highestBids{}).Name("Q7 partial max")
	total := weir.Aggregate(weir.WindowAll(weir.FlatMap(partial, spread), window.TumblingEventTime(size)), highestBids{}).Name("Q7 max")
	return weir.FlatMap(total, spread).Name("Q7 highest bids")
}

// spread emits the bids of a window's result. They point into the
// result, which highestBids never changes once returned.
func spread(bids []nexmark.Bid, out weir.Collector[*nexmark.Bid]) error {
	for i := range bids {
		out.Collect(&bids[i])
	}
	return nil
}

// highestBids keeps the bids with the highest price. It copies them: a
// pointer kept in an accumulator would keep the generator's whole block of
// bids alive. A higher bid gets a new slice, so that a result already
// emitted is never overwritten.
type highestBids struct{}

func (highestBids) CreateAccumulator() []nexmark.Bid { return nil }
func (highestBids) Add(b *nexmark.Bid, acc []nexmark.Bid) []nexmark.Bid {
	switch {
	case len(acc) == 0 || b.Price > acc[0].Price:
		return []nexmark.Bid{*b}
	case b.Price == acc[0].Price:
		return append(acc, *b)
	}
	return acc
}
func (highestBids) GetResult(acc []nexmark.Bid) []nexmark.Bid { return acc }
func (h highestBids) Merge(a, b []nexmark.Bid) []nexmark.Bid {
	out := append([]nexmark.Bid(nil), a...)
	for i := range b {
		out = h.Add(&b[i], out)
	}
	return out
}

// Q8Result is a person who opened an auction in the 10 s window in which
// they registered.
type Q8Result struct {
	ID    int64
	Name  string
	Start int64 // the window's start
}

// Q8 is monitor new users: the people who created an auction in the same
// tumbling 10 s window as their registration, a window join of people
// (grouped by id and name) with auctions (grouped by seller):
//
//	SELECT P.id, P.name, P.starttime FROM (SELECT id, name, window_start AS starttime, window_end AS endtime
//	  FROM TUMBLE(person, dateTime, 10 s) GROUP BY id, name, window_start, window_end) P
//	JOIN (SELECT seller, window_start AS starttime, window_end AS endtime
//	  FROM TUMBLE(auction, dateTime, 10 s) GROUP BY seller, window_start, window_end) A
//	ON P.id = A.seller AND P.starttime = A.starttime AND P.endtime = A.endtime
//
// As Flink's DataStream window join, both sides go, tagged, into one keyed
// tumbling window (keyed by person id), whose aggregate notes whether the
// person and an auction of theirs are in it.
func Q8(events weir.DataStream[nexmark.Event]) weir.DataStream[Q8Result] {
	size := 10 * time.Second
	people := weir.Map(weir.Filter(events, isPerson).Name("Persons"), func(e nexmark.Event) newUser {
		return newUser{ID: e.Person.ID, Name: e.Person.Name, Person: true}
	}).Name("Q8 person")
	sellers := weir.Map(weir.Filter(events, isAuction).Name("Auctions"), func(e nexmark.Event) newUser {
		return newUser{ID: e.Auction.Seller, Auction: true}
	}).Name("Q8 seller")
	byID := weir.KeyBy(weir.Union(people, sellers), func(u newUser) int64 { return u.ID })
	return weir.AggregateWithProcessFunc(weir.Window(byID, window.TumblingEventTime(size)), joinUser{},
		func(id int64, ctx weir.ProcessWindowContext[window.TimeWindow], us []newUser, out weir.Collector[Q8Result]) error {
			if u := us[0]; u.Person && u.Auction {
				out.Collect(Q8Result{ID: id, Name: u.Name, Start: ctx.Window().Start})
			}
			return nil
		}).Name("Q8 window join")
}

// newUser is a person (Person set, with the name) or an auction by ID
// (Auction set); the join's accumulator has both flags.
type newUser struct {
	ID              int64
	Name            string
	Person, Auction bool
}

type joinUser struct{}

func (joinUser) CreateAccumulator() newUser { return newUser{} }
func (joinUser) Add(u newUser, acc newUser) newUser {
	acc.ID = u.ID
	if u.Person {
		acc.Person, acc.Name = true, u.Name
	}
	acc.Auction = acc.Auction || u.Auction
	return acc
}
func (joinUser) GetResult(acc newUser) newUser { return acc }
func (j joinUser) Merge(a, b newUser) newUser {
	if b.Person {
		a = j.Add(newUser{ID: b.ID, Name: b.Name, Person: true}, a)
	}
	a.Auction = a.Auction || b.Auction
	return a
}

// SessionResult is the number of bids of a bidder in one window.
type SessionResult struct {
	Bidder int64
	Count  int64
	Start  int64
	End    int64
}

// Q11 is user sessions: the number of bids of each bidder per session,
// sessions closing after 10 s without bids:
//
//	SELECT B.bidder, count(*), SESSION_START(B.dateTime, INTERVAL '10' SECOND), SESSION_END(B.dateTime, INTERVAL '10' SECOND)
//	FROM bid B GROUP BY B.bidder, SESSION(B.dateTime, INTERVAL '10' SECOND)
func Q11(events weir.DataStream[nexmark.Event]) weir.DataStream[SessionResult] {
	return bidsPerBidder(events, window.EventTimeSessions(10*time.Second), "Q11 sessions")
}

// Q12 is processing-time windows: the number of bids of each bidder per
// tumbling 10 s window of processing time:
//
//	SELECT B.bidder, count(*), window_start, window_end
//	FROM TUMBLE(B, p_time, INTERVAL '10' SECOND) GROUP BY B.bidder, window_start, window_end
//
// As in Flink, windows still open when a bounded input ends are not fired,
// so a run shorter than 10 s emits nothing.
func Q12(events weir.DataStream[nexmark.Event]) weir.DataStream[SessionResult] {
	return bidsPerBidder(events, window.TumblingProcessingTime(10*time.Second), "Q12 window")
}

func bidsPerBidder(events weir.DataStream[nexmark.Event], assigner window.Assigner[window.TimeWindow], name string) weir.DataStream[SessionResult] {
	byBidder := weir.KeyBy(Bids(events), func(b *nexmark.Bid) int64 { return b.Bidder })
	return weir.AggregateWithProcessFunc(weir.Window(byBidder, assigner), count[*nexmark.Bid]{},
		func(bidder int64, ctx weir.ProcessWindowContext[window.TimeWindow], n []int64, out weir.Collector[SessionResult]) error {
			w := ctx.Window()
			out.Collect(SessionResult{Bidder: bidder, Count: n[0], Start: w.Start, End: w.End})
			return nil
		}).Name(name)
}
