package queries

import (
	"cmp"
	"slices"

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
		weir.KeyBy(Bids(events), func(b *nexmark.Bid) int64 { return b.Auction }))
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

func (w *winningBids) ProcessElement2(b *nexmark.Bid, ctx weir.KeyedContext[int64], _ weir.Collector[Q9Result]) error {
	if s, ok := w.st.Value(); ok {
		// A closed auction's bids are after its expiry: dropped.
		if !s.Closed && s.offer(b) {
			w.st.Update(s)
		}
		return nil
	}
	if b.DateTime < ctx.CurrentWatermark() {
		return nil // late: its auction, if any, would be late too
	}
	w.early.Add(*b)
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

// Q6Result is a seller's average selling price over their last closed
// auctions.
type Q6Result struct {
	Seller int64
	Avg    int64 // sum / count, truncated (AVG on BIGINT)
}

// Q6Window is the number of closed auctions Q6 averages over: the current
// one and the 10 before (ROWS BETWEEN 10 PRECEDING AND CURRENT ROW).
const Q6Window = 11

// Q6 is the average selling price by seller: for each closed auction, the
// average winning price of its seller's last 11 closed auctions (this one
// and the 10 before):
//
//	SELECT Q.seller, AVG(Q.price) OVER (PARTITION BY Q.seller ORDER BY Q.dateTime
//	  ROWS BETWEEN 10 PRECEDING AND CURRENT ROW)
//	FROM (SELECT *, ROW_NUMBER() OVER (PARTITION BY A.id, A.seller ORDER BY B.price DESC) AS rownum
//	  FROM (SELECT A.id, A.seller, B.price, B.dateTime FROM auction AS A, bid AS B
//	        WHERE A.id = B.auction AND B.dateTime BETWEEN A.dateTime AND A.expires)
//	  WHERE rownum <= 1) AS Q
//
// Flink's SQL cannot run it: the OVER window would read the retracting
// Top-1 result (FLINK-19059). Here the winning bids are those of Q9, each
// final when its auction expires and emitted at that time; keyed by
// seller, they are ordered by that time (then auction id) as an event-time
// OVER window orders its rows: each waits in state until the watermark
// passes it, then the rows due are averaged in order over a window of the
// last 11 per seller.
func Q6(events weir.DataStream[nexmark.Event]) weir.DataStream[Q6Result] {
	winners := weir.Map(WinningBids(events, DefaultClosedRetention), func(r Q9Result) sale {
		return sale{Seller: r.Auction.Seller, Auction: r.Auction.ID, Price: r.Bid.Price, Closed: r.Auction.Expires}
	}).Name("Q6 sale")
	return weir.Process(weir.KeyBy(winners, func(s sale) int64 { return s.Seller }), &sellerAverage{}).Name("Q6 average")
}

// sale is a closed auction's winning price.
type sale struct{ Seller, Auction, Price, Closed int64 }

// sellerState is a seller's OVER window: the prices of its last Q6Window
// sales (a ring) and the sales waiting for the watermark.
type sellerState struct {
	Prices  [Q6Window]int64
	N       int // sales so far
	Pending []sale
}

type sellerAverage struct{ st state.ValueState[sellerState] }

func (s *sellerAverage) Open(ctx weir.KeyedRuntimeContext[int64]) (err error) {
	s.st, err = weir.GetValueState(ctx, state.Value[sellerState]("over-window"))
	return err
}

func (s *sellerAverage) ProcessElement(v sale, ctx weir.KeyedContext[int64], _ weir.Collector[Q6Result]) error {
	st, _ := s.st.Value()
	st.Pending = append(st.Pending, v)
	s.st.Update(st)
	ctx.TimerService().RegisterEventTimeTimer(v.Closed)
	return nil
}

func (s *sellerAverage) OnTimer(ts int64, ctx weir.OnTimerContext[int64], out weir.Collector[Q6Result]) error {
	st, _ := s.st.Value()
	due := st.Pending[:0:0]
	keep := st.Pending[:0]
	for _, v := range st.Pending {
		if v.Closed <= ts {
			due = append(due, v)
		} else {
			keep = append(keep, v)
		}
	}
	slices.SortFunc(due, func(a, b sale) int { return cmp.Or(cmp.Compare(a.Closed, b.Closed), cmp.Compare(a.Auction, b.Auction)) })
	for _, v := range due {
		st.Prices[st.N%Q6Window] = v.Price
		st.N++
		n := min(st.N, Q6Window)
		var sum int64
		for _, p := range st.Prices[:n] {
			sum += p
		}
		out.Collect(Q6Result{Seller: ctx.CurrentKey(), Avg: sum / int64(n)})
	}
	st.Pending = keep
	if len(keep) == 0 {
		st.Pending = nil
	}
	s.st.Update(st)
	return nil
}
