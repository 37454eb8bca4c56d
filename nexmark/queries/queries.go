// Package queries holds the Nexmark queries written with Weir's public
// DataStream API, each a function from the event stream to its result
// stream, and a registry (All, Lookup) that the `weir nexmark` command
// runs.
//
// The queries follow the SQL of nexmark/nexmark (Flink). Where the SQL
// relies on retractions or keeps an unbounded, updating result, the
// DataStream version says on each function what it emits instead: final
// values at event-time points (q4, q6, q9, q15-q17: when an auction closes
// or a day ends) or an upsert stream (q18, q19: each row replaces the
// previous row of its key); the regular joins (q3, q20, q23) keep their
// state forever, as in SQL.
package queries

import (
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/connector/kafka"
	"github.com/weirstream/weir/nexmark"
)

// Query is one runnable Nexmark query.
type Query struct {
	// Name is the query's short name: "q0", "q1", ...
	Name string
	// Title says what the query does.
	Title string
	// Build adds the query to the environment of events and ends its
	// result stream in a sink named ResultsSink (a discarding sink, a
	// Kafka sink with Options.Kafka, or q10's file sink).
	Build func(events weir.DataStream[nexmark.Event], opts Options)
}

// Options are the settings of the queries that read or write files.
type Options struct {
	// OutputDir is the directory q10 writes its partitioned files to; it
	// must be set to run q10.
	OutputDir string
	// SideInput is the file q13 joins the bids with (lines "key,value";
	// WriteSideInput writes Nexmark's); it must be set to run q13.
	SideInput string
	// Kafka, when set, sends the results to a Kafka topic instead of a
	// discarding sink (q10 still writes its files).
	Kafka *KafkaResults
}

// KafkaResults is where the results go with Options.Kafka: each result a
// record of Topic, its value the result as JSON (encoding/json), no key
// (Kafka's default partitioner spreads them), the result's event time as
// the record timestamp; the sink is at-least-once (every record is
// acknowledged before the job ends), without compression, as Flink's
// KafkaSink by default.
type KafkaResults struct {
	Brokers []string
	Topic   string
}

// ResultsSink is the name of the sink Query.Build adds; Results reads its
// record count.
const ResultsSink = "Results"

// toDiscard adapts a query function to Query.Build, ending it in a discarding
// sink.
func toDiscard[T any](q func(weir.DataStream[nexmark.Event]) weir.DataStream[T]) func(weir.DataStream[nexmark.Event], Options) {
	return func(ev weir.DataStream[nexmark.Event], o Options) { results(q(ev), o) }
}

// All lists the queries in order.
var All = []Query{
	{"q0", "pass-through", toDiscard(Q0)},
	{"q1", "currency conversion", toDiscard(Q1)},
	{"q2", "selection", toDiscard(Q2)},
	{"q3", "local item suggestion (incremental join)", toDiscard(Q3)},
	{"q4", "average price per category", toDiscard(Q4)},
	{"q5", "hot items (sliding window 10 s / 2 s)", toDiscard(Q5)},
	{"q6", "average selling price by seller (last 10 closed auctions)", toDiscard(Q6)},
	{"q7", "highest bid (tumbling window 10 s)", toDiscard(Q7)},
	{"q8", "monitor new users (window join 10 s)", toDiscard(Q8)},
	{"q9", "winning bids", toDiscard(Q9)},
	{"q10", "log to file system (partitioned by minute, exactly-once)", func(ev weir.DataStream[nexmark.Event], o Options) {
		Q10(ev, o.OutputDir).Name(ResultsSink)
	}},
	{"q11", "user sessions (session window, 10 s gap)", toDiscard(Q11)},
	{"q12", "processing-time windows (tumbling 10 s)", toDiscard(Q12)},
	{"q13", "bounded side input join (side input from a file)", func(ev weir.DataStream[nexmark.Event], o Options) {
		results(Q13(ev, o.SideInput), o)
	}},
	{"q14", "calculation (user function)", toDiscard(Q14)},
	{"q15", "bidding statistics report (per day)", toDiscard(Q15)},
	{"q16", "channel statistics report (per channel and day)", toDiscard(Q16)},
	{"q17", "auction statistics report (per auction and day)", toDiscard(Q17)},
	{"q18", "find last bid (deduplication)", toDiscard(Q18)},
	{"q19", "auction top-10 price", toDiscard(Q19)},
	{"q20", "expand bid with auction (regular join, category 10)", toDiscard(Q20)},
	{"q21", "add channel id (regular expression)", toDiscard(Q21)},
	{"q22", "get URL directories (string split)", toDiscard(Q22)},
	{"q23", "multi-way join of bids, persons and auctions", toDiscard(Q23)},
}

// Generator is not a query: the source alone into the discarding sink,
// every event a result. It is the baseline the queries are measured
// against (the cost of generating the events and running the job).
var Generator = Query{"gen", "source only (baseline)", toDiscard(func(ev weir.DataStream[nexmark.Event]) weir.DataStream[nexmark.Event] { return ev })}

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

// results ends ds in the ResultsSink: a discarding sink, or with o.Kafka a
// Kafka sink.
func results[T any](ds weir.DataStream[T], o Options) {
	if o.Kafka == nil {
		weir.Discard(ds).Name(ResultsSink)
		return
	}
	sink := kafka.NewSink(kafka.JSONValues[T](nil), kafka.WithBrokers(o.Kafka.Brokers...),
		kafka.WithDefaultTopic(o.Kafka.Topic), kafka.WithDeliveryGuarantee(kafka.AtLeastOnce),
		kafka.WithClientOptions(kgo.ProducerBatchCompression(kgo.NoCompression())))
	sink.To(ds).Name(ResultsSink)
}

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
func Bids(events weir.DataStream[nexmark.Event]) weir.DataStream[*nexmark.Bid] {
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
func bidOf(e nexmark.Event) *nexmark.Bid        { return e.Bid }
func auctionOf(e nexmark.Event) nexmark.Auction { return *e.Auction }
func personOf(e nexmark.Event) nexmark.Person   { return *e.Person }

// OrderDependent reports whether the number of results of the query named
// name can change with the order in which the generators' events
// interleave. q18 and q19 emit a row when a bid becomes the newest or one
// of the ten highest of its key. Ids run on from one generator's range to
// the next, and a generator bids on the 100 auctions before its current one
// (and up to 10 ahead) by the 1,000 people before its current one, so the
// first bids of generator i+1 name the last auctions and people of
// generator i, and the last bids of i the first ones of i+1: those keys get
// bids from two generators, in an order that varies from run to run (on
// Flink as on Weir; about 80 auctions per border, a few hundred results in
// millions).
// Every other query's count is fixed by the events (q12's by the wall
// clock).
func OrderDependent(name string) bool { return name == "q18" || name == "q19" }
