package weir_test

import (
	"context"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/weirtest"
)

// The interval-join throughput job (issue 4): two keyed generator streams
// through weir.IntervalJoin at parallelism 2, into a discard sink.
//
// Each stream is one global sequence g = 0, 1, 2, ... interleaved over its
// two generator splits (split s produces g = 2*pos + s, pos being the index
// within the split, because Generate splits its range in contiguous
// halves). Record g has key g % 100k and timestamp g / 1000 ms (1M records
// per event-time second per stream, so a key comes back every 100 ms);
// the right stream is the same sequence 5 ms later. With
// Between(0, 10ms) each left record matches exactly the right record with
// the same g and nothing else (the next record of its key is 100 ms away),
// and none is late (a split's records are in timestamp order), so every
// record has exactly one match: N input records give N/2 pairs.

// ijtRec is a record of the throughput job.
type ijtRec struct {
	K  int64
	TS int64
}

const (
	ijtKeys  = 100_000
	ijtPerMS = 1000 // records per ms of event time, per stream
	ijtShift = 5    // right timestamps are 5 ms later
	ijtPar   = 2
)

// ijtGen returns the generator of a stream of n records, timestamps
// shifted by shift ms.
func ijtGen(n int64, shift int64) func(i int64) ijtRec {
	starts := make([]int64, ijtPar)
	for s := range starts {
		starts[s] = n * int64(s) / ijtPar // Generate's split ranges
	}
	return func(i int64) ijtRec {
		s := ijtPar - 1
		for i < starts[s] {
			s--
		}
		g := (i-starts[s])*ijtPar + int64(s)
		return ijtRec{K: g % ijtKeys, TS: g/ijtPerMS + shift}
	}
}

func ijtKey(r ijtRec) int64 { return r.K }

// ijtJob builds the job over n input records (n/2 per stream) and returns
// the joined stream of left keys.
func ijtJob(env *weir.Environment, n int64) weir.DataStream[int64] {
	strategy := weir.ForMonotonousTimestamps[ijtRec]().WithTimestampAssigner(func(r ijtRec, _ int64) int64 { return r.TS })
	left := weir.Generate(env, n/2, 0, ijtGen(n/2, 0), strategy)
	right := weir.Generate(env, n-n/2, 0, ijtGen(n-n/2, ijtShift), strategy)
	return weir.IntervalJoinFunc(weir.KeyBy(left, ijtKey), weir.KeyBy(right, ijtKey), weir.Between(0, 10*time.Millisecond),
		func(l, _ ijtRec, _ weir.JoinContext, out weir.Collector[int64]) error {
			out.Collect(l.K)
			return nil
		})
}

// BenchmarkIntervalJoinThroughput runs the job above over b.N input records
// (both streams together) and reports input records per second
// (Mrec/s; target >= 5 at parallelism 2), CPU per input record, and the
// heap held per buffered record (B/buffered-rec), measured separately
// (see ijtBufferBytes) with 1 and 16 records buffered per key.
func BenchmarkIntervalJoinThroughput(b *testing.B) {
	env := weir.NewEnvironment(weir.WithParallelism(ijtPar))
	weir.Discard(ijtJob(env, int64(b.N)))
	b.ReportAllocs()
	b.ResetTimer()
	cpu0 := cpuTime(b)
	if err := env.Execute(context.Background(), "interval-join-throughput"); err != nil {
		b.Fatal(err)
	}
	reportThroughput(b, int64(b.N), cpuTime(b)-cpu0)
	b.StopTimer()
	// The memory figures do not depend on b.N: measure them once per
	// process (about 2M harness steps), not on every call of the
	// benchmark function.
	ijtMem.once.Do(func() {
		ijtMem.one, ijtMem.sixteen = ijtBufferBytes(b, 1), ijtBufferBytes(b, 16)
	})
	b.ReportMetric(ijtMem.one, "B/buffered-rec@1perkey")
	b.ReportMetric(ijtMem.sixteen, "B/buffered-rec@16perkey")
}

var ijtMem struct {
	once         sync.Once
	one, sixteen float64
}

// ijtBufferBytes measures the live heap an interval join holds per
// buffered record: it feeds 100k keys x perKey left records (distinct
// timestamps, no right records, no watermark, so nothing is joined or
// cleaned up) through a one-subtask harness and divides the growth of
// HeapAlloc (after a GC, before and after) by the record count. What is
// counted: the key's index entry and slot (both sides' buffers), the
// buffered entries, and the pending cleanup of each timestamp bucket (a
// queue node and, every record having its own timestamp here, a time
// bucket of the cleanup queue).
func ijtBufferBytes(b *testing.B, perKey int) float64 {
	h, err := weirtest.NewTwoInput(func(l, r weir.DataStream[ijtRec]) weir.DataStream[int64] {
		return weir.IntervalJoinFunc(weir.KeyBy(l, ijtKey), weir.KeyBy(r, ijtKey), weir.Between(0, 10*time.Millisecond),
			func(l, _ ijtRec, _ weir.JoinContext, out weir.Collector[int64]) error {
				out.Collect(l.K)
				return nil
			})
	})
	if err != nil {
		b.Fatal(err)
	}
	defer h.Close()
	n := ijtKeys * perKey
	heap := func() uint64 {
		var ms runtime.MemStats
		runtime.GC()
		runtime.GC()
		runtime.ReadMemStats(&ms)
		return ms.HeapAlloc
	}
	before := heap()
	for i := range n {
		if err := h.ProcessElement1(0, ijtRec{K: int64(i % ijtKeys), TS: int64(i)}, int64(i)); err != nil {
			b.Fatal(err)
		}
	}
	after := heap()
	runtime.KeepAlive(h)
	return float64(int64(after)-int64(before)) / float64(n)
}

// TestIntervalJoinThroughputShape checks the benchmark's premise on a
// small run: every input record is joined exactly once (N/2 pairs, each
// key paired once per 100 ms of event time).
func TestIntervalJoinThroughputShape(t *testing.T) {
	const n = 400_000 // 200k per stream: two rounds of the 100k keys
	env := weir.NewEnvironment(weir.WithParallelism(ijtPar))
	var mu sync.Mutex
	perKey := map[int64]int{}
	weir.SinkFunc(ijtJob(env, n), func(k int64) error {
		mu.Lock()
		perKey[k]++
		mu.Unlock()
		return nil
	})
	if err := env.Execute(context.Background(), "interval-join-shape"); err != nil {
		t.Fatal(err)
	}
	total := 0
	for k, c := range perKey {
		total += c
		if c != n/2/ijtKeys {
			t.Fatalf("key %d joined %d times, want %d", k, c, n/2/ijtKeys)
		}
	}
	if total != n/2 || len(perKey) != ijtKeys {
		t.Fatalf("%d pairs over %d keys, want %d over %d", total, len(perKey), n/2, ijtKeys)
	}
}
