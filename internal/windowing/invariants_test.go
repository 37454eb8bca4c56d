//go:build invariants

package windowing

import (
	"fmt"
	"strings"
	"testing"
)

func TestMergeSetCheck(t *testing.T) {
	ok := &mergeSet[int]{ws: []int{1, 2}, states: []int{1, 3}}
	ok.check(2)
	for _, c := range []struct {
		s      *mergeSet[int]
		result int
		want   string
	}{
		{&mergeSet[int]{ws: []int{1, 2}, states: []int{1, 1}}, 2, "share the state window"},
		{&mergeSet[int]{ws: []int{1, 1}, states: []int{1, 2}}, 1, "window 1 twice"},
		{&mergeSet[int]{ws: []int{1}, states: []int{1}}, 2, "not in the set"},
	} {
		func() {
			defer func() {
				if r := recover(); r == nil || !strings.Contains(fmt.Sprint(r), c.want) {
					t.Fatalf("%+v: recovered %v, want an invariant violation saying %q", c.s, r, c.want)
				}
			}()
			c.s.check(c.result)
		}()
	}
}
