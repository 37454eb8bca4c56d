package state

import (
	"bytes"
	"errors"
	"math"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/weirstream/weir/state"
	"github.com/weirstream/weir/window"
)

type (
	userID   string
	count    int64
	flag     bool
	blob     []byte
	smallInt int32
)

// pair has unexported fields, nested structs and arrays of scalars: it gets
// a layout codec.
type pair struct {
	name  string
	n     int8
	inner struct {
		u  uint16
		f  float32
		ok bool
	}
	arr [3]uint64
	i   int
	u   uint
}

// gobbed needs gob: it holds a map, a slice and a pointer.
type gobbed struct {
	Tags  map[string]int
	Items []string
	Next  *gobbed
}

// roundTrip encodes v behind a prefix, decodes it, and checks the value,
// that exactly its bytes were consumed, and that every strict prefix of a
// non-empty encoding fails to decode.
func roundTrip[T any](t *testing.T, c state.Codec[T], v T) {
	t.Helper()
	prefix := []byte{0xAA}
	enc, err := c.Append(prefix, v)
	if err != nil {
		t.Fatalf("Append(%#v): %v", v, err)
	}
	if !bytes.Equal(enc[:1], prefix) {
		t.Fatal("Append overwrote dst")
	}
	body := enc[1:]
	in := append(append([]byte{}, body...), 0x01, 0x02)
	got, rest, err := c.Decode(in)
	if err != nil {
		t.Fatalf("Decode(%#v): %v", v, err)
	}
	if !reflect.DeepEqual(got, v) && !(isNaN(got) && isNaN(v)) {
		t.Fatalf("round trip of %#v gave %#v", v, got)
	}
	if !bytes.Equal(rest, []byte{0x01, 0x02}) {
		t.Fatalf("Decode(%#v) left %x, want 0102", v, rest)
	}
	for n := range len(body) {
		if _, _, err := c.Decode(body[:n]); err == nil {
			t.Fatalf("Decode of %d of %d bytes of %#v succeeded", n, len(body), v)
		}
	}
}

func isNaN(v any) bool {
	f, ok := v.(float64)
	return ok && math.IsNaN(f)
}

func TestDefaultCodecChoice(t *testing.T) {
	kinds := []struct {
		codec any
		want  string
	}{
		{DefaultCodec[int64](), "int64Codec"},
		{DefaultCodec[int](), "int64Codec"},
		{DefaultCodec[count](), "int64Codec"},
		{DefaultCodec[time.Duration](), "int64Codec"},
		{DefaultCodec[string](), "stringCodec"},
		{DefaultCodec[userID](), "stringCodec"},
		{DefaultCodec[float64](), "float64Codec"},
		{DefaultCodec[bool](), "boolCodec"},
		{DefaultCodec[[]byte](), "bytesCodec"},
		{DefaultCodec[blob](), "bytesCodec"},
		{DefaultCodec[struct{}](), "emptyCodec"},
		{DefaultCodec[window.GlobalWindow](), "emptyCodec"},
		{DefaultCodec[window.TimeWindow](), "layoutCodec"},
		{DefaultCodec[pair](), "layoutCodec"},
		{DefaultCodec[int8](), "layoutCodec"},
		{DefaultCodec[[4]byte](), "layoutCodec"},
		{DefaultCodec[gobbed](), "gobCodec"},
		{DefaultCodec[any](), "gobCodec"},
		{DefaultCodec[*int](), "gobCodec"},
		{DefaultCodec[[]int](), "gobCodec"},
		{DefaultCodec[[1000]int8](), "gobCodec"}, // too many fields for a layout
	}
	for _, k := range kinds {
		if got := reflect.TypeOf(k.codec).String(); !strings.Contains(got, k.want) {
			t.Errorf("codec %s, want a %s", got, k.want)
		}
	}
}

func TestCodecRoundTrips(t *testing.T) {
	for _, v := range []int64{0, 1, -1, 63, -64, 64, math.MaxInt64, math.MinInt64} {
		roundTrip(t, DefaultCodec[int64](), v)
	}
	for _, v := range []int{0, -7, math.MaxInt, math.MinInt} {
		roundTrip(t, DefaultCodec[int](), v)
	}
	roundTrip(t, DefaultCodec[count](), count(-12345))
	roundTrip(t, DefaultCodec[time.Duration](), 3*time.Second)
	for _, v := range []string{"", "a", "hällo", strings.Repeat("x", 300)} {
		roundTrip(t, DefaultCodec[string](), v)
	}
	roundTrip(t, DefaultCodec[userID](), userID("u-42"))
	for _, v := range []float64{0, math.Copysign(0, -1), 1.5, -1e300, math.Inf(1), math.Inf(-1), math.NaN(), math.SmallestNonzeroFloat64} {
		roundTrip(t, DefaultCodec[float64](), v)
	}
	roundTrip(t, DefaultCodec[bool](), true)
	roundTrip(t, DefaultCodec[bool](), false)
	roundTrip(t, DefaultCodec[flag](), flag(true))
	roundTrip(t, DefaultCodec[[]byte](), nil)
	roundTrip(t, DefaultCodec[[]byte](), []byte{})
	roundTrip(t, DefaultCodec[[]byte](), []byte{0, 1, 255})
	roundTrip(t, DefaultCodec[blob](), blob("xyz"))
	roundTrip(t, DefaultCodec[struct{}](), struct{}{})
	roundTrip(t, DefaultCodec[window.GlobalWindow](), window.GlobalWindow{})
	roundTrip(t, DefaultCodec[window.TimeWindow](), window.TimeWindow{Start: -5000, End: math.MaxInt64})
	roundTrip(t, DefaultCodec[int8](), int8(math.MinInt8))
	roundTrip(t, DefaultCodec[int16](), int16(math.MaxInt16))
	roundTrip(t, DefaultCodec[smallInt](), smallInt(math.MinInt32))
	roundTrip(t, DefaultCodec[uint8](), uint8(255))
	roundTrip(t, DefaultCodec[uint16](), uint16(65535))
	roundTrip(t, DefaultCodec[uint32](), uint32(math.MaxUint32))
	roundTrip(t, DefaultCodec[uint64](), uint64(math.MaxUint64))
	roundTrip(t, DefaultCodec[uintptr](), uintptr(12))
	roundTrip(t, DefaultCodec[float32](), float32(-2.5))
	roundTrip(t, DefaultCodec[[4]byte](), [4]byte{1, 2, 3, 4})
	p := pair{name: "k", n: -3, arr: [3]uint64{1, math.MaxUint64, 0}, i: -1 << 40, u: 1 << 50}
	p.inner.u, p.inner.f, p.inner.ok = 7, 0.25, true
	roundTrip(t, DefaultCodec[pair](), p)
	roundTrip(t, DefaultCodec[pair](), pair{})
	roundTrip(t, DefaultCodec[gobbed](), gobbed{Tags: map[string]int{"a": 1}, Items: []string{"x", "y"}, Next: &gobbed{Items: []string{"z"}}})
	roundTrip(t, DefaultCodec[any](), any(int64(5)))
	roundTrip(t, DefaultCodec[any](), any("s"))
}

func TestCodecRejectsBadInput(t *testing.T) {
	// A varint that does not fit the field's type.
	big, _ := DefaultCodec[int64]().Append(nil, 300)
	if _, _, err := DefaultCodec[int8]().Decode(big); !errors.Is(err, errRange) {
		t.Errorf("int8 from 300: %v, want errRange", err)
	}
	if _, _, err := DefaultCodec[uint8]().Decode([]byte{0xAC, 0x02}); !errors.Is(err, errRange) {
		t.Errorf("uint8 from 300: %v, want errRange", err)
	}
	// An overlong varint.
	over := bytes.Repeat([]byte{0xFF}, 11)
	if _, _, err := DefaultCodec[int64]().Decode(over); err == nil {
		t.Error("overlong varint accepted")
	}
	if _, _, err := DefaultCodec[bool]().Decode([]byte{2}); !errors.Is(err, errBool) {
		t.Errorf("bool from 2: %v", err)
	}
	bad, _ := DefaultCodec[pair]().Append(nil, pair{})
	bad[7] = 9 // inner.ok, after name (1 byte), n (1), inner.u (1), inner.f (4)
	if _, _, err := DefaultCodec[pair]().Decode(bad); !errors.Is(err, errBool) {
		t.Errorf("pair with bool byte 9: %v", err)
	}
	// Gob: garbage inside a correct length prefix.
	if _, _, err := DefaultCodec[gobbed]().Decode([]byte{3, 1, 2, 3}); err == nil || !strings.Contains(err.Error(), "gob") {
		t.Errorf("gob garbage: %v", err)
	}
}

func TestGobCodecLimits(t *testing.T) {
	type hidden struct{ a, b []int }
	if _, err := GobCodec[hidden]().Append(nil, hidden{}); err == nil || !strings.Contains(err.Error(), "gob") {
		t.Errorf("struct without exported fields: %v, want a gob error", err)
	}
	type withPtr struct{ P *int }
	if _, err := GobCodec[*withPtr]().Append(nil, nil); err == nil {
		t.Error("nil pointer encoded")
	}
}

func TestLayoutCodecAllocations(t *testing.T) {
	c := DefaultCodec[window.TimeWindow]()
	buf := make([]byte, 0, 64)
	w := window.TimeWindow{Start: 1, End: 2}
	if n := testing.AllocsPerRun(100, func() { buf, _ = c.Append(buf[:0], w) }); n != 0 {
		t.Errorf("TimeWindow Append: %v allocs", n)
	}
	enc := append([]byte{}, buf...)
	if n := testing.AllocsPerRun(100, func() { _, _, _ = c.Decode(enc) }); n != 0 {
		t.Errorf("TimeWindow Decode: %v allocs", n)
	}
	ic := DefaultCodec[int64]()
	if n := testing.AllocsPerRun(100, func() { buf, _ = ic.Append(buf[:0], 1234) }); n != 0 {
		t.Errorf("int64 Append: %v allocs", n)
	}
}
