package queries

import (
	"cmp"
	"fmt"
	"slices"
	"testing"

	"github.com/weirstream/weir/nexmark"
)

// bidsInOrder returns the bids of cfg's generators, each generator's in
// the order it made them, which is the order in which a key's bids reach a
// keyed operator if they all come from one generator, and the keys (by
// key) that get bids from two generators (see OrderDependent), where
// the order varies.
func bidsInOrder[K comparable](cfg nexmark.Config, key func(nexmark.Bid) K) (bids []nexmark.Bid, mixed map[K]bool) {
	owner := map[K]int{}
	mixed = map[K]bool{}
	var e nexmark.Event
	for i, g := range nexmark.NewGenerators(cfg, testParallelism) {
		for g.HasNext() {
			if g.Next(&e); e.Type == nexmark.BidEvent {
				bids = append(bids, *e.Bid)
				k := key(*e.Bid)
				if o, ok := owner[k]; ok && o != i {
					mixed[k] = true
				}
				owner[k] = i
			}
		}
	}
	if len(mixed)*10 > len(owner) {
		panic(fmt.Sprintf("%d of %d keys get bids from two generators", len(mixed), len(owner)))
	}
	return bids, mixed
}

func TestQ18(t *testing.T) {
	// Events permuted in groups of 10: some bids come after a later one of
	// their key, and are dropped.
	cfg := nexmark.Config{Events: 30_000, Seed: 11, OutOfOrderGroupSize: 10}
	latest := map[bidderAuction]int64{}
	var want []nexmark.Bid
	dropped := 0
	key := func(b nexmark.Bid) bidderAuction { return bidderAuction{b.Bidder, b.Auction} }
	bids, mixed := bidsInOrder(cfg, key)
	for _, b := range bids {
		k := key(b)
		if mixed[k] {
			continue
		}
		if t, ok := latest[k]; ok && b.DateTime < t {
			dropped++
			continue
		}
		latest[k] = b.DateTime
		want = append(want, b)
	}
	if dropped == 0 {
		t.Fatal("no bid is older than its key's latest: the drop path is not tested")
	}
	got := slices.DeleteFunc(derefs(run(t, cfg, Q18)), func(b nexmark.Bid) bool { return mixed[key(b)] })
	sameMultiset(t, "q18", got, want)
}

func TestQ19(t *testing.T) {
	bids, mixed := bidsInOrder(smallConfig, func(b nexmark.Bid) int64 { return b.Auction })
	got := slices.DeleteFunc(run(t, smallConfig, Q19), func(r Q19Result) bool { return mixed[r.Bid.Auction] })
	// The upsert view: the last row emitted per (auction, rank).
	view := map[[2]int64]nexmark.Bid{}
	for _, r := range got {
		if r.Rank < 1 || r.Rank > TopN {
			t.Fatalf("rank %d", r.Rank)
		}
		view[[2]int64{r.Bid.Auction, r.Rank}] = r.Bid
	}
	// The batch answer: each auction's bids by price, highest first, equal
	// prices in arrival order, the first ten.
	byAuction := map[int64][]nexmark.Bid{}
	for _, b := range bids {
		if !mixed[b.Auction] {
			byAuction[b.Auction] = append(byAuction[b.Auction], b)
		}
	}
	full := 0
	var want, have []nexmark.Bid
	for a, bs := range byAuction {
		slices.SortStableFunc(bs, func(x, y nexmark.Bid) int { return cmp.Compare(y.Price, x.Price) })
		if len(bs) > TopN {
			bs = bs[:TopN]
			full++
		}
		for i, b := range bs {
			want = append(want, b)
			if v, ok := view[[2]int64{a, int64(i + 1)}]; ok {
				have = append(have, v)
			}
		}
	}
	if full == 0 {
		t.Fatal("no auction has more than 10 bids")
	}
	if len(view) != len(want) {
		t.Fatalf("q19: %d (auction, rank) rows, want %d", len(view), len(want))
	}
	sameMultiset(t, "q19", have, want)
	if len(got) <= len(want) {
		t.Fatalf("q19: %d rows emitted for %d final ones: no rank was shifted", len(got), len(want))
	}
}
