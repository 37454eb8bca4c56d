package engine

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
)

// flinkPointwise is Flink's EdgeManagerBuildUtil.connectPointwise written
// out: for each consumer, the producers it reads.
func flinkPointwise(producers, consumers int) [][]int {
	in := make([][]int, consumers)
	switch {
	case producers == consumers:
		for i := range producers {
			in[i] = []int{i}
		}
	case producers > consumers:
		for c := range consumers {
			for p := c * producers / consumers; p < (c+1)*producers/consumers; p++ {
				in[c] = append(in[c], p)
			}
		}
	default:
		for p := range producers {
			start := (p*consumers + producers - 1) / producers
			end := ((p+1)*consumers + producers - 1) / producers
			for c := start; c < end; c++ {
				in[c] = append(in[c], p)
			}
		}
	}
	return in
}

func TestRescaleProducersMatchesFlink(t *testing.T) {
	for p := 1; p <= 17; p++ {
		for c := 1; c <= 17; c++ {
			want := flinkPointwise(p, c)
			for i := range c {
				r := RescaleProducers(i, p, c)
				var got []int
				for j := r[0]; j < r[1]; j++ {
					got = append(got, j)
				}
				if len(got) == 0 || !slices.Equal(got, want[i]) {
					t.Fatalf("%d -> %d: consumer %d reads %v, Flink %v", p, c, i, got, want[i])
				}
			}
		}
	}
}

// runExchange attaches consumers sinks to x, lets produce drive the
// writers, then delivers everything.
func runExchange[T any](t *testing.T, x *Exchange[T], produce func(w []*Writer[T]) error) ([]*sink[T], []*Gate[T]) {
	t.Helper()
	inbox := make(chan message, 1000)
	sinks := make([]*sink[T], x.Consumers())
	gates := make([]*Gate[T], x.Consumers())
	for i := range sinks {
		sinks[i] = &sink[T]{}
		gates[i] = NewGate[T](x.Channels(i), sinks[i])
		x.Attach(i, gates[i], 0, inbox)
	}
	var ws []*Writer[T]
	for p := range x.Producers() {
		ws = append(ws, x.Writer(context.Background(), p, nil))
	}
	if err := produce(ws); err != nil {
		t.Fatal(err)
	}
	close(inbox)
	for m := range inbox {
		must(t, m.process())
	}
	return sinks, gates
}

// TestExchangeRescale: each producer sends round robin to its own subset
// of consumers, starting at the first, and its watermarks and end of
// input reach exactly those consumers, whose gates see one channel per
// producer that feeds them.
func TestExchangeRescale(t *testing.T) {
	for _, pc := range [][2]int{{2, 5}, {5, 2}, {3, 3}, {3, 2}} {
		P, C := pc[0], pc[1]
		t.Run(fmt.Sprintf("%d->%d", P, C), func(t *testing.T) {
			x, err := NewExchange[string](PartitionRescale, nil, P, C, ExchangeConfig{BatchSize: 3, Credits: 100})
			must(t, err)
			sinks, gates := runExchange(t, x, func(ws []*Writer[string]) error {
				for p, w := range ws {
					var recs []Record[string]
					for i := range 7 {
						recs = append(recs, Record[string]{Value: fmt.Sprintf("%d.%d", p, i), TS: int64(i)})
					}
					if err := w.ProcessBatch(recs); err != nil {
						return err
					}
					if err := w.ProcessWatermark(int64(10 + p)); err != nil {
						return err
					}
					if err := w.EndInput(); err != nil {
						return err
					}
				}
				return nil
			})
			want := make([][]string, C)
			for c := range C {
				for _, p := range flinkPointwise(P, C)[c] {
					// Producer p's consumers, in order; record i goes to
					// the (i mod n)-th of them.
					var mine []int
					for d := range C {
						if slices.Contains(flinkPointwise(P, C)[d], p) {
							mine = append(mine, d)
						}
					}
					for i := range 7 {
						if mine[i%len(mine)] == c {
							want[c] = append(want[c], fmt.Sprintf("%d.%d", p, i))
						}
					}
				}
			}
			for c, s := range sinks {
				var got []string
				for _, r := range s.recs {
					got = append(got, r.Value)
				}
				slices.Sort(got)
				slices.Sort(want[c])
				if !slices.Equal(got, want[c]) {
					t.Fatalf("consumer %d got %v, want %v", c, got, want[c])
				}
				first := flinkPointwise(P, C)[c][0]
				if s.ended != 1 || !gates[c].Ended() || len(s.wms) != 1 || s.wms[0] != int64(10+first) {
					t.Fatalf("consumer %d: ended %d (gate %v), watermarks %v, want the minimum %d of its producers", c, s.ended, gates[c].Ended(), s.wms, 10+first)
				}
			}
		})
	}
}

// TestExchangeCustom: a custom partitioner's index routes each record
// among the consumers; an index out of range fails the producer, naming
// the index, the number of partitions and the record.
func TestExchangeCustom(t *testing.T) {
	route := func(v *int) int { return *v % 3 }
	x, err := NewExchange(PartitionCustom, route, 2, 3, ExchangeConfig{BatchSize: 2, Credits: 100})
	must(t, err)
	sinks, _ := runExchange(t, x, func(ws []*Writer[int]) error {
		for p, w := range ws {
			if err := w.ProcessBatch([]Record[int]{{Value: p}, {Value: p + 1}, {Value: p + 2}}); err != nil {
				return err
			}
			if err := w.EndInput(); err != nil {
				return err
			}
		}
		return nil
	})
	for c, s := range sinks {
		if len(s.recs) != 2 {
			t.Fatalf("consumer %d got %v", c, s.recs)
		}
		for _, r := range s.recs {
			if r.Value%3 != c {
				t.Fatalf("record %d reached consumer %d", r.Value, c)
			}
		}
	}
	bad, err := NewExchange(PartitionCustom, func(v *int) int { return *v }, 1, 2, ExchangeConfig{BatchSize: 2, Credits: 100})
	must(t, err)
	bad.Attach(0, NewGate[int](1, &sink[int]{}), 0, make(chan message, 10))
	bad.Attach(1, NewGate[int](1, &sink[int]{}), 0, make(chan message, 10))
	err = bad.Writer(context.Background(), 0, nil).ProcessBatch([]Record[int]{{Value: 1}, {Value: 7}})
	if err == nil || !strings.Contains(err.Error(), "returned partition 7 for 2 partitions (record 7)") {
		t.Fatalf("out-of-range partition: %v", err)
	}
	if _, err := NewExchange[int](PartitionCustom, nil, 1, 2, ExchangeConfig{}); err == nil {
		t.Fatal("a custom exchange without a partitioner was accepted")
	}
}

// TestExchangeShuffle: every consumer gets records, none is lost, and the
// control elements reach every consumer.
func TestExchangeShuffle(t *testing.T) {
	x, err := NewExchange[int](PartitionShuffle, nil, 2, 3, ExchangeConfig{BatchSize: 64, Credits: 1000})
	must(t, err)
	sinks, gates := runExchange(t, x, func(ws []*Writer[int]) error {
		for _, w := range ws {
			recs := make([]Record[int], 3000)
			if err := w.ProcessBatch(recs); err != nil {
				return err
			}
			if err := w.EndInput(); err != nil {
				return err
			}
		}
		return nil
	})
	total := 0
	for c, s := range sinks {
		// Each consumer's share is binomial(6000, 1/3): 2000 +- 37;
		// fewer than 1500 has a probability far below 1e-30.
		if len(s.recs) < 1500 || !gates[c].Ended() {
			t.Fatalf("consumer %d got %d records (ended %v)", c, len(s.recs), gates[c].Ended())
		}
		total += len(s.recs)
	}
	if total != 6000 {
		t.Fatalf("%d records delivered, want 6000", total)
	}
}
