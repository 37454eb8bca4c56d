//go:build invariants

package state

import (
	"fmt"
	"strings"
	"testing"

	"github.com/weirstream/weir/internal/clock"
	"github.com/weirstream/weir/state"
)

// TestTableCheckAtView: a table whose count no longer matches its maps
// fails the next snapshot view with a broken invariant.
func TestTableCheckAtView(t *testing.T) {
	b := NewBackend[int](0, 3, clock.NewManual(0))
	v, err := GetValue[int, struct{}](b, state.Value[int]("v"))
	if err != nil {
		t.Fatal(err)
	}
	for k := range 10 {
		b.SetCurrentKey(k, k%4)
		v.Update(k)
	}
	view, err := b.View()
	if err != nil {
		t.Fatal(err)
	}
	view.Release()
	v.t.size--
	defer func() {
		if r := recover(); r == nil || !strings.Contains(fmt.Sprint(r), "10 entries in the groups, size 9") {
			t.Fatalf("recovered %v, want an invariant violation", r)
		}
	}()
	_, _ = b.View()
}
