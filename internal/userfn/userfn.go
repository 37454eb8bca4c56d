// Package userfn holds helpers on the user's function values.
package userfn

import "reflect"

// Clone gives each subtask its own copy of a function value: a pointer to
// a struct is shallow-copied, so fields set in Open (state handles)
// belong to one subtask, as with Flink's per-subtask function instances.
func Clone[F any](f F) F {
	v := reflect.ValueOf(f)
	if !v.IsValid() || v.Kind() != reflect.Pointer || v.IsNil() || v.Elem().Kind() != reflect.Struct {
		return f
	}
	c := reflect.New(v.Elem().Type())
	c.Elem().Set(v.Elem())
	out, ok := c.Interface().(F)
	if !ok {
		return f
	}
	return out
}

// IsNil reports whether f is nil or holds a nil pointer, func, map,
// interface, slice or channel.
func IsNil(f any) bool {
	if f == nil {
		return true
	}
	v := reflect.ValueOf(f)
	switch v.Kind() {
	case reflect.Pointer, reflect.Func, reflect.Map, reflect.Interface, reflect.Slice, reflect.Chan:
		return v.IsNil()
	}
	return false
}
