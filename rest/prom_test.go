package rest_test

import (
	"context"
	"errors"
	"math"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/metrics"
	"github.com/weirstream/weir/rest"
)

// scrape reads base/metrics and parses it with expfmt.
func scrape(t *testing.T, base string) map[string]*dto.MetricFamily {
	t.Helper()
	resp, err := http.Get(base + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatalf("parse /metrics: %v", err)
	}
	return fams
}

// series returns the samples of a family whose labels include want.
func series(fams map[string]*dto.MetricFamily, name string, want map[string]string) []*dto.Metric {
	var out []*dto.Metric
	f := fams[name]
	if f == nil {
		return nil
	}
next:
	for _, m := range f.GetMetric() {
		have := map[string]string{}
		for _, l := range m.GetLabel() {
			have[l.GetName()] = l.GetValue()
		}
		for k, v := range want {
			if have[k] != v {
				continue next
			}
		}
		out = append(out, m)
	}
	return out
}

func label(m *dto.Metric, name string) string {
	for _, l := range m.GetLabel() {
		if l.GetName() == name {
			return l.GetValue()
		}
	}
	return ""
}

func value(m *dto.Metric) float64 {
	switch {
	case m.Counter != nil:
		return m.Counter.GetValue()
	case m.Gauge != nil:
		return m.Gauge.GetValue()
	}
	return math.NaN()
}

// eventually scrapes until ok holds, and fails with the last scrape's
// account of what is missing after 60 s.
func eventually(t *testing.T, base string, ok func(map[string]*dto.MetricFamily) string) map[string]*dto.MetricFamily {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		fams := scrape(t, base)
		why := ok(fams)
		if why == "" {
			return fams
		}
		if time.Now().After(deadline) {
			t.Fatal(why)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func run(t *testing.T, env *weir.Environment, name string) *weir.JobHandle {
	t.Helper()
	h, err := env.ExecuteAsync(context.Background(), name)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Cancel(); h.Wait() })
	return h
}

// TestPromSameNamedVertices: two vertices named "Map" (parallelism 2
// each) export 4 series of each per-subtask metric, told apart by
// vertex_id; every series carries the job's id and name.
func TestPromSameNamedVertices(t *testing.T) {
	srv := rest.New("127.0.0.1:0")
	t.Cleanup(func() { srv.Close() })
	env := weir.NewEnvironment(weir.WithParallelism(2), weir.WithPlugin(srv))
	src := weir.Generate(env, -1, 2000, func(i int64) int64 { return i }, weir.NoWatermarks[int64]()).SetParallelism(1)
	m1 := weir.Map(weir.Rebalance(src), func(v int64) int64 { return v + 1 }).Name("Map")
	m2 := weir.Map(weir.Rebalance(m1), func(v int64) int64 { return v * 2 }).Name("Map")
	weir.Discard(weir.Rebalance(m2))
	h := run(t, env, "same-names")
	base := "http://" + srv.Addr()
	fams := eventually(t, base, func(f map[string]*dto.MetricFamily) string {
		if n := len(series(f, "weir_busy_ratio", map[string]string{"vertex": "Map"})); n != 4 {
			return "weir_busy_ratio of vertex Map: " + string(rune('0'+n)) + " series, want 4"
		}
		return ""
	})
	for _, name := range []string{"weir_busy_ratio", "weir_records_in_total", "weir_operator_records_in_total"} {
		ms := series(fams, name, map[string]string{"vertex": "Map"})
		if len(ms) != 4 {
			t.Fatalf("%s of vertex Map: %d series, want 4", name, len(ms))
		}
		ids := map[string]int{}
		for _, m := range ms {
			ids[label(m, "vertex_id")]++
		}
		if len(ids) != 2 {
			t.Fatalf("%s: vertex ids %v, want 2 with 2 subtasks each", name, ids)
		}
		for id, n := range ids {
			if len(id) != 32 || n != 2 {
				t.Fatalf("%s: vertex ids %v, want 2 with 2 subtasks each", name, ids)
			}
		}
	}
	for name, f := range fams {
		if len(name) < 5 || name[:5] != "weir_" {
			continue
		}
		for _, m := range f.GetMetric() {
			if label(m, "job_id") != h.ID() || label(m, "job_name") != "same-names" {
				t.Fatalf("%s: labels %v lack job_id=%s, job_name=same-names", name, m.GetLabel(), h.ID())
			}
		}
	}
}

// counting is a keyed process function with metrics in mixed case
// (lower-cased for Prometheus): it counts the first n records, puts v%10 of each
// into a histogram and publishes a gauge of 7.5.
type counting struct {
	n    int64
	seen *metrics.Counter
	hist *metrics.Histogram
}

func (c *counting) Open(ctx weir.KeyedRuntimeContext[int64]) error {
	g := ctx.Metrics()
	c.seen = g.Counter("Records_Seen")
	c.hist = g.Histogram("digit_value")
	g.Gauge("Level_Now", func() float64 { return 7.5 })
	return nil
}

func (c *counting) ProcessElement(v int64, _ weir.KeyedContext[int64], out weir.Collector[int64]) error {
	if v < c.n {
		c.seen.Inc()
		c.hist.Update(v % 10)
	}
	out.Collect(v)
	return nil
}

func (c *counting) OnTimer(int64, weir.OnTimerContext[int64], weir.Collector[int64]) error {
	return nil
}

// TestPromUserMetricsAndWatermarks: a user counter incremented 200 times
// reads 200, a histogram of 200 updates has count 200 and sum 900, a
// gauge reads 7.5, with lower-cased names and operator/subtask labels; the
// source's and the function's output watermark read the last timestamp
// (99 s) minus 1 ms.
func TestPromUserMetricsAndWatermarks(t *testing.T) {
	srv := rest.New("127.0.0.1:0")
	t.Cleanup(func() { srv.Close() })
	env := weir.NewEnvironment(weir.WithParallelism(1), weir.WithPlugin(srv))
	wm := weir.ForMonotonousTimestamps[int64]().WithTimestampAssigner(func(v int64, _ int64) int64 { return min(v, 99) * 1000 })
	src := weir.Generate(env, -1, 5000, func(i int64) int64 { return i }, wm)
	weir.Discard(weir.Process(weir.KeyBy(src, func(v int64) int64 { return v % 4 }), &counting{n: 200}).Name("counting"))
	run(t, env, "user-metrics")
	base := "http://" + srv.Addr()
	op := map[string]string{"operator": "counting", "subtask": "0"}
	fams := eventually(t, base, func(f map[string]*dto.MetricFamily) string {
		c := series(f, "weir_user_counter_records_seen_total", op)
		if len(c) != 1 || value(c[0]) != 200 {
			return "weir_user_counter_records_seen_total{operator=counting} is not 200 yet"
		}
		w := series(f, "weir_operator_output_watermark_seconds", map[string]string{"operator": "counting"})
		if len(w) != 1 || value(w[0]) != 98.999 {
			return "weir_operator_output_watermark_seconds{operator=counting} is not 98.999 yet"
		}
		return ""
	})
	if f := fams["weir_user_counter_records_seen_total"]; f.GetType() != dto.MetricType_COUNTER {
		t.Errorf("user counter has type %v", f.GetType())
	}
	g := series(fams, "weir_user_gauge_level_now", op)
	if len(g) != 1 || value(g[0]) != 7.5 || fams["weir_user_gauge_level_now"].GetType() != dto.MetricType_GAUGE {
		t.Errorf("weir_user_gauge_level_now: %v", g)
	}
	h := series(fams, "weir_user_histogram_digit_value", op)
	if len(h) != 1 || h[0].Summary == nil || h[0].Summary.GetSampleCount() != 200 || h[0].Summary.GetSampleSum() != 900 {
		t.Fatalf("weir_user_histogram_digit_value: %v", h)
	}
	for _, q := range h[0].Summary.GetQuantile() {
		if v := q.GetValue(); v < 0 || v > 9 {
			t.Errorf("quantile %v = %v, want in [0, 9]", q.GetQuantile(), v)
		}
	}
	src0 := series(fams, "weir_operator_output_watermark_seconds", map[string]string{"operator": "Generator", "subtask": "0"})
	if len(src0) != 1 || value(src0[0]) != 98.999 {
		t.Errorf("source's output watermark: %v", src0)
	}
}

// failingStore fails its first fails saves.
type failingStore struct {
	weir.CheckpointStore
	fails atomic.Int64
}

func (f *failingStore) Save(ctx context.Context, cp *weir.Checkpoint) error {
	if f.fails.Add(-1) >= 0 {
		return errors.New("disk on fire")
	}
	return f.CheckpointStore.Save(ctx, cp)
}

// promOne returns the value of a family's only series (NaN if it has
// not exactly one).
func promOne(f map[string]*dto.MetricFamily, name string) float64 {
	ms := series(f, name, nil)
	if len(ms) != 1 {
		return math.NaN()
	}
	return value(ms[0])
}

// TestPromCheckpoints: a store that fails the first 2 checkpoints gives
// weir_checkpoints_failed_total 2 (a counter), the completed ones
// weir_checkpoints_completed_total and a last size and duration.
func TestPromCheckpoints(t *testing.T) {
	srv := rest.New("127.0.0.1:0")
	t.Cleanup(func() { srv.Close() })
	st := &failingStore{CheckpointStore: weir.NewMemoryCheckpointStore()}
	st.fails.Store(2)
	env := weir.NewEnvironment(weir.WithParallelism(1), weir.WithPlugin(srv))
	env.EnableCheckpointing(20*time.Millisecond, weir.CheckpointStoreIn(st), weir.TolerableCheckpointFailures(100))
	src := weir.Generate(env, -1, 2000, func(i int64) int64 { return i }, weir.NoWatermarks[int64]())
	weir.Discard(weir.Sum(weir.KeyBy(src, func(v int64) int64 { return v % 16 }), func(v int64) int64 { return v }, func(p *int64, v int64) { *p = v }))
	run(t, env, "checkpoints")
	fams := eventually(t, "http://"+srv.Addr(), func(f map[string]*dto.MetricFamily) string {
		switch {
		case promOne(f, "weir_checkpoints_failed_total") != 2:
			return "weir_checkpoints_failed_total is not 2"
		case !(promOne(f, "weir_checkpoints_completed_total") >= 2):
			return "weir_checkpoints_completed_total is not 2 or more"
		case !(promOne(f, "weir_last_checkpoint_size_bytes") > 0):
			return "weir_last_checkpoint_size_bytes is not positive"
		}
		return ""
	})
	if d := promOne(fams, "weir_last_checkpoint_duration_seconds"); !(d >= 0 && d < 30) {
		t.Errorf("weir_last_checkpoint_duration_seconds = %v", d)
	}
	if f := fams["weir_checkpoints_failed_total"]; f.GetType() != dto.MetricType_COUNTER {
		t.Errorf("weir_checkpoints_failed_total has type %v", f.GetType())
	}
	if n := promOne(fams, "weir_job_restarts_total"); n != 0 {
		t.Errorf("weir_job_restarts_total = %v, want 0: failed checkpoints within the tolerance restart nothing", n)
	}
}

// TestPromRestarts: a map that fails once under a restart strategy gives
// weir_job_restarts_total 1 (Flink's numRestarts), and the job runs again.
func TestPromRestarts(t *testing.T) {
	srv := rest.New("127.0.0.1:0")
	t.Cleanup(func() { srv.Close() })
	env := weir.NewEnvironment(weir.WithParallelism(1), weir.WithPlugin(srv),
		weir.WithRestartStrategy(weir.FixedDelayRestart(3, 0)))
	var failed atomic.Bool
	src := weir.Generate(env, -1, 2000, func(i int64) int64 { return i }, weir.NoWatermarks[int64]())
	weir.Discard(weir.Map(src, func(v int64) int64 {
		if v > 100 && failed.CompareAndSwap(false, true) {
			panic("injected failure")
		}
		return v
	}))
	run(t, env, "restarts")
	fams := eventually(t, "http://"+srv.Addr(), func(f map[string]*dto.MetricFamily) string {
		if promOne(f, "weir_job_restarts_total") != 1 || promOne(f, "weir_job_running") != 1 {
			return "weir_job_restarts_total is not 1 with the job running"
		}
		return ""
	})
	if f := fams["weir_job_restarts_total"]; f.GetType() != dto.MetricType_COUNTER {
		t.Errorf("weir_job_restarts_total has type %v", f.GetType())
	}
}
