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

// Calls are the calls running for the root's AsyncCall: counted, to wait
// for them when the function closes, and named after the operator and
// subtask that opened the function.
type Calls struct {
	wg       *sync.WaitGroup
	operator string
	subtask  int
}

// NewCalls returns the calls of a function the subtask of operator opened.
func NewCalls(operator string, subtask int) Calls {
	return Calls{wg: new(sync.WaitGroup), operator: operator, subtask: subtask}
}

// Wait waits for the running calls.
func (c *Calls) Wait() {
	if c.wg != nil {
		c.wg.Wait()
	}
}

// Start runs call(ctx, in) as Call does, counted in c.
func Start[IN, OUT any](c *Calls, call func(ctx context.Context, in IN) ([]OUT, error), ctx context.Context, in IN, result Answer[OUT]) {
	if c.wg == nil { // not opened by an operator
		c.wg = new(sync.WaitGroup)
	}
	Call(c.wg, c.operator, c.subtask, call, ctx, in, result)
}
