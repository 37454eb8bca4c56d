package state

import (
	"bytes"
	"encoding/binary"
	"encoding/gob"
	"errors"
	"fmt"
	"math"
	"reflect"
	"unsafe"

	"github.com/weirstream/weir/state"
)

// DefaultCodec returns the codec used for values of type T when a state
// descriptor sets none, and for keys and namespaces. It is chosen from the
// type:
//
//   - zero-size types (struct{}, empty arrays): nothing is written;
//   - types whose underlying type is bool, an integer, a float, string or
//     []byte: a compact encoding (zig-zag varint for signed integers,
//     uvarint for unsigned ones, 4 or 8 little-endian bytes for floats,
//     uvarint length and bytes for strings; see FORMAT.md);
//   - structs and arrays made only of the types above (recursively, with
//     at most 256 such fields in all): the fields in memory order, each
//     encoded as above. Unexported fields are included;
//   - every other type: GobCodec.
//
// Every codec it returns is a SchemaCodec: snapshots record the type's
// shape with field names (schema.go), and a restore reads data written
// under another shape by matching fields by name (ReaderFor).
//
// The choice is made once per call by inspecting T; the returned codec is
// stateless and may be shared.
func DefaultCodec[T any]() state.Codec[T] {
	t := reflect.TypeFor[T]()
	if t.Kind() != reflect.Interface && t.Size() == 0 {
		return emptyCodec[T]{}
	}
	switch t.Kind() {
	case reflect.Int64:
		return int64Codec[T]{}
	case reflect.Int:
		if t.Size() == 8 {
			return int64Codec[T]{}
		}
	case reflect.String:
		return stringCodec[T]{}
	case reflect.Float64:
		return float64Codec[T]{}
	case reflect.Bool:
		return boolCodec[T]{}
	case reflect.Slice:
		if t.Elem().Kind() == reflect.Uint8 {
			return bytesCodec[T]{}
		}
	}
	if ops, ok := compileLayout(t); ok {
		return &layoutCodec[T]{ops: ops, schema: layoutSchema(t).String()}
	}
	return GobCodec[T]()
}

// GobCodec returns a codec that encodes each value on its own with
// encoding/gob, prefixed by its uvarint length. Gob encodes only exported
// struct fields (a struct without any fails), cannot encode nil pointers,
// channels or functions, and needs gob.Register for concrete types stored
// in interface values. Each value carries its own gob type information,
// so the encoding is large and slow (microseconds per value); prefer
// DefaultCodec's built-in encodings or a hand-written codec for big state.
func GobCodec[T any]() state.Codec[T] { return gobCodec[T]{} }

// Decoding errors of the built-in codecs.
var (
	errTruncated = errors.New("truncated input")
	errVarint    = errors.New("invalid varint")
	errRange     = errors.New("integer out of range")
	errBool      = errors.New("invalid bool byte")
)

func readVarint(src []byte) (int64, []byte, error) {
	v, n := binary.Varint(src)
	if n <= 0 {
		if n == 0 {
			return 0, src, errTruncated
		}
		return 0, src, errVarint
	}
	return v, src[n:], nil
}

func readUvarint(src []byte) (uint64, []byte, error) {
	v, n := binary.Uvarint(src)
	if n <= 0 {
		if n == 0 {
			return 0, src, errTruncated
		}
		return 0, src, errVarint
	}
	return v, src[n:], nil
}

// readBytes reads a uvarint length and that many bytes; the result aliases
// src.
func readBytes(src []byte) ([]byte, []byte, error) {
	n, rest, err := readUvarint(src)
	if err != nil {
		return nil, src, err
	}
	if n > uint64(len(rest)) {
		return nil, src, errTruncated
	}
	return rest[:n], rest[n:], nil
}

func appendBytes(dst, b []byte) []byte {
	dst = binary.AppendUvarint(dst, uint64(len(b)))
	return append(dst, b...)
}

func appendString(dst []byte, s string) []byte {
	dst = binary.AppendUvarint(dst, uint64(len(s)))
	return append(dst, s...)
}

// emptyCodec encodes values of a zero-size type as nothing.
type emptyCodec[T any] struct{}

func (emptyCodec[T]) Append(dst []byte, _ T) ([]byte, error) { return dst, nil }
func (emptyCodec[T]) Decode(src []byte) (T, []byte, error) {
	var v T
	return v, src, nil
}

// The scalar codecs below accept any T whose underlying type is the named
// one (for example a named string type) and reinterpret it in place.

type int64Codec[T any] struct{}

func (int64Codec[T]) Append(dst []byte, v T) ([]byte, error) {
	return binary.AppendVarint(dst, *(*int64)(unsafe.Pointer(&v))), nil
}

func (int64Codec[T]) Decode(src []byte) (T, []byte, error) {
	var v T
	x, rest, err := readVarint(src)
	if err != nil {
		return v, src, err
	}
	*(*int64)(unsafe.Pointer(&v)) = x
	return v, rest, nil
}

type stringCodec[T any] struct{}

func (stringCodec[T]) Append(dst []byte, v T) ([]byte, error) {
	return appendString(dst, *(*string)(unsafe.Pointer(&v))), nil
}

func (stringCodec[T]) Decode(src []byte) (T, []byte, error) {
	var v T
	b, rest, err := readBytes(src)
	if err != nil {
		return v, src, err
	}
	*(*string)(unsafe.Pointer(&v)) = string(b)
	return v, rest, nil
}

type float64Codec[T any] struct{}

func (float64Codec[T]) Append(dst []byte, v T) ([]byte, error) {
	return binary.LittleEndian.AppendUint64(dst, math.Float64bits(*(*float64)(unsafe.Pointer(&v)))), nil
}

func (float64Codec[T]) Decode(src []byte) (T, []byte, error) {
	var v T
	if len(src) < 8 {
		return v, src, errTruncated
	}
	*(*float64)(unsafe.Pointer(&v)) = math.Float64frombits(binary.LittleEndian.Uint64(src))
	return v, src[8:], nil
}

type boolCodec[T any] struct{}

func (boolCodec[T]) Append(dst []byte, v T) ([]byte, error) {
	if *(*bool)(unsafe.Pointer(&v)) {
		return append(dst, 1), nil
	}
	return append(dst, 0), nil
}

func (boolCodec[T]) Decode(src []byte) (T, []byte, error) {
	var v T
	if len(src) == 0 {
		return v, src, errTruncated
	}
	if src[0] > 1 {
		return v, src, errBool
	}
	*(*bool)(unsafe.Pointer(&v)) = src[0] == 1
	return v, src[1:], nil
}

// bytesCodec encodes a byte slice as uvarint(len+1) and its bytes, and a
// nil slice as 0, so that nil and empty slices survive a round trip.
type bytesCodec[T any] struct{}

func (bytesCodec[T]) Append(dst []byte, v T) ([]byte, error) {
	b := *(*[]byte)(unsafe.Pointer(&v))
	if b == nil {
		return append(dst, 0), nil
	}
	dst = binary.AppendUvarint(dst, uint64(len(b))+1)
	return append(dst, b...), nil
}

func (bytesCodec[T]) Decode(src []byte) (T, []byte, error) {
	var v T
	n, rest, err := readUvarint(src)
	if err != nil {
		return v, src, err
	}
	if n == 0 {
		return v, rest, nil
	}
	n--
	if n > uint64(len(rest)) {
		return v, src, errTruncated
	}
	b := make([]byte, n)
	copy(b, rest)
	*(*[]byte)(unsafe.Pointer(&v)) = b
	return v, rest[n:], nil
}

// opKind is the encoding of one field of a layout codec.
type opKind uint8

const (
	opBool opKind = iota
	opInt8
	opInt16
	opInt32
	opInt64
	opUint8
	opUint16
	opUint32
	opUint64
	opFloat32
	opFloat64
	opString
)

// layoutOp encodes the scalar field at offset off of the value.
type layoutOp struct {
	off  uintptr
	kind opKind
	skip bool // read and drop (a field an older schema had)
}

// maxLayoutOps bounds the number of scalar fields of a layout codec.
const maxLayoutOps = 256

// compileLayout returns the scalar fields of t in memory order, or false if
// t contains anything else or more than maxLayoutOps of them.
func compileLayout(t reflect.Type) ([]layoutOp, bool) {
	var ops []layoutOp
	if !appendLayout(&ops, t, 0) {
		return nil, false
	}
	return ops, true
}

func appendLayout(ops *[]layoutOp, t reflect.Type, off uintptr) bool {
	if len(*ops) > maxLayoutOps {
		return false
	}
	var k opKind
	switch t.Kind() {
	case reflect.Bool:
		k = opBool
	case reflect.Int8:
		k = opInt8
	case reflect.Int16:
		k = opInt16
	case reflect.Int32:
		k = opInt32
	case reflect.Int64:
		k = opInt64
	case reflect.Uint8:
		k = opUint8
	case reflect.Uint16:
		k = opUint16
	case reflect.Uint32:
		k = opUint32
	case reflect.Uint64:
		k = opUint64
	case reflect.Int:
		k = opInt64
		if t.Size() == 4 {
			k = opInt32
		}
	case reflect.Uint, reflect.Uintptr:
		k = opUint64
		if t.Size() == 4 {
			k = opUint32
		}
	case reflect.Float32:
		k = opFloat32
	case reflect.Float64:
		k = opFloat64
	case reflect.String:
		k = opString
	case reflect.Struct:
		for i := range t.NumField() {
			f := t.Field(i)
			if !appendLayout(ops, f.Type, off+f.Offset) {
				return false
			}
		}
		return true
	case reflect.Array:
		if t.Len() > maxLayoutOps {
			return false
		}
		e := t.Elem()
		for i := range t.Len() {
			if !appendLayout(ops, e, off+uintptr(i)*e.Size()) {
				return false
			}
		}
		return true
	default:
		return false
	}
	*ops = append(*ops, layoutOp{off: off, kind: k})
	return len(*ops) <= maxLayoutOps
}

// layoutCodec encodes a struct or array of scalars field by field. A
// codec that reads an older schema (ReaderFor) has ops that skip the
// fields the type no longer has (skip) and none for its new fields.
type layoutCodec[T any] struct {
	ops    []layoutOp
	schema string // of the type's own layout; "" for a reader of an older one
}

func (c *layoutCodec[T]) Append(dst []byte, v T) ([]byte, error) {
	return appendOps(dst, c.ops, unsafe.Pointer(&v)), nil
}

func (c *layoutCodec[T]) Decode(src []byte) (T, []byte, error) {
	var v T
	rest, err := decodeOps(src, c.ops, unsafe.Pointer(&v))
	return v, rest, err
}

// appendOps appends the fields ops describes of the value at p.
func appendOps(dst []byte, ops []layoutOp, p unsafe.Pointer) []byte {
	for _, op := range ops {
		f := unsafe.Add(p, op.off)
		switch op.kind {
		case opBool:
			b := byte(0)
			if *(*bool)(f) {
				b = 1
			}
			dst = append(dst, b)
		case opInt8:
			dst = binary.AppendVarint(dst, int64(*(*int8)(f)))
		case opInt16:
			dst = binary.AppendVarint(dst, int64(*(*int16)(f)))
		case opInt32:
			dst = binary.AppendVarint(dst, int64(*(*int32)(f)))
		case opInt64:
			dst = binary.AppendVarint(dst, *(*int64)(f))
		case opUint8:
			dst = binary.AppendUvarint(dst, uint64(*(*uint8)(f)))
		case opUint16:
			dst = binary.AppendUvarint(dst, uint64(*(*uint16)(f)))
		case opUint32:
			dst = binary.AppendUvarint(dst, uint64(*(*uint32)(f)))
		case opUint64:
			dst = binary.AppendUvarint(dst, *(*uint64)(f))
		case opFloat32:
			dst = binary.LittleEndian.AppendUint32(dst, math.Float32bits(*(*float32)(f)))
		case opFloat64:
			dst = binary.LittleEndian.AppendUint64(dst, math.Float64bits(*(*float64)(f)))
		case opString:
			dst = appendString(dst, *(*string)(f))
		}
	}
	return dst
}

// decodeOps decodes the fields ops describes from the front of src into
// the value at p (ops marked skip are read and dropped) and returns the
// rest of src; on error src is returned.
func decodeOps(src []byte, ops []layoutOp, p unsafe.Pointer) ([]byte, error) {
	rest := src
	for _, op := range ops {
		var err error
		if op.skip {
			// A separate path: pointing f at a local scratch value here
			// instead makes go1.26.8's optimizer drop the stores of the
			// other fields (a miscompile; kept out of the way).
			if rest, err = skipOp(rest, op.kind); err != nil {
				return src, err
			}
			continue
		}
		f := unsafe.Add(p, op.off)
		switch op.kind {
		case opBool:
			if len(rest) == 0 {
				return src, errTruncated
			}
			if rest[0] > 1 {
				return src, errBool
			}
			*(*bool)(f) = rest[0] == 1
			rest = rest[1:]
		case opInt8, opInt16, opInt32, opInt64:
			var x int64
			if x, rest, err = readVarint(rest); err != nil {
				return src, err
			}
			switch op.kind {
			case opInt8:
				if x != int64(int8(x)) {
					return src, errRange
				}
				*(*int8)(f) = int8(x)
			case opInt16:
				if x != int64(int16(x)) {
					return src, errRange
				}
				*(*int16)(f) = int16(x)
			case opInt32:
				if x != int64(int32(x)) {
					return src, errRange
				}
				*(*int32)(f) = int32(x)
			default:
				*(*int64)(f) = x
			}
		case opUint8, opUint16, opUint32, opUint64:
			var x uint64
			if x, rest, err = readUvarint(rest); err != nil {
				return src, err
			}
			switch op.kind {
			case opUint8:
				if x > math.MaxUint8 {
					return src, errRange
				}
				*(*uint8)(f) = uint8(x)
			case opUint16:
				if x > math.MaxUint16 {
					return src, errRange
				}
				*(*uint16)(f) = uint16(x)
			case opUint32:
				if x > math.MaxUint32 {
					return src, errRange
				}
				*(*uint32)(f) = uint32(x)
			default:
				*(*uint64)(f) = x
			}
		case opFloat32:
			if len(rest) < 4 {
				return src, errTruncated
			}
			*(*float32)(f) = math.Float32frombits(binary.LittleEndian.Uint32(rest))
			rest = rest[4:]
		case opFloat64:
			if len(rest) < 8 {
				return src, errTruncated
			}
			*(*float64)(f) = math.Float64frombits(binary.LittleEndian.Uint64(rest))
			rest = rest[8:]
		case opString:
			var b []byte
			if b, rest, err = readBytes(rest); err != nil {
				return src, err
			}
			*(*string)(f) = string(b)
		}
	}
	return rest, nil
}

// skipOp reads one field of kind k from the front of src and drops it.
func skipOp(src []byte, k opKind) ([]byte, error) {
	var err error
	switch k {
	case opBool:
		if len(src) == 0 {
			return src, errTruncated
		}
		if src[0] > 1 {
			return src, errBool
		}
		return src[1:], nil
	case opInt8, opInt16, opInt32, opInt64:
		_, src, err = readVarint(src)
	case opUint8, opUint16, opUint32, opUint64:
		_, src, err = readUvarint(src)
	case opFloat32, opFloat64:
		n := 8
		if k == opFloat32 {
			n = 4
		}
		if len(src) < n {
			return src, errTruncated
		}
		return src[n:], nil
	case opString:
		_, src, err = readBytes(src)
	}
	return src, err
}

// gobCodec encodes each value as a self-contained gob stream. encoding/gob
// panics on some values (a nil pointer behind a pointer, for one); those
// panics are turned into errors.
type gobCodec[T any] struct{}

func (gobCodec[T]) Append(dst []byte, v T) (out []byte, err error) {
	defer func() {
		if p := recover(); p != nil {
			out, err = dst, gobError[T](fmt.Errorf("panic: %v", p))
		}
	}()
	var buf bytes.Buffer
	if err := gob.NewEncoder(&buf).Encode(&v); err != nil {
		return dst, gobError[T](err)
	}
	return appendBytes(dst, buf.Bytes()), nil
}

func (gobCodec[T]) Decode(src []byte) (v T, rest []byte, err error) {
	defer func() {
		if p := recover(); p != nil {
			var zero T
			v, rest, err = zero, src, gobError[T](fmt.Errorf("panic: %v", p))
		}
	}()
	b, rest, err := readBytes(src)
	if err != nil {
		return v, src, err
	}
	if err := gob.NewDecoder(bytes.NewReader(b)).Decode(&v); err != nil {
		return v, src, gobError[T](err)
	}
	return v, rest, nil
}

func gobError[T any](err error) error {
	return fmt.Errorf("gob codec of %v: %w", reflect.TypeFor[T](), err)
}
