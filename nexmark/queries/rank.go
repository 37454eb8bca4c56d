package queries

import (
	"github.com/weirstream/weir"
	"github.com/weirstream/weir/nexmark"
	"github.com/weirstream/weir/state"
)

// bidderAuction is Q18's key.
type bidderAuction struct{ Bidder, Auction int64 }

// Q18 finds the last bid of each bidder on each auction:
//
//	SELECT auction, bidder, price, channel, url, dateTime, extra FROM (
//	  SELECT *, ROW_NUMBER() OVER (PARTITION BY bidder, auction ORDER BY dateTime DESC) AS rank_number FROM bid)
//	WHERE rank_number <= 1
//
// Flink runs this as a deduplication keeping the last row, which emits a
// bid whenever it is at least as recent as the key's current row and
// retracts the row it replaces. Here the result is an upsert stream keyed
// by (bidder, auction): each emitted bid replaces the key's previous one,
// so no retraction rows are emitted and the state is the key's latest
// time; an older bid (out of order) is dropped.
func Q18(events weir.DataStream[nexmark.Event]) weir.DataStream[*nexmark.Bid] {
	byKey := weir.KeyBy(Bids(events), func(b *nexmark.Bid) bidderAuction { return bidderAuction{b.Bidder, b.Auction} })
	return weir.Process(byKey, &lastBid{}).Name("Q18 last bid")
}

type lastBid struct{ latest state.ValueState[int64] }

func (l *lastBid) Open(ctx weir.KeyedRuntimeContext[bidderAuction]) (err error) {
	l.latest, err = weir.GetValueState(ctx, state.Value[int64]("latest"))
	return err
}

func (l *lastBid) ProcessElement(b *nexmark.Bid, _ weir.KeyedContext[bidderAuction], out weir.Collector[*nexmark.Bid]) error {
	if t, ok := l.latest.Value(); ok && b.DateTime < t {
		return nil
	}
	l.latest.Update(b.DateTime)
	out.Collect(b)
	return nil
}

func (l *lastBid) OnTimer(int64, weir.OnTimerContext[bidderAuction], weir.Collector[*nexmark.Bid]) error {
	return nil
}

// Q19Result is a bid with its rank among its auction's highest bids.
type Q19Result struct {
	Bid  nexmark.Bid
	Rank int64 // 1 to 10
}

// TopN is the number of bids Q19 ranks per auction.
const TopN = 10

// Q19 is auction top-10 price: the ten highest bids of each auction:
//
//	SELECT * FROM (SELECT *, ROW_NUMBER() OVER (PARTITION BY auction ORDER BY price DESC) AS rank_number FROM bid)
//	WHERE rank_number <= 10
//
// Flink's Top-N on an append-only input keeps the ten best rows per
// auction and, when a bid enters them, emits it and the rows whose rank
// number it shifted (each as a retraction and an update). Here the result
// is an upsert stream keyed by (auction, rank): a bid that enters the top
// 10 at rank r is emitted with r, and each bid it pushes down with its new
// rank; the bid pushed out of rank 10 is replaced by the row now at rank
// 10. Equal prices keep arrival order (the new bid after them), and a bid
// that only ties the tenth does not enter, as in Flink.
func Q19(events weir.DataStream[nexmark.Event]) weir.DataStream[Q19Result] {
	byAuction := weir.KeyBy(Bids(events), func(b *nexmark.Bid) int64 { return b.Auction })
	return weir.Process(byAuction, &topBids{}).Name("Q19 top 10")
}

type topBids struct {
	top state.ValueState[[]nexmark.Bid]
}

func (t *topBids) Open(ctx weir.KeyedRuntimeContext[int64]) (err error) {
	t.top, err = weir.GetValueState(ctx, state.Value[[]nexmark.Bid]("top"))
	return err
}

func (t *topBids) ProcessElement(b *nexmark.Bid, _ weir.KeyedContext[int64], out weir.Collector[Q19Result]) error {
	top, _ := t.top.Value()
	if len(top) == TopN && b.Price <= top[TopN-1].Price {
		return nil
	}
	r := len(top) // insert after every bid at least as high
	for r > 0 && top[r-1].Price < b.Price {
		r--
	}
	if len(top) < TopN {
		if top == nil {
			top = make([]nexmark.Bid, 0, TopN)
		}
		top = append(top, nexmark.Bid{})
	}
	copy(top[r+1:], top[r:])
	top[r] = *b
	t.top.Update(top)
	for i := r; i < len(top); i++ {
		out.Collect(Q19Result{Bid: top[i], Rank: int64(i + 1)})
	}
	return nil
}

func (t *topBids) OnTimer(int64, weir.OnTimerContext[int64], weir.Collector[Q19Result]) error {
	return nil
}
