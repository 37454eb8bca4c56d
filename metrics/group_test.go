package metrics_test

import (
	"math"
	"strings"
	"testing"

	"github.com/weirstream/weir/metrics"
)

func mustPanic(t *testing.T, want string, f func()) {
	t.Helper()
	defer func() {
		t.Helper()
		r := recover()
		if r == nil {
			t.Fatalf("no panic, want one with %q", want)
		}
		if err, ok := r.(error); !ok || !strings.Contains(err.Error(), want) {
			t.Fatalf("panic %v, want an error with %q", r, want)
		}
	}()
	f()
}

func TestGroupRegistration(t *testing.T) {
	g := metrics.NewGroup("op")
	if g.Counter("n") != g.Counter("n") || g.Histogram("h") != g.Histogram("h") {
		t.Fatal("registering again does not return the same metric")
	}
	mustPanic(t, "already registered as a counter", func() { g.Histogram("n") })
	g.Gauge("v", func() float64 { return 1 })
	mustPanic(t, `gauge "v" of operator "op" is already registered`, func() { g.Gauge("v", func() float64 { return 2 }) })
	mustPanic(t, "not valid", func() { g.Counter("1x") })
	mustPanic(t, "Weir's own operator metrics", func() { g.Counter("numRecordsIn") })
	mustPanic(t, "clashes with", func() { g.Counter("h_p99") })
	mustPanic(t, "the function is nil", func() { g.Gauge("nil", nil) })
	g.Gauge("bad", func() float64 { panic("boom") })
	for _, v := range g.Values() {
		if v.Name == "bad" && !math.IsNaN(v.Value) {
			t.Fatalf("a panicking gauge reads %v, want NaN", v.Value)
		}
	}
}

func TestNilGroup(t *testing.T) {
	var g *metrics.Group
	c := g.Counter("n")
	c.Add(2)
	if c.Count() != 2 || g.Values() != nil {
		t.Fatal("a nil group's metrics do not work alone")
	}
}

func TestHistogramWindow(t *testing.T) {
	var h metrics.Histogram
	if s := h.Statistics(); s != (metrics.HistogramStats{}) {
		t.Fatalf("empty histogram: %+v", s)
	}
	for i := range int64(metrics.HistogramWindow + 10) {
		h.Update(i)
	}
	s := h.Statistics()
	if s.Count != metrics.HistogramWindow+10 || s.Min != 10 || s.Max != metrics.HistogramWindow+9 {
		t.Fatalf("statistics %+v", s)
	}
}
