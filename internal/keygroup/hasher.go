package keygroup

import (
	"fmt"
	"reflect"
	"unsafe"
)

// Hashable lets a user key type supply its own Java-style hash code, for
// example the hashCode of the Java class the key mirrors. HasherFor prefers
// it over every built-in rule. HashCode must be declared on the value type
// (a value receiver), must be deterministic, and equal keys must return
// equal codes.
type Hashable interface {
	// HashCode returns the key's Java-style hash code.
	HashCode() int32
}

// HasherFor returns the Java-style hash function for key type K. The rule is
// chosen once, from K's type, and the returned function is safe for
// concurrent use:
//
//   - K implements Hashable: its HashCode method (an interface K holding nil
//     hashes to 0, like Java's null);
//   - string kinds: HashString (Java String.hashCode);
//   - int8, int16, int32, uint8, uint16 kinds: the value itself
//     (Integer/Short/Byte/Character.hashCode);
//   - int, int64, uint, uint32, uint64, uintptr kinds: HashInt64 of the
//     value's bits, zero-extended for the unsigned kinds (Long.hashCode);
//   - bool kinds: HashBool (Boolean.hashCode, 1231/1237);
//   - float64 kinds: HashFloat64 (Double.hashCode); float32 kinds:
//     HashFloat32 (Float.hashCode);
//   - structs and arrays: Flink's Tuple rule over the fields (in declaration
//     order, blank "_" fields skipped) or elements e0..en: h = 0, then
//     h = 31*h + hash(ei) for each, each ei hashed by these same rules,
//     recursively. So struct{F0 string; F1 int64} hashes like Tuple2.
//
// Named types follow the rule of their kind unless they implement Hashable.
// Any other kind (pointers, interfaces not implementing Hashable, channels,
// complex numbers, unsafe pointers), anywhere inside K, yields an error
// naming the type, as does a type whose HashCode has a pointer receiver.
//
// For the scalar kinds and for structs and arrays without nested Hashable
// fields the returned function uses no reflection and does not allocate. A
// top-level Hashable K is called directly through its method; nested
// Hashable fields go through reflection on every call.
func HasherFor[K comparable]() (func(K) int32, error) {
	t := reflect.TypeFor[K]()
	if t.Implements(hashableType()) {
		return hashableFunc[K](t), nil
	}
	if err := checkPointerReceiver(t); err != nil {
		return nil, fmt.Errorf("keygroup: cannot hash key type %v: %w", t, err)
	}
	switch t.Kind() {
	case reflect.String:
		return adapt[K](HashString), nil
	case reflect.Bool:
		return adapt[K](HashBool), nil
	case reflect.Int8:
		return adapt[K](func(v int8) int32 { return int32(v) }), nil
	case reflect.Int16:
		return adapt[K](func(v int16) int32 { return int32(v) }), nil
	case reflect.Int32:
		return adapt[K](HashInt32), nil
	case reflect.Uint8:
		return adapt[K](func(v uint8) int32 { return int32(v) }), nil
	case reflect.Uint16:
		return adapt[K](func(v uint16) int32 { return int32(v) }), nil
	case reflect.Int:
		return adapt[K](func(v int) int32 { return HashInt64(int64(v)) }), nil
	case reflect.Int64:
		return adapt[K](HashInt64), nil
	case reflect.Uint:
		return adapt[K](func(v uint) int32 { return hashUint64(uint64(v)) }), nil
	case reflect.Uint32:
		return adapt[K](func(v uint32) int32 { return hashUint64(uint64(v)) }), nil
	case reflect.Uint64:
		return adapt[K](hashUint64), nil
	case reflect.Uintptr:
		return adapt[K](func(v uintptr) int32 { return hashUint64(uint64(v)) }), nil
	case reflect.Float32:
		return adapt[K](HashFloat32), nil
	case reflect.Float64:
		return adapt[K](HashFloat64), nil
	case reflect.Struct, reflect.Array:
		n, pure, err := compile(t)
		if err != nil {
			return nil, fmt.Errorf("keygroup: cannot hash key type %v: %w", t, err)
		}
		if pure {
			return func(k K) int32 { return n.hashPure(unsafe.Pointer(&k)) }, nil
		}
		return func(k K) int32 { return n.hash(unsafe.Pointer(&k)) }, nil
	}
	return nil, fmt.Errorf("keygroup: cannot hash key type %v: %v kind has no Java-style hash (implement keygroup.Hashable)", t, t.Kind())
}

// hashableType returns the reflect.Type of Hashable.
func hashableType() reflect.Type { return reflect.TypeFor[Hashable]() }

// hashableFunc returns the hash function of a K that implements Hashable.
func hashableFunc[K comparable](t reflect.Type) func(K) int32 {
	if t.Kind() != reflect.Interface {
		// The method expression K.HashCode, called directly: no boxing.
		if m, ok := t.MethodByName("HashCode"); ok {
			if f, ok := m.Func.Interface().(func(K) int32); ok {
				return f
			}
		}
	}
	return func(k K) int32 {
		h, ok := any(k).(Hashable)
		if !ok {
			return 0 // nil interface value: Java's h(null) = 0
		}
		return h.HashCode()
	}
}

// checkPointerReceiver reports an error if *t implements Hashable but t does
// not, which almost always means HashCode was declared with a pointer
// receiver by mistake.
func checkPointerReceiver(t reflect.Type) error {
	if t.Kind() != reflect.Interface && !t.Implements(hashableType()) && reflect.PointerTo(t).Implements(hashableType()) {
		return fmt.Errorf("%v declares HashCode with a pointer receiver; declare it on the value type", t)
	}
	return nil
}

// adapt turns a hash function over the basic type B into one over K, where K
// is B or a named type whose kind (and so whose memory layout) is B's.
func adapt[K, B any](f func(B) int32) func(K) int32 {
	if g, ok := any(f).(func(K) int32); ok {
		return g
	}
	// K is a named type defined over B: same size and representation, so
	// reading a K's memory as a B is valid (unsafe.Pointer rule 1).
	return func(k K) int32 { return f(*(*B)(unsafe.Pointer(&k))) }
}

// nodeKind tells a node how to read and hash the value at its address.
type nodeKind uint8

const (
	kString nodeKind = iota
	kBool
	kInt8
	kInt16
	kInt32
	kUint8
	kUint16
	kInt
	kInt64
	kUint
	kUint32
	kUint64
	kUintptr
	kFloat32
	kFloat64
	kStruct
	kArray
	kHashable
)

// node is the compiled hash plan of a struct or array type, or of one of its
// fields or elements.
type node struct {
	kind   nodeKind
	off    uintptr      // offset of a struct field within its struct
	fields []node       // kStruct: the hashed fields, in order
	elem   *node        // kArray: the element plan
	n      int          // kArray: the element count
	stride uintptr      // kArray: the element size
	typ    reflect.Type // kHashable: the field's type
}

// scalarKind maps a supported scalar reflect kind to its node kind.
func scalarKind(k reflect.Kind) (nodeKind, bool) {
	switch k {
	case reflect.String:
		return kString, true
	case reflect.Bool:
		return kBool, true
	case reflect.Int8:
		return kInt8, true
	case reflect.Int16:
		return kInt16, true
	case reflect.Int32:
		return kInt32, true
	case reflect.Uint8:
		return kUint8, true
	case reflect.Uint16:
		return kUint16, true
	case reflect.Int:
		return kInt, true
	case reflect.Int64:
		return kInt64, true
	case reflect.Uint:
		return kUint, true
	case reflect.Uint32:
		return kUint32, true
	case reflect.Uint64:
		return kUint64, true
	case reflect.Uintptr:
		return kUintptr, true
	case reflect.Float32:
		return kFloat32, true
	case reflect.Float64:
		return kFloat64, true
	}
	return 0, false
}

// compile builds the hash plan of t. pure reports that the plan contains no
// Hashable node, so hashPure can run it.
func compile(t reflect.Type) (n *node, pure bool, err error) {
	if t.Implements(hashableType()) {
		return &node{kind: kHashable, typ: t}, false, nil
	}
	if err := checkPointerReceiver(t); err != nil {
		return nil, false, err
	}
	if k, ok := scalarKind(t.Kind()); ok {
		return &node{kind: k}, true, nil
	}
	switch t.Kind() {
	case reflect.Struct:
		n := &node{kind: kStruct}
		pure := true
		for i := range t.NumField() {
			f := t.Field(i)
			if f.Name == "_" {
				continue // ignored by ==, so ignored by the hash
			}
			c, p, err := compile(f.Type)
			if err != nil {
				return nil, false, fmt.Errorf("field %s: %w", f.Name, err)
			}
			c.off = f.Offset
			pure = pure && p
			n.fields = append(n.fields, *c)
		}
		return n, pure, nil
	case reflect.Array:
		c, p, err := compile(t.Elem())
		if err != nil {
			return nil, false, fmt.Errorf("element of %v: %w", t, err)
		}
		return &node{kind: kArray, elem: c, n: t.Len(), stride: t.Elem().Size()}, p, nil
	}
	return nil, false, fmt.Errorf("%v (%v kind) has no Java-style hash (implement keygroup.Hashable)", t, t.Kind())
}

// hashPure hashes the value at p with a plan that has no Hashable node. It
// passes p to no dynamic call, so the caller's value does not escape.
func (n *node) hashPure(p unsafe.Pointer) int32 {
	switch n.kind {
	case kStruct:
		var h int32
		for i := range n.fields {
			f := &n.fields[i]
			h = 31*h + f.hashPure(unsafe.Add(p, f.off))
		}
		return h
	case kArray:
		var h int32
		for i := range n.n {
			h = 31*h + n.elem.hashPure(unsafe.Add(p, uintptr(i)*n.stride))
		}
		return h
	default:
		return n.hashScalar(p)
	}
}

// hash hashes the value at p with any plan.
func (n *node) hash(p unsafe.Pointer) int32 {
	switch n.kind {
	case kHashable:
		h, ok := reflect.NewAt(n.typ, p).Elem().Interface().(Hashable)
		if !ok {
			return 0 // nil interface field: Java's h(null) = 0
		}
		return h.HashCode()
	case kStruct:
		var h int32
		for i := range n.fields {
			f := &n.fields[i]
			h = 31*h + f.hash(unsafe.Add(p, f.off))
		}
		return h
	case kArray:
		var h int32
		for i := range n.n {
			h = 31*h + n.elem.hash(unsafe.Add(p, uintptr(i)*n.stride))
		}
		return h
	default:
		return n.hashScalar(p)
	}
}

// hashScalar hashes the scalar at p.
func (n *node) hashScalar(p unsafe.Pointer) int32 {
	switch n.kind {
	case kString:
		return HashString(*(*string)(p))
	case kBool:
		return HashBool(*(*bool)(p))
	case kInt8:
		return int32(*(*int8)(p))
	case kInt16:
		return int32(*(*int16)(p))
	case kInt32:
		return *(*int32)(p)
	case kUint8:
		return int32(*(*uint8)(p))
	case kUint16:
		return int32(*(*uint16)(p))
	case kInt:
		return HashInt64(int64(*(*int)(p)))
	case kInt64:
		return HashInt64(*(*int64)(p))
	case kUint:
		return hashUint64(uint64(*(*uint)(p)))
	case kUint32:
		return hashUint64(uint64(*(*uint32)(p)))
	case kUint64:
		return hashUint64(*(*uint64)(p))
	case kUintptr:
		return hashUint64(uint64(*(*uintptr)(p)))
	case kFloat32:
		return HashFloat32(*(*float32)(p))
	case kFloat64:
		return HashFloat64(*(*float64)(p))
	}
	panic(fmt.Sprintf("keygroup: internal error: node kind %d is not a scalar", n.kind))
}
