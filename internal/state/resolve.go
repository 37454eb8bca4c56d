package state

import (
	"errors"
	"fmt"
	"reflect"

	"github.com/weirstream/weir/state"
)

// Schema resolution on restore: the schema a snapshot recorded for a
// stored type is resolved against the codec the job uses now, as Flink
// resolves a serializer snapshot (TypeSerializerSchemaCompatibility):
//
//   - the same schema: the data is read as it is;
//   - a struct whose fields were added, removed or reordered (the built-in
//     encodings and gob alike): fields are matched by name, a new field
//     starts at its zero value, a removed one is dropped (a reader built
//     for the old schema, "compatible after migration");
//   - a changed field or value type (int64 to uint64, a scalar to a
//     struct, an array's length), another user codec version that the
//     codec does not read, or a switch between a user codec and the
//     built-in encodings: refused with an IncompatibleError.
//
// Names of value types are recorded for messages but not compared: a type
// may be renamed or moved to another package. Keys and namespaces are
// compared exactly (named types included), since their encoding decides
// which key group and entry a value belongs to.

// ErrIncompatible is state.ErrIncompatible, wrapped by every
// IncompatibleError.
var ErrIncompatible = state.ErrIncompatible

// IncompatibleError is state.IncompatibleError.
type IncompatibleError = state.IncompatibleError

// Hints of IncompatibleError.
const (
	hintField = "Fields are matched by name: a new field starts at its zero value and a removed one is dropped, " +
		"but a field's type cannot change. Keep the old type, or add the field under a new name, or convert the state " +
		"offline with the state processor API (package github.com/weirstream/weir/savepoint: read, change, write a new savepoint)"
	hintCodec = "Restore with the codec that wrote the state, or give the new codec state.MigratingCodec's ReadsVersion and " +
		"DecodeVersion for the old version, or convert the state offline with the state processor API (package github.com/weirstream/weir/savepoint)"
	hintKey = "A key's type decides its key group and identity, so it cannot change, not even its name. Restore with the old key type, " +
		"or rewrite the state under new keys offline with the state processor API (package github.com/weirstream/weir/savepoint)"
)

// SchemaCodec is a codec that describes what it writes and reads what
// older schemas of its type wrote. The built-in codecs (DefaultCodec) and
// the runtime's own codecs of internal types implement it; SchemaOf and
// ReaderFor handle user codecs, which declare a version instead
// (state.VersionedCodec).
type SchemaCodec[T any] interface {
	state.Codec[T]
	// Schema returns the schema text of what Append writes (schema.go).
	Schema() string
	// ReaderFor returns a codec whose Decode reads values written under the
	// schema old (the codec itself if old is its own schema), or an error
	// wrapping ErrIncompatible if it cannot.
	ReaderFor(old string) (state.Codec[T], error)
}

// SchemaOf returns the schema c records in snapshots: its own for a
// SchemaCodec, else the codec's Go type and declared version.
func SchemaOf[T any](c state.Codec[T]) string {
	if sc, ok := c.(SchemaCodec[T]); ok {
		return sc.Schema()
	}
	return (&schemaNode{kind: skCodec, name: fmt.Sprintf("%T", c), n: int(codecVersion(c))}).String()
}

func codecVersion(c any) uint32 {
	if v, ok := c.(state.VersionedCodec); ok {
		return v.Version()
	}
	return 0
}

// ReaderFor returns a codec that decodes what was written under the
// schema old, to be used with c's type: c itself when old is c's schema,
// a migrating reader when the rules allow (see the top of this file), or
// an error wrapping ErrIncompatible.
func ReaderFor[T any](c state.Codec[T], old string) (state.Codec[T], error) {
	if sc, ok := c.(SchemaCodec[T]); ok {
		if old == sc.Schema() {
			return c, nil
		}
		return sc.ReaderFor(old)
	}
	o, err := parseSchema(old)
	if err != nil {
		return nil, corruptf("%v", err)
	}
	v := codecVersion(c)
	if o.kind != skCodec {
		return nil, &IncompatibleError{Reason: "the state was written by Weir's built-in encoding and the job sets a codec", Old: o.describe(),
			New: fmt.Sprintf("version %d of codec %T", v, c), Hint: hintCodec}
	}
	if uint32(o.n) == v {
		return c, nil
	}
	if m, ok := c.(state.MigratingCodec[T]); ok && m.ReadsVersion(uint32(o.n)) {
		return versionReader[T]{m: m, v: uint32(o.n)}, nil
	}
	return nil, &IncompatibleError{Reason: "the codec's version changed and it does not read the old one", Old: o.describe(),
		New: fmt.Sprintf("version %d of codec %T", v, c), Hint: hintCodec}
}

// versionReader decodes version v of a migrating codec.
type versionReader[T any] struct {
	m state.MigratingCodec[T]
	v uint32
}

func (r versionReader[T]) Append(dst []byte, v T) ([]byte, error) { return r.m.Append(dst, v) }
func (r versionReader[T]) Decode(src []byte) (T, []byte, error)   { return r.m.DecodeVersion(r.v, src) }

// CheckExact compares a recorded schema of keys or namespaces with the
// job's: they must be equal (named types included).
func CheckExact(what, old, now string) error {
	if old == now {
		return nil
	}
	od, nd := old, now
	if o, err := parseSchema(old); err == nil {
		od = o.describe()
	}
	if n, err := parseSchema(now); err == nil {
		nd = n.describe()
	}
	reason := "the type changed"
	hint := hintKey
	if what != "key" {
		hint = "Restore with the old type"
	}
	if od == nd {
		od, nd = old, now
	}
	return &IncompatibleError{What: what, Reason: reason, Old: od, New: nd, Hint: hint}
}

// The built-in codecs' schemas and readers.

func (emptyCodec[T]) Schema() string   { return defaultSchema(reflect.TypeFor[T]()) }
func (int64Codec[T]) Schema() string   { return defaultSchema(reflect.TypeFor[T]()) }
func (stringCodec[T]) Schema() string  { return defaultSchema(reflect.TypeFor[T]()) }
func (float64Codec[T]) Schema() string { return defaultSchema(reflect.TypeFor[T]()) }
func (boolCodec[T]) Schema() string    { return defaultSchema(reflect.TypeFor[T]()) }
func (bytesCodec[T]) Schema() string   { return defaultSchema(reflect.TypeFor[T]()) }
func (gobCodec[T]) Schema() string     { return gobSchema(reflect.TypeFor[T]()).String() }

func (c *layoutCodec[T]) Schema() string {
	if c.schema == "" {
		return layoutSchema(reflect.TypeFor[T]()).String()
	}
	return c.schema
}

func (c emptyCodec[T]) ReaderFor(old string) (state.Codec[T], error) { return defaultReader[T](c, old) }
func (c int64Codec[T]) ReaderFor(old string) (state.Codec[T], error) { return defaultReader[T](c, old) }
func (c stringCodec[T]) ReaderFor(old string) (state.Codec[T], error) {
	return defaultReader[T](c, old)
}
func (c float64Codec[T]) ReaderFor(old string) (state.Codec[T], error) {
	return defaultReader[T](c, old)
}
func (c boolCodec[T]) ReaderFor(old string) (state.Codec[T], error)  { return defaultReader[T](c, old) }
func (c bytesCodec[T]) ReaderFor(old string) (state.Codec[T], error) { return defaultReader[T](c, old) }
func (c gobCodec[T]) ReaderFor(old string) (state.Codec[T], error)   { return defaultReader[T](c, old) }
func (c *layoutCodec[T]) ReaderFor(old string) (state.Codec[T], error) {
	return defaultReader[T](c, old)
}

// compact reports whether DefaultCodec gives t a built-in compact
// encoding (else gob).
func compact(t reflect.Type) bool {
	if t.Kind() != reflect.Interface && t.Size() == 0 {
		return true
	}
	if t.Kind() == reflect.Slice && t.Elem().Kind() == reflect.Uint8 {
		return true
	}
	_, ok := compileLayout(t)
	return ok
}

// defaultSchema returns the schema DefaultCodec records for t.
func defaultSchema(t reflect.Type) string {
	if compact(t) {
		return layoutSchema(t).String()
	}
	return gobSchema(t).String()
}

// newSchemaOf describes t as the job has it, for messages.
func newSchemaOf(t reflect.Type) *schemaNode {
	if compact(t) {
		return layoutSchema(t)
	}
	return gobType(t, map[reflect.Type]bool{})
}

// defaultReader resolves the schema old against the built-in codec self
// of T.
func defaultReader[T any](self state.Codec[T], old string) (state.Codec[T], error) {
	t := reflect.TypeFor[T]()
	r, err := resolveType(t, old)
	if err != nil {
		return nil, err
	}
	switch r := r.(type) {
	case resolvedSame:
		return self, nil
	case resolvedGob:
		if _, ok := self.(gobCodec[T]); ok {
			return self, nil
		}
		return gobCodec[T]{}, nil
	case resolvedBytes:
		return bytesCodec[T]{}, nil
	case resolvedLayout:
		return &layoutCodec[T]{ops: r.ops}, nil
	case resolvedZero:
		return zeroReader[T]{self}, nil
	}
	panic("unreachable")
}

// The outcomes of resolveType.
type (
	resolvedSame   struct{}                 // the type's own codec reads it
	resolvedGob    struct{}                 // gob decodes it into the type (by field name)
	resolvedBytes  struct{}                 // a []byte encoding
	resolvedLayout struct{ ops []layoutOp } // a layout reader with these ops
	resolvedZero   struct{}                 // every value reads as the zero value (gob, no field kept)
)

// zeroReader reads a gob-encoded value none of whose fields the type
// kept: it skips the encoding and returns the zero value.
type zeroReader[T any] struct{ state.Codec[T] }

func (zeroReader[T]) Decode(src []byte) (T, []byte, error) {
	var zero T
	_, rest, err := readBytes(src)
	return zero, rest, err
}

// resolveType resolves the recorded schema old against the type t, whose
// codec is DefaultCodec's. It works on reflect types so that tests can
// resolve types made at run time.
func resolveType(t reflect.Type, old string) (any, error) {
	if old == defaultSchema(t) {
		return resolvedSame{}, nil
	}
	o, err := parseSchema(old)
	if err != nil {
		return nil, corruptf("%v", err)
	}
	switch o.kind {
	case skGob:
		if err := gobCompatible(o.elem, gobType(t, map[reflect.Type]bool{}), ""); err == errNoneKept {
			return resolvedZero{}, nil
		} else if err != nil {
			return nil, err
		}
		return resolvedGob{}, nil
	case skCodec, skWrap:
		return nil, &IncompatibleError{Reason: "the state was written by a codec the job no longer sets", Old: o.describe(),
			New: newSchemaOf(t).describe() + " in Weir's built-in encoding", Hint: hintCodec}
	case skScalar:
		if o.scalar == "bytes" {
			if t.Kind() == reflect.Slice && t.Elem().Kind() == reflect.Uint8 {
				return resolvedBytes{}, nil
			}
			return nil, changed("", o, t)
		}
	}
	var ops []layoutOp
	if err := resolveLayout(o, t, 0, "", &ops); err != nil {
		return nil, err
	}
	if own, ok := compileLayout(t); ok && opsEqual(own, ops) {
		return resolvedSame{}, nil
	}
	return resolvedLayout{ops: ops}, nil
}

func opsEqual(a, b []layoutOp) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// changed reports that the type at path changed from o to t.
func changed(path string, o *schemaNode, t reflect.Type) error {
	return &IncompatibleError{Field: path, Reason: "the type changed", Old: o.describe(), New: newSchemaOf(t).describe(), Hint: hintField}
}

// resolveLayout appends to ops the reads of a value written in the
// compact layout o into the value of type t at offset off: matching
// struct fields by name, skipping the old fields t lacks.
func resolveLayout(o *schemaNode, t reflect.Type, off uintptr, path string, ops *[]layoutOp) error {
	switch o.kind {
	case skEmpty:
		if t.Kind() == reflect.Struct || t.Kind() == reflect.Array || (t.Kind() != reflect.Interface && t.Size() == 0) {
			return nil
		}
		return changed(path, o, t)
	case skScalar:
		s := scalarName(t)
		if s == "" || s != o.scalar || (t.Kind() == reflect.Slice) {
			return changed(path, o, t)
		}
		*ops = append(*ops, layoutOp{off: off, kind: opOf(o.scalar)})
		return nil
	case skStruct:
		if t.Kind() != reflect.Struct {
			return changed(path, o, t)
		}
		for _, of := range o.fields {
			fp := of.name
			if path != "" {
				fp = path + "." + of.name
			}
			nf, ok := t.FieldByName(of.name)
			if !ok || len(nf.Index) != 1 {
				skipLayout(of.typ, ops)
				continue
			}
			if err := resolveLayout(of.typ, nf.Type, off+nf.Offset, fp, ops); err != nil {
				return err
			}
		}
		return nil
	case skArray:
		if t.Kind() != reflect.Array || t.Len() != o.n {
			return changed(path, o, t)
		}
		for i := range o.n {
			if err := resolveLayout(o.elem, t.Elem(), off+uintptr(i)*t.Elem().Size(), fmt.Sprintf("%s[%d]", path, i), ops); err != nil {
				return changed(path, o, t) // the array's element type changed
			}
		}
		return nil
	}
	return changed(path, o, t)
}

// skipLayout appends reads that drop a value of the layout o.
func skipLayout(o *schemaNode, ops *[]layoutOp) {
	switch o.kind {
	case skScalar:
		*ops = append(*ops, layoutOp{kind: opOf(o.scalar), skip: true})
	case skStruct:
		for _, f := range o.fields {
			skipLayout(f.typ, ops)
		}
	case skArray:
		for range o.n {
			skipLayout(o.elem, ops)
		}
	}
}

func opOf(scalar string) opKind {
	switch scalar {
	case "bool":
		return opBool
	case "int8":
		return opInt8
	case "int16":
		return opInt16
	case "int32":
		return opInt32
	case "int64":
		return opInt64
	case "uint8":
		return opUint8
	case "uint16":
		return opUint16
	case "uint32":
		return opUint32
	case "uint64":
		return opUint64
	case "float32":
		return opFloat32
	case "float64":
		return opFloat64
	}
	return opString
}

// gobCompatible checks that gob can decode a value of the gob type o into
// one of the gob type n under the rules: fields by name, no type changes.
func gobCompatible(o, n *schemaNode, path string) error {
	if o.kind == skRef || n.kind == skRef {
		if o.name == n.name {
			return nil
		}
		return gobChanged(path, o, n)
	}
	if o.kind != n.kind {
		return gobChanged(path, o, n)
	}
	switch o.kind {
	case skScalar:
		if o.scalar != n.scalar {
			return gobChanged(path, o, n)
		}
	case skMarshal:
		if o.name != n.name {
			return gobChanged(path, o, n)
		}
	case skStruct:
		if len(o.fields) > 0 && !anyFieldKept(o, n) {
			// gob refuses to decode a struct none of whose fields it
			// knows ("no fields matched").
			if path == "" {
				return errNoneKept
			}
			return &IncompatibleError{Field: path, Reason: "none of the fields of this struct kept its name, and gob cannot decode such a struct",
				Old: o.describe(), New: n.describe(), Hint: hintField}
		}
		for _, of := range o.fields {
			for _, nf := range n.fields {
				if nf.name != of.name {
					continue
				}
				fp := of.name
				if path != "" {
					fp = path + "." + of.name
				}
				if err := gobCompatible(of.typ, nf.typ, fp); err != nil {
					return err
				}
			}
		}
	case skArray:
		if o.n != n.n {
			return gobChanged(path, o, n)
		}
		return gobElem(o.elem, n.elem, path, "[]", o, n)
	case skSlice:
		return gobElem(o.elem, n.elem, path, "[]", o, n)
	case skMap:
		if err := gobElem(o.key, n.key, path, "[key]", o, n); err != nil {
			return err
		}
		return gobElem(o.elem, n.elem, path, "[]", o, n)
	}
	return nil
}

// gobElem checks the elements (or keys) o and n of the containers oc and
// nc at path: a change inside a struct element is reported at its field,
// any other at the container ("[]int64" to "[]uint64").
func gobElem(o, n *schemaNode, path, suffix string, oc, nc *schemaNode) error {
	err := gobCompatible(o, n, path+suffix)
	if err != nil && err != errNoneKept && (o.kind != skStruct || n.kind != skStruct) {
		return gobChanged(path, oc, nc)
	}
	if err == errNoneKept {
		return &IncompatibleError{Field: path + suffix, Reason: "none of the fields of this struct kept its name, and gob cannot decode such a struct",
			Old: o.describe(), New: n.describe(), Hint: hintField}
	}
	return err
}

// errNoneKept is gobCompatible's answer for a top-level struct none of
// whose fields the new type has: its values read as the zero value.
var errNoneKept = errors.New("no field kept")

func anyFieldKept(o, n *schemaNode) bool {
	for _, of := range o.fields {
		for _, nf := range n.fields {
			if nf.name == of.name {
				return true
			}
		}
	}
	return false
}

func gobChanged(path string, o, n *schemaNode) error {
	return &IncompatibleError{Field: path, Reason: "the type changed", Old: o.describe(), New: n.describe(), Hint: hintField}
}

// WrapSchema returns the schema of an internal codec named name around a
// codec whose schema is inner.
func WrapSchema(name, inner string) string {
	n, err := parseSchema(inner)
	if err != nil {
		n = &schemaNode{kind: skCodec, name: inner}
	}
	return (&schemaNode{kind: skWrap, name: name, elem: n}).String()
}

// UnwrapSchema returns the inner schema of a schema WrapSchema(name, ...)
// made, or an IncompatibleError if old is another schema.
func UnwrapSchema(name, old string) (string, error) {
	o, err := parseSchema(old)
	if err != nil {
		return "", corruptf("%v", err)
	}
	if o.kind != skWrap || o.name != name {
		return "", &IncompatibleError{Reason: "the state was written by another codec", Old: o.describe(), New: name, Hint: hintCodec}
	}
	return o.elem.String(), nil
}

// DescribeSchema returns a readable form of a schema's text ("main.Acc",
// "int64", "struct{Count int64; Sum int64}", ...) for inspection tools;
// text that does not parse is returned as it is.
func DescribeSchema(text string) string {
	n, err := parseSchema(text)
	if err != nil {
		return text
	}
	if n.kind == skStruct && n.name != "" {
		return n.name + " " + (&schemaNode{kind: skStruct, fields: n.fields}).describe()
	}
	return n.describe()
}

// SkipperFor returns a function that skips one value written under the
// schema text by Weir's built-in encodings (the compact layouts, []byte
// and gob), for tools that walk a snapshot without its Go types (weir
// savepoint inspect). A user codec's values cannot be skipped: it
// returns false.
func SkipperFor(text string) (func(src []byte) ([]byte, error), bool) {
	n, err := parseSchema(text)
	if err != nil {
		return nil, false
	}
	switch n.kind {
	case skGob:
		return func(src []byte) ([]byte, error) {
			_, rest, err := readBytes(src)
			return rest, err
		}, true
	case skScalar:
		if n.scalar == "bytes" {
			return func(src []byte) ([]byte, error) {
				_, rest, err := readBytes(src)
				return rest, err
			}, true
		}
	case skCodec, skWrap, skRef, skMarshal:
		return nil, false
	}
	var ops []layoutOp
	skipLayout(n, &ops)
	return func(src []byte) ([]byte, error) {
		var err error
		for _, op := range ops {
			if src, err = skipOp(src, op.kind); err != nil {
				return nil, err
			}
		}
		return src, nil
	}, true
}

// GobSchema returns the schema of values of type t encoded with gob (as
// broadcast state encodes its maps).
func GobSchema(t reflect.Type) string { return gobSchema(t).String() }

// ResolveGob reports whether gob-encoded values recorded with the schema
// old can be read into type t by the rules of schema evolution: nil, or
// an IncompatibleError.
func ResolveGob(t reflect.Type, old string) error {
	_, err := resolveType(t, old)
	return err
}
