package queries

import (
	"cmp"
	"slices"
	"testing"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/nexmark"
)

func TestQ20(t *testing.T) {
	// At 10M events/s bids often precede their auction: the waiting path.
	cfg := nexmark.Config{Events: 30_000, Seed: 12, Rate: 10_000_000}
	s := generate(cfg, testParallelism)
	byID := map[int64]nexmark.Auction{}
	for _, a := range s.auctions {
		byID[a.ID] = a
	}
	type row struct {
		Bid     nexmark.Bid
		Auction int64
	}
	var want []row
	for _, b := range s.bids {
		if a, ok := byID[b.Auction]; ok && a.Category == 10 {
			want = append(want, row{b, a.ID})
		}
	}
	got := run(t, cfg, Q20)
	rows := make([]row, len(got))
	for i, r := range got {
		if r.Auction.ID != r.Bid.Auction || r.Auction.Category != 10 {
			t.Fatalf("q20 row %+v", r)
		}
		rows[i] = row{r.Bid, r.Auction.ID}
	}
	sameMultiset(t, "q20", rows, want)
}

func TestQ23(t *testing.T) {
	s := generate(smallConfig, testParallelism)
	people := map[int64]bool{}
	for _, p := range s.persons {
		people[p.ID] = true
	}
	sells := map[int64][]int64{}
	for _, a := range s.auctions {
		sells[a.Seller] = append(sells[a.Seller], a.ID)
	}
	type row struct {
		Bid             nexmark.Bid
		Person, Auction int64
	}
	var want []row
	for _, b := range s.bids {
		if people[b.Bidder] {
			for _, a := range sells[b.Bidder] {
				want = append(want, row{b, b.Bidder, a})
			}
		}
	}
	got := run(t, smallConfig, Q23)
	rows := make([]row, len(got))
	for i, r := range got {
		if r.Person.ID != r.Bid.Bidder || r.Auction.Seller != r.Bid.Bidder {
			t.Fatalf("q23 row %+v", r)
		}
		rows[i] = row{*r.Bid, r.Person.ID, r.Auction.ID}
	}
	sameMultiset(t, "q23", rows, want)
}

func TestQ6(t *testing.T) {
	for _, cfg := range []nexmark.Config{smallConfig, {Events: 20_000, Seed: 12, Rate: 10_000_000}} {
		s := generate(cfg, testParallelism)
		bySeller := map[int64][]Q9Result{}
		for _, w := range winners(s) {
			bySeller[w.Auction.Seller] = append(bySeller[w.Auction.Seller], w)
		}
		var want []Q6Result
		long := 0
		for seller, ws := range bySeller {
			slices.SortFunc(ws, func(a, b Q9Result) int {
				return cmp.Or(cmp.Compare(a.Auction.Expires, b.Auction.Expires), cmp.Compare(a.Auction.ID, b.Auction.ID))
			})
			for i := range ws {
				from := max(0, i-10)
				var sum int64
				for _, w := range ws[from : i+1] {
					sum += w.Bid.Price
				}
				want = append(want, Q6Result{seller, sum / int64(i+1-from)})
			}
			if len(ws) > Q6Window {
				long++
			}
		}
		if long == 0 {
			t.Fatal("no seller closed more than 11 auctions")
		}
		got := run(t, cfg, func(ev weir.DataStream[nexmark.Event]) weir.DataStream[Q6Result] { return Q6(ev) })
		sameMultiset(t, "q6", got, want)
	}
}
