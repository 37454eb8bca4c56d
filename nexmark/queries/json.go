package queries

import (
	"github.com/weirstream/weir/connector/kafka"
	"github.com/weirstream/weir/nexmark"
)

// The AppendJSON methods of the result types with many results append what
// json.Marshal gives, without reflection (kafka.JSONAppender: the Kafka
// mode's sink uses them); TestResultsAppendJSON holds them to it. The
// other result types are encoded by encoding/json.
var (
	_ kafka.JSONAppender = nexmark.Event{}
	_ kafka.JSONAppender = nexmark.Bid{}
	_ kafka.JSONAppender = Q2Result{}
	_ kafka.JSONAppender = Q3Result{}
	_ kafka.JSONAppender = Q13Result{}
	_ kafka.JSONAppender = Q19Result{}
	_ kafka.JSONAppender = Q20Result{}
	_ kafka.JSONAppender = Q21Result{}
	_ kafka.JSONAppender = Q22Result{}
	_ kafka.JSONAppender = Q23Result{}
)

var (
	appendInt    = nexmark.AppendJSONInt
	appendString = nexmark.AppendJSONString
)

// AppendJSON appends the result as JSON.
func (r Q2Result) AppendJSON(b []byte) ([]byte, error) {
	b = appendInt(append(b, `{"Auction":`...), r.Auction)
	b = appendInt(append(b, `,"Price":`...), r.Price)
	return append(b, '}'), nil
}

// AppendJSON appends the result as JSON.
func (r Q3Result) AppendJSON(b []byte) ([]byte, error) {
	b = appendString(append(b, `{"Name":`...), r.Name)
	b = appendString(append(b, `,"City":`...), r.City)
	b = appendString(append(b, `,"State":`...), r.State)
	b = appendInt(append(b, `,"ID":`...), r.ID)
	return append(b, '}'), nil
}

// AppendJSON appends the result as JSON.
func (r Q13Result) AppendJSON(b []byte) ([]byte, error) {
	b = appendInt(append(b, `{"Auction":`...), r.Auction)
	b = appendInt(append(b, `,"Bidder":`...), r.Bidder)
	b = appendInt(append(b, `,"Price":`...), r.Price)
	b = appendInt(append(b, `,"DateTime":`...), r.DateTime)
	b = appendString(append(b, `,"Value":`...), r.Value)
	return append(b, '}'), nil
}

// AppendJSON appends the result as JSON.
func (r Q19Result) AppendJSON(b []byte) ([]byte, error) {
	b, _ = r.Bid.AppendJSON(append(b, `{"Bid":`...))
	b = appendInt(append(b, `,"Rank":`...), r.Rank)
	return append(b, '}'), nil
}

// AppendJSON appends the result as JSON.
func (r Q20Result) AppendJSON(b []byte) ([]byte, error) {
	b, _ = r.Bid.AppendJSON(append(b, `{"Bid":`...))
	b = nexmark.AppendJSONAuction(append(b, `,"Auction":`...), r.Auction)
	return append(b, '}'), nil
}

// AppendJSON appends the result as JSON.
func (r Q21Result) AppendJSON(b []byte) ([]byte, error) {
	b = appendInt(append(b, `{"Auction":`...), r.Auction)
	b = appendInt(append(b, `,"Bidder":`...), r.Bidder)
	b = appendInt(append(b, `,"Price":`...), r.Price)
	b = appendString(append(b, `,"Channel":`...), r.Channel)
	b = appendString(append(b, `,"ChannelID":`...), r.ChannelID)
	return append(b, '}'), nil
}

// AppendJSON appends the result as JSON.
func (r Q22Result) AppendJSON(b []byte) ([]byte, error) {
	b = appendInt(append(b, `{"Auction":`...), r.Auction)
	b = appendInt(append(b, `,"Bidder":`...), r.Bidder)
	b = appendInt(append(b, `,"Price":`...), r.Price)
	b = appendString(append(b, `,"Channel":`...), r.Channel)
	b = appendString(append(b, `,"Dir1":`...), r.Dir1)
	b = appendString(append(b, `,"Dir2":`...), r.Dir2)
	b = appendString(append(b, `,"Dir3":`...), r.Dir3)
	return append(b, '}'), nil
}

// AppendJSON appends the result as JSON.
func (r Q23Result) AppendJSON(b []byte) ([]byte, error) {
	b = nexmark.AppendJSONBid(append(b, `{"Bid":`...), r.Bid)
	b = nexmark.AppendJSONPerson(append(b, `,"Person":`...), r.Person)
	b = nexmark.AppendJSONAuction(append(b, `,"Auction":`...), r.Auction)
	return append(b, '}'), nil
}
