package state

import (
	"fmt"
	"reflect"
)

// Codec serializes values of type T into checkpoints and savepoints.
//
// A state that sets no codec gets one chosen from its type: compact
// built-in encodings for booleans, integers, floats, strings, []byte and
// structs and arrays made only of those, and encoding/gob for every other
// type. Gob encodes only exported struct fields, cannot encode nil
// pointers, channels or functions, needs gob.Register for values stored in
// interface types, and is slow; set a codec for such types.
//
// A codec must be deterministic in what it accepts: Decode must accept what
// Append wrote, also in a later run of the program. It should write at
// least one byte for a type whose size is not zero, because restores reject
// element counts larger than the bytes that remain. A codec is used by one
// goroutine at a time.
type Codec[T any] interface {
	// Append appends the encoding of v to dst and returns the extended
	// slice.
	Append(dst []byte, v T) ([]byte, error)
	// Decode decodes one value from the front of src and returns it and the
	// rest of src. It must not retain src.
	Decode(src []byte) (T, []byte, error)
}

// WithCodec sets the codec of the state's stored values: V of value, list
// (its elements), reducing and map (its values) state, and the accumulator
// ACC of aggregating state. A codec of another type makes the descriptor
// invalid.
func WithCodec[T any](c Codec[T]) Option {
	return func(o *options) { o.codec = c }
}

// WithKeyCodec sets the codec of the keys of a map state (its UK type
// parameter, not the operator's key). Other descriptors ignore it; a codec
// of another type makes a map descriptor invalid.
func WithKeyCodec[T any](c Codec[T]) Option {
	return func(o *options) { o.keyCodec = c }
}

// codecOf returns the codec c, set by WithCodec or WithKeyCodec, as a
// Codec[T]: nil if c is nil, and a codec that fails validation if c has
// another type.
func codecOf[T any](c any, option string) Codec[T] {
	if c == nil {
		return nil
	}
	if t, ok := c.(Codec[T]); ok {
		return t
	}
	return mismatch[T]{fmt.Errorf("%s: a %T cannot encode %v values", option, c, reflect.TypeFor[T]())}
}

// mismatch stands in for a codec of the wrong type; Validate reports its
// error and it refuses to encode or decode.
type mismatch[T any] struct{ err error }

func (m mismatch[T]) Append(dst []byte, _ T) ([]byte, error) { return dst, m.err }
func (m mismatch[T]) Decode(src []byte) (T, []byte, error) {
	var zero T
	return zero, src, m.err
}
func (m mismatch[T]) codecError() error { return m.err }

// codecError returns the error of a codec that stands in for a mismatched
// one, or nil.
func codecError(c any) error {
	if m, ok := c.(interface{ codecError() error }); ok {
		return m.codecError()
	}
	return nil
}

// VersionedCodec is implemented by a Codec that declares the version of its
// encoding. Snapshots record the version of the codec that wrote each
// state (a codec without this method has version 0). A restore reads a
// state written by the same version as it is; a state written by another
// version is refused before the job runs, unless the codec is a
// MigratingCodec that reads that version. Raise the version whenever
// Append's output changes.
type VersionedCodec interface {
	// Version returns the version of the encoding Append writes.
	Version() uint32
}

// MigratingCodec is a VersionedCodec that also decodes what earlier
// versions of it wrote: a restore of a state written by version v (other
// than Version()) decodes every stored value with DecodeVersion(v, ...),
// and later snapshots write the current version. This is how a state
// whose type a codec owns migrates from one encoding to the next, as a
// Flink TypeSerializerSnapshot resolving "compatible after migration".
type MigratingCodec[T any] interface {
	Codec[T]
	VersionedCodec
	// ReadsVersion reports whether DecodeVersion decodes version v. It is
	// asked when the job is built, before any value is decoded.
	ReadsVersion(v uint32) bool
	// DecodeVersion decodes one value written by version v of the codec
	// from the front of src and returns it and the rest of src. It must
	// not retain src.
	DecodeVersion(v uint32, src []byte) (T, []byte, error)
}
