package state

import (
	"strings"
	"testing"
)

type strCodec struct{}

func (strCodec) Append(dst []byte, v string) ([]byte, error) { return append(dst, v...), nil }
func (strCodec) Decode(src []byte) (string, []byte, error)   { return string(src), nil, nil }

type intCodec struct{}

func (intCodec) Append(dst []byte, v int) ([]byte, error) { return append(dst, byte(v)), nil }
func (intCodec) Decode(src []byte) (int, []byte, error)   { return int(src[0]), src[1:], nil }

func TestWithCodec(t *testing.T) {
	if d := Value[string]("v", WithCodec[string](strCodec{})); d.Codec != (strCodec{}) || d.Validate() != nil {
		t.Errorf("value: codec %v, validate %v", d.Codec, d.Validate())
	}
	if d := Value[string]("v"); d.Codec != nil {
		t.Error("value without WithCodec has a codec")
	}
	if d := List[int]("l", WithCodec[int](intCodec{})); d.Codec != (intCodec{}) || d.Validate() != nil {
		t.Errorf("list: codec %v", d.Codec)
	}
	d := Map[string, int]("m", WithCodec[int](intCodec{}), WithKeyCodec[string](strCodec{}))
	if d.Codec != (intCodec{}) || d.KeyCodec != (strCodec{}) || d.Validate() != nil {
		t.Errorf("map: codecs %v %v", d.Codec, d.KeyCodec)
	}
	r := Reducing("r", func(a, b int) int { return a + b }, WithCodec[int](intCodec{}))
	if r.Codec != (intCodec{}) || r.Validate() != nil {
		t.Errorf("reducing: codec %v", r.Codec)
	}
	a := Aggregating[int, int, string]("a", sumAgg{}, WithCodec[int](intCodec{}))
	if a.Codec != (intCodec{}) || a.Validate() != nil {
		t.Errorf("aggregating: codec %v", a.Codec)
	}

	// A codec of another type makes the descriptor invalid.
	for what, err := range map[string]error{
		"value":           Value[int64]("bad", WithCodec[int](intCodec{})).Validate(),
		"list":            List[string]("bad", WithCodec[int](intCodec{})).Validate(),
		"map value":       Map[string, string]("bad", WithCodec[int](intCodec{})).Validate(),
		"map key":         Map[int64, int]("bad", WithKeyCodec[string](strCodec{})).Validate(),
		"reducing":        Reducing("bad", func(a, b string) string { return a }, WithCodec[int](intCodec{})).Validate(),
		"aggregating acc": Aggregating[string, string, int]("bad", catAgg{}, WithCodec[int](intCodec{})).Validate(),
	} {
		if err == nil || !strings.Contains(err.Error(), `"bad"`) || !strings.Contains(err.Error(), "cannot encode") {
			t.Errorf("%s with a codec of another type: %v", what, err)
		}
	}
}

type catAgg struct{}

func (catAgg) CreateAccumulator() string       { return "" }
func (catAgg) Add(v string, acc string) string { return acc + v }
func (catAgg) GetResult(acc string) int        { return len(acc) }
func (catAgg) Merge(a, b string) string        { return a + b }
