package asyncio

import (
	"context"
	"fmt"
	"runtime/debug"
	"sync"

	"github.com/weirstream/weir/internal/engine"
)

// Answer takes the answer to one request (the root's ResultFuture).
type Answer[OUT any] interface {
	Complete(results []OUT)
	CompleteExceptionally(err error)
}

// Call runs call(ctx, in) on a goroutine of its own, counted by wg, and
// answers result with what it returns. A panic in call fails the job with
// its stack, naming the operator and subtask (through result's Fail if it
// has one, else as an exceptional answer).
func Call[IN, OUT any](wg *sync.WaitGroup, operator string, subtask int, call func(ctx context.Context, in IN) ([]OUT, error),
	ctx context.Context, in IN, result Answer[OUT]) {
	wg.Add(1)
	go func() {
		defer wg.Done()
		defer func() {
			if p := recover(); p != nil {
				err := &engine.OperatorError{Operator: operator, Subtask: subtask,
					Err: fmt.Errorf("async call for record %v: %v", in, p), Stack: string(debug.Stack())}
				if f, ok := result.(interface{ Fail(error) }); ok {
					f.Fail(err)
				} else {
					result.CompleteExceptionally(err)
				}
			}
		}()
		out, err := call(ctx, in)
		if err != nil {
			result.CompleteExceptionally(err)
			return
		}
		result.Complete(out)
	}()
}
