package nexmark

import (
	"encoding/json"
	"strconv"
)

// The AppendJSON methods append what json.Marshal gives for the value (no
// struct tags: the field names as keys, in order; EventType as its
// number), without reflection; connector/kafka's JSONValues uses them
// (kafka.JSONAppender) for the results the Kafka mode writes. They are
// held to json.Marshal by TestAppendJSONMatchesEncodingJSON.

// AppendJSON appends the bid as JSON.
func (b Bid) AppendJSON(dst []byte) ([]byte, error) {
	dst = AppendJSONInt(append(dst, `{"Auction":`...), b.Auction)
	dst = AppendJSONInt(append(dst, `,"Bidder":`...), b.Bidder)
	dst = AppendJSONInt(append(dst, `,"Price":`...), b.Price)
	dst = AppendJSONString(append(dst, `,"Channel":`...), b.Channel)
	dst = AppendJSONString(append(dst, `,"URL":`...), b.URL)
	dst = AppendJSONInt(append(dst, `,"DateTime":`...), b.DateTime)
	dst = AppendJSONString(append(dst, `,"Extra":`...), b.Extra)
	return append(dst, '}'), nil
}

// AppendJSON appends the person as JSON.
func (p Person) AppendJSON(dst []byte) ([]byte, error) {
	dst = AppendJSONInt(append(dst, `{"ID":`...), p.ID)
	dst = AppendJSONString(append(dst, `,"Name":`...), p.Name)
	dst = AppendJSONString(append(dst, `,"EmailAddress":`...), p.EmailAddress)
	dst = AppendJSONString(append(dst, `,"CreditCard":`...), p.CreditCard)
	dst = AppendJSONString(append(dst, `,"City":`...), p.City)
	dst = AppendJSONString(append(dst, `,"State":`...), p.State)
	dst = AppendJSONInt(append(dst, `,"DateTime":`...), p.DateTime)
	dst = AppendJSONString(append(dst, `,"Extra":`...), p.Extra)
	return append(dst, '}'), nil
}

// AppendJSON appends the auction as JSON.
func (a Auction) AppendJSON(dst []byte) ([]byte, error) {
	dst = AppendJSONInt(append(dst, `{"ID":`...), a.ID)
	dst = AppendJSONString(append(dst, `,"ItemName":`...), a.ItemName)
	dst = AppendJSONString(append(dst, `,"Description":`...), a.Description)
	dst = AppendJSONInt(append(dst, `,"InitialBid":`...), a.InitialBid)
	dst = AppendJSONInt(append(dst, `,"Reserve":`...), a.Reserve)
	dst = AppendJSONInt(append(dst, `,"DateTime":`...), a.DateTime)
	dst = AppendJSONInt(append(dst, `,"Expires":`...), a.Expires)
	dst = AppendJSONInt(append(dst, `,"Seller":`...), a.Seller)
	dst = AppendJSONInt(append(dst, `,"Category":`...), a.Category)
	dst = AppendJSONString(append(dst, `,"Extra":`...), a.Extra)
	return append(dst, '}'), nil
}

// AppendJSON appends the event as JSON: its type's number, the person,
// the auction and the bid (each null when not set).
func (e Event) AppendJSON(dst []byte) ([]byte, error) {
	dst = strconv.AppendUint(append(dst, `{"Type":`...), uint64(e.Type), 10)
	dst = AppendJSONPerson(append(dst, `,"Person":`...), e.Person)
	dst = AppendJSONAuction(append(dst, `,"Auction":`...), e.Auction)
	dst = AppendJSONBid(append(dst, `,"Bid":`...), e.Bid)
	return append(dst, '}'), nil
}

// AppendJSONBid appends *b as JSON, or null for a nil b.
func AppendJSONBid(dst []byte, b *Bid) []byte {
	if b == nil {
		return append(dst, "null"...)
	}
	dst, _ = b.AppendJSON(dst)
	return dst
}

// AppendJSONPerson appends *p as JSON, or null for a nil p.
func AppendJSONPerson(dst []byte, p *Person) []byte {
	if p == nil {
		return append(dst, "null"...)
	}
	dst, _ = p.AppendJSON(dst)
	return dst
}

// AppendJSONAuction appends *a as JSON, or null for a nil a.
func AppendJSONAuction(dst []byte, a *Auction) []byte {
	if a == nil {
		return append(dst, "null"...)
	}
	dst, _ = a.AppendJSON(dst)
	return dst
}

// AppendJSONInt appends n as JSON.
func AppendJSONInt(dst []byte, n int64) []byte { return strconv.AppendInt(dst, n, 10) }

// AppendJSONString appends s as json.Marshal encodes a string: printable
// ASCII as it is but " and \ escaped by a backslash, <, > and & as
// \u003c, \u003e and \u0026 (its HTML escaping); a string with any other
// byte (a control character, anything beyond ASCII) is left to
// json.Marshal.
func AppendJSONString(dst []byte, s string) []byte {
	const hex = "0123456789abcdef"
	start := len(dst)
	dst = append(dst, '"')
	run := 0 // the start of the bytes of s not yet appended
	for i := 0; i < len(s); i++ {
		c := s[i]
		if jsonPlain[c] {
			continue
		}
		switch {
		case c < 0x20 || c >= 0x80:
			data, _ := json.Marshal(s) // a string always encodes
			return append(dst[:start], data...)
		case c == '"' || c == '\\':
			dst = append(dst, s[run:i]...)
			dst = append(dst, '\\', c)
		default: // <, > or &
			dst = append(dst, s[run:i]...)
			dst = append(dst, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
		}
		run = i + 1
	}
	dst = append(dst, s[run:]...)
	return append(dst, '"')
}

// jsonPlain tells the bytes AppendJSONString appends as they are (a
// table, never written after it is built).
var jsonPlain = func() (t [256]bool) {
	for c := 0x20; c < 0x80; c++ {
		t[c] = c != '"' && c != '\\' && c != '<' && c != '>' && c != '&'
	}
	return t
}()
