package engine

import (
	"context"
	"math"
	"slices"
	"testing"

	"github.com/weirstream/weir/internal/watermark"
)

func TestAlignmentGroupsReport(t *testing.T) {
	g := NewAlignmentGroups()
	if got := g.Report("g", "a/0", 0, false); got != watermark.Min {
		t.Fatalf("no report yet: %d, want Min", got)
	}
	if got := g.Report("g", "a/0", 100, true); got != 100 {
		t.Fatalf("one member: %d", got)
	}
	if got := g.Report("g", "b/0", 40, true); got != 40 {
		t.Fatalf("two members: %d, want the lower", got)
	}
	// A member that has nothing to report yet learns the group's low.
	if got := g.Report("g", "c/0", 0, false); got != 40 {
		t.Fatalf("silent member: %d", got)
	}
	// Groups are apart.
	if got := g.Report("h", "a/1", 7, true); got != 7 {
		t.Fatalf("other group: %d", got)
	}
	// An idle or finished member reports Max and holds nobody back.
	if got := g.Report("g", "b/0", MaxWatermark, true); got != 100 {
		t.Fatalf("idle member: %d, want 100", got)
	}
	if got := g.Report("g", "a/0", MaxWatermark, true); got != MaxWatermark {
		t.Fatalf("all idle: %d", got)
	}
	// A member that reports a lower watermark again pulls the group back.
	if got := g.Report("g", "b/0", 60, true); got != 60 {
		t.Fatalf("back from idle: %d", got)
	}
}

func TestMaxAllowed(t *testing.T) {
	for _, c := range [][3]int64{
		{100, 20, 120},
		{watermark.Min, 20, watermark.Min + 20},
		{MaxWatermark, 20, math.MaxInt64},
		{math.MaxInt64 - 5, 20, math.MaxInt64},
		{0, 0, 0},
	} {
		if got := maxAllowed(c[0], c[1]); got != c[2] {
			t.Errorf("maxAllowed(%d, %d) = %d, want %d", c[0], c[1], got, c[2])
		}
	}
}

func TestAlignDecide(t *testing.T) {
	cases := []struct {
		name        string
		max, latest int64
		wms         []int64
		ended       []bool
		want        []bool
	}{
		{"below the limit: read everything", 100, 90, []int64{90, 95}, []bool{false, false}, []bool{false, false}},
		{"at the limit: still read", 100, 100, []int64{100, 100}, []bool{false, false}, []bool{false, false}},
		{"one split ahead is paused, the other read", 100, 50, []int64{50, 101}, []bool{false, false}, []bool{false, true}},
		{"the subtask ahead waits: every split", 100, 120, []int64{120, 130}, []bool{false, false}, []bool{true, true}},
		{"ended splits are never paused", 100, 120, []int64{120, 130}, []bool{true, false}, []bool{false, true}},
		{"a single split ahead of its own watermark is read until the subtask's is", 100, 90, []int64{150}, []bool{false}, []bool{false}},
		{"a single split waits with its subtask", 100, 150, []int64{150}, []bool{false}, []bool{true}},
		{"a split without a watermark is read", 100, 50, []int64{watermark.Min, 200}, []bool{false, false}, []bool{false, true}},
		{"before the first announcement nothing pauses", MaxWatermark, 1 << 40, []int64{1 << 40, 5}, []bool{false, false}, []bool{false, false}},
		{"no splits", 100, 200, nil, nil, []bool{}},
	}
	var dst []bool
	for _, c := range cases {
		dst = alignDecide(c.max, c.latest, c.wms, c.ended, dst)
		if !slices.Equal(dst, c.want) && !(len(dst) == 0 && len(c.want) == 0) {
			t.Errorf("%s: got %v, want %v", c.name, dst, c.want)
		}
	}
}

func TestSplitGate(t *testing.T) {
	var g splitGate
	ctx, cancel := context.WithCancel(context.Background())
	if !g.wait(ctx) {
		t.Fatal("an open gate must not block")
	}
	g.set(true)
	g.set(true) // idempotent
	passed := make(chan bool)
	go func() { passed <- g.wait(ctx) }()
	g.set(false)
	if !<-passed {
		t.Fatal("a reopened gate must let the reader through")
	}
	g.set(true)
	go func() { passed <- g.wait(ctx) }()
	cancel()
	if <-passed {
		t.Fatal("a closed gate must report the end of the context")
	}
}
