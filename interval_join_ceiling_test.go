package weir

import (
	"context"
	"testing"

	"github.com/weirstream/weir/internal/engine"
)

// The ceiling of BenchmarkIntervalJoinThroughput: the same two keyed
// generator streams (100k keys, timestamps and watermarks assigned, hashed
// to parallelism 2) into a two-input operator that only counts records and
// forwards watermarks. What the interval join adds is the difference.

type ceilRec struct {
	K  int64
	TS int64
}

type ceilOp struct {
	endBoth
	out *engine.Output[int64]
	n   int64
}

func (c *ceilOp) ProcessBatch1(r []engine.Record[ceilRec]) error { c.n += int64(len(r)); return nil }
func (c *ceilOp) ProcessBatch2(r []engine.Record[ceilRec]) error { c.n += int64(len(r)); return nil }
func (c *ceilOp) ProcessWatermark(wm int64) error                { return c.out.EmitWatermark(wm) }
func (c *ceilOp) ProcessStatus(idle bool) error                  { return c.out.EmitStatus(idle) }
func (c *ceilOp) EndInput1() error                               { return c.end(0, c.out) }
func (c *ceilOp) EndInput2() error                               { return c.end(1, c.out) }
func (c *ceilOp) Open() error                                    { return nil }
func (c *ceilOp) Close() error                                   { return nil }

func ceilGen(n int64, shift int64) func(i int64) ceilRec {
	const par = 2
	starts := make([]int64, par)
	for s := range starts {
		starts[s] = n * int64(s) / par
	}
	return func(i int64) ceilRec {
		s := par - 1
		for i < starts[s] {
			s--
		}
		g := (i-starts[s])*par + int64(s)
		return ceilRec{K: g % 100_000, TS: g/1000 + shift}
	}
}

func BenchmarkIntervalJoinCeiling(b *testing.B) {
	env := NewEnvironment(WithParallelism(2))
	n := int64(b.N)
	strategy := ForMonotonousTimestamps[ceilRec]().WithTimestampAssigner(func(r ceilRec, _ int64) int64 { return r.TS })
	left := Generate(env, n/2, 0, ceilGen(n/2, 0), strategy)
	right := Generate(env, n-n/2, 0, ceilGen(n-n/2, 5), strategy)
	k := func(r ceilRec) int64 { return r.K }
	lk, rk := KeyBy(left, k), KeyBy(right, k)
	ds := twoInput(lk.ds, rk.ds, "Ceiling", func(bc *engine.BuildContext, out *engine.Output[int64]) (engine.TwoInput[ceilRec, ceilRec], engine.Lifecycle, error) {
		o := &ceilOp{out: out}
		return o, o, nil
	})
	Discard(ds)
	b.ReportAllocs()
	b.ResetTimer()
	if err := env.Execute(context.Background(), "ceiling"); err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds()/1e6, "Mrec/s")
}
