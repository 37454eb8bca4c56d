// Package deadletter encodes the root package's dead letters (records a
// user function failed on) for exchanges and checkpoints: the error is
// kept as its message.
package deadletter

import (
	"bytes"
	"encoding/gob"
	"errors"
	"fmt"
)

// deadLetterWire is a dead letter as gob encodes it.
type deadLetterWire[T any] struct {
	Value    T
	TS       int64
	Err      string
	HasErr   bool
	Operator string
}

// Encode gob-encodes a dead letter of value at ts, its error err (kept as
// its message) and the operator's name.
func Encode[T any](value T, ts int64, err error, operator string) ([]byte, error) {
	w := deadLetterWire[T]{Value: value, TS: ts, Operator: operator, HasErr: err != nil}
	if err != nil {
		w.Err = err.Error()
	}
	var b bytes.Buffer
	e := gob.NewEncoder(&b).Encode(&w)
	return b.Bytes(), e
}

// Decode decodes what Encode wrote: the error comes back as an error with
// its message.
func Decode[T any](data []byte) (value T, ts int64, err error, operator string, derr error) {
	var w deadLetterWire[T]
	if derr = gob.NewDecoder(bytes.NewReader(data)).Decode(&w); derr != nil {
		return value, 0, nil, "", derr
	}
	if w.HasErr {
		err = errors.New(w.Err)
	}
	return w.Value, w.TS, err, w.Operator, nil
}

// RecordText formats a record for an error message, at most 200 bytes.
func RecordText(v any) string {
	s := fmt.Sprintf("%+v", v)
	if len(s) > 200 {
		s = s[:200] + "..."
	}
	return s
}
