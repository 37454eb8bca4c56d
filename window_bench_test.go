package weir_test

import (
	"context"
	"syscall"
	"testing"
	"time"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/window"
)

// Job-level window benchmarks (issue 3): generator -> keyBy -> event-time
// window Aggregate(count) -> discard at parallelism 2, one op per record.
//
// Records: key = position % 10k; timestamp = position / perMS ms, where
// position is the index within the record's generator split. Generate
// splits [0, N) into contiguous ranges, so the timestamp is taken relative
// to the split start: both source subtasks then move through event time
// together, and the window operator's combined watermark (minimum over its
// two input channels) keeps up with both instead of holding everything the
// later split produced until the earlier split ends. Watermarks: Flink's
// monotonous generator (max - 1), emitted on the 200 ms periodic tick.
//
// Two event-time densities are measured:
//   - keyrate=100ps: 1M records per event-time second, 100 records per key
//     per second (1000 per key per tumbling window, 100 per key per slide);
//   - keyrate=1ps: 10k records per event-time second, one record per key
//     per second (10 per key per tumbling window, 1 per key per slide, so
//     the sliding job fires about one window per record: its worst case).
//
// Targets (issue 3): tumbling >= 15 M records/s at parallelism 2; sliding
// (size/slide = 60) >= 0.5x tumbling.

// wbRec is a window benchmark record.
type wbRec struct {
	K  int64
	TS int64
}

// wbCount counts elements.
type wbCount struct{}

func (wbCount) CreateAccumulator() int64     { return 0 }
func (wbCount) Add(_ wbRec, acc int64) int64 { return acc + 1 }
func (wbCount) GetResult(acc int64) int64    { return acc }
func (wbCount) Merge(a, b int64) int64       { return a + b }
func (wbCount) String() string               { return "count" }
func wbKey(r wbRec) int64                    { return r.K }
func wbTS(r wbRec, _ int64) int64            { return r.TS }
func wbStrategy() weir.WatermarkStrategy[wbRec] {
	return weir.ForMonotonousTimestamps[wbRec]().WithTimestampAssigner(wbTS)
}

const (
	wbKeys = 10_000
	wbPar  = 2
)

// wbGen returns the generator function for n records over wbPar splits.
func wbGen(n int64, perMS int64) func(i int64) wbRec {
	starts := make([]int64, wbPar)
	for s := range starts {
		starts[s] = n * int64(s) / wbPar // Generate's split ranges
	}
	return func(i int64) wbRec {
		pos := i
		for s := wbPar - 1; s >= 0; s-- {
			if i >= starts[s] {
				pos = i - starts[s]
				break
			}
		}
		return wbRec{K: pos % wbKeys, TS: pos / perMS}
	}
}

var wbDensities = []struct {
	name  string
	perMS int64
}{
	{"keyrate=100ps", 1000},
	{"keyrate=1ps", 10},
}

func runWindowBench(b *testing.B, perMS int64, build func(ks weir.KeyedStream[int64, wbRec]) weir.DataStream[int64]) {
	env := weir.NewEnvironment(weir.WithParallelism(wbPar))
	src := weir.Generate(env, int64(b.N), 0, wbGen(int64(b.N), perMS), wbStrategy())
	weir.Discard(build(weir.KeyBy(src, wbKey)))
	b.ReportAllocs()
	b.ResetTimer()
	cpu0 := cpuTime(b)
	if err := env.Execute(context.Background(), "bench"); err != nil {
		b.Fatal(err)
	}
	reportThroughput(b, int64(b.N), cpuTime(b)-cpu0)
}

// cpuTime returns the process's user + system CPU time. On this shared
// 2-core machine wall time depends on what else runs; CPU time per record
// does much less.
func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// reportThroughput reports records per wall second (Mrec/s), CPU
// nanoseconds per record (cpu-ns/rec, all goroutines, GC included) and
// the throughput the job would have with both cores to itself
// (Mrec/s@2cpu = 2 / cpu-ns/rec, an upper bound: it assumes the two
// subtasks' work could be spread evenly over both cores).
func reportThroughput(b *testing.B, records int64, cpu time.Duration) {
	b.ReportMetric(float64(records)/b.Elapsed().Seconds()/1e6, "Mrec/s")
	perRec := float64(cpu.Nanoseconds()) / float64(records)
	b.ReportMetric(perRec, "cpu-ns/rec")
	b.ReportMetric(2e3/perRec, "Mrec/s@2cpu")
}

// BenchmarkWindowTumblingCount: tumbling event-time 10 s windows, count
// per key (Aggregate), 10k keys, parallelism 2.
func BenchmarkWindowTumblingCount(b *testing.B) {
	for _, d := range wbDensities {
		b.Run(d.name, func(b *testing.B) {
			runWindowBench(b, d.perMS, func(ks weir.KeyedStream[int64, wbRec]) weir.DataStream[int64] {
				return weir.Aggregate(weir.Window(ks, window.TumblingEventTime(10*time.Second)), wbCount{})
			})
		})
	}
}

// BenchmarkWindowSlidingAggregate: sliding event-time windows 60 s / 1 s
// (size/slide = 60), count per key (Aggregate, the sliced path), same keys
// and timestamps as BenchmarkWindowTumblingCount.
func BenchmarkWindowSlidingAggregate(b *testing.B) {
	for _, d := range wbDensities {
		b.Run(d.name, func(b *testing.B) {
			runWindowBench(b, d.perMS, func(ks weir.KeyedStream[int64, wbRec]) weir.DataStream[int64] {
				return weir.Aggregate(weir.Window(ks, window.SlidingEventTime(60*time.Second, time.Second)), wbCount{})
			})
		})
	}
}

// BenchmarkWindowSlidingPerWindow is the same sliding job on Flink's
// per-window path (an explicit EventTimeTrigger turns slicing off): each
// record is added to 60 windows. For the ratio only.
//
// It costs about 100 us per record here, so it skips runs of more than 2M
// records (a -benchtime meant for the other benchmarks would take hours).
func BenchmarkWindowSlidingPerWindow(b *testing.B) {
	for _, d := range wbDensities {
		b.Run(d.name, func(b *testing.B) {
			if b.N > 2_000_000 {
				b.Skipf("%d records would take too long on the per-window path; run it with -benchtime 200000x", b.N)
			}
			runWindowBench(b, d.perMS, func(ks weir.KeyedStream[int64, wbRec]) weir.DataStream[int64] {
				ws := weir.Window(ks, window.SlidingEventTime(60*time.Second, time.Second)).Trigger(window.EventTimeTrigger())
				return weir.Aggregate(ws, wbCount{})
			})
		})
	}
}
