package weir_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/weirstream/weir"
)

// chainNext builds the operator a Filter is chained to, named name, that
// doubles each value; it panics on 50 when explode is set.
type chainNext func(ds weir.DataStream[int64], name string, explode bool) weir.DataStream[int64]

// doubleProcess is chainNext's ProcessStream function.
type doubleProcess struct{ explode bool }

func (p doubleProcess) ProcessElement(v int64, ctx weir.Context, out weir.Collector[int64]) error {
	if p.explode && v == 50 {
		panic("boom")
	}
	if ts, ok := ctx.Timestamp(); ok && ts != v*10 {
		return fmt.Errorf("value %d has timestamp %d in the context", v, ts)
	}
	out.Collect(2 * v)
	return nil
}

// The operators a Filter hands its input batch and predicate to (Map,
// FlatMap, ProcessStream) run the predicate themselves and process the
// kept records (the filter copies nothing): the results, their timestamps
// and order, the operators' record counts, and which operator a panic is
// reported against must be those of two separate operators.
func TestFilterHandsKeptRecordsOn(t *testing.T) {
	nexts := map[string]chainNext{
		"Map": func(ds weir.DataStream[int64], name string, explode bool) weir.DataStream[int64] {
			return weir.Map(ds, func(v int64) int64 {
				if explode && v == 50 {
					panic("boom")
				}
				return 2 * v
			}).Name(name)
		},
		"FlatMap": func(ds weir.DataStream[int64], name string, explode bool) weir.DataStream[int64] {
			return weir.FlatMap(ds, func(v int64, out weir.Collector[int64]) error {
				if explode && v == 50 {
					panic("boom")
				}
				out.Collect(2 * v)
				return nil
			}).Name(name)
		},
		"ProcessStream": func(ds weir.DataStream[int64], name string, explode bool) weir.DataStream[int64] {
			return weir.ProcessStream[int64, int64](ds, doubleProcess{explode: explode}).Name(name)
		},
	}
	for kind, next := range nexts {
		t.Run(kind, func(t *testing.T) { testFilterHandsOn(t, next) })
	}
}

func testFilterHandsOn(t *testing.T, next chainNext) {
	env := weir.NewEnvironment(weir.WithParallelism(1), weir.WithBufferSize(7))
	src := weir.Generate(env, 1000, 0, func(i int64) int64 { return i },
		weir.ForMonotonousTimestamps[int64]().WithTimestampAssigner(func(v, _ int64) int64 { return v * 10 }))
	kept := weir.Filter(src, func(v int64) bool { return v%3 == 0 }).Name("thirds")
	got := weir.Collect(next(kept, "double", false))
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

	for _, c := range []struct{ panicIn, name string }{{"filter", "exploding-filter"}, {"next", "exploding-next"}} {
		env := weir.NewEnvironment(weir.WithParallelism(1))
		src := weir.Generate(env, 100, 0, func(i int64) int64 { return i }, weir.NoWatermarks[int64]())
		f := weir.Filter(src, func(v int64) bool {
			if c.panicIn == "filter" && v == 50 {
				panic("boom")
			}
			return true
		}).Name("exploding-filter")
		weir.Discard(next(f, "exploding-next", c.panicIn == "next"))
		err := env.Execute(context.Background(), "panic")
		if err == nil || !strings.HasPrefix(err.Error(), `operator "`+c.name+`"`) || !strings.Contains(err.Error(), "boom") {
			t.Fatalf("panic in the %s: %v", c.panicIn, err)
		}
	}
}
