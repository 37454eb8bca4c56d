// Package runtime executes a physical plan: tasks (one goroutine per subtask
// driving a deterministic step machine), the batched exchanges between them,
// the input gates with their watermark valves, and operator chaining. It
// knows no operator, connector or user type: operators plug in through the
// Input, TwoInput and Lifecycle interfaces.
package engine

import (
	"fmt"
	"github.com/weirstream/weir/connector"
	"math"
	"reflect"
)

// NoTimestamp marks a record that carries no event timestamp.
const NoTimestamp = connector.NoTimestamp

// MaxWatermark is the watermark that ends event time (end of input).
const MaxWatermark int64 = math.MaxInt64

// Record is one stream element with its event timestamp (NoTimestamp if
// none): the public connector.Record, so that connectors' batches are the
// runtime's.
type Record[T any] = connector.Record[T]

// Input receives one stream in order: batches of records interleaved with
// watermarks and watermark-status changes, then the end of input. The batch
// slice belongs to the caller and must not be retained after the call.
type Input[T any] interface {
	ProcessBatch(recs []Record[T]) error
	ProcessWatermark(wm int64) error
	ProcessStatus(idle bool) error
	// EndInput reports that no more elements arrive; the operator finishes
	// and ends its outputs.
	EndInput() error
}

// TwoInput is an operator with two inputs. The runtime combines the inputs'
// watermarks and statuses (minimum over non-idle inputs, never backwards)
// and calls ProcessWatermark and ProcessStatus with the combined values.
type TwoInput[A, B any] interface {
	ProcessBatch1(recs []Record[A]) error
	ProcessBatch2(recs []Record[B]) error
	ProcessWatermark(wm int64) error
	ProcessStatus(idle bool) error
	EndInput1() error
	EndInput2() error
}

// Lifecycle is implemented by operators that hold resources or user
// functions with Open/Close hooks.
type Lifecycle interface {
	Open() error
	Close() error
}

// OperatorError is a failure inside an operator: a returned error or a
// recovered panic, naming the operator and subtask.
type OperatorError struct {
	Operator string
	Subtask  int
	Err      error
	Stack    string // set when the failure was a panic
}

func (e *OperatorError) Error() string {
	if e.Stack != "" {
		return fmt.Sprintf("operator %q (subtask %d) panicked: %v\n%s", e.Operator, e.Subtask, e.Err, e.Stack)
	}
	return fmt.Sprintf("operator %q (subtask %d): %v", e.Operator, e.Subtask, e.Err)
}

func (e *OperatorError) Unwrap() error { return e.Err }

// hasPointers reports whether values of type t hold pointers, so buffers of
// them must be cleared after use to let the garbage collector reclaim what
// they referenced. Buffers of pointer-free records are reused as they are.
func hasPointers(t reflect.Type) bool {
	if t == nil {
		return true
	}
	switch t.Kind() {
	case reflect.Bool, reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr,
		reflect.Float32, reflect.Float64, reflect.Complex64, reflect.Complex128:
		return false
	case reflect.Array:
		return t.Len() > 0 && hasPointers(t.Elem())
	case reflect.Struct:
		for i := range t.NumField() {
			if hasPointers(t.Field(i).Type) {
				return true
			}
		}
		return false
	}
	return true
}

// clearRecords zeroes recs if T holds pointers.
func clearRecords[T any](recs []Record[T], needed bool) {
	if needed {
		clear(recs)
	}
}
