// Package queries holds the Nexmark queries written with Weir's public
// DataStream API, each a function from the event stream to its result
// stream, and a registry (All, Lookup) that the `weir nexmark` command
// runs.
//
// The queries follow the SQL of nexmark/nexmark (Flink); where the SQL
// relies on retractions (q4, q9), the DataStream version emits final values
// at event-time points instead, as noted on each function.
package queries

import (
	"github.com/weirstream/weir"
	"github.com/weirstream/weir/nexmark"
)

// Query is one runnable Nexmark query.
type Query struct {
	// Name is the query's short name: "q0", "q1", ...
	Name string
	// Title says what the query does.
	Title string
	// Build adds the query to the environment of events and ends its
	// result stream in a discarding sink named ResultsSink.
	Build func(events weir.DataStream[nexmark.Event])
}

// ResultsSink is the name of the sink Query.Build adds; Results reads its
// record count.
const ResultsSink = "Results"

// All lists the implemented queries in order.
var All = []Query{
	{"q0", "pass-through", func(ev weir.DataStream[nexmark.Event]) { discard(Q0(ev)) }},
	{"q1", "currency conversion", func(ev weir.DataStream[nexmark.Event]) { discard(Q1(ev)) }},
	{"q2", "selection", func(ev weir.DataStream[nexmark.Event]) { discard(Q2(ev)) }},
	{"q3", "local item suggestion (incremental join)", func(ev weir.DataStream[nexmark.Event]) { discard(Q3(ev)) }},
	{"q4", "average price per category", func(ev weir.DataStream[nexmark.Event]) { discard(Q4(ev)) }},
	{"q5", "hot items (sliding window 10 s / 2 s)", func(ev weir.DataStream[nexmark.Event]) { discard(Q5(ev)) }},
	{"q7", "highest bid (tumbling window 10 s)", func(ev weir.DataStream[nexmark.Event]) { discard(Q7(ev)) }},
	{"q8", "monitor new users (window join 10 s)", func(ev weir.DataStream[nexmark.Event]) { discard(Q8(ev)) }},
	{"q9", "winning bids", func(ev weir.DataStream[nexmark.Event]) { discard(Q9(ev)) }},
	{"q11", "user sessions (session window, 10 s gap)", func(ev weir.DataStream[nexmark.Event]) { discard(Q11(ev)) }},
	{"q12", "processing-time windows (tumbling 10 s)", func(ev weir.DataStream[nexmark.Event]) { discard(Q12(ev)) }},
}

// Generator is not a query: the source alone into the discarding sink,
// every event a result. It is the baseline the queries are measured
// against (the cost of generating the events and running the job).
var Generator = Query{"gen", "generator only (baseline)", func(ev weir.DataStream[nexmark.Event]) { discard(ev) }}

// Lookup returns the query named name, or the Generator baseline for
// "gen".
func Lookup(name string) (Query, bool) {
	if name == Generator.Name {
		return Generator, true
	}
	for _, q := range All {
		if q.Name == name {
			return q, true
		}
	}
	return Query{}, false
}

// Names returns the names of All, in order.
func Names() []string {
	out := make([]string, len(All))
	for i, q := range All {
		out[i] = q.Name
	}
	return out
}

func discard[T any](ds weir.DataStream[T]) { weir.Discard(ds).Name(ResultsSink) }

// Results returns the number of records that reached the ResultsSink
// sinks of a job, from its metrics (read it after the job has ended, or
// while it runs for progress).
func Results(h *weir.JobHandle) int64 {
	var n int64
	for _, t := range h.Metrics() {
		for _, o := range t.Operators {
			if o.Name == ResultsSink {
				n += o.RecordsIn
			}
		}
	}
	return n
}

// Bids returns the bids of the stream (Flink's `bid` view).
func Bids(events weir.DataStream[nexmark.Event]) weir.DataStream[nexmark.Bid] {
	return weir.Map(weir.Filter(events, isBid).Name("Bids"), bidOf).Name("Bid")
}

// Auctions returns the auctions of the stream (the `auction` view).
func Auctions(events weir.DataStream[nexmark.Event]) weir.DataStream[nexmark.Auction] {
	return weir.Map(weir.Filter(events, isAuction).Name("Auctions"), auctionOf).Name("Auction")
}

// Persons returns the people of the stream (the `person` view).
func Persons(events weir.DataStream[nexmark.Event]) weir.DataStream[nexmark.Person] {
	return weir.Map(weir.Filter(events, isPerson).Name("Persons"), personOf).Name("Person")
}

func isBid(e nexmark.Event) bool                { return e.Type == nexmark.BidEvent }
func isAuction(e nexmark.Event) bool            { return e.Type == nexmark.AuctionEvent }
func isPerson(e nexmark.Event) bool             { return e.Type == nexmark.PersonEvent }
func bidOf(e nexmark.Event) nexmark.Bid         { return e.Bid }
func auctionOf(e nexmark.Event) nexmark.Auction { return *e.Auction }
func personOf(e nexmark.Event) nexmark.Person   { return *e.Person }
