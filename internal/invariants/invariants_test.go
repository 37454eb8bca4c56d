package invariants_test

import (
	"strings"
	"testing"

	"github.com/weirstream/weir/internal/invariants"
)

func TestViolatedPanicsNamingTheInvariant(t *testing.T) {
	defer func() {
		r := recover()
		err, ok := r.(error)
		if !ok || !strings.Contains(err.Error(), "invariant violated: queue: 3 after 4") {
			t.Fatalf("recovered %v", r)
		}
	}()
	invariants.Violated("queue: %d after %d", 3, 4)
}
