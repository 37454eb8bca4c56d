package engine

import (
	"context"
	"testing"
)

// bid is a Nexmark bid's shape: 88 bytes with three strings.
type bid struct {
	Auction, Bidder, Price int64
	Channel, URL           string
	DateTime               int64
	Extra                  string
}

// BenchmarkHashWriter routes records of 88 bytes by key to two consumers,
// whose batches are processed (and recycled) as they arrive: the writer's
// per-record cost on a keyBy edge.
func BenchmarkHashWriter(b *testing.B) {
	route := func(v *bid) int { return int(v.Auction & 1) }
	x, err := NewExchange(PartitionHash, route, 1, 2, ExchangeConfig{BatchSize: 1024, Credits: 4})
	if err != nil {
		b.Fatal(err)
	}
	inbox := make(chan message, 16)
	for i := range 2 {
		x.Attach(i, NewGate[bid](1, discardInput[bid]{}), 0, inbox)
	}
	done := make(chan struct{})
	go func() {
		for m := range inbox {
			if err := m.process(); err != nil {
				b.Error(err)
			}
		}
		close(done)
	}()
	w := x.Writer(context.Background(), 0, nil)
	recs := make([]Record[bid], 1024)
	for i := range recs {
		recs[i] = Record[bid]{Value: bid{Auction: int64(i * 7), Extra: "x"}, TS: int64(i)}
	}
	for b.Loop() {
		if err := w.ProcessBatch(recs); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(recs)), "ns/rec")
	if err := w.EndInput(); err != nil {
		b.Fatal(err)
	}
	close(inbox)
	<-done
}

// discardInput drops what it receives.
type discardInput[T any] struct{}

func (discardInput[T]) ProcessBatch([]Record[T]) error { return nil }
func (discardInput[T]) ProcessWatermark(int64) error   { return nil }
func (discardInput[T]) ProcessStatus(bool) error       { return nil }
func (discardInput[T]) EndInput() error                { return nil }
