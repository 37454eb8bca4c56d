package windowing

import (
	"testing"
	"time"

	"github.com/weirstream/weir/internal/clock"
	istate "github.com/weirstream/weir/internal/state"
	"github.com/weirstream/weir/state"
	"github.com/weirstream/weir/window"
)

// countAgg counts elements (the benchmarks' Aggregate).
type countAgg struct{}

func (countAgg) CreateAccumulator() int64     { return 0 }
func (countAgg) Add(_ int64, acc int64) int64 { return acc + 1 }
func (countAgg) GetResult(acc int64) int64    { return acc }
func (countAgg) Merge(a, b int64) int64       { return a + b }

var _ state.AggregateFunction[int64, int64, int64] = countAgg{}

const (
	benchKeys    = 10_000
	benchPerMS   = 10 // records per ms of event time: 10k per 1 s slide, 1 per key and slide
	benchSlide   = 1000
	benchWMEvery = 10_000
)

var benchKeyNames = func() []string {
	k := make([]string, benchKeys)
	for i := range k {
		k[i] = "key-" + string(rune('a'+i%26)) + time.Duration(i).String()
	}
	return k
}()

type benchEngine interface {
	SetCurrentKey(k string)
	ProcessElementPtr(v *int64, ts int64) error
	AdvanceWatermark(wm int64) error
}

// drive feeds b.N records: key i%10k, timestamps rising by 1 ms every
// perMS records, a watermark (ts - 1) every 10k records.
func drive(b *testing.B, e benchEngine, perMS int) {
	one := []int64{1} // on the heap: the element's pointer does not make it escape per record
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		ts := int64(i / perMS)
		e.SetCurrentKey(benchKeyNames[i%benchKeys])
		if err := e.ProcessElementPtr(&one[0], ts); err != nil {
			b.Fatal(err)
		}
		if i%benchWMEvery == benchWMEvery-1 {
			if err := e.AdvanceWatermark(ts - 1); err != nil {
				b.Fatal(err)
			}
		}
	}
}

func perWindow(b *testing.B, a window.Assigner[window.TimeWindow]) benchEngine {
	return newPerWindow[int64](b, a, countAgg{})
}

// newPerWindow returns a per-window operator aggregating records of type
// IN with agg over 128 key groups of string keys.
func newPerWindow[IN any](b *testing.B, a window.Assigner[window.TimeWindow], agg state.AggregateFunction[IN, int64, int64]) *Operator[string, IN, int64, window.TimeWindow] {
	be := istate.NewBackend[string](0, 127, clock.NewManual(0))
	c, err := NewAggregating[string, window.TimeWindow, IN, int64, int64](be, agg)
	if err != nil {
		b.Fatal(err)
	}
	o, err := New(Config[string, IN, int64, window.TimeWindow]{Assigner: a, Trigger: a.DefaultTrigger(),
		Backend: be, Hash: hashString, MaxParallelism: 128, Now: func() int64 { return 0 },
		Schedule: func(int64, func(int64) error) {}, Contents: c,
		Emit: func(string, window.TimeWindow, int64) error { return nil }})
	if err != nil {
		b.Fatal(err)
	}
	return o
}

func sliced(b *testing.B, size, slide int64) benchEngine {
	be := istate.NewBackend[string](0, 127, clock.NewManual(0))
	agg := countAgg{}
	o, err := NewSliced(SlicedConfig[string, int64, int64]{Size: size, Slide: slide, Backend: be, Hash: hashString, MaxParallelism: 128,
		Add: func(v, acc int64, has bool) int64 {
			if !has {
				acc = agg.CreateAccumulator()
			}
			return agg.Add(v, acc)
		},
		Merge: agg.Merge,
		Emit:  func(string, window.TimeWindow, int64) error { return nil }})
	if err != nil {
		b.Fatal(err)
	}
	return o
}

// The three benchmarks below compare, per record and single-threaded,
// tumbling (size 60 s) with sliding (size 60 s, slide 1 s: size/slide = 60)
// through the sliced path and through Flink's per-window path, for a count
// Aggregate over 10k keys. Their ratio is the sliding/tumbling throughput
// ratio.
func BenchmarkTumblingCount(b *testing.B) {
	drive(b, perWindow(b, window.TumblingEventTime(60*time.Second)), benchPerMS)
}

func BenchmarkSlidingCountSliced(b *testing.B) {
	drive(b, sliced(b, 60_000, benchSlide), benchPerMS)
}

func BenchmarkSlidingCountPerWindow(b *testing.B) {
	drive(b, perWindow(b, window.SlidingEventTime(60*time.Second, time.Second)), benchPerMS)
}

// Denser input: 100 records per key and slide.
func BenchmarkTumblingCountDense(b *testing.B) {
	drive(b, perWindow(b, window.TumblingEventTime(60*time.Second)), 1000)
}

func BenchmarkSlidingCountSlicedDense(b *testing.B) {
	drive(b, sliced(b, 60_000, benchSlide), 1000)
}

// benchBid is a record of a Nexmark bid's size (88 bytes, three strings).
type benchBid struct {
	Auction, Bidder, Price int64
	Channel, URL           string
	DateTime               int64
	Extra                  string
}

// maxPrice keeps the highest price.
type maxPrice struct{}

func (maxPrice) CreateAccumulator() int64 { return 0 }
func (maxPrice) Add(b benchBid, acc int64) int64 {
	return max(acc, b.Price)
}
func (maxPrice) GetResult(acc int64) int64 { return acc }
func (maxPrice) Merge(a, b int64) int64    { return max(a, b) }

// BenchmarkTumblingMaxBid is BenchmarkTumblingCount with bid-sized records
// (10 s windows, the highest price): what passing records through the
// operator costs when they are large.
func BenchmarkTumblingMaxBid(b *testing.B) {
	o := newPerWindow[benchBid](b, window.TumblingEventTime(10*time.Second), maxPrice{})
	recs := make([]benchBid, 1024)
	for i := range recs {
		recs[i] = benchBid{Auction: int64(i), Price: int64(i * 31 % 1000), Channel: "c", URL: "u", Extra: "x"}
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		ts := int64(i / benchPerMS)
		o.SetCurrentKey(benchKeyNames[i%benchKeys])
		if err := o.ProcessElementPtr(&recs[i%len(recs)], ts); err != nil {
			b.Fatal(err)
		}
		if i%benchWMEvery == benchWMEvery-1 {
			if err := o.AdvanceWatermark(ts - 1); err != nil {
				b.Fatal(err)
			}
		}
	}
}

// Passing an element by value does not allocate: ProcessElement copies it
// into the operator rather than letting it escape for the trigger
// context's pointer.
func TestProcessElementByValueDoesNotAllocate(t *testing.T) {
	b := &testing.B{}
	o := newPerWindow[benchBid](b, window.TumblingEventTime(10*time.Second), maxPrice{})
	o.SetCurrentKey("k")
	rec := benchBid{Price: 7, Extra: "x"}
	_ = o.ProcessElement(rec, 1) // the window's state and timer exist from here on
	if n := testing.AllocsPerRun(100, func() {
		if err := o.ProcessElement(rec, 2); err != nil {
			t.Fatal(err)
		}
	}); n != 0 {
		t.Fatalf("%v allocations per element", n)
	}
}
