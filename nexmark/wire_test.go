package nexmark

import (
	"reflect"
	"testing"
)

// TestLineRoundTrip: every generated event survives AppendLine and
// ParseLine; malformed lines are refused with a message.
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
