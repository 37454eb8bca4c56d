package queries

import (
	"github.com/weirstream/weir"
	"github.com/weirstream/weir/nexmark"
	"github.com/weirstream/weir/state"
)

// Q9Result is an auction with its winning bid.
type Q9Result struct {
	Auction nexmark.Auction
	Bid     nexmark.Bid
}

// Q9 is winning bids: for each auction, its highest bid (earliest on a
// tie) among the bids made while it was open, A.dateTime <= B.dateTime <=
// A.expires. Flink's SQL is a regular join with a retracting Top-1:
//
//	SELECT ... FROM (SELECT *, ROW_NUMBER() OVER (PARTITION BY A.id ORDER BY B.price DESC, B.dateTime ASC) rownum
//	  FROM auction A, bid B WHERE A.id = B.auction AND B.dateTime BETWEEN A.dateTime AND A.expires)
//	WHERE rownum <= 1
//
// Here auctions and bids are keyed by auction id and joined by a
// KeyedCoProcessFunction that keeps the auction and its best bid so far and
// emits the winner once, when the watermark passes the auction's expiry
// (the final value of Flink's updating result). Bids that arrive before
// their auction wait until it comes or the watermark passes them.
func Q9(events weir.DataStream[nexmark.Event]) weir.DataStream[Q9Result] {
	return WinningBids(events, DefaultClosedRetention)
}

// DefaultClosedRetention is how long, in event time after an auction
// expires, WinningBids remembers that it is closed, so that bids arriving
// for it afterwards are dropped at once (rather than waiting for the
// watermark). Later bids for it are still handled correctly, only kept
// longer; the default is the source's watermark delay.
const DefaultClosedRetention = int64(nexmark.DefaultWatermarkDelay / 1e6)

// WinningBids joins auctions with their bids and emits each auction that
// received a bid in time with its winning bid, when the watermark passes
// the auction's expiry (see Q9). closedRetention is in ms.
func WinningBids(events weir.DataStream[nexmark.Event], closedRetention int64) weir.DataStream[Q9Result] {
	joined := weir.ConnectKeyed(
		weir.KeyBy(Auctions(events), func(a nexmark.Auction) int64 { return a.ID }),
		weir.KeyBy(Bids(events), func(b nexmark.Bid) int64 { return b.Auction }))
	return weir.KeyedCoProcess(joined, &winningBids{retention: closedRetention}).Name("WinningBids")
}

type winningBids struct {
	retention int64
	st        state.ValueState[auctionState]
	early     state.ListState[nexmark.Bid] // bids that came before their auction
}

// auctionState is one auction's state, in one value so that a bid costs
// one state lookup: the auction, its best bid so far, and after it has
// been emitted a closed marker (kept for the retention).
type auctionState struct {
	Auction nexmark.Auction
	Best    nexmark.Bid
	HasBest bool
	Closed  bool
}

func (w *winningBids) Open(ctx weir.KeyedRuntimeContext[int64]) (err error) {
	if w.st, err = weir.GetValueState(ctx, state.Value[auctionState]("auction")); err != nil {
		return err
	}
	w.early, err = weir.GetListState(ctx, state.List[nexmark.Bid]("early-bids"))
	return err
}

func open(a *nexmark.Auction, b *nexmark.Bid) bool {
	return a.DateTime <= b.DateTime && b.DateTime <= a.Expires
}

// offer makes b the best bid if it is in time and beats the current one
// (higher price, then earlier; on a full tie the first stays).
func (s *auctionState) offer(b *nexmark.Bid) bool {
	if !open(&s.Auction, b) {
		return false
	}
	if s.HasBest && (b.Price < s.Best.Price || (b.Price == s.Best.Price && b.DateTime >= s.Best.DateTime)) {
		return false
	}
	s.Best, s.HasBest = *b, true
	return true
}

func (w *winningBids) ProcessElement1(a nexmark.Auction, ctx weir.KeyedContext[int64], _ weir.Collector[Q9Result]) error {
	s := auctionState{Auction: a}
	for b := range w.early.All() {
		s.offer(&b)
	}
	w.early.Clear()
	w.st.Update(s)
	ctx.TimerService().RegisterEventTimeTimer(a.Expires)
	return nil
}

func (w *winningBids) ProcessElement2(b nexmark.Bid, ctx weir.KeyedContext[int64], _ weir.Collector[Q9Result]) error {
	if s, ok := w.st.Value(); ok {
		// A closed auction's bids are after its expiry: dropped.
		if !s.Closed && s.offer(&b) {
			w.st.Update(s)
		}
		return nil
	}
	if b.DateTime < ctx.CurrentWatermark() {
		return nil // late: its auction, if any, would be late too
	}
	w.early.Add(b)
	ctx.TimerService().RegisterEventTimeTimer(b.DateTime)
	return nil
}

func (w *winningBids) OnTimer(ts int64, ctx weir.OnTimerContext[int64], out weir.Collector[Q9Result]) error {
	if s, ok := w.st.Value(); ok {
		switch {
		case !s.Closed && ts >= s.Auction.Expires:
			if s.HasBest {
				out.Collect(Q9Result{Auction: s.Auction, Bid: s.Best})
			}
			w.st.Update(auctionState{Auction: nexmark.Auction{Expires: s.Auction.Expires}, Closed: true})
			ctx.TimerService().RegisterEventTimeTimer(s.Auction.Expires + w.retention)
		case s.Closed && ts >= s.Auction.Expires+w.retention:
			w.st.Clear()
		}
		return nil
	}
	// Early bids the watermark has passed can no longer meet their auction.
	var keep []nexmark.Bid
	n := 0
	for b := range w.early.All() {
		n++
		if b.DateTime > ts {
			keep = append(keep, b)
		}
	}
	if len(keep) < n {
		w.early.Update(keep)
	}
	return nil
}

// Q4Result is the average winning price of a category so far.
type Q4Result struct {
	Category int64
	Avg      int64 // sum / count, truncated (Flink's AVG on BIGINT)
	Count    int64
}

// Q4 is the average closing price per category:
//
//	SELECT Q.category, AVG(Q.final) FROM (
//	  SELECT MAX(B.price) AS final, A.category FROM auction A, bid B
//	  WHERE A.id = B.auction AND B.dateTime BETWEEN A.dateTime AND A.expires
//	  GROUP BY A.id, A.category) Q
//	GROUP BY Q.category
//
// The inner query is the winning bids of Q9 (each auction's final price,
// emitted once at its expiry); the outer keeps a running sum and count per
// category and emits the updated average with each closed auction, so the
// last value per category is the SQL query's final answer.
func Q4(events weir.DataStream[nexmark.Event]) weir.DataStream[Q4Result] {
	type final struct{ Category, Price int64 }
	winners := weir.Map(WinningBids(events, DefaultClosedRetention), func(r Q9Result) final {
		return final{Category: r.Auction.Category, Price: r.Bid.Price}
	}).Name("Q4 final price")
	byCategory := weir.KeyBy(winners, func(f final) int64 { return f.Category })
	return weir.Process(byCategory, &categoryAverage[final]{price: func(f final) int64 { return f.Price }}).Name("Q4 average")
}

type sumCount struct{ Sum, Count int64 }

type categoryAverage[T any] struct {
	price func(T) int64
	acc   state.ValueState[sumCount]
}

func (c *categoryAverage[T]) Open(ctx weir.KeyedRuntimeContext[int64]) (err error) {
	c.acc, err = weir.GetValueState(ctx, state.Value[sumCount]("sum-count"))
	return err
}

func (c *categoryAverage[T]) ProcessElement(v T, ctx weir.KeyedContext[int64], out weir.Collector[Q4Result]) error {
	acc, _ := c.acc.Value()
	acc.Sum += c.price(v)
	acc.Count++
	c.acc.Update(acc)
	out.Collect(Q4Result{Category: ctx.CurrentKey(), Avg: acc.Sum / acc.Count, Count: acc.Count})
	return nil
}

func (c *categoryAverage[T]) OnTimer(int64, weir.OnTimerContext[int64], weir.Collector[Q4Result]) error {
	return nil
}
