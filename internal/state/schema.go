package state

import (
	"encoding"
	"encoding/gob"
	"fmt"
	"reflect"
	"strconv"
	"strings"
)

// Schemas of stored types (FORMAT.md, "Schemas").
//
// Every type a snapshot stores (keys, namespaces, values, list elements,
// map keys and values, accumulators) is recorded with a schema: what its
// codec writes, as a short text. The built-in codecs describe the type's
// shape (scalar kinds, struct fields by name, arrays), encoding/gob
// the same shape over the exported fields it encodes, and a user codec the
// version it declares. A restore compares the recorded schema with the
// job's codec and either reads the data as it is, reads it through a
// migrating reader (fields matched by name, as Flink resolves POJO
// schemas), or refuses the restore with an IncompatibleError.
//
// The text grammar:
//
//	schema = [quoted-name "="] body
//	body   = "empty" | scalar | "struct{" [field {";" field}] "}"
//	       | "[" n "]" schema | "gob:" gobtype
//	       | "codec(" quoted-name ")v" n | "wrap(" quoted-name "," schema ")"
//	scalar = "bool" | "int8" | "int16" | "int32" | "int64" | "uint8" | "uint16"
//	       | "uint32" | "uint64" | "float32" | "float64" | "string" | "bytes"
//	field  = identifier " " schema       (gob types use gobtype for fields)
//	gobtype = [quoted-name "="] ( scalar | "struct{" ... "}" | "[" n "]" gobtype
//	       | "[]" gobtype | "map[" gobtype "]" gobtype | "interface"
//	       | "marshal" | "complex64" | "complex128" ) | "@" quoted-name
//
// A quoted name is a Go string literal (strconv.Quote) of the type's name as
// reflect.Type.String() gives it; unnamed types have none. int and uint are
// recorded as int64 and uint64 (their encodings), uintptr as uint64. In gob
// types, pointers are transparent (gob sends the value they point to), a
// type implementing gob.GobEncoder, encoding.BinaryMarshaler or
// encoding.TextMarshaler is "marshal" (its own encoding), and a named type
// met again inside itself is a reference "@name".

// schemaKind is the kind of a schema node.
type schemaKind uint8

const (
	skEmpty schemaKind = iota
	skScalar
	skStruct
	skArray
	skSlice
	skMap
	skInterface
	skMarshal
	skRef
	skGob   // gob: elem is the gob type
	skCodec // a user codec: name is the codec's type, n its version
	skWrap  // an internal codec around an inner one: name is the wrapper, elem the inner schema
)

// schemaNode is a parsed schema.
type schemaNode struct {
	kind   schemaKind
	name   string // the Go type's name ("" if unnamed); codec and wrapper names
	scalar string // for skScalar: bool, int64, string, bytes, ...
	fields []schemaField
	n      int         // array length, codec version
	elem   *schemaNode // array, slice and map elements; gob and wrap inner schema
	key    *schemaNode // map keys
}

type schemaField struct {
	name string
	typ  *schemaNode
}

// String returns the schema's text.
func (s *schemaNode) String() string {
	var b strings.Builder
	s.write(&b)
	return b.String()
}

func (s *schemaNode) write(b *strings.Builder) {
	if s.kind == skRef {
		b.WriteString("@")
		b.WriteString(strconv.Quote(s.name))
		return
	}
	if s.name != "" && s.kind != skCodec && s.kind != skWrap {
		b.WriteString(strconv.Quote(s.name))
		b.WriteString("=")
	}
	switch s.kind {
	case skEmpty:
		b.WriteString("empty")
	case skScalar:
		b.WriteString(s.scalar)
	case skStruct:
		b.WriteString("struct{")
		for i, f := range s.fields {
			if i > 0 {
				b.WriteString(";")
			}
			b.WriteString(f.name)
			b.WriteString(" ")
			f.typ.write(b)
		}
		b.WriteString("}")
	case skArray:
		b.WriteString("[")
		b.WriteString(strconv.Itoa(s.n))
		b.WriteString("]")
		s.elem.write(b)
	case skSlice:
		b.WriteString("[]")
		s.elem.write(b)
	case skMap:
		b.WriteString("map[")
		s.key.write(b)
		b.WriteString("]")
		s.elem.write(b)
	case skInterface:
		b.WriteString("interface")
	case skMarshal:
		b.WriteString("marshal")
	case skGob:
		b.WriteString("gob:")
		s.elem.write(b)
	case skCodec:
		b.WriteString("codec(")
		b.WriteString(strconv.Quote(s.name))
		b.WriteString(")v")
		b.WriteString(strconv.Itoa(s.n))
	case skWrap:
		b.WriteString("wrap(")
		b.WriteString(strconv.Quote(s.name))
		b.WriteString(",")
		s.elem.write(b)
		b.WriteString(")")
	}
}

// describe returns a short description of the type for messages: its name
// and, for scalars, its kind ("main.Key (int64)", "int64", "a struct").
func (s *schemaNode) describe() string {
	var what string
	switch s.kind {
	case skEmpty:
		what = "an empty type"
	case skScalar:
		what = s.scalar
	case skStruct:
		names := make([]string, len(s.fields))
		for i, f := range s.fields {
			names[i] = f.name + " " + f.typ.describe()
		}
		what = "struct{" + strings.Join(names, "; ") + "}"
	case skArray:
		what = "[" + strconv.Itoa(s.n) + "]" + s.elem.describe()
	case skSlice:
		what = "[]" + s.elem.describe()
	case skMap:
		what = "map[" + s.key.describe() + "]" + s.elem.describe()
	case skInterface:
		what = "an interface"
	case skMarshal:
		what = "a type with its own marshaling"
	case skRef:
		return s.name
	case skGob:
		return s.elem.describe() + " (gob)"
	case skCodec:
		return fmt.Sprintf("version %d of codec %s", s.n, s.name)
	case skWrap:
		return s.elem.describe()
	}
	if s.name == "" {
		return what
	}
	if s.kind == skScalar {
		return s.name + " (" + what + ")"
	}
	if s.kind == skStruct {
		return s.name
	}
	return s.name + " (" + what + ")"
}

// scalarName returns the schema name of a scalar kind, or "" if k is not
// one of the built-in codecs' scalars.
func scalarName(t reflect.Type) string {
	switch t.Kind() {
	case reflect.Bool:
		return "bool"
	case reflect.Int8:
		return "int8"
	case reflect.Int16:
		return "int16"
	case reflect.Int32:
		return "int32"
	case reflect.Int64:
		return "int64"
	case reflect.Int:
		if t.Size() == 4 {
			return "int32"
		}
		return "int64"
	case reflect.Uint8:
		return "uint8"
	case reflect.Uint16:
		return "uint16"
	case reflect.Uint32:
		return "uint32"
	case reflect.Uint64:
		return "uint64"
	case reflect.Uint, reflect.Uintptr:
		if t.Size() == 4 {
			return "uint32"
		}
		return "uint64"
	case reflect.Float32:
		return "float32"
	case reflect.Float64:
		return "float64"
	case reflect.String:
		return "string"
	}
	return ""
}

// typeName returns t's name as recorded: reflect's String for named types,
// "" for unnamed ones.
func typeName(t reflect.Type) string {
	if t.Name() == "" || t.PkgPath() == "" { // unnamed or predeclared
		return ""
	}
	return t.String()
}

// layoutSchema returns the schema of the built-in compact encoding of t
// (the scalar codecs and the layout codec): t must be a zero-size type, a
// scalar, []byte, or a struct or array made of scalars.
func layoutSchema(t reflect.Type) *schemaNode {
	if t.Kind() != reflect.Interface && t.Size() == 0 {
		return &schemaNode{kind: skEmpty, name: typeName(t)}
	}
	if t.Kind() == reflect.Slice && t.Elem().Kind() == reflect.Uint8 {
		return &schemaNode{kind: skScalar, name: typeName(t), scalar: "bytes"}
	}
	if s := scalarName(t); s != "" {
		return &schemaNode{kind: skScalar, name: typeName(t), scalar: s}
	}
	switch t.Kind() {
	case reflect.Struct:
		n := &schemaNode{kind: skStruct, name: typeName(t), fields: make([]schemaField, t.NumField())}
		for i := range t.NumField() {
			f := t.Field(i)
			n.fields[i] = schemaField{name: f.Name, typ: layoutSchema(f.Type)}
		}
		return n
	case reflect.Array:
		return &schemaNode{kind: skArray, name: typeName(t), n: t.Len(), elem: layoutSchema(t.Elem())}
	}
	panic(fmt.Sprintf("state: no layout schema for %v", t))
}

var (
	gobEncoderType    = reflect.TypeFor[gob.GobEncoder]()
	binaryMarshalType = reflect.TypeFor[encoding.BinaryMarshaler]()
	textMarshalType   = reflect.TypeFor[encoding.TextMarshaler]()
)

// marshals reports whether gob encodes t (or *t) with the type's own
// marshaling method.
func marshals(t reflect.Type) bool {
	for _, m := range []reflect.Type{gobEncoderType, binaryMarshalType, textMarshalType} {
		if t.Implements(m) || reflect.PointerTo(t).Implements(m) {
			return true
		}
	}
	return false
}

// gobSchema returns the shape encoding/gob gives t: exported fields by
// name, pointers transparent, marshalers opaque, recursion by reference.
func gobSchema(t reflect.Type) *schemaNode {
	return &schemaNode{kind: skGob, elem: gobType(t, map[reflect.Type]bool{})}
}

func gobType(t reflect.Type, open map[reflect.Type]bool) *schemaNode {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	name := typeName(t)
	if name != "" && open[t] {
		return &schemaNode{kind: skRef, name: name}
	}
	if marshals(t) {
		return &schemaNode{kind: skMarshal, name: name}
	}
	if s := scalarName(t); s != "" {
		return &schemaNode{kind: skScalar, name: name, scalar: s}
	}
	if name != "" {
		open[t] = true
		defer delete(open, t)
	}
	switch t.Kind() {
	case reflect.Struct:
		n := &schemaNode{kind: skStruct, name: name}
		for i := range t.NumField() {
			f := t.Field(i)
			if !f.IsExported() || f.Type.Kind() == reflect.Chan || f.Type.Kind() == reflect.Func {
				continue
			}
			n.fields = append(n.fields, schemaField{name: f.Name, typ: gobType(f.Type, open)})
		}
		return n
	case reflect.Array:
		return &schemaNode{kind: skArray, name: name, n: t.Len(), elem: gobType(t.Elem(), open)}
	case reflect.Slice:
		if t.Elem().Kind() == reflect.Uint8 {
			return &schemaNode{kind: skScalar, name: name, scalar: "bytes"}
		}
		return &schemaNode{kind: skSlice, name: name, elem: gobType(t.Elem(), open)}
	case reflect.Map:
		return &schemaNode{kind: skMap, name: name, key: gobType(t.Key(), open), elem: gobType(t.Elem(), open)}
	case reflect.Interface:
		return &schemaNode{kind: skInterface, name: name}
	case reflect.Complex64:
		return &schemaNode{kind: skScalar, name: name, scalar: "complex64"}
	case reflect.Complex128:
		return &schemaNode{kind: skScalar, name: name, scalar: "complex128"}
	}
	// Channels and functions: gob refuses them when encoding; record the
	// kind so that a change is still seen.
	return &schemaNode{kind: skScalar, name: name, scalar: t.Kind().String()}
}

// ParseSchema parses a schema's text (see the grammar above).
func parseSchema(text string) (*schemaNode, error) {
	p := &schemaParser{s: text}
	n, err := p.schema(false)
	if err != nil {
		return nil, fmt.Errorf("schema %q: %w", text, err)
	}
	if p.i != len(p.s) {
		return nil, fmt.Errorf("schema %q: unexpected %q at %d", text, p.s[p.i:], p.i)
	}
	return n, nil
}

type schemaParser struct {
	s string
	i int
}

func (p *schemaParser) eat(lit string) bool {
	if strings.HasPrefix(p.s[p.i:], lit) {
		p.i += len(lit)
		return true
	}
	return false
}

func (p *schemaParser) expect(lit string) error {
	if !p.eat(lit) {
		return fmt.Errorf("want %q at %d", lit, p.i)
	}
	return nil
}

func (p *schemaParser) quoted() (string, error) {
	q, err := strconv.QuotedPrefix(p.s[p.i:])
	if err != nil {
		return "", fmt.Errorf("bad quoted name at %d", p.i)
	}
	p.i += len(q)
	return strconv.Unquote(q)
}

func (p *schemaParser) number() (int, error) {
	j := p.i
	for j < len(p.s) && p.s[j] >= '0' && p.s[j] <= '9' {
		j++
	}
	n, err := strconv.Atoi(p.s[p.i:j])
	if err != nil || j == p.i {
		return 0, fmt.Errorf("want a number at %d", p.i)
	}
	p.i = j
	return n, nil
}

func (p *schemaParser) ident() (string, error) {
	j := p.i
	for j < len(p.s) && p.s[j] != ' ' && p.s[j] != ';' && p.s[j] != '}' {
		j++
	}
	if j == p.i {
		return "", fmt.Errorf("want a field name at %d", p.i)
	}
	name := p.s[p.i:j]
	p.i = j
	return name, nil
}

var scalarNames = []string{"bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
	"float32", "float64", "string", "bytes", "complex64", "complex128", "chan", "func"}

// schema parses one schema; gob says whether it is inside a gob type
// (where slices, maps, interfaces, marshalers and references may appear).
func (p *schemaParser) schema(gob bool) (*schemaNode, error) {
	if gob && p.eat("@") {
		name, err := p.quoted()
		return &schemaNode{kind: skRef, name: name}, err
	}
	var name string
	if p.i < len(p.s) && p.s[p.i] == '"' {
		var err error
		if name, err = p.quoted(); err != nil {
			return nil, err
		}
		if err := p.expect("="); err != nil {
			return nil, err
		}
	}
	switch {
	case p.eat("empty"):
		return &schemaNode{kind: skEmpty, name: name}, nil
	case p.eat("struct{"):
		n := &schemaNode{kind: skStruct, name: name}
		if p.eat("}") {
			return n, nil
		}
		for {
			fname, err := p.ident()
			if err != nil {
				return nil, err
			}
			if err := p.expect(" "); err != nil {
				return nil, err
			}
			ft, err := p.schema(gob)
			if err != nil {
				return nil, err
			}
			n.fields = append(n.fields, schemaField{name: fname, typ: ft})
			if p.eat("}") {
				return n, nil
			}
			if err := p.expect(";"); err != nil {
				return nil, err
			}
		}
	case p.eat("[]"):
		if !gob {
			return nil, fmt.Errorf("a slice outside a gob type at %d", p.i)
		}
		e, err := p.schema(gob)
		return &schemaNode{kind: skSlice, name: name, elem: e}, err
	case p.eat("["):
		n, err := p.number()
		if err != nil {
			return nil, err
		}
		if err := p.expect("]"); err != nil {
			return nil, err
		}
		e, err := p.schema(gob)
		return &schemaNode{kind: skArray, name: name, n: n, elem: e}, err
	case gob && p.eat("map["):
		k, err := p.schema(gob)
		if err != nil {
			return nil, err
		}
		if err := p.expect("]"); err != nil {
			return nil, err
		}
		e, err := p.schema(gob)
		return &schemaNode{kind: skMap, name: name, key: k, elem: e}, err
	case gob && p.eat("interface"):
		return &schemaNode{kind: skInterface, name: name}, nil
	case gob && p.eat("marshal"):
		return &schemaNode{kind: skMarshal, name: name}, nil
	case !gob && name == "" && p.eat("gob:"):
		e, err := p.schema(true)
		return &schemaNode{kind: skGob, elem: e}, err
	case !gob && name == "" && p.eat("codec("):
		cname, err := p.quoted()
		if err != nil {
			return nil, err
		}
		if err := p.expect(")v"); err != nil {
			return nil, err
		}
		v, err := p.number()
		return &schemaNode{kind: skCodec, name: cname, n: v}, err
	case !gob && name == "" && p.eat("wrap("):
		wname, err := p.quoted()
		if err != nil {
			return nil, err
		}
		if err := p.expect(","); err != nil {
			return nil, err
		}
		inner, err := p.schema(false)
		if err != nil {
			return nil, err
		}
		return &schemaNode{kind: skWrap, name: wname, elem: inner}, p.expect(")")
	}
	for _, s := range scalarNames {
		if p.eat(s) {
			return &schemaNode{kind: skScalar, name: name, scalar: s}, nil
		}
	}
	return nil, fmt.Errorf("unknown type at %d", p.i)
}
