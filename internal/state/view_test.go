package state

import (
	"bytes"
	"maps"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/weirstream/weir/internal/clock"
	"github.com/weirstream/weir/state"
	"github.com/weirstream/weir/window"
)

// drawOp draws one random operation on the fixture's states (every kind,
// reads included, since TTL reads write) and returns it, to be applied to
// several fixtures alike.
func drawOp(t *rapid.T, kgOfKey func(int64) int) func(f *fixture, clk *clock.Manual) {
	namespaces := rapid.SampledFrom([]string{"", "a", "b"})
	windows := rapid.SampledFrom([]window.TimeWindow{{Start: 0, End: 10}, {Start: 10, End: 20}, {Start: -5, End: 5}})
	vals := rapid.IntRange(-50, 50)
	switch rapid.IntRange(0, 24).Draw(t, "op") {
	case 0, 1:
		k := rapid.Int64Range(0, 11).Draw(t, "key")
		return func(f *fixture, _ *clock.Manual) { f.b.SetCurrentKey(k, kgOfKey(k)) }
	case 2:
		a, b, c, w := namespaces.Draw(t, "ns"), namespaces.Draw(t, "ns"), namespaces.Draw(t, "ns"), windows.Draw(t, "w")
		return func(f *fixture, _ *clock.Manual) {
			f.v.SetNamespace(a)
			f.l.SetNamespace(b)
			f.r.SetNamespace(c)
			f.m.SetNamespace(w)
		}
	case 3, 4:
		s := rapid.StringN(0, 5, 5).Draw(t, "s")
		return func(f *fixture, _ *clock.Manual) { f.v.Update(s) }
	case 5:
		return func(f *fixture, _ *clock.Manual) { f.v.Clear() }
	case 6:
		return func(f *fixture, _ *clock.Manual) { f.v.Value() }
	case 7:
		v := vals.Draw(t, "v")
		return func(f *fixture, _ *clock.Manual) { f.l.Add(v) }
	case 8:
		vs := rapid.SliceOfN(vals, 0, 3).Draw(t, "vs")
		return func(f *fixture, _ *clock.Manual) { f.l.Update(vs) }
	case 9:
		return func(f *fixture, _ *clock.Manual) { f.l.Get() }
	case 10:
		target, src := namespaces.Draw(t, "target"), namespaces.Draw(t, "src")
		return func(f *fixture, _ *clock.Manual) { f.l.MergeNamespaces(target, []string{src}) }
	case 11:
		k, v := rapid.StringN(0, 2, 2).Draw(t, "mk"), int64(vals.Draw(t, "v"))
		return func(f *fixture, _ *clock.Manual) { f.m.Put(k, v) }
	case 12:
		k := rapid.StringN(0, 2, 2).Draw(t, "mk")
		return func(f *fixture, _ *clock.Manual) { f.m.Remove(k) }
	case 13:
		return func(f *fixture, _ *clock.Manual) {
			for range f.m.All() {
			}
		}
	case 14:
		v := int64(vals.Draw(t, "v"))
		return func(f *fixture, _ *clock.Manual) { f.r.Add(v) }
	case 15:
		v := vals.Draw(t, "v")
		return func(f *fixture, _ *clock.Manual) { f.a.Add(v) }
	case 16:
		return func(f *fixture, _ *clock.Manual) { f.a.Clear() }
	case 17:
		ms := rapid.Int64Range(0, 15).Draw(t, "ms")
		return func(_ *fixture, clk *clock.Manual) { clk.Advance(ms) }
	case 18:
		vs := rapid.SliceOfN(vals, 1, 3).Draw(t, "vs")
		return func(f *fixture, _ *clock.Manual) { f.l.AddAll(vs) }
	case 19:
		k := rapid.StringN(0, 2, 2).Draw(t, "mk")
		return func(f *fixture, _ *clock.Manual) { f.m.Get(k); f.m.Contains(k) }
	case 20:
		// With TTL, IsEmpty drops the expired entries it meets before the
		// first live one, in map order, which would make the twin differ.
		return func(f *fixture, _ *clock.Manual) {
			if !f.m.t.ttl.enabled {
				f.m.IsEmpty()
			}
		}
	case 21:
		m := rapid.MapOfN(rapid.StringN(0, 2, 2), rapid.Int64Range(-5, 5), 0, 3).Draw(t, "m")
		return func(f *fixture, _ *clock.Manual) { f.m.PutAll(m) }
	case 22:
		target, src := namespaces.Draw(t, "target"), namespaces.Draw(t, "src")
		return func(f *fixture, _ *clock.Manual) { f.r.MergeNamespaces(target, []string{src}) }
	case 23:
		return func(f *fixture, _ *clock.Manual) { f.r.Get(); f.a.Get() }
	default:
		return func(f *fixture, _ *clock.Manual) { f.r.Clear(); f.l.Clear(); f.m.Clear() }
	}
}

// TestRapidViewIsPointInTime runs random operations on every state kind
// (value, list, map, reducing, aggregating; with and without TTL, with
// incremental cleanup), takes a view at a random point, goes on with more
// random operations while another goroutine encodes the view's key groups
// in a random order, and checks that the asynchronous encoding equals the
// synchronous snapshot taken at the view (the same states, entry counts
// and payload lengths per key group, and, restored, the same entries and
// TTL timestamps), and that the live state ends as in a twin backend that
// ran the same operations without a view. With -race it also checks that
// the copy-on-write leaves no data race between the encoder and the
// writes.
func TestRapidViewIsPointInTime(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		lo := rapid.IntRange(0, 20).Draw(t, "lo")
		hi := rapid.IntRange(lo, lo+12).Draw(t, "hi")
		var ttl state.TTLConfig
		if rapid.Bool().Draw(t, "ttl") {
			ttl = state.TTL(20 * time.Millisecond)
			ttl.Update = rapid.SampledFrom([]state.UpdateType{state.UpdateOnCreateAndWrite, state.UpdateOnReadAndWrite}).Draw(t, "update")
			ttl.Visibility = rapid.SampledFrom([]state.Visibility{state.NeverReturnExpired, state.ReturnExpiredIfNotCleanedUp}).Draw(t, "visibility")
			ttl.CleanupEntries = rapid.IntRange(0, 3).Draw(t, "cleanup")
			ttl.CleanupEveryRecord = ttl.CleanupEntries > 0 && rapid.Bool().Draw(t, "everyRecord")
		}
		clk := clock.NewManual(rapid.Int64Range(0, 100).Draw(t, "start"))
		twinClk := clock.NewManual(clk.NowMillis())
		f := newFixture(t, lo, hi, clk, ttl)
		twin := newFixture(t, lo, hi, twinClk, ttl)
		kgOfKey := func(k int64) int { return lo + int(uint64(k)*2654435761%uint64(hi-lo+1)) }
		f.b.SetCurrentKey(0, kgOfKey(0))
		twin.b.SetCurrentKey(0, kgOfKey(0))
		run := func(n int) {
			for range n {
				op := drawOp(t, kgOfKey)
				op(f, clk)
				op(twin, twinClk)
			}
		}

		for round := range rapid.IntRange(1, 3).Draw(t, "rounds") {
			run(rapid.IntRange(0, 120).Draw(t, "ops before"))
			want := snapshotAll(t, f)
			wantDump := f.dump(nil)
			v, err := f.b.View()
			if err != nil {
				t.Fatalf("round %d: view: %v", round, err)
			}
			if _, err := f.b.View(); err == nil {
				t.Fatalf("round %d: a second view while the first is in use", round)
			}
			var kgs []int
			for kg := lo; kg <= hi; kg++ {
				kgs = append(kgs, kg)
			}
			order := rapid.Permutation(kgs).Draw(t, "order")
			type result struct {
				kg   int
				data []byte
				err  error
			}
			results := make(chan result, len(order))
			go func() {
				for _, kg := range order {
					data, err := v.AppendKeyGroupSnapshot(nil, kg)
					results <- result{kg, data, err}
				}
				v.Release()
			}()
			run(rapid.IntRange(0, 120).Draw(t, "ops during"))
			got := map[int][]byte{}
			for range order {
				r := <-results
				if r.err != nil {
					t.Fatalf("round %d: key group %d: %v", round, r.kg, r.err)
				}
				got[r.kg] = r.data
			}
			for kg := lo; kg <= hi; kg++ {
				compareFraming(t, kg, got[kg], want[kg])
			}
			restored := restoreRange(t, got, lo, hi, clk, ttl, rapid.Bool().Draw(t, "registerFirst"))
			if d := restored.dump(nil); !maps.Equal(d, wantDump) {
				t.Fatalf("round %d: the view restored:\n got %v\nwant %v", round, d, wantDump)
			}
			f.checkInvariants(t)
		}
		run(rapid.IntRange(0, 60).Draw(t, "ops after"))
		f.checkInvariants(t)
		if got, want := f.dump(nil), twin.dump(nil); !maps.Equal(got, want) {
			t.Fatalf("the live state differs from a run without views:\n got %v\nwant %v", got, want)
		}
		if f.b.KeyCount() != twin.b.KeyCount() {
			t.Fatalf("KeyCount %d, want %d", f.b.KeyCount(), twin.b.KeyCount())
		}
	})
}

// compareFraming checks that two snapshots of key group kg hold the same
// states with the same entry counts and payload lengths, and the same
// payloads where the order of entries cannot differ (one entry, no map).
func compareFraming(t *rapid.T, kg int, got, want []byte) {
	gs, err := parseKeyGroup(got, kg, keyType{keyTypeName[int64](), SchemaOf(DefaultCodec[int64]())})
	if err != nil {
		t.Fatalf("key group %d: the view's snapshot: %v", kg, err)
	}
	ws, err := parseKeyGroup(want, kg, keyType{keyTypeName[int64](), SchemaOf(DefaultCodec[int64]())})
	if err != nil {
		t.Fatalf("key group %d: the synchronous snapshot: %v", kg, err)
	}
	if len(got) != len(want) || len(gs) != len(ws) {
		t.Fatalf("key group %d: %d bytes, %d states; want %d bytes, %d states", kg, len(got), len(gs), len(want), len(ws))
	}
	for i := range gs {
		g, w := gs[i], ws[i]
		if g.name != w.name || g.kind != w.kind || g.ts != w.ts || g.count != w.count || len(g.payload) != len(w.payload) {
			t.Fatalf("key group %d: state %d: %+v, want %+v", kg, i, g, w)
		}
		if g.count == 1 && g.kind != kindMap && !bytes.Equal(g.payload, w.payload) {
			t.Fatalf("key group %d: state %q: payload %x, want %x", kg, g.name, g.payload, w.payload)
		}
	}
}

// cpBox is a pointer value that can copy itself for snapshots.
type cpBox struct{ N int }

func (b *cpBox) CopyForSnapshot() (*cpBox, bool) {
	if b == nil {
		return nil, true
	}
	c := *b
	return &c, true
}

// rawBox is a pointer value without a Copier.
type rawBox struct{ N int }

// TestViewOfMutableValues: a value state whose values are pointers changed
// in place by their reader is snapshotted as at the view, both when the
// type can copy itself (copied on the read after the view) and when it
// cannot (encoded when the view is taken).
func TestViewOfMutableValues(t *testing.T) {
	b := NewBackend[int64](0, 3, clock.NewManual(0))
	cp, err := GetValue[int64, struct{}](b, state.Value[*cpBox]("cp"))
	if err != nil {
		t.Fatal(err)
	}
	raw, err := GetValue[int64, struct{}](b, state.Value[*rawBox]("raw"))
	if err != nil {
		t.Fatal(err)
	}
	if !cp.t.cow.plain || !cp.t.cow.copyOnRead || raw.t.cow.plain {
		t.Fatalf("cow config: cp %+v, raw plain %v", cp.t.cow, raw.t.cow.plain)
	}
	for k := range int64(20) {
		b.SetCurrentKey(k, int(k%4))
		cp.Update(&cpBox{N: int(k)})
		raw.Update(&rawBox{N: int(k)})
	}
	want := map[int][]byte{}
	for kg := range 4 {
		want[kg], _ = b.SnapshotKeyGroup(kg)
	}
	v, err := b.View()
	if err != nil {
		t.Fatal(err)
	}
	for k := range int64(20) {
		b.SetCurrentKey(k, int(k%4))
		x, _ := cp.Value()
		x.N += 1000
		y, _ := raw.Value()
		y.N += 1000
	}
	b.SetCurrentKey(3, 3)
	if x, _ := cp.Value(); x.N != 1003 {
		t.Fatalf("live value %d, want 1003", x.N)
	}
	got := map[int][]byte{}
	for kg := range 4 {
		if got[kg], err = v.AppendKeyGroupSnapshot(nil, kg); err != nil {
			t.Fatal(err)
		}
	}
	r := NewBackend[int64](0, 3, clock.NewManual(0))
	rcp, _ := GetValue[int64, struct{}](r, state.Value[*cpBox]("cp"))
	rraw, _ := GetValue[int64, struct{}](r, state.Value[*rawBox]("raw"))
	for kg := range 4 {
		if len(got[kg]) != len(want[kg]) {
			t.Fatalf("key group %d: %d bytes, want %d", kg, len(got[kg]), len(want[kg]))
		}
		if err := r.RestoreKeyGroup(kg, got[kg]); err != nil {
			t.Fatal(err)
		}
	}
	for k := range int64(20) {
		r.SetCurrentKey(k, int(k%4))
		x, _ := rcp.Value()
		y, _ := rraw.Value()
		if x.N != int(k) || y.N != int(k) {
			t.Fatalf("key %d: restored %d and %d, want %d", k, x.N, y.N, k)
		}
	}
}
