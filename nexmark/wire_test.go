package nexmark

import (
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"testing"

	"pgregory.net/rapid"
)

// TestLineRoundTrip: every generated event survives AppendLine and
// ParseLine, and does not change when the line's bytes are overwritten
// afterwards; malformed lines are refused with a message.
func TestLineRoundTrip(t *testing.T) {
	var types [3]int
	for _, g := range NewGenerators(Config{Events: 5000, Rate: 10000}, 2) {
		var e, back Event
		for g.HasNext() {
			g.Next(&e)
			line := AppendLine(nil, &e)
			if err := ParseLine(line, &back); err != nil {
				t.Fatalf("%s: %v", line, err)
			}
			if !reflect.DeepEqual(e, back) {
				t.Fatalf("%s: parsed %+v, want %+v", line, back, e)
			}
			// The event owns its strings: a Kafka deserializer may not
			// keep the record's bytes (kafka.ConsumerRecord).
			clear(line)
			if !reflect.DeepEqual(e, back) {
				t.Fatalf("parsed %+v changed with the line's bytes, want %+v", back, e)
			}
			types[e.Type]++
		}
	}
	if types[PersonEvent] == 0 || types[AuctionEvent] == 0 || types[BidEvent] == 0 {
		t.Fatalf("event types %v: not all three generated", types)
	}
	for _, bad := range []string{"", "X|1", "B|1|2", "B|1|2|x|c|u|5|e", "P|1|a|b|c|d|e|5|x|y", "A|1|2|3|4|5|6|7|8|9|10|11|12"} {
		var e Event
		if err := ParseLine([]byte(bad), &e); err == nil {
			t.Errorf("%q: parsed", bad)
		}
	}
}

// TestParseIntMatchesStrconv: parseInt gives strconv.ParseInt's value
// and error (message included) for every input.
func TestParseIntMatchesStrconv(t *testing.T) {
	cases := []string{"", "-", "+", "0", "-0", "+7", "12", "-12", "007", "1x", "x1", "--1", "1-",
		"999999999999999999", "-999999999999999999", "9223372036854775807", "-9223372036854775808",
		"9223372036854775808", "-9223372036854775809", "1_000", " 1", "1 ", "١"}
	for i := int64(1); i > 0 && i < 1<<62; i *= 7 {
		cases = append(cases, strconv.FormatInt(i, 10), strconv.FormatInt(-i, 10))
	}
	rapid.Check(t, func(t *rapid.T) {
		s := rapid.OneOf(rapid.StringMatching(`-?[0-9]{0,20}`), rapid.String()).Draw(t, "s")
		checkParseInt(t, s)
	})
	for _, s := range cases {
		checkParseInt(t, s)
	}
}

func checkParseInt(t interface{ Fatalf(string, ...any) }, s string) {
	got, gerr := parseInt([]byte(s))
	want, werr := strconv.ParseInt(s, 10, 64)
	if got != want || (gerr == nil) != (werr == nil) || gerr != nil && gerr.Error() != werr.Error() {
		t.Fatalf("parseInt(%q) = %d, %v; strconv: %d, %v", s, got, gerr, want, werr)
	}
}

// TestParseLineBadNumbers: a malformed number in any numeric field is
// refused, and a field's sign is kept.
func TestParseLineBadNumbers(t *testing.T) {
	for _, bad := range []string{"B|1|2|3x|c|u|5|e", "B||2|3|c|u|5|e", "P|1|a|b|c|d|e|-|x",
		"A|1|a|b|4|5|6|7|8|99999999999999999999|x", "B|+|2|3|c|u|5|e"} {
		var e Event
		if err := ParseLine([]byte(bad), &e); err == nil {
			t.Errorf("%q: parsed", bad)
		}
	}
	var e Event
	if err := ParseLine([]byte("B|-1|+2|-9223372036854775808|c|u|5|e"), &e); err != nil {
		t.Fatal(err)
	}
	if e.Bid.Auction != -1 || e.Bid.Bidder != 2 || e.Bid.Price != -9223372036854775808 || e.Bid.Channel != "c" || e.Bid.Extra != "e" {
		t.Fatalf("parsed %+v", e.Bid)
	}
}

// Every parsed bid is a Bid of its own: parsing more lines (many of
// them, from several goroutines at once) never changes a bid
// parsed before, and no two events share one.
func TestParseLineBidsDistinct(t *testing.T) {
	const goroutines, lines = 4, 3 * bidSlabSize
	events := make([][]Event, goroutines)
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Go(func() {
			events[g] = make([]Event, lines)
			for i := range events[g] {
				line := fmt.Appendf(nil, "B|%d|%d|%d|c|u|5|e", g, i, g*lines+i)
				if err := ParseLine(line, &events[g][i]); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	seen := map[*Bid]bool{}
	for g := range events {
		for i, e := range events[g] {
			b := e.Bid
			if e.Type != BidEvent || b == nil || seen[b] {
				t.Fatalf("goroutine %d line %d: %+v, bid seen before: %v", g, i, e, seen[b])
			}
			seen[b] = true
			if b.Auction != int64(g) || b.Bidder != int64(i) || b.Price != int64(g*lines+i) || b.Channel != "c" || b.Extra != "e" {
				t.Fatalf("goroutine %d line %d: bid changed to %+v", g, i, *b)
			}
		}
	}
	var p Event
	if err := ParseLine([]byte("P|1|a|b|c|d|e|2|x"), &p); err != nil || p.Bid != nil || p.Person == nil {
		t.Fatalf("person %+v, %v", p, err)
	}
}

// TestParseLineFieldsMatchSplit: ParseLine splits a bid line where
// strings.Split does, whatever the lengths of the fields (so '|' falls at
// every offset of the eight-byte words it scans) and wherever extra '|'
// appear: exactly eight parts parse, with the parts as the fields, and any
// other count is an error.
func TestParseLineFieldsMatchSplit(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		digits := rapid.StringMatching(`[0-9]{1,12}`)
		text := rapid.StringOf(rapid.SampledFrom([]rune("ab|c")))
		parts := []string{"B", digits.Draw(t, "auction"), digits.Draw(t, "bidder"), digits.Draw(t, "price"),
			text.Draw(t, "channel"), text.Draw(t, "url"), digits.Draw(t, "time"), text.Draw(t, "extra")}
		line := strings.Join(parts, "|")
		p := strings.Split(line, "|")
		var e Event
		err := ParseLine([]byte(line), &e)
		if len(p) != 8 {
			if err == nil {
				t.Fatalf("%q (%d parts): parsed", line, len(p))
			}
			return
		}
		if err != nil {
			t.Fatalf("%q: %v", line, err)
		}
		num := func(s string) int64 { v, _ := strconv.ParseInt(s, 10, 64); return v }
		want := Bid{Auction: num(p[1]), Bidder: num(p[2]), Price: num(p[3]), Channel: p[4], URL: p[5], DateTime: num(p[6]), Extra: p[7]}
		if e.Type != BidEvent || *e.Bid != want {
			t.Fatalf("%q: parsed %+v, want %+v", line, e.Bid, want)
		}
	})
}
