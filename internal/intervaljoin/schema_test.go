package intervaljoin

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"slices"
	"testing"

	"github.com/weirstream/weir/internal/engine"
	"github.com/weirstream/weir/state"
)

// Other shapes of ckRec for the schema tests.
type (
	ckRecReordered struct {
		ID  int
		Key string
	}
	ckRecRetyped struct {
		Key string
		ID  uint32
	}
)

// restoreJoinAs opens an interval join whose left input has type L from
// the key groups kgs and returns what Open said and the left buffer's
// records as "key id" strings.
func restoreJoinAs[L any](t *testing.T, kgs map[int][]byte, key func(L) string, show func(L) string) ([]string, error) {
	t.Helper()
	o := newTestOp(t, 0, 5, FullOuter, 0, 127, key, func(*L, *ckRec, int64, int64) error { return nil })
	if err := o.Restore(kgs); err != nil {
		return nil, err
	}
	v, err := o.view(false)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, slots := range v.byKG {
		for _, si := range slots {
			ks, _, _ := v.at(si)
			for _, e := range ks.left.es[ks.left.head:] {
				out = append(out, show(e.v))
			}
		}
	}
	slices.Sort(out)
	return out, nil
}

// TestIntervalJoinSchemaEvolution: the interval join's buffers record the
// schemas of their records; a restore reads reordered fields by name,
// refuses a changed field type, and still reads snapshots of version 1
// (type names).
func TestIntervalJoinSchemaEvolution(t *testing.T) {
	a, _ := newTestJoin(t, 0, 5, FullOuter, 0, 127, nil)
	var want []string
	for i := range 30 {
		k := fmt.Sprintf("k%d", i%7)
		if err := a.ProcessBatch1([]engine.Record[ckRec]{{Value: ckRec{k, i}, TS: int64(i)}}); err != nil {
			t.Fatal(err)
		}
		want = append(want, fmt.Sprintf("%s %d", k, i))
	}
	slices.Sort(want)
	kgs, err := a.snapshot()
	if err != nil {
		t.Fatal(err)
	}

	got, err := restoreJoinAs(t, kgs, func(r ckRecReordered) string { return r.Key },
		func(r ckRecReordered) string { return fmt.Sprintf("%s %d", r.Key, r.ID) })
	if err != nil || !slices.Equal(got, want) {
		t.Fatalf("fields reordered: %v, buffered %v, want %v", err, got, want)
	}

	_, err = restoreJoinAs(t, kgs, func(r ckRecRetyped) string { return r.Key },
		func(r ckRecRetyped) string { return "" })
	var ie *state.IncompatibleError
	if !errors.As(err, &ie) || ie.Field != "ID" || ie.State != "interval join buffer of the left input" {
		t.Fatalf("field retyped: got %v, want an IncompatibleError naming the left buffer and ID", err)
	}

	// Version 1: the same blobs with type names in the header.
	v1 := map[int][]byte{}
	for kg, b := range kgs {
		src := b[len(ijMagic) : len(b)-4]
		_, n := binary.Uvarint(src)
		src = src[n:]
		for range 3 {
			l, n := binary.Uvarint(src)
			src = src[n+int(l):]
		}
		dst := append([]byte(ijMagicV1), binary.AppendUvarint(nil, uint64(kg))...)
		for _, name := range ijTypeNames[string, ckRec, ckRec]() {
			dst = append(binary.AppendUvarint(dst, uint64(len(name))), name...)
		}
		dst = append(dst, src...)
		v1[kg] = binary.LittleEndian.AppendUint32(dst, crc32.Checksum(dst, ijCRC))
	}
	got, err = restoreJoinAs(t, v1, func(r ckRec) string { return r.Key }, func(r ckRec) string { return fmt.Sprintf("%s %d", r.Key, r.ID) })
	if err != nil || !slices.Equal(got, want) {
		t.Fatalf("version 1: %v, buffered %v, want %v", err, got, want)
	}
	if _, err = restoreJoinAs(t, v1, func(r ckRecReordered) string { return r.Key }, func(ckRecReordered) string { return "" }); err == nil {
		t.Fatal("version 1 (type names) restored into another type")
	}
}
