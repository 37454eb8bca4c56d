package basicop

import (
	"fmt"

	"github.com/weirstream/weir/internal/deadletter"
	"github.com/weirstream/weir/internal/engine"
)

// Failing handles the errors a function returns for records of type T:
// it fails the job, or emits a dead letter.
type Failing[T any] struct {
	Base
	dead   engine.OutputPort // nil: fail the job (or nobody reads the dead letters)
	tag    bool              // dead letters were asked for
	letter func(v T, ts int64, err error, operator string) any
}

// NewFailing returns the error handling of the operator bc builds: with
// deadTag "" an error fails the job, else letter makes the dead letter
// emitted to the side output deadTag.
func NewFailing[T any](bc *engine.BuildContext, deadTag string, letter func(v T, ts int64, err error, operator string) any) Failing[T] {
	f := Failing[T]{Base: NewBase(bc), tag: deadTag != "", letter: letter}
	if f.tag {
		f.dead = bc.Side(deadTag)
	}
	return f
}

// Failed handles f's error err for the record v at ts: nil if it went to
// the dead letters, else the job's error.
func (f *Failing[T]) Failed(v T, ts int64, err error) error {
	if !f.tag {
		return fmt.Errorf("record %s: %w", deadletter.RecordText(v), err)
	}
	if f.dead == nil {
		return nil // dead letters nobody consumes are dropped, as any side output
	}
	if e := f.dead.EmitAny(f.letter(v, ts, err, f.Name), ts); e != nil {
		return fmt.Errorf("dead-letter side output: %w", e)
	}
	return nil
}

// MapErr applies F to every record; F's error goes to Failed.
type MapErr[IN, OUT any] struct {
	Failing[IN]
	ForwardControl[OUT]
	F func(IN) (OUT, error)
}

// ProcessBatch implements engine.Input.
func (o *MapErr[IN, OUT]) ProcessBatch(recs []engine.Record[IN]) (err error) {
	defer o.Catch(&err)
	out, f := o.Out, o.F
	for len(recs) > 0 {
		dst := out.Space()
		k, i := 0, 0
		for ; i < len(recs) && k < len(dst); i++ {
			r := &recs[i]
			v, ferr := f(r.Value)
			if ferr != nil {
				if err := o.Failed(r.Value, r.TS, ferr); err != nil {
					return err
				}
				continue
			}
			dst[k] = engine.Record[OUT]{Value: v, TS: r.TS}
			k++
		}
		out.Advance(k)
		recs = recs[i:]
	}
	return out.Err()
}

// FlatMapErr is FlatMap whose F's error goes to Failed.
type FlatMapErr[IN, OUT, C any] struct {
	Failing[IN]
	ForwardControl[OUT]
	F   func(IN, C) error
	Col Collector[OUT]
	C   C
}

// ProcessBatch implements engine.Input.
func (o *FlatMapErr[IN, OUT, C]) ProcessBatch(recs []engine.Record[IN]) (err error) {
	defer o.Catch(&err)
	for i := range recs {
		o.Col.TS = recs[i].TS
		if ferr := o.F(recs[i].Value, o.C); ferr != nil {
			if err := o.Failed(recs[i].Value, recs[i].TS, ferr); err != nil {
				return err
			}
		}
	}
	return o.Out.Err()
}
