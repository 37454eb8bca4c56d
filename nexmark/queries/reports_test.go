package queries

import (
	"testing"
	"time"

	"github.com/weirstream/weir/nexmark"
)

// reportConfig starts 1.5 s before midnight, so the bids fall in two days.
var reportConfig = nexmark.Config{Events: 30_000, Seed: 11, BaseTime: nexmark.DefaultBaseTime - 1_500}

func dayString(ts int64) string { return time.UnixMilli(ts).UTC().Format("2006-01-02") }

// tally is a report's batch computation: counts and distinct sets per rank
// (index 0: all).
type tally struct {
	bids             [4]int64
	bidders, auction [4]map[int64]bool
	last             int64
}

func (t *tally) add(b nexmark.Bid) {
	r := 3
	if b.Price < 10_000 {
		r = 1
	} else if b.Price < 1_000_000 {
		r = 2
	}
	for _, i := range []int{0, r} {
		if t.bidders[i] == nil {
			t.bidders[i], t.auction[i] = map[int64]bool{}, map[int64]bool{}
		}
		t.bids[i]++
		t.bidders[i][b.Bidder] = true
		t.auction[i][b.Auction] = true
	}
	t.last = max(t.last, b.DateTime)
}

func counts(c [4]int64) Counts { return Counts{c[0], c[1], c[2], c[3]} }

func sizes(m [4]map[int64]bool) Counts {
	return Counts{int64(len(m[0])), int64(len(m[1])), int64(len(m[2])), int64(len(m[3]))}
}

func TestQ15(t *testing.T) {
	s := generate(reportConfig, testParallelism)
	days := map[string]*tally{}
	for _, b := range s.bids {
		d := dayString(b.DateTime)
		if days[d] == nil {
			days[d] = &tally{}
		}
		days[d].add(b)
	}
	if len(days) != 2 {
		t.Fatalf("%d days", len(days))
	}
	var want []Q15Result
	for d, x := range days {
		want = append(want, Q15Result{Day: d, Bids: counts(x.bids), Bidders: sizes(x.bidders), Auctions: sizes(x.auction)})
	}
	sameMultiset(t, "q15", run(t, reportConfig, Q15), want)
}

func TestQ16(t *testing.T) {
	s := generate(reportConfig, testParallelism)
	type key struct{ channel, day string }
	groups := map[key]*tally{}
	for _, b := range s.bids {
		k := key{b.Channel, dayString(b.DateTime)}
		if groups[k] == nil {
			groups[k] = &tally{}
		}
		groups[k].add(b)
	}
	var want []Q16Result
	for k, x := range groups {
		want = append(want, Q16Result{Channel: k.channel, Day: k.day, Minute: time.UnixMilli(x.last).UTC().Format("15:04"),
			Bids: counts(x.bids), Bidders: sizes(x.bidders), Auctions: sizes(x.auction)})
	}
	sameMultiset(t, "q16", run(t, reportConfig, Q16), want)
}

func TestQ17(t *testing.T) {
	s := generate(reportConfig, testParallelism)
	type key struct {
		auction int64
		day     string
	}
	type agg struct {
		bids               [4]int64
		minP, maxP, sum, n int64
	}
	groups := map[key]*agg{}
	for _, b := range s.bids {
		k := key{b.Auction, dayString(b.DateTime)}
		g := groups[k]
		if g == nil {
			g = &agg{minP: b.Price, maxP: b.Price}
			groups[k] = g
		}
		r := 3
		if b.Price < 10_000 {
			r = 1
		} else if b.Price < 1_000_000 {
			r = 2
		}
		g.bids[0]++
		g.bids[r]++
		g.minP, g.maxP = min(g.minP, b.Price), max(g.maxP, b.Price)
		g.sum += b.Price
		g.n++
	}
	var want []Q17Result
	for k, g := range groups {
		want = append(want, Q17Result{Auction: k.auction, Day: k.day, Bids: counts(g.bids), MinPrice: g.minP, MaxPrice: g.maxP,
			AvgPrice: g.sum / g.n, SumPrice: g.sum})
	}
	sameMultiset(t, "q17", run(t, reportConfig, Q17), want)
}
