package nexmark

import (
	"encoding/json"
	"testing"

	"pgregory.net/rapid"
)

// jsonString draws strings that take every path of AppendJSONString:
// plain ASCII, HTML characters, quotes and controls, any rune, and bytes
// that are not UTF-8.
func jsonString() *rapid.Generator[string] {
	return rapid.OneOf(
		rapid.StringMatching(`[a-zA-Z0-9 /:.?=_-]*`),
		rapid.StringMatching(`[a-z<>&"\\\t\n\x00\x7f\x{2028}é]*`),
		rapid.String(),
		rapid.Map(rapid.SliceOf(rapid.Byte()), func(b []byte) string { return string(b) }),
	)
}

func drawBid(t *rapid.T) Bid {
	return Bid{
		Auction: rapid.Int64().Draw(t, "auction"), Bidder: rapid.Int64().Draw(t, "bidder"), Price: rapid.Int64().Draw(t, "price"),
		Channel: jsonString().Draw(t, "channel"), URL: jsonString().Draw(t, "url"),
		DateTime: rapid.Int64().Draw(t, "dateTime"), Extra: jsonString().Draw(t, "extra"),
	}
}

// drawEvent draws an event of any type with arbitrary fields.
func drawEvent(t *rapid.T) Event {
	e := Event{Type: EventType(rapid.IntRange(0, 3).Draw(t, "type"))}
	if rapid.Bool().Draw(t, "bid") {
		b := drawBid(t)
		e.Bid = &b
	}
	if rapid.Bool().Draw(t, "person") {
		e.Person = &Person{ID: rapid.Int64().Draw(t, "id"), Name: jsonString().Draw(t, "name"),
			EmailAddress: jsonString().Draw(t, "email"), CreditCard: jsonString().Draw(t, "card"),
			City: jsonString().Draw(t, "city"), State: jsonString().Draw(t, "state"),
			DateTime: rapid.Int64().Draw(t, "pDateTime"), Extra: jsonString().Draw(t, "pExtra")}
	}
	if rapid.Bool().Draw(t, "auction") {
		e.Auction = &Auction{ID: rapid.Int64().Draw(t, "aID"), ItemName: jsonString().Draw(t, "item"),
			Description: jsonString().Draw(t, "desc"), InitialBid: rapid.Int64().Draw(t, "initial"),
			Reserve: rapid.Int64().Draw(t, "reserve"), DateTime: rapid.Int64().Draw(t, "aDateTime"),
			Expires: rapid.Int64().Draw(t, "expires"), Seller: rapid.Int64().Draw(t, "seller"),
			Category: rapid.Int64().Draw(t, "category"), Extra: jsonString().Draw(t, "aExtra")}
	}
	return e
}

// fataler is what checkJSON needs of a *testing.T or a *rapid.T.
type fataler interface {
	Helper()
	Fatal(...any)
	Fatalf(string, ...any)
}

func checkJSON(t fataler, v interface {
	AppendJSON([]byte) ([]byte, error)
}) {
	t.Helper()
	want, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	got, err := v.AppendJSON([]byte("prefix"))
	if err != nil || string(got) != "prefix"+string(want) {
		t.Fatalf("AppendJSON = %s, %v\nwant prefix%s", got, err, want)
	}
}

// TestAppendJSONMatchesEncodingJSON: the AppendJSON methods append exactly
// what json.Marshal gives, for arbitrary values and for generated events.
func TestAppendJSONMatchesEncodingJSON(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		e := drawEvent(t)
		checkJSON(t, e)
		if e.Bid != nil {
			checkJSON(t, *e.Bid)
		}
		if e.Person != nil {
			checkJSON(t, *e.Person)
		}
		if e.Auction != nil {
			checkJSON(t, *e.Auction)
		}
	})
	for _, g := range NewGenerators(Config{Events: 2000, Rate: 10000}, 2) {
		var e Event
		for g.HasNext() {
			g.Next(&e)
			checkJSON(t, e)
		}
	}
}
