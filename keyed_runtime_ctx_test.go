package weir_test

import (
	"fmt"
	"slices"
	"sync"
	"testing"

	"github.com/weirstream/weir"
)

// ctxProbe records what its runtime context says in Open.
type ctxProbe struct {
	mu   *sync.Mutex
	seen *[]string
}

func (p *ctxProbe) Open(ctx weir.KeyedRuntimeContext[int]) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	*p.seen = append(*p.seen, fmt.Sprintf("%s %d/%d of %d", ctx.OperatorName(), ctx.Subtask(), ctx.Parallelism(), ctx.MaxParallelism()))
	return nil
}

func (p *ctxProbe) ProcessElement(v int, _ weir.KeyedContext[int], out weir.Collector[int]) error {
	out.Collect(v)
	return nil
}

func (p *ctxProbe) OnTimer(int64, weir.OnTimerContext[int], weir.Collector[int]) error { return nil }

// TestKeyedRuntimeContext: a keyed function's runtime context names its
// subtask, the operator's parallelism and the job's maximum parallelism
// (Parallelism was 0 before v0.2).
func TestKeyedRuntimeContext(t *testing.T) {
	env := weir.NewEnvironment(weir.WithParallelism(1), weir.WithMaxParallelism(64), metaQuiet)
	var mu sync.Mutex
	var seen []string
	keyed := weir.KeyBy(weir.FromSlice(env, []int{1, 2, 3}), func(v int) int { return v })
	weir.Discard(weir.Process(keyed, &ctxProbe{mu: &mu, seen: &seen}).Name("probe").SetParallelism(3))
	if err := env.Execute(t.Context(), "ctx"); err != nil {
		t.Fatal(err)
	}
	slices.Sort(seen)
	want := []string{"probe 0/3 of 64", "probe 1/3 of 64", "probe 2/3 of 64"}
	if !slices.Equal(seen, want) {
		t.Fatalf("runtime contexts %q, want %q", seen, want)
	}
}
