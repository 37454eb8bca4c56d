package nexmark

import "testing"

// BenchmarkParseLineBid parses Nexmark bid lines, as the Kafka source of
// `weir nexmark --source kafka` does for every bid record.
func BenchmarkParseLineBid(b *testing.B) {
	g := NewGenerators(Config{Events: 10000, Seed: 1}, 1)[0]
	var lines [][]byte
	for len(lines) < 256 && g.HasNext() {
		var e Event
		g.Next(&e)
		if e.Type == BidEvent {
			lines = append(lines, AppendLine(nil, &e))
		}
	}
	var n int
	for _, l := range lines {
		n += len(l)
	}
	b.Logf("avg bid line %d bytes", n/len(lines))
	b.ReportAllocs()
	var e Event
	for i := range b.N {
		if err := ParseLine(lines[i%len(lines)], &e); err != nil {
			b.Fatal(err)
		}
	}
}
