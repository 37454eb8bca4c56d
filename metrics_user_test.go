package weir_test

import (
	"context"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/metrics"
	"github.com/weirstream/weir/rest"
)

// meter is a keyed process function with a counter, a gauge and a
// histogram.
type meter struct {
	seen *metrics.Counter
	lat  *metrics.Histogram
	last atomic.Int64
}

func (m *meter) Open(ctx weir.KeyedRuntimeContext[int64]) error {
	g := ctx.Metrics()
	m.seen = g.Counter("seen")
	if g.Counter("seen") == nil { // registering again gives the same counter
		return nil
	}
	m.lat = g.Histogram("latency")
	g.Gauge("last_value", func() float64 { return float64(m.last.Load()) })
	return nil
}

func (m *meter) ProcessElement(v int64, _ weir.KeyedContext[int64], out weir.Collector[int64]) error {
	m.seen.Inc()
	m.lat.Update(v % 100)
	m.last.Store(v)
	out.Collect(v)
	return nil
}

func (m *meter) OnTimer(int64, weir.OnTimerContext[int64], weir.Collector[int64]) error { return nil }

// TestUserMetrics: user metrics show in Metrics(), the REST API's vertex
// metrics and Prometheus.
func TestUserMetrics(t *testing.T) {
	srv := rest.New("127.0.0.1:0")
	t.Cleanup(func() { srv.Close() })
	env := weir.NewEnvironment(weir.WithParallelism(1), weir.WithPlugin(srv))
	src := weir.Generate(env, -1, 5000, func(i int64) int64 { return i }, weir.NoWatermarks[int64]())
	weir.Discard(weir.Process(weir.KeyBy(src, func(v int64) int64 { return v % 4 }), &meter{}).Name("meter").UID("meter"))
	h, err := env.ExecuteAsync(context.Background(), "user-metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { h.Cancel(); h.Wait() }()
	var user []metrics.UserMetric
	deadline := time.Now().Add(30 * time.Second)
	for {
		user = nil
		for _, tm := range h.Metrics() {
			for _, om := range tm.Operators {
				if om.Name == "meter" {
					user = om.UserMetrics
				}
			}
		}
		if len(user) == 3 && user[2].Value > 10 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("user metrics in Metrics(): %+v", user)
		}
		time.Sleep(20 * time.Millisecond)
	}
	// Sorted by name: last_value, latency, seen.
	if user[0].Name != "last_value" || user[0].Kind != metrics.KindGauge || user[1].Name != "latency" || user[1].Kind != metrics.KindHistogram ||
		user[1].Histogram == nil || user[1].Histogram.Count == 0 || user[1].Histogram.Max > 99 || user[2].Name != "seen" || user[2].Kind != metrics.KindCounter {
		t.Fatalf("user metrics: %+v", user)
	}
	base := "http://" + srv.Addr()
	var job struct {
		Vertices []struct{ ID, Name string } `json:"vertices"`
	}
	httpJSON(t, http.MethodGet, base+"/jobs/"+h.ID(), "", &job)
	var vid string
	for _, v := range job.Vertices {
		if strings.HasPrefix(v.Name, "meter") {
			vid = v.ID
		}
	}
	if vid == "" {
		t.Fatalf("no vertex of meter in %+v", job.Vertices)
	}
	var ms []struct{ ID, Value string }
	httpJSON(t, http.MethodGet, base+"/jobs/"+h.ID()+"/vertices/"+vid+"/metrics?get=0.meter.seen,0.meter.last_value,0.meter.latency_p99,0.meter.latency_count", "", &ms)
	if len(ms) != 4 {
		t.Fatalf("REST vertex metrics: %+v", ms)
	}
	resp, err := http.Get(base + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, want := range []string{
		`# TYPE weir_user_counter_seen_total counter`, `weir_user_counter_seen_total{job_id="` + h.ID() + `",job_name="user-metrics",operator="meter",subtask="0",vertex="meter -> Discard",vertex_id="` + vid + `"}`,
		`# TYPE weir_user_gauge_last_value gauge`, `# TYPE weir_user_histogram_latency summary`,
		`weir_user_histogram_latency{job_id="` + h.ID() + `",job_name="user-metrics",operator="meter",subtask="0",vertex="meter -> Discard",vertex_id="` + vid + `",quantile="0.99"}`, `weir_user_histogram_latency_count{`,
	} {
		if !strings.Contains(string(body), want) {
			t.Errorf("Prometheus text lacks %q", want)
		}
	}
	if t.Failed() {
		t.Logf("%s", body)
	}
}

// clash registers one name as two kinds.
type clash struct{}

func (clash) Open(ctx weir.KeyedRuntimeContext[int64]) error {
	ctx.Metrics().Counter("x")
	ctx.Metrics().Gauge("x", func() float64 { return 0 })
	return nil
}

func (clash) ProcessElement(v int64, _ weir.KeyedContext[int64], out weir.Collector[int64]) error {
	return nil
}

func (clash) OnTimer(int64, weir.OnTimerContext[int64], weir.Collector[int64]) error { return nil }

// TestUserMetricKindClash: a name registered as two kinds fails the job
// with an error that says so.
func TestUserMetricKindClash(t *testing.T) {
	env := weir.NewEnvironment(weir.WithParallelism(1))
	src := weir.FromSlice(env, []int64{1, 2, 3})
	weir.Discard(weir.Process(weir.KeyBy(src, func(v int64) int64 { return v }), clash{}).Name("clash"))
	err := env.Execute(context.Background(), "clash")
	if err == nil || !strings.Contains(err.Error(), `metric "x" of operator "clash" is already registered as a counter; it cannot be registered as a gauge too`) {
		t.Fatalf("got %v", err)
	}
}

// TestPluginRefused: a non-loopback REST address without a token fails
// the job when it is built.
func TestRESTPluginRefused(t *testing.T) {
	env := weir.NewEnvironment(weir.WithPlugin(rest.New("0.0.0.0:0")))
	weir.Discard(weir.FromSlice(env, []int64{1}))
	err := env.Execute(context.Background(), "refused")
	if err == nil || !strings.Contains(err.Error(), "rest.WithToken") {
		t.Fatalf("got %v", err)
	}
}

// reporter is a third party's plugin: it sees the job's handle when the
// job starts and reads its metrics when it is detached.
type reporter struct {
	attached, detached int
	records            int64
	done               chan struct{} // closed by detach
}

func (r *reporter) PluginName() string { return "reporter" }

func (r *reporter) Attach(h *weir.JobHandle) (func(), error) {
	r.attached++
	return func() {
		defer close(r.done)
		r.detached++
		for _, task := range h.Metrics() {
			for _, op := range task.Operators {
				if op.Name == "count" {
					r.records += op.RecordsIn
				}
			}
		}
	}, nil
}

// noAttach is a Plugin that cannot be attached.
type noAttach struct{}

func (noAttach) PluginName() string { return "no-attach" }

// TestThirdPartyPlugin: a plugin written against the public API is
// attached with the job's handle and detached after the job ended; one
// without Attach fails the job when it is built.
func TestThirdPartyPlugin(t *testing.T) {
	r := &reporter{done: make(chan struct{})}
	env := weir.NewEnvironment(weir.WithParallelism(1), weir.WithPlugin(r))
	weir.Discard(weir.Map(weir.FromSlice(env, []int64{1, 2, 3}), func(v int64) int64 { return v }).Name("count"))
	if err := env.Execute(context.Background(), "third-party"); err != nil {
		t.Fatal(err)
	}
	<-r.done // detach may run just after Execute returned
	if r.attached != 1 || r.detached != 1 || r.records != 3 {
		t.Errorf("attached %d, detached %d, records seen %d; want 1, 1, 3", r.attached, r.detached, r.records)
	}
	env = weir.NewEnvironment(weir.WithPlugin(noAttach{}))
	weir.Discard(weir.FromSlice(env, []int64{1}))
	if err := env.Execute(context.Background(), "refused"); err == nil || !strings.Contains(err.Error(), "weir.JobAttacher") {
		t.Fatalf("a plugin without Attach: got %v", err)
	}
}
