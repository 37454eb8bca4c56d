package weir

import (
	"math"

	"github.com/weirstream/weir/internal/engine"
	"github.com/weirstream/weir/internal/monitor"
	"github.com/weirstream/weir/internal/usermetric"
)

// User metrics, as Flink's getMetricGroup(): a function registers
// counters, gauges and histograms from the RuntimeContext its Open gets
// (ctx.Metrics()), one MetricGroup per operator and subtask. They show in
// JobHandle.Metrics (OperatorMetrics.UserMetrics), in the REST API's
// vertex metrics as "<subtask>.<operator>.<name>" (a histogram as
// <name>_count, _min, _max, _mean, _stddev, _median, _p75, _p90, _p95,
// _p98, _p99 and _p999) and in Prometheus as weir_user_counter_<name>_total,
// weir_user_gauge_<name> and weir_user_histogram_<name> (a summary), with
// the labels job, vertex, operator and subtask.

// MetricGroup registers the user metrics of one operator in one subtask
// (Flink's operator metric group). A name is letters, digits and '_',
// not starting with a digit, and not one of Weir's own operator metrics
// (numRecordsIn, numRecordsOut, ...). Registering a counter or histogram
// again returns the same one; registering a name again with another kind
// (or a gauge twice) panics with an error that names the metric and the
// operator, which fails the job as any panic of a function does.
type MetricGroup struct{ g *usermetric.Group }

// Counter returns the counter name of the operator's subtask,
// registering it on first use.
func (m *MetricGroup) Counter(name string) *Counter {
	c, err := m.g.Counter(name)
	if err != nil {
		panic(err)
	}
	return &Counter{c}
}

// Gauge registers the gauge name, whose value f returns when the metrics
// are read: f runs on other goroutines than the function's, so it must
// be safe for concurrent use (read an atomic, for instance).
func (m *MetricGroup) Gauge(name string, f func() float64) {
	if err := m.g.Gauge(name, f); err != nil {
		panic(err)
	}
}

// Histogram returns the histogram name of the operator's subtask,
// registering it on first use. Its statistics cover its latest 1024
// updates; its count covers all.
func (m *MetricGroup) Histogram(name string) *Histogram {
	h, err := m.g.Histogram(name)
	if err != nil {
		panic(err)
	}
	return &Histogram{h}
}

// Counter is a user metric that counts (Flink's Counter). Its methods
// may be called from any goroutine.
type Counter struct{ c *usermetric.Counter }

// Inc adds one.
func (c *Counter) Inc() { c.c.Add(1) }

// Add adds n.
func (c *Counter) Add(n int64) { c.c.Add(n) }

// Count returns the count.
func (c *Counter) Count() int64 { return c.c.Count() }

// Histogram is a user metric that describes a distribution of values
// (Flink's Histogram): their count, and the minimum, maximum, mean,
// standard deviation and quantiles of the latest 1024. Its methods may
// be called from any goroutine.
type Histogram struct{ h *usermetric.Histogram }

// Update adds v.
func (h *Histogram) Update(v int64) { h.h.Update(v) }

// Statistics returns the histogram's statistics now.
func (h *Histogram) Statistics() HistogramStats { return HistogramStats(h.h.Stats()) }

// HistogramStats are a histogram's statistics: Count and Sum over all
// updates, the others over the latest 1024 (all 0 before any update);
// P50 to P999 are the quantiles 0.5 to 0.999.
type HistogramStats struct {
	Count                              int64
	Sum                                float64
	Min, Max                           int64
	Mean, StdDev                       float64
	P50, P75, P90, P95, P98, P99, P999 float64
}

// MetricKind is the kind of a user metric.
type MetricKind int

const (
	// CounterMetric is a Counter.
	CounterMetric MetricKind = MetricKind(usermetric.KindCounter)
	// GaugeMetric is a gauge (MetricGroup.Gauge).
	GaugeMetric MetricKind = MetricKind(usermetric.KindGauge)
	// HistogramMetric is a Histogram.
	HistogramMetric MetricKind = MetricKind(usermetric.KindHistogram)
)

// String returns "counter", "gauge" or "histogram".
func (k MetricKind) String() string { return usermetric.Kind(k).String() }

// UserMetric is the value of a user metric in one subtask
// (OperatorMetrics.UserMetrics).
type UserMetric struct {
	Name string
	Kind MetricKind
	// Value is a counter's count, a gauge's value or a histogram's count.
	Value float64
	// Histogram holds a histogram's statistics (nil for other kinds).
	Histogram *HistogramStats
}

// userMetrics returns the values of an operator's user metrics.
func userMetrics(g *usermetric.Group) []UserMetric {
	vs := g.Values()
	if len(vs) == 0 {
		return nil
	}
	out := make([]UserMetric, len(vs))
	for i, v := range vs {
		out[i] = UserMetric{Name: v.Name, Kind: MetricKind(v.Kind), Value: v.Value}
		if v.Histogram != nil {
			s := HistogramStats(*v.Histogram)
			out[i].Histogram = &s
		}
	}
	return out
}

// monitorUserMetric converts a user metric for the monitor model.
func monitorUserMetric(u UserMetric) monitor.UserMetric {
	m := monitor.UserMetric{Name: u.Name, Kind: u.Kind.String(), Value: u.Value}
	if math.IsNaN(m.Value) || math.IsInf(m.Value, 0) {
		m.Value = 0 // JSON has no such numbers
	}
	if h := u.Histogram; h != nil {
		s := monitor.HistogramStats(*h)
		m.Histogram = &s
	}
	return m
}

// metricGroupOf returns the metric group of the operator bc builds.
func metricGroupOf(bc *engine.BuildContext) *MetricGroup {
	g := bc.UserMetrics
	if g == nil { // outside a plan: the metrics are not reported
		g = usermetric.NewGroup(bc.Name)
	}
	return &MetricGroup{g}
}

// newRuntimeCtx returns the RuntimeContext of the operator bc builds.
func newRuntimeCtx(bc *engine.BuildContext) runtimeCtx {
	return runtimeCtx{name: bc.Name, subtask: bc.Subtask, par: bc.Parallelism, maxPar: bc.MaxParallelism, metrics: metricGroupOf(bc)}
}
