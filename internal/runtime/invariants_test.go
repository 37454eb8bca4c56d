//go:build invariants

package runtime

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
