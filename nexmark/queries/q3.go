package queries

import (
	"github.com/weirstream/weir"
	"github.com/weirstream/weir/nexmark"
	"github.com/weirstream/weir/state"
)

// Q3Result is a person who sells in category 10 in Oregon, Idaho or
// California, with one of their auctions.
type Q3Result struct {
	Name  string
	City  string
	State string
	ID    int64 // the auction's id
}

// Q3 is local item suggestion, an incremental (regular, unbounded) join of
// auctions in category 10 with their sellers living in OR, ID or CA:
//
//	SELECT P.name, P.city, P.state, A.id FROM auction A JOIN person P ON A.seller = P.id
//	WHERE A.category = 10 AND P.state IN ('OR', 'ID', 'CA')
//
// Both sides are keyed by person id. A person is kept in value state (ids
// are unique); an auction that comes before its seller waits in list
// state and is emitted when the seller arrives. As in Flink's regular join,
// nothing expires.
func Q3(events weir.DataStream[nexmark.Event]) weir.DataStream[Q3Result] {
	auctions := weir.Filter(events, func(e nexmark.Event) bool {
		return e.Type == nexmark.AuctionEvent && e.Auction.Category == 10
	}).Name("Q3 auctions")
	persons := weir.Filter(events, func(e nexmark.Event) bool {
		if e.Type != nexmark.PersonEvent {
			return false
		}
		s := e.Person.State
		return s == "OR" || s == "ID" || s == "CA"
	}).Name("Q3 persons")
	a := weir.Map(auctions, func(e nexmark.Event) q3Auction { return q3Auction{ID: e.Auction.ID, Seller: e.Auction.Seller} }).Name("Q3 auction")
	p := weir.Map(persons, func(e nexmark.Event) q3Person {
		return q3Person{ID: e.Person.ID, Name: e.Person.Name, City: e.Person.City, State: e.Person.State}
	}).Name("Q3 person")
	joined := weir.ConnectKeyed(
		weir.KeyBy(a, func(x q3Auction) int64 { return x.Seller }),
		weir.KeyBy(p, func(x q3Person) int64 { return x.ID }))
	return weir.KeyedCoProcess(joined, &q3Join{}).Name("Q3 join")
}

// q3Auction and q3Person are the columns the join needs.
type q3Auction struct{ ID, Seller int64 }

type q3Person struct {
	ID                int64
	Name, City, State string
}

type q3Join struct {
	person  state.ValueState[q3Person]
	waiting state.ListState[int64] // ids of auctions waiting for their seller
}

func (j *q3Join) Open(ctx weir.KeyedRuntimeContext[int64]) (err error) {
	if j.person, err = weir.GetValueState(ctx, state.Value[q3Person]("person")); err != nil {
		return err
	}
	j.waiting, err = weir.GetListState(ctx, state.List[int64]("waiting-auctions"))
	return err
}

func (j *q3Join) ProcessElement1(a q3Auction, _ weir.KeyedContext[int64], out weir.Collector[Q3Result]) error {
	if p, ok := j.person.Value(); ok {
		out.Collect(Q3Result{Name: p.Name, City: p.City, State: p.State, ID: a.ID})
		return nil
	}
	j.waiting.Add(a.ID)
	return nil
}

func (j *q3Join) ProcessElement2(p q3Person, _ weir.KeyedContext[int64], out weir.Collector[Q3Result]) error {
	j.person.Update(p)
	for id := range j.waiting.All() {
		out.Collect(Q3Result{Name: p.Name, City: p.City, State: p.State, ID: id})
	}
	j.waiting.Clear()
	return nil
}

func (j *q3Join) OnTimer(int64, weir.OnTimerContext[int64], weir.Collector[Q3Result]) error {
	return nil
}
