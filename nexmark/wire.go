package nexmark

import (
	"encoding/binary"
	"fmt"
	"math/bits"
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
		x := e.Bid
		b = append(b, 'B')
		b = num(num(num(b, x.Auction), x.Bidder), x.Price)
		b = str(str(b, x.Channel), x.URL)
		b = str(num(b, x.DateTime), x.Extra)
	}
	return b
}

// lsbs and msbs are the low and the high bit of every byte of a word.
const (
	lsbs uint64 = 0x0101010101010101
	msbs uint64 = 0x8080808080808080
)

// splitFields notes in f the start and end of each '|'-separated field of
// line and returns how many there are; false when there are more than
// len(f). It tests eight bytes at a time: the fields are short, so one
// word's test (each byte equal to '|' gets its high bit set in m, exactly)
// costs less than a call of bytes.IndexByte per field.
func splitFields(line []byte, f *[11][2]int) (n int, ok bool) {
	start, i := 0, 0
	for ; i+8 <= len(line); i += 8 {
		w := binary.LittleEndian.Uint64(line[i:]) ^ (0x7c * lsbs)
		for m := ^((w&^msbs + ^msbs) | w | ^msbs); m != 0; m &= m - 1 {
			if n == len(f)-1 {
				return n, false
			}
			j := i + bits.TrailingZeros64(m)>>3
			f[n], n, start = [2]int{start, j}, n+1, j+1
		}
	}
	for ; i < len(line); i++ {
		if line[i] == '|' {
			if n == len(f)-1 {
				return n, false
			}
			f[n], n, start = [2]int{start, i}, n+1, i+1
		}
	}
	f[n] = [2]int{start, len(line)}
	return n + 1, true
}

// ParseLine decodes a line AppendLine wrote into e. It may be called from
// any number of goroutines at once.
//
// The string fields of the event share one string, a copy of the line
// (one allocation per event instead of one per field), so a field kept
// keeps the whole line alive; numbers are parsed from the bytes, with
// strconv.ParseInt's results and errors. The event's person, auction or
// bid is allocated for it, so an event stays valid whatever is parsed
// after it. On an error e is not changed, or holds a partly decoded event.
func ParseLine(line []byte, e *Event) error {
	var f [11][2]int // the fields' start and end in line
	n, ok := splitFields(line, &f)
	if !ok {
		return fmt.Errorf("nexmark: event line %.40q...: too many fields", line)
	}
	var err error
	num := func(k int) int64 {
		v, perr := parseInt(line[f[k][0]:f[k][1]])
		if perr != nil && err == nil {
			err = perr
		}
		return v
	}
	var all string // line as a string, made once the field count is right
	str := func(k int) string { return all[f[k][0]:f[k][1]] }
	want := 0
	switch string(line[f[0][0]:f[0][1]]) {
	case "P":
		want = 9
		if n == want {
			all = string(line)
			*e = Event{Type: PersonEvent, Person: &Person{ID: num(1), Name: str(2), EmailAddress: str(3),
				CreditCard: str(4), City: str(5), State: str(6), DateTime: num(7), Extra: str(8)}}
		}
	case "A":
		want = 11
		if n == want {
			all = string(line)
			*e = Event{Type: AuctionEvent, Auction: &Auction{ID: num(1), ItemName: str(2), Description: str(3),
				InitialBid: num(4), Reserve: num(5), DateTime: num(6), Expires: num(7), Seller: num(8),
				Category: num(9), Extra: str(10)}}
		}
	case "B":
		want = 8
		if n == want {
			all = string(line)
			b := &Bid{Auction: num(1), Bidder: num(2), Price: num(3), Channel: str(4),
				URL: str(5), DateTime: num(6), Extra: str(7)}
			*e = Event{Type: BidEvent, Bid: b}
		}
	default:
		return fmt.Errorf("nexmark: event line %.40q: unknown type %q", line, line[f[0][0]:f[0][1]])
	}
	if n != want {
		return fmt.Errorf("nexmark: event line %.40q: %d fields, want %d", line, n, want)
	}
	if err != nil {
		return fmt.Errorf("nexmark: event line %.40q: %w", line, err)
	}
	return nil
}

// parseInt is strconv.ParseInt(string(b), 10, 64): an optional '-' and
// up to 18 digits (which cannot overflow) are parsed here, anything else
// by strconv.
func parseInt(b []byte) (int64, error) {
	d := b
	if len(d) > 0 && d[0] == '-' {
		d = d[1:]
	}
	if len(d) == 0 || len(d) > 18 {
		return strconv.ParseInt(string(b), 10, 64)
	}
	var v int64
	for _, c := range d {
		c -= '0'
		if c > 9 {
			return strconv.ParseInt(string(b), 10, 64)
		}
		v = v*10 + int64(c)
	}
	if len(d) < len(b) {
		v = -v
	}
	return v, nil
}
