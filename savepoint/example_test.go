package savepoint_test

import (
	"context"
	"fmt"
	"log"
	"maps"
	"os"
	"slices"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/savepoint"
	"github.com/weirstream/weir/state"
)

// visits counts, per user, the events it has seen, in the value state
// "count".
type visits struct{ count state.ValueState[int64] }

func (v *visits) Open(ctx weir.KeyedRuntimeContext[string]) (err error) {
	v.count, err = weir.GetValueState(ctx, state.Value[int64]("count"))
	return err
}

func (v *visits) ProcessElement(user string, ctx weir.KeyedContext[string], out weir.Collector[string]) error {
	n, _ := v.count.Value()
	v.count.Update(n + 1)
	out.Collect(fmt.Sprintf("%s=%d", user, n+1))
	return nil
}

func (v *visits) OnTimer(int64, weir.OnTimerContext[string], weir.Collector[string]) error {
	return nil
}

// Bootstrap a job's state from a table, transform it (read, change,
// write) and start the job from the result.
func Example() {
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "savepoints")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)

	// doc:begin
	// Bootstrap: the state "count" of the operator with UID "visits",
	// from a Go map.
	table := map[string]int64{"alice": 3, "bob": 5}
	// 128 is the job's max parallelism (weir.WithMaxParallelism).
	path, err := savepoint.New(128).
		WithOperator("visits", 2, savepoint.ValueState("count", maps.All(table))).
		Write(ctx, dir)
	if err != nil {
		log.Fatal(err)
	}

	// Transform: read the state, double every count, write a new
	// savepoint (other operators would be copied unchanged).
	sp, err := savepoint.Read(ctx, path)
	if err != nil {
		log.Fatal(err)
	}
	for _, op := range sp.Operators() {
		for _, s := range op.KeyedStates {
			fmt.Printf("operator %s: %s state %q of %v, %d keys\n", op.UID, s.Kind, s.Name, s.Types, s.Entries)
		}
	}
	counts, err := savepoint.ReadValueState[string, int64](sp, "visits", "count")
	if err != nil {
		log.Fatal(err) // an unknown name, or a type the state cannot be read as
	}
	doubled := func(yield func(string, int64) bool) {
		for user, n := range counts {
			if !yield(user, 2*n) {
				return
			}
		}
	}
	path, err = savepoint.FromSavepoint(sp).
		WithOperator("visits", 2, savepoint.ValueState("count", doubled)).
		Write(ctx, dir)
	if err != nil {
		log.Fatal(err)
	}

	// Start the job from the written savepoint.
	env := weir.NewEnvironment(weir.RestoreFromSavepoint(path))
	users := weir.FromSlice(env, []string{"alice", "bob", "carol"})
	out := weir.Collect(weir.Process(weir.KeyBy(users, func(u string) string { return u }), &visits{}).UID("visits"))
	if err := env.Execute(ctx, "visits"); err != nil {
		log.Fatal(err)
	}
	// doc:end
	fmt.Println(slices.Sorted(slices.Values(out.Values())))
	// Output:
	// operator visits: value state "count" of [int64], 2 keys
	// [alice=7 bob=11 carol=1]
}
