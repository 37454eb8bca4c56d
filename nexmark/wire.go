package nexmark

import (
	"bytes"
	"fmt"
	"strconv"
)

// AppendLine appends e as one line of text without the newline, the
// format in which `weir nexmark --source kafka` writes events to a topic
// (and bench/flink's EventFormat and KafkaEvents read and write them):
//
//	P|id|name|email|creditCard|city|state|dateTime|extra
//	A|id|itemName|description|initialBid|reserve|dateTime|expires|seller|category|extra
//	B|auction|bidder|price|channel|url|dateTime|extra
//
// The generator's strings never hold '|'.
func AppendLine(b []byte, e *Event) []byte {
	sep := func(b []byte) []byte { return append(b, '|') }
	num := func(b []byte, v int64) []byte { return strconv.AppendInt(sep(b), v, 10) }
	str := func(b []byte, s string) []byte { return append(sep(b), s...) }
	switch e.Type {
	case PersonEvent:
		p := e.Person
		b = append(b, 'P')
		b = num(b, p.ID)
		b = str(str(str(str(str(b, p.Name), p.EmailAddress), p.CreditCard), p.City), p.State)
		b = str(num(b, p.DateTime), p.Extra)
	case AuctionEvent:
		a := e.Auction
		b = append(b, 'A')
		b = str(str(num(b, a.ID), a.ItemName), a.Description)
		b = num(num(num(num(num(num(b, a.InitialBid), a.Reserve), a.DateTime), a.Expires), a.Seller), a.Category)
		b = str(b, a.Extra)
	default:
		x := &e.Bid
		b = append(b, 'B')
		b = num(num(num(b, x.Auction), x.Bidder), x.Price)
		b = str(str(b, x.Channel), x.URL)
		b = str(num(b, x.DateTime), x.Extra)
	}
	return b
}

// ParseLine decodes a line AppendLine wrote into e.
func ParseLine(line []byte, e *Event) error {
	var f [11][]byte
	n := 0
	for rest := line; n < len(f); n++ {
		i := bytes.IndexByte(rest, '|')
		if i < 0 {
			f[n] = rest
			n++
			break
		}
		f[n], rest = rest[:i], rest[i+1:]
		if n == len(f)-1 {
			return fmt.Errorf("nexmark: event line %.40q...: too many fields", line)
		}
	}
	var err error
	num := func(b []byte) int64 {
		v, perr := strconv.ParseInt(string(b), 10, 64)
		if perr != nil && err == nil {
			err = perr
		}
		return v
	}
	want := 0
	switch string(f[0]) {
	case "P":
		want = 9
		if n == want {
			*e = Event{Type: PersonEvent, Person: &Person{ID: num(f[1]), Name: string(f[2]), EmailAddress: string(f[3]),
				CreditCard: string(f[4]), City: string(f[5]), State: string(f[6]), DateTime: num(f[7]), Extra: string(f[8])}}
		}
	case "A":
		want = 11
		if n == want {
			*e = Event{Type: AuctionEvent, Auction: &Auction{ID: num(f[1]), ItemName: string(f[2]), Description: string(f[3]),
				InitialBid: num(f[4]), Reserve: num(f[5]), DateTime: num(f[6]), Expires: num(f[7]), Seller: num(f[8]),
				Category: num(f[9]), Extra: string(f[10])}}
		}
	case "B":
		want = 8
		if n == want {
			*e = Event{Type: BidEvent, Bid: Bid{Auction: num(f[1]), Bidder: num(f[2]), Price: num(f[3]), Channel: string(f[4]),
				URL: string(f[5]), DateTime: num(f[6]), Extra: string(f[7])}}
		}
	default:
		return fmt.Errorf("nexmark: event line %.40q: unknown type %q", line, f[0])
	}
	if n != want {
		return fmt.Errorf("nexmark: event line %.40q: %d fields, want %d", line, n, want)
	}
	if err != nil {
		return fmt.Errorf("nexmark: event line %.40q: %w", line, err)
	}
	return nil
}
