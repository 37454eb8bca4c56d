package weir_test

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/weirstream/weir"
)

// A Map chained after a Filter runs the filter's predicate itself and
// maps the kept records (the filter copies nothing): the results, their timestamps and order, the
// operators' record counts, and which operator a panic is reported
// against must be those of two separate operators.
func TestFilterHandsKeptRecordsToMap(t *testing.T) {
	env := weir.NewEnvironment(weir.WithParallelism(1), weir.WithBufferSize(7))
	src := weir.Generate(env, 1000, 0, func(i int64) int64 { return i },
		weir.ForMonotonousTimestamps[int64]().WithTimestampAssigner(func(v, _ int64) int64 { return v * 10 }))
	kept := weir.Filter(src, func(v int64) bool { return v%3 == 0 }).Name("thirds")
	doubled := weir.Map(kept, func(v int64) int64 { return 2 * v }).Name("double")
	got := weir.Collect(doubled)
	h, err := env.ExecuteAsync(context.Background(), "chain")
	if err != nil {
		t.Fatal(err)
	}
	if err := h.Wait(); err != nil {
		t.Fatal(err)
	}
	var want []weir.Record[int64]
	for v := int64(0); v < 1000; v += 3 {
		want = append(want, weir.Record[int64]{Value: 2 * v, TS: v * 10})
	}
	if recs := got.Records(); !slices.Equal(recs, want) {
		t.Fatalf("got %d records, want %d (first %v)", len(recs), len(want), recs[:min(3, len(recs))])
	}
	counts := map[string][2]int64{}
	for _, tm := range h.Metrics() {
		for _, om := range tm.Operators {
			c := counts[om.Name]
			counts[om.Name] = [2]int64{c[0] + om.RecordsIn, c[1] + om.RecordsOut}
		}
	}
	if counts["thirds"] != [2]int64{1000, 334} || counts["double"] != [2]int64{334, 334} {
		t.Fatalf("record counts %v", counts)
	}

	for _, c := range []struct{ panicIn, name string }{{"filter", "exploding-filter"}, {"map", "exploding-map"}} {
		env := weir.NewEnvironment(weir.WithParallelism(1))
		src := weir.Generate(env, 100, 0, func(i int64) int64 { return i }, weir.NoWatermarks[int64]())
		f := weir.Filter(src, func(v int64) bool {
			if c.panicIn == "filter" && v == 50 {
				panic("boom")
			}
			return true
		}).Name("exploding-filter")
		weir.Discard(weir.Map(f, func(v int64) int64 {
			if c.panicIn == "map" && v == 50 {
				panic("boom")
			}
			return v
		}).Name("exploding-map"))
		err := env.Execute(context.Background(), "panic")
		if err == nil || !strings.HasPrefix(err.Error(), `operator "`+c.name+`"`) || !strings.Contains(err.Error(), "boom") {
			t.Fatalf("panic in the %s: %v", c.panicIn, err)
		}
	}
}
