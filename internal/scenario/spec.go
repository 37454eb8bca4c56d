package scenario

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
)

// Spec is the parsed `op` line of a scenario: the operator name, its
// `name=value` parameters and its bare flags.
type Spec struct {
	// Op is the operator name, e.g. "window" or "interval-join".
	Op string
	// Params holds the `name=value` tokens of the op line.
	Params map[string]string
	// Flags holds the bare tokens of the op line (always true when present).
	Flags map[string]bool
	// Line is the 1-based line number of the op line in its file.
	Line int
}

// Has reports whether the parameter name was given.
func (s Spec) Has(name string) bool {
	_, ok := s.Params[name]
	return ok
}

// Flag reports whether the bare flag name was given.
func (s Spec) Flag(name string) bool { return s.Flags[name] }

// String returns the value of parameter name, or def when it is absent.
func (s Spec) String(name, def string) string {
	if v, ok := s.Params[name]; ok {
		return v
	}
	return def
}

// Int64 returns the value of parameter name as a decimal int64, or def when
// it is absent. A value that is not an int64 is an error naming the parameter.
func (s Spec) Int64(name string, def int64) (int64, error) {
	v, ok := s.Params[name]
	if !ok {
		return def, nil
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("parameter %s=%s: not an int64 number", name, v)
	}
	return n, nil
}

// OneOf returns the value of parameter name, or def when it is absent, and
// fails unless the value is one of allowed.
func (s Spec) OneOf(name, def string, allowed ...string) (string, error) {
	v := s.String(name, def)
	for _, a := range allowed {
		if v == a {
			return v, nil
		}
	}
	return "", fmt.Errorf("parameter %s=%s: want one of %s", name, v, strings.Join(allowed, ", "))
}

// Require fails unless every one of names was given as a parameter; the
// error lists all missing ones.
func (s Spec) Require(names ...string) error {
	var missing []string
	for _, n := range names {
		if _, ok := s.Params[n]; !ok {
			missing = append(missing, n)
		}
	}
	switch len(missing) {
	case 0:
		return nil
	case 1:
		return fmt.Errorf("missing parameter %s=...", missing[0])
	default:
		return fmt.Errorf("missing parameters %s", strings.Join(missing, ", "))
	}
}

// CheckKnown fails if the op line has a parameter not in params or a flag
// not in flags. A known parameter written as a bare flag, or a known flag
// written with a value, is reported as such. All problems are listed, in
// sorted order.
func (s Spec) CheckKnown(params []string, flags []string) error {
	isParam := make(map[string]bool, len(params))
	for _, p := range params {
		isParam[p] = true
	}
	isFlag := make(map[string]bool, len(flags))
	for _, f := range flags {
		isFlag[f] = true
	}
	var probs []string
	for _, name := range sortedKeys(s.Params) {
		switch {
		case isParam[name]:
		case isFlag[name]:
			probs = append(probs, fmt.Sprintf("flag %s takes no value", name))
		default:
			probs = append(probs, fmt.Sprintf("unknown parameter %s", name))
		}
	}
	for _, name := range sortedKeys(s.Flags) {
		switch {
		case isFlag[name]:
		case isParam[name]:
			probs = append(probs, fmt.Sprintf("parameter %s needs a value (%s=...)", name, name))
		default:
			probs = append(probs, fmt.Sprintf("unknown flag %s", name))
		}
	}
	if len(probs) == 0 {
		return nil
	}
	known := append(append([]string(nil), params...), flags...)
	sort.Strings(known)
	return fmt.Errorf("%s (known: %s)", strings.Join(probs, "; "), strings.Join(known, ", "))
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
