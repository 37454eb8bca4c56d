//go:build invariants

package engine

import (
	"fmt"
	"strings"
	"testing"
)

func TestOutputWatermarksNeverGoBackwards(t *testing.T) {
	o := NewOutput[int](4)
	for _, wm := range []int64{3, 5, 5} {
		if err := o.EmitWatermark(wm); err != nil {
			t.Fatal(err)
		}
	}
	defer func() {
		if r := recover(); r == nil || !strings.Contains(fmt.Sprint(r), "watermark 4 after 5") {
			t.Fatalf("recovered %v, want an invariant violation", r)
		}
	}()
	_ = o.EmitWatermark(4)
}

// scribbler writes into the batch it is given, which no target may do.
type scribbler struct{ sink[string] }

func (s *scribbler) ProcessBatch(r []Record[string]) error {
	r[len(r)-1].Value = "changed"
	return nil
}

// TestCollectBatchTargetsLeaveTheBatch: a batch handed on as it is (a
// source's, maybe a view of memory that other jobs read) must come back
// from every target as it went in.
func TestCollectBatchTargetsLeaveTheBatch(t *testing.T) {
	reader := NewOutput[string](4)
	if err := reader.AddTarget(&sink[string]{}); err != nil {
		t.Fatal(err)
	}
	reader.CollectBatch([]Record[string]{{"a", 1}, {"b", 2}}) // only read: no violation
	o := NewOutput[string](4)
	first := &sink[string]{}
	if err := o.AddTarget(first); err != nil {
		t.Fatal(err)
	}
	if err := o.AddTarget(&scribbler{}); err != nil {
		t.Fatal(err)
	}
	defer func() {
		if r := recover(); r == nil || !strings.Contains(fmt.Sprint(r), "changed a batch handed on to it") {
			t.Fatalf("recovered %v, want an invariant violation", r)
		}
	}()
	o.CollectBatch([]Record[string]{{"c", 3}})
}
