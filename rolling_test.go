package weir_test

import (
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/connector/file"
	"github.com/weirstream/weir/weirtest"
	"pgregory.net/rapid"
)

// rollRec is a record of the rolling-aggregation tests: a key, an integer
// and a float field, and a tag that tells records apart.
type rollRec struct {
	K   string
	N   int64
	F   float64
	Tag int
}

func getN(r rollRec) int64       { return r.N }
func setN(r *rollRec, v int64)   { r.N = v }
func getF(r rollRec) float64     { return r.F }
func setF(r *rollRec, v float64) { r.F = v }
func rollKey(r rollRec) string   { return r.K }

// rollOracle is Flink's semantics of each aggregation, written out per key
// from StreamGroupedReduceOperator, SumAggregator and ComparableAggregator:
// the first record is the running value; each next one is combined with it.
var rollOracle = map[string]func(acc, v rollRec) rollRec{
	"sum": func(acc, v rollRec) rollRec { acc.N += v.N; return acc },
	"min": func(acc, v rollRec) rollRec {
		if !(javaLess(acc.F, v.F)) { // MinComparator: o1 < o2 keeps, else the field is set
			acc.F = v.F
		}
		return acc
	},
	"max": func(acc, v rollRec) rollRec {
		if !(javaLess(v.F, acc.F)) {
			acc.F = v.F
		}
		return acc
	},
	"minBy": func(acc, v rollRec) rollRec {
		if javaLess(v.F, acc.F) {
			return v
		}
		return acc
	},
	"minByLast": func(acc, v rollRec) rollRec {
		if javaLess(acc.F, v.F) {
			return acc
		}
		return v
	},
	"maxBy": func(acc, v rollRec) rollRec {
		if javaLess(acc.F, v.F) {
			return v
		}
		return acc
	},
	"maxNBy": func(acc, v rollRec) rollRec {
		if v.N > acc.N {
			return v
		}
		return acc
	},
	"reduce": func(acc, v rollRec) rollRec { return rollRec{K: acc.K, N: acc.N*3 + v.N, Tag: v.Tag} },
}

// javaLess is Double.compare(a, b) < 0: NaN is the largest value.
func javaLess(a, b float64) bool {
	switch {
	case math.IsNaN(a):
		return false
	case math.IsNaN(b):
		return true
	}
	return a < b
}

func rollStream(kind string, ks weir.KeyedStream[string, rollRec]) weir.DataStream[rollRec] {
	switch kind {
	case "sum":
		return weir.Sum(ks, getN, setN)
	case "min":
		return weir.Min(ks, getF, setF)
	case "max":
		return weir.Max(ks, getF, setF)
	case "minBy":
		return weir.MinBy(ks, getF)
	case "minByLast":
		return weir.MinBy(ks, getF, weir.LastOnTies())
	case "maxBy":
		return weir.MaxBy(ks, getF)
	case "maxNBy":
		return weir.MaxBy(ks, getN)
	default:
		return weir.RollingReduce(ks, func(acc, v rollRec) rollRec { return rollRec{K: acc.K, N: acc.N*3 + v.N, Tag: v.Tag} })
	}
}

// TestRollingAggregationsMatchFlink holds every rolling aggregation against
// the oracle on random input: one output per input record, with its
// timestamp, holding the key's running value.
func TestRollingAggregationsMatchFlink(t *testing.T) {
	kinds := slices.Sorted(func(yield func(string) bool) {
		for k := range rollOracle {
			if !yield(k) {
				return
			}
		}
	})
	for _, kind := range kinds {
		t.Run(kind, func(t *testing.T) {
			rapid.Check(t, func(rt *rapid.T) {
				h, err := weirtest.NewOneInput(func(in weir.DataStream[rollRec]) weir.DataStream[rollRec] {
					return rollStream(kind, weir.KeyBy(in, rollKey))
				})
				if err != nil {
					rt.Fatal(err)
				}
				defer h.Close()
				floats := []float64{-1, 0, 0, 1, 2, 2, math.NaN(), math.Inf(-1)}
				n := rapid.IntRange(1, 40).Draw(rt, "n")
				running := map[string]rollRec{}
				var want []weir.Record[rollRec]
				for i := range n {
					v := rollRec{
						K:   rapid.SampledFrom([]string{"a", "b", "c"}).Draw(rt, "k"),
						N:   rapid.Int64Range(-5, 5).Draw(rt, "n"),
						F:   rapid.SampledFrom(floats).Draw(rt, "f"),
						Tag: i,
					}
					if err := h.ProcessElement(v, int64(i*10)); err != nil {
						rt.Fatal(err)
					}
					acc, seen := running[v.K]
					if seen {
						acc = rollOracle[kind](acc, v)
					} else {
						acc = v
					}
					running[v.K] = acc
					want = append(want, weir.Record[rollRec]{Value: acc, TS: int64(i * 10)})
				}
				got := h.Output()
				if fmt.Sprint(got) != fmt.Sprint(want) {
					rt.Fatalf("%s:\n got %v\nwant %v", kind, got, want)
				}
			})
		})
	}
}

// TestRollingSumKeyedState: the running sums are keyed state; a job
// stopped with a savepoint and restored at another parallelism goes on
// from them, and the committed output equals an uninterrupted run's.
func TestRollingSumKeyedState(t *testing.T) {
	const n = 600
	job := func(env *weir.Environment, src *gatedSource, out string) {
		in := weir.FromSource(env, src, weir.ForMonotonousTimestamps[evt](), "gated").SetParallelism(1).UID("source")
		sums := weir.Sum(weir.KeyBy(in, func(e evt) int { return e.Key }),
			func(e evt) int64 { return e.V }, func(e *evt, v int64) { e.V = v }).UID("sums")
		file.Sink(sums, out, func(e evt) []byte { return fmt.Appendf(nil, "%d:%d@%d", e.Key, e.V, e.TS) })
	}
	refDir := filepath.Join(t.TempDir(), "ref")
	env := weir.NewEnvironment(weir.WithParallelism(2))
	job(env, &gatedSource{n: n, limit: n, reached: make(chan struct{})}, refDir)
	if err := env.Execute(t.Context(), "reference"); err != nil {
		t.Fatal(err)
	}
	want := committed(t, refDir)

	dir := t.TempDir()
	out, spDir := filepath.Join(dir, "out"), filepath.Join(dir, "sp")
	path := ""
	for i, p := range []int{1, 3} {
		limit := int64(n * (i + 1) / 2)
		opts := []weir.Option{weir.WithParallelism(p)}
		if path != "" {
			opts = append(opts, weir.RestoreFromSavepoint(path))
		}
		env := weir.NewEnvironment(opts...)
		env.EnableCheckpointing(time.Hour)
		src := &gatedSource{n: n, limit: limit, reached: make(chan struct{})}
		job(env, src, out)
		h, err := env.ExecuteAsync(t.Context(), "rolling")
		if err != nil {
			t.Fatal(err)
		}
		if limit < n {
			select {
			case <-src.reached:
			case <-h.Done():
				t.Fatalf("phase %d ended early: %v", i, h.Wait())
			}
			if path, err = h.StopWithSavepoint(t.Context(), spDir); err != nil {
				t.Fatal(err)
			}
		}
		// A phase stopped with a savepoint ends with ErrStopped, the
		// last one, whose input ends, with nil.
		if err := h.Wait(); (limit < n) != errors.Is(err, weir.ErrStopped) || limit >= n && err != nil {
			t.Fatal(err)
		}
	}
	if got := committed(t, out); !slices.Equal(got, want) {
		missing, extra := diffLines(want, got)
		t.Fatalf("restored run differs: missing %v, extra %v", head(missing), head(extra))
	}
}

// TestRollingNilFunctions: nil getters, setters and reduce functions fail
// the job when it is built, naming the operator.
func TestRollingNilFunctions(t *testing.T) {
	env := weir.NewEnvironment()
	ks := weir.KeyBy(weir.FromSlice(env, []rollRec{{}}), rollKey)
	weir.Sum[string, rollRec, int64](ks, nil, setN)
	weir.RollingReduce(ks, nil)
	weir.MinBy[string, rollRec, float64](ks, nil)
	err := env.Execute(t.Context(), "nil")
	if err == nil || !contains(err.Error(), "Keyed Aggregation", "Keyed Reduce", "is nil") {
		t.Fatalf("got %v", err)
	}
}
