package metrics

import (
	"fmt"
	"math"
	"regexp"
	"slices"
	"sort"
	"sync"
	"sync/atomic"
)

// User metrics, as Flink's getMetricGroup(): a function registers
// counters, gauges and histograms from the RuntimeContext its Open gets
// (ctx.Metrics()), one Group per operator and subtask. Values are
// written on the task goroutine and read from any goroutine: they show
// in weir's JobHandle.Metrics (Operator.UserMetrics), in the REST API's
// vertex metrics as "<subtask>.<operator>.<name>" (a histogram as
// <name>_count, _min, _max, _mean, _stddev, _median, _p75, _p90, _p95,
// _p98, _p99 and _p999) and in Prometheus as weir_user_counter_<name>_total,
// weir_user_gauge_<name> and weir_user_histogram_<name> (a summary), with
// the labels job, vertex, operator and subtask.

// HistogramWindow is the number of latest updates a histogram's
// statistics cover (Flink's DescriptiveStatisticsHistogram takes a
// window size too).
const HistogramWindow = 1024

// histogramSuffixes are the ids a histogram adds to its name in the REST
// API's metrics, as Flink's metric store names a histogram's values.
var histogramSuffixes = []string{"_count", "_min", "_max", "_mean", "_stddev", "_median", "_p75", "_p90", "_p95", "_p98", "_p99", "_p999"}

// reserved are the names of Weir's own operator metrics in the REST API:
// a user metric may not take them.
var reserved = []string{
	"numRecordsIn", "numRecordsOut", "numLateRecordsDropped", "currentInputWatermark",
	"currentInput1Watermark", "currentInput2Watermark", "currentOutputWatermark", "stateEntries", "timers",
	"sampledProbes", "sampledMatches", "sampledMirroredMatches",
}

var validName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// Kind is the kind of a user metric.
type Kind int

const (
	// KindCounter is a Counter.
	KindCounter Kind = iota + 1
	// KindGauge is a gauge (Group.Gauge).
	KindGauge
	// KindHistogram is a Histogram.
	KindHistogram
)

// String returns "counter", "gauge" or "histogram".
func (k Kind) String() string {
	switch k {
	case KindCounter:
		return "counter"
	case KindGauge:
		return "gauge"
	case KindHistogram:
		return "histogram"
	}
	return fmt.Sprintf("Kind(%d)", int(k))
}

// Counter is a user metric that counts (Flink's Counter). Its methods
// may be called from any goroutine.
type Counter struct{ n atomic.Int64 }

// Inc adds one.
func (c *Counter) Inc() { c.n.Add(1) }

// Add adds n.
func (c *Counter) Add(n int64) { c.n.Add(n) }

// Count returns the count.
func (c *Counter) Count() int64 { return c.n.Load() }

// Histogram is a user metric that describes a distribution of values
// (Flink's Histogram): their count, and the minimum, maximum, mean,
// standard deviation and quantiles of the latest HistogramWindow. Its
// methods may be called from any goroutine.
type Histogram struct {
	mu    sync.Mutex
	count int64
	sum   float64
	win   []int64 // ring of the latest updates
	next  int
}

// Update adds v.
func (h *Histogram) Update(v int64) {
	h.mu.Lock()
	h.count++
	h.sum += float64(v)
	if len(h.win) < HistogramWindow {
		h.win = append(h.win, v)
	} else {
		h.win[h.next] = v
		h.next = (h.next + 1) % HistogramWindow
	}
	h.mu.Unlock()
}

// HistogramStats are a histogram's statistics: Count and Sum over all
// updates, the others over the latest HistogramWindow (all 0 before any
// update); P50 to P999 are the quantiles 0.5 to 0.999.
type HistogramStats struct {
	Count                              int64
	Sum                                float64
	Min, Max                           int64
	Mean, StdDev                       float64
	P50, P75, P90, P95, P98, P99, P999 float64
}

// Statistics returns the histogram's statistics now.
func (h *Histogram) Statistics() HistogramStats {
	h.mu.Lock()
	xs := slices.Clone(h.win)
	s := HistogramStats{Count: h.count, Sum: h.sum}
	h.mu.Unlock()
	if len(xs) == 0 {
		return s
	}
	slices.Sort(xs)
	s.Min, s.Max = xs[0], xs[len(xs)-1]
	var sum float64
	for _, x := range xs {
		sum += float64(x)
	}
	s.Mean = sum / float64(len(xs))
	if len(xs) > 1 {
		var ss float64
		for _, x := range xs {
			d := float64(x) - s.Mean
			ss += d * d
		}
		s.StdDev = math.Sqrt(ss / float64(len(xs)-1))
	}
	q := func(p float64) float64 { return quantile(xs, p) }
	s.P50, s.P75, s.P90, s.P95, s.P98, s.P99, s.P999 = q(0.5), q(0.75), q(0.9), q(0.95), q(0.98), q(0.99), q(0.999)
	return s
}

// quantile interpolates linearly between the closest ranks of sorted xs.
func quantile(xs []int64, p float64) float64 {
	pos := p * float64(len(xs)-1)
	lo := int(math.Floor(pos))
	hi := min(lo+1, len(xs)-1)
	f := pos - float64(lo)
	return float64(xs[lo]) + f*float64(xs[hi]-xs[lo])
}

// metric is one registered metric.
type metric struct {
	name    string
	kind    Kind
	counter *Counter
	gauge   func() float64
	hist    *Histogram
}

// Group registers the user metrics of one operator in one subtask
// (Flink's operator metric group). A name is letters, digits and '_',
// not starting with a digit, and not one of Weir's own operator metrics
// (numRecordsIn, numRecordsOut, ...). Registering a counter or histogram
// again returns the same one; registering a name again with another kind
// (or a gauge twice) panics with an error that names the metric and the
// operator, which fails the job as any panic of a function does. Its
// methods may be called from any goroutine; a nil *Group registers
// nothing and returns metrics that are not reported.
type Group struct {
	operator string
	mu       sync.Mutex
	byName   map[string]*metric
	taken    map[string]string // REST ids taken, by the name of the metric that took them
	order    []*metric
}

// NewGroup returns the empty group of the operator named operator. Weir
// makes one for each operator and subtask of a job; tests of functions
// that register metrics make their own and read it with Values.
func NewGroup(operator string) *Group {
	return &Group{operator: operator, byName: map[string]*metric{}, taken: map[string]string{}}
}

// register returns the metric name of kind k, adding it with mk if new.
func (g *Group) register(name string, k Kind, mk func() *metric) (*metric, error) {
	if g == nil {
		return mk(), nil
	}
	if !validName.MatchString(name) {
		return nil, fmt.Errorf("weir: metric name %q of operator %q is not valid: use letters, digits and '_', not starting with a digit", name, g.operator)
	}
	if slices.Contains(reserved, name) {
		return nil, fmt.Errorf("weir: metric name %q of operator %q is one of Weir's own operator metrics: choose another", name, g.operator)
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if m, ok := g.byName[name]; ok {
		if m.kind != k {
			return nil, fmt.Errorf("weir: metric %q of operator %q is already registered as a %s; it cannot be registered as a %s too", name, g.operator, m.kind, k)
		}
		if k == KindGauge {
			return nil, fmt.Errorf("weir: gauge %q of operator %q is already registered", name, g.operator)
		}
		return m, nil
	}
	ids := []string{name}
	if k == KindHistogram {
		ids = nil
		for _, s := range histogramSuffixes {
			ids = append(ids, name+s)
		}
	}
	for _, id := range ids {
		if other, ok := g.taken[id]; ok {
			return nil, fmt.Errorf("weir: metric %q of operator %q clashes with metric %q (both would show as %q)", name, g.operator, other, id)
		}
	}
	m := mk()
	m.name, m.kind = name, k
	g.byName[name] = m
	g.order = append(g.order, m)
	for _, id := range ids {
		g.taken[id] = name
	}
	return m, nil
}

// Counter returns the counter name of the operator's subtask,
// registering it on first use.
func (g *Group) Counter(name string) *Counter {
	m, err := g.register(name, KindCounter, func() *metric { return &metric{counter: &Counter{}} })
	if err != nil {
		panic(err)
	}
	return m.counter
}

// Gauge registers the gauge name, whose value f returns when the metrics
// are read: f runs on other goroutines than the function's, so it must
// be safe for concurrent use (read an atomic, for instance). A panic of
// f reads as NaN.
func (g *Group) Gauge(name string, f func() float64) {
	if f == nil {
		panic(fmt.Errorf("weir: gauge %q of operator %q: the function is nil", name, g.operatorName()))
	}
	if _, err := g.register(name, KindGauge, func() *metric { return &metric{gauge: f} }); err != nil {
		panic(err)
	}
}

// Histogram returns the histogram name of the operator's subtask,
// registering it on first use. Its statistics cover its latest
// HistogramWindow updates; its count covers all.
func (g *Group) Histogram(name string) *Histogram {
	m, err := g.register(name, KindHistogram, func() *metric { return &metric{hist: &Histogram{}} })
	if err != nil {
		panic(err)
	}
	return m.hist
}

func (g *Group) operatorName() string {
	if g == nil {
		return ""
	}
	return g.operator
}

// readGauge calls f; a panic reads as NaN (f is user code, called away
// from its task).
func readGauge(f func() float64) (v float64) {
	defer func() {
		if recover() != nil {
			v = math.NaN()
		}
	}()
	return f()
}

// UserMetric is the value of a user metric in one subtask
// (Operator.UserMetrics, Group.Values).
type UserMetric struct {
	Name string
	Kind Kind
	// Value is a counter's count, a gauge's value or a histogram's count.
	Value float64
	// Histogram holds a histogram's statistics (nil for other kinds).
	Histogram *HistogramStats
}

// Values returns the values of the group's metrics now, sorted by name
// (nil for an empty or nil group).
func (g *Group) Values() []UserMetric {
	if g == nil {
		return nil
	}
	g.mu.Lock()
	ms := slices.Clone(g.order)
	g.mu.Unlock()
	if len(ms) == 0 {
		return nil
	}
	sort.Slice(ms, func(i, j int) bool { return ms[i].name < ms[j].name })
	out := make([]UserMetric, 0, len(ms))
	for _, m := range ms {
		v := UserMetric{Name: m.name, Kind: m.kind}
		switch m.kind {
		case KindCounter:
			v.Value = float64(m.counter.Count())
		case KindGauge:
			v.Value = readGauge(m.gauge)
		case KindHistogram:
			s := m.hist.Statistics()
			v.Value, v.Histogram = float64(s.Count), &s
		}
		out = append(out, v)
	}
	return out
}
