package weir_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/weirstream/weir"
)

// Enrich orders with their customer's name from an outside service
// without blocking the task: up to 100 lookups are in flight at once, each
// may take a second, and a lookup that fails because the service is busy
// is retried twice, 10 ms apart. OrderedWait keeps the input order.
func ExampleOrderedWait() {
	customers := map[string]string{"o1": "alice", "o2": "bob", "o3": "carol"}
	errBusy := errors.New("busy")
	lookup := weir.AsyncFunc(func(ctx context.Context, order string) ([]string, error) {
		// A database or HTTP call, given ctx.
		name, ok := customers[order]
		if !ok {
			return nil, errBusy
		}
		return []string{order + " " + name}, nil
	})
	retry := weir.FixedDelayRetry[string](2, 10*time.Millisecond).
		IfError(func(err error) bool { return errors.Is(err, errBusy) })

	env := weir.NewEnvironment(weir.WithParallelism(1))
	orders := weir.FromSlice(env, []string{"o1", "o2", "o3"})
	enriched := weir.OrderedWaitWithRetry(orders, lookup, time.Second, 100, retry)
	weir.Print(enriched)
	if err := env.Execute(context.Background(), "enrich"); err != nil {
		fmt.Println(err)
	}
	// Output:
	// o1 alice
	// o2 bob
	// o3 carol
}
