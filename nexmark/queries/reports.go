package queries

import (
	"time"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/nexmark"
	"github.com/weirstream/weir/window"
)

// The report queries (q15, q16, q17) group bids by DATE_FORMAT(dateTime,
// 'yyyy-MM-dd'), an unbounded GROUP BY whose SQL result is a row per
// group, updated with every bid. Here a group is a tumbling one-day window
// of event time (days of UTC), so each row is emitted once, final, when
// the watermark passes the end of its day (a bounded run ends every
// window).

// day is the window of the report queries.
var day = window.TumblingEventTime(24 * time.Hour)

// dayOf formats a day window's start as DATE_FORMAT's 'yyyy-MM-dd'.
func dayOf(start int64) string { return time.UnixMilli(start).UTC().Format("2006-01-02") }

// rankOf is the price rank of the reports' FILTER clauses: 1 below 10,000,
// 2 below 1,000,000, 3 from there.
func rankOf(price int64) int {
	switch {
	case price < 10_000:
		return 1
	case price < 1_000_000:
		return 2
	}
	return 3
}

// Counts are a count in total and per price rank.
type Counts struct{ Total, Rank1, Rank2, Rank3 int64 }

func (c *Counts) add(rank int, n int64) {
	c.Total += n
	switch rank {
	case 1:
		c.Rank1 += n
	case 2:
		c.Rank2 += n
	case 3:
		c.Rank3 += n
	}
}

func (c *Counts) plus(o Counts) {
	c.Total += o.Total
	c.Rank1 += o.Rank1
	c.Rank2 += o.Rank2
	c.Rank3 += o.Rank3
}

// distinct counts the distinct ids seen in total and per rank: per id a
// bit set of the ranks it was seen with.
type distinct map[int64]uint8

func (d distinct) add(id int64, rank int) { d[id] |= 1 << rank }

func (d distinct) counts() Counts {
	c := Counts{Total: int64(len(d))}
	for _, m := range d {
		c.Rank1 += int64(m >> 1 & 1)
		c.Rank2 += int64(m >> 2 & 1)
		c.Rank3 += int64(m >> 3 & 1)
	}
	return c
}

// mergeDistinct adds b's ids to a (and returns a).
func mergeDistinct(a, b distinct) distinct {
	if a == nil {
		a = distinct{}
	}
	for id, m := range b {
		a[id] |= m
	}
	return a
}

// Q15Result is the bidding statistics of one day.
type Q15Result struct {
	Day      string
	Bids     Counts // count(*) [FILTER rank]
	Bidders  Counts // count(DISTINCT bidder) [FILTER rank]
	Auctions Counts // count(DISTINCT auction) [FILTER rank]
}

// Q15 is the bidding statistics report: per day, the number of bids,
// distinct bidders and distinct auctions, in total and per price rank:
//
//	SELECT DATE_FORMAT(dateTime, 'yyyy-MM-dd') AS day,
//	  count(*) AS total_bids,
//	  count(*) FILTER (WHERE price < 10000) AS rank1_bids, ... rank2_bids, rank3_bids,
//	  count(DISTINCT bidder) AS total_bidders, count(DISTINCT bidder) FILTER (...) ..., (x4)
//	  count(DISTINCT auction) AS total_auctions, ... (x4)
//	FROM bid GROUP BY DATE_FORMAT(dateTime, 'yyyy-MM-dd')
//
// With one group per day, a single subtask would do all the work, so, as
// Flink's split-distinct optimisation (on in the suite's configuration)
// does, the distinct counts are split: bids are counted per bucket of
// bidders (hash of the bidder mod 1024) and, separately, per bucket of
// auctions, each bucket keeping its distinct ids per day; the buckets'
// partial counts are then summed per day.
func Q15(events weir.DataStream[nexmark.Event]) weir.DataStream[Q15Result] {
	bids := Bids(events)
	byBidder := weir.Aggregate(weir.Window(weir.KeyBy(bids, func(b *nexmark.Bid) int32 { return splitBucket(b.Bidder) }), day),
		splitDistinct{bidder: true}).Name("Q15 bidders")
	byAuction := weir.Aggregate(weir.Window(weir.KeyBy(bids, func(b *nexmark.Bid) int32 { return splitBucket(b.Auction) }), day),
		splitDistinct{}).Name("Q15 auctions")
	return weir.AggregateWithProcessFunc(weir.WindowAll(weir.Union(byBidder, byAuction), day), sumReports{},
		func(_ weir.NoKey, ctx weir.ProcessWindowContext[window.TimeWindow], r []Q15Result, out weir.Collector[Q15Result]) error {
			res := r[0]
			res.Day = dayOf(ctx.Window().Start)
			out.Collect(res)
			return nil
		}).Name("Q15 report")
}

// SplitBuckets is the number of buckets Q15 splits its distinct counts
// into (Flink's table.optimizer.distinct-agg.split.bucket-num default).
const SplitBuckets = 1024

// splitBucket is the bucket of an id in Flink's split-distinct rewrite,
// HASH_CODE(id) mod 1024 (Java's Long.hashCode, floor modulus).
func splitBucket(id int64) int32 {
	h := int32(id^int64(uint64(id)>>32)) % SplitBuckets
	if h < 0 {
		h += SplitBuckets
	}
	return h
}

// splitAcc is one bucket's part of a day's report.
type splitAcc struct {
	bids Counts
	ids  distinct
}

// splitDistinct is the first phase of Q15: the bids of one bucket of
// bidders (bidder set: it also counts the bids) or of auctions.
type splitDistinct struct{ bidder bool }

func (splitDistinct) CreateAccumulator() splitAcc { return splitAcc{ids: distinct{}} }
func (s splitDistinct) Add(b *nexmark.Bid, acc splitAcc) splitAcc {
	r := rankOf(b.Price)
	if s.bidder {
		acc.bids.add(r, 1)
		acc.ids.add(b.Bidder, r)
	} else {
		acc.ids.add(b.Auction, r)
	}
	return acc
}
func (s splitDistinct) GetResult(acc splitAcc) Q15Result {
	if s.bidder {
		return Q15Result{Bids: acc.bids, Bidders: acc.ids.counts()}
	}
	return Q15Result{Auctions: acc.ids.counts()}
}
func (splitDistinct) Merge(a, b splitAcc) splitAcc {
	a.bids.plus(b.bids)
	a.ids = mergeDistinct(a.ids, b.ids)
	return a
}

// sumReports adds up the buckets' partial reports.
type sumReports struct{}

func (sumReports) CreateAccumulator() Q15Result { return Q15Result{} }
func (sumReports) Add(r, acc Q15Result) Q15Result {
	acc.Bids.plus(r.Bids)
	acc.Bidders.plus(r.Bidders)
	acc.Auctions.plus(r.Auctions)
	return acc
}
func (sumReports) GetResult(acc Q15Result) Q15Result { return acc }
func (s sumReports) Merge(a, b Q15Result) Q15Result  { return s.Add(a, b) }

// Q16Result is the statistics of one channel on one day.
type Q16Result struct {
	Channel  string
	Day      string
	Minute   string // the latest 'HH:mm' of the channel's bids that day
	Bids     Counts
	Bidders  Counts
	Auctions Counts
}

// Q16 is the channel statistics report: Q15's statistics per channel and
// day, with the latest minute of the channel's bids:
//
//	SELECT channel, DATE_FORMAT(dateTime, 'yyyy-MM-dd') AS day,
//	  max(DATE_FORMAT(dateTime, 'HH:mm')) AS minute, count(*) ..., count(DISTINCT bidder) ..., count(DISTINCT auction) ...
//	FROM bid GROUP BY channel, DATE_FORMAT(dateTime, 'yyyy-MM-dd')
//
// Bids are keyed by channel into one-day windows whose accumulator holds
// the counts and the distinct bidders and auctions (about 10,000 channels:
// no split).
func Q16(events weir.DataStream[nexmark.Event]) weir.DataStream[Q16Result] {
	byChannel := weir.KeyBy(Bids(events), func(b *nexmark.Bid) string { return b.Channel })
	return weir.AggregateWithProcessFunc(weir.Window(byChannel, day), channelReport{},
		func(channel string, ctx weir.ProcessWindowContext[window.TimeWindow], r []Q16Result, out weir.Collector[Q16Result]) error {
			res := r[0]
			res.Channel, res.Day = channel, dayOf(ctx.Window().Start)
			out.Collect(res)
			return nil
		}).Name("Q16 report")
}

type channelAcc struct {
	last     int64 // the latest bid time
	bids     Counts
	bidders  distinct
	auctions distinct
}

type channelReport struct{}

func (channelReport) CreateAccumulator() channelAcc {
	return channelAcc{bidders: distinct{}, auctions: distinct{}}
}
func (channelReport) Add(b *nexmark.Bid, acc channelAcc) channelAcc {
	r := rankOf(b.Price)
	acc.last = max(acc.last, b.DateTime)
	acc.bids.add(r, 1)
	acc.bidders.add(b.Bidder, r)
	acc.auctions.add(b.Auction, r)
	return acc
}
func (channelReport) GetResult(acc channelAcc) Q16Result {
	return Q16Result{Minute: time.UnixMilli(acc.last).UTC().Format("15:04"), Bids: acc.bids,
		Bidders: acc.bidders.counts(), Auctions: acc.auctions.counts()}
}
func (channelReport) Merge(a, b channelAcc) channelAcc {
	a.last = max(a.last, b.last)
	a.bids.plus(b.bids)
	a.bidders = mergeDistinct(a.bidders, b.bidders)
	a.auctions = mergeDistinct(a.auctions, b.auctions)
	return a
}

// Q17Result is the statistics of one auction's bids on one day.
type Q17Result struct {
	Auction  int64
	Day      string
	Bids     Counts
	MinPrice int64
	MaxPrice int64
	AvgPrice int64 // sum / count, truncated (AVG on BIGINT)
	SumPrice int64
}

// Q17 is the auction statistics report:
//
//	SELECT auction, DATE_FORMAT(dateTime, 'yyyy-MM-dd') AS day, count(*) AS total_bids,
//	  count(*) FILTER (WHERE price < 10000) AS rank1_bids, ... rank2_bids, rank3_bids,
//	  min(price), max(price), avg(price), sum(price)
//	FROM bid GROUP BY auction, DATE_FORMAT(dateTime, 'yyyy-MM-dd')
//
// Bids are keyed by auction into one-day windows with an incremental
// aggregate.
func Q17(events weir.DataStream[nexmark.Event]) weir.DataStream[Q17Result] {
	byAuction := weir.KeyBy(Bids(events), func(b *nexmark.Bid) int64 { return b.Auction })
	return weir.AggregateWithProcessFunc(weir.Window(byAuction, day), auctionReport{},
		func(auction int64, ctx weir.ProcessWindowContext[window.TimeWindow], r []Q17Result, out weir.Collector[Q17Result]) error {
			res := r[0]
			res.Auction, res.Day = auction, dayOf(ctx.Window().Start)
			out.Collect(res)
			return nil
		}).Name("Q17 report")
}

type auctionReport struct{}

func (auctionReport) CreateAccumulator() Q17Result { return Q17Result{} }
func (auctionReport) Add(b *nexmark.Bid, acc Q17Result) Q17Result {
	if acc.Bids.Total == 0 || b.Price < acc.MinPrice {
		acc.MinPrice = b.Price
	}
	acc.MaxPrice = max(acc.MaxPrice, b.Price)
	acc.Bids.add(rankOf(b.Price), 1)
	acc.SumPrice += b.Price
	return acc
}
func (auctionReport) GetResult(acc Q17Result) Q17Result {
	if acc.Bids.Total > 0 {
		acc.AvgPrice = acc.SumPrice / acc.Bids.Total
	}
	return acc
}
func (auctionReport) Merge(a, b Q17Result) Q17Result {
	switch {
	case a.Bids.Total == 0:
		return b
	case b.Bids.Total == 0:
		return a
	}
	a.MinPrice = min(a.MinPrice, b.MinPrice)
	a.MaxPrice = max(a.MaxPrice, b.MaxPrice)
	a.Bids.plus(b.Bids)
	a.SumPrice += b.SumPrice
	return a
}
