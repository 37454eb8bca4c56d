package weir

import (
	"fmt"

	"github.com/weirstream/weir/internal/basicop"
	"github.com/weirstream/weir/internal/deadletter"
	"github.com/weirstream/weir/internal/engine"
)

// DeadLetter is a record a user function failed on, with its timestamp,
// the error and the operator's name: what MapErr and FlatMapErr send to
// their dead-letter side output (DeadLetters). It gob-encodes the error as
// its message (Err decodes as an error with that text), so dead letters can
// cross exchanges under unaligned checkpoints and go to any sink.
type DeadLetter[T any] struct {
	// Value is the input record.
	Value T
	// TS is its event timestamp (NoTimestamp if it has none).
	TS int64
	// Err is the error the function returned for it.
	Err error
	// Operator is the name of the operator that failed on it.
	Operator string
}

// String returns "operator: err (record Value)".
func (d DeadLetter[T]) String() string {
	return fmt.Sprintf("%s: %v (record %s)", d.Operator, d.Err, deadletter.RecordText(d.Value))
}

// GobEncode implements gob.GobEncoder: the error is kept as its message.
func (d DeadLetter[T]) GobEncode() ([]byte, error) {
	return deadletter.Encode(d.Value, d.TS, d.Err, d.Operator)
}

// GobDecode implements gob.GobDecoder.
func (d *DeadLetter[T]) GobDecode(data []byte) error {
	v, ts, err, op, derr := deadletter.Decode[T](data)
	if derr != nil {
		return derr
	}
	*d = DeadLetter[T]{Value: v, TS: ts, Err: err, Operator: op}
	return nil
}

// ErrorOption chooses what MapErr and FlatMapErr do when their function
// returns an error for a record of type T. Without one the job fails.
type ErrorOption[T any] func(*errorConfig)

type errorConfig struct {
	deadTag string // "" fails the job
	typ     string
}

// DeadLetters sends each record the function fails on, with the error, to
// the side output tag instead of failing the job; read them with
// SideOutput(result, tag). Nothing is emitted on the main output for such a
// record (FlatMapErr keeps what the function collected before it failed).
func DeadLetters[T any](tag OutputTag[DeadLetter[T]]) ErrorOption[T] {
	return func(c *errorConfig) { c.deadTag, c.typ = tag.id, fmt.Sprintf("%T", *new(DeadLetter[T])) }
}

// MapErr applies f to every record, as Map, but f may fail a record: by
// default the job fails with an error naming the operator and the record
// (and wrapping f's error); with DeadLetters the record and the error go to
// a side output and the job goes on. A panic in f fails the job with its
// stack, as in every operator.
//
//	bad := weir.NewOutputTag[weir.DeadLetter[string]]("unparsable")
//	nums := weir.MapErr(lines, strconv.Atoi, weir.DeadLetters(bad))
//	weir.Print(weir.SideOutput(nums, bad))
func MapErr[IN, OUT any](ds DataStream[IN], f func(IN) (OUT, error), opts ...ErrorOption[IN]) DataStream[OUT] {
	if f == nil {
		ds.env.fail(fmt.Errorf("operator %q: %w", "Map", nilFnError("map function")))
	}
	return withErrors(ds, "Map", opts, func(fl basicop.Failing[IN], out *engine.Output[OUT]) engine.Input[IN] {
		return &basicop.MapErr[IN, OUT]{Failing: fl, ForwardControl: basicop.ForwardControl[OUT]{Out: out}, F: f}
	})
}

// FlatMapErr is FlatMap with the choice of MapErr: an error f returns for
// a record fails the job naming the operator and the record, or with
// DeadLetters sends the record and the error to a side output; records f
// collected for it before it failed are kept.
func FlatMapErr[IN, OUT any](ds DataStream[IN], f func(v IN, out Collector[OUT]) error, opts ...ErrorOption[IN]) DataStream[OUT] {
	if f == nil {
		ds.env.fail(fmt.Errorf("operator %q: %w", "FlatMap", nilFnError("flatMap function")))
	}
	return withErrors(ds, "FlatMap", opts, func(fl basicop.Failing[IN], out *engine.Output[OUT]) engine.Input[IN] {
		o := &basicop.FlatMapErr[IN, OUT, Collector[OUT]]{Failing: fl, ForwardControl: basicop.ForwardControl[OUT]{Out: out}, F: f}
		o.Col.Out = out
		o.C = &o.Col
		return o
	})
}

// withErrors adds the operator mk makes with the error handling opts
// choose: failing the job, or sending DeadLetters.
func withErrors[IN, OUT any](ds DataStream[IN], name string, opts []ErrorOption[IN],
	mk func(fl basicop.Failing[IN], out *engine.Output[OUT]) engine.Input[IN]) DataStream[OUT] {
	var c errorConfig
	for _, o := range opts {
		if o != nil {
			o(&c)
		}
	}
	out := oneInput(ds, name, func(bc *engine.BuildContext, out *engine.Output[OUT]) (engine.Input[IN], engine.Lifecycle, error) {
		fl := basicop.NewFailing(bc, c.deadTag, func(v IN, ts int64, err error, operator string) any {
			return DeadLetter[IN]{Value: v, TS: ts, Err: err, Operator: operator}
		})
		return mk(fl, out), nil, nil
	})
	registerSideType(out, c.deadTag, c.typ)
	return out
}
