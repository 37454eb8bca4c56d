package state

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/weirstream/weir/internal/clock"
	"github.com/weirstream/weir/internal/keygroup"
	"github.com/weirstream/weir/state"
	"github.com/weirstream/weir/window"
)

// fixture is a backend with one state of every kind: value and list state
// in string namespaces, map state in window namespaces, reducing state and
// aggregating state (an accumulator with unexported fields) in the void
// namespace.
type fixture struct {
	b *Backend[int64]
	v *Value[int64, string, string]
	l *List[int64, string, int]
	m *Map[int64, window.TimeWindow, string, int64]
	r *Reducing[int64, string, int64]
	a *Aggregating[int64, struct{}, int, avgAcc, float64]
}

var stateNames = []string{"agg", "list", "map", "reducing", "value"}

func newFixture(t fataler, first, last int, clk clock.Clock, ttl state.TTLConfig) *fixture {
	t.Helper()
	f := &fixture{b: NewBackend[int64](first, last, clk)}
	f.register(t, ttl, stateNames...)
	return f
}

// register registers the named states of the fixture.
func (f *fixture) register(t fataler, ttl state.TTLConfig, names ...string) {
	t.Helper()
	opt := state.WithTTL(ttl)
	var err error
	for _, name := range names {
		switch name {
		case "value":
			f.v, err = GetValue[int64, string](f.b, state.Value[string]("value", opt))
		case "list":
			f.l, err = GetList[int64, string](f.b, state.List[int]("list", opt))
		case "map":
			f.m, err = GetMap[int64, window.TimeWindow](f.b, state.Map[string, int64]("map", opt))
		case "reducing":
			f.r, err = GetReducing[int64, string](f.b, state.Reducing("reducing", func(a, b int64) int64 { return a*31 + b }, opt))
		case "agg":
			f.a, err = GetAggregating[int64, struct{}](f.b, state.Aggregating[int, avgAcc, float64]("agg", avg{}, opt))
		}
		if err != nil {
			t.Fatalf("register %s: %v", name, err)
		}
	}
}

func (f *fixture) checkInvariants(t fataler) {
	t.Helper()
	checkInvariants(t, f.v.t)
	checkInvariants(t, f.l.t)
	checkInvariants(t, f.m.t)
	checkInvariants(t, f.r.t)
	checkInvariants(t, f.a.t)
}

// dumpTable adds every entry of t, with its TTL timestamp, to out.
func dumpTable[K, N comparable, S any](name string, t *table[K, N, S], first int, out map[string]string) {
	for i := range t.groups {
		for ek, c := range t.groups[i].all {
			out[fmt.Sprintf("%s|%d|%v|%v", name, first+i, ek.key, ek.ns)] = fmt.Sprintf("%+v|%d", c.v, c.ts)
		}
	}
}

// dump returns the full contents of the fixture's states.
func (f *fixture) dump(out map[string]string) map[string]string {
	if out == nil {
		out = map[string]string{}
	}
	first, _ := f.b.KeyGroupRange()
	dumpTable("value", f.v.t, first, out)
	dumpTable("list", f.l.t, first, out)
	dumpTable("map", f.m.t, first, out)
	dumpTable("reducing", f.r.t, first, out)
	dumpTable("agg", f.a.t, first, out)
	return out
}

func dumpAll(fs ...*fixture) map[string]string {
	out := map[string]string{}
	for _, f := range fs {
		f.dump(out)
	}
	return out
}

func kgOf(key int64, maxP int) int { return keygroup.Of(keygroup.HashInt64(key), maxP) }

// route returns the fixture whose range holds kg.
func route(fs []*fixture, kg int) *fixture {
	for _, f := range fs {
		if first, last := f.b.KeyGroupRange(); kg >= first && kg <= last {
			return f
		}
	}
	panic(fmt.Sprintf("no fixture holds key group %d", kg))
}

// populate writes state for keys 0..keys-1, each into the fixture that owns
// its key group, moving the clock so that TTL timestamps differ.
func populate(fs []*fixture, clk *clock.Manual, keys, maxP int, seed uint64) {
	rng := rand.New(rand.NewPCG(seed, 1))
	for k := range int64(keys) {
		kg := kgOf(k, maxP)
		f := route(fs, kg)
		f.b.SetCurrentKey(k, kg)
		clk.Advance(int64(rng.IntN(3)))
		for _, ns := range []string{"", "w1", "w2"}[:1+rng.IntN(3)] {
			f.v.SetNamespace(ns)
			f.v.Update(fmt.Sprintf("v%d-%s", k, ns))
			f.l.SetNamespace(ns)
			for i := range 1 + rng.IntN(4) {
				clk.Advance(int64(rng.IntN(2)))
				f.l.Add(int(k)*10 + i)
			}
			f.r.SetNamespace(ns)
			f.r.Add(k)
			f.r.Add(int64(rng.IntN(100)))
		}
		for i := range rng.IntN(3) {
			w := window.TimeWindow{Start: int64(i) * 1000, End: int64(i+1) * 1000}
			f.m.SetNamespace(w)
			for j := range 1 + rng.IntN(3) {
				clk.Advance(int64(rng.IntN(2)))
				f.m.Put(fmt.Sprintf("e%d", j), k*int64(j))
			}
		}
		for range rng.IntN(4) {
			f.a.Add(rng.IntN(50))
		}
		if rng.IntN(10) == 0 {
			f.v.SetNamespace("")
			f.v.Clear()
		}
	}
}

// snapshotAll returns the snapshots of every key group of the fixtures.
func snapshotAll(t fataler, fs ...*fixture) map[int][]byte {
	t.Helper()
	out := map[int][]byte{}
	for _, f := range fs {
		first, last := f.b.KeyGroupRange()
		for kg := first; kg <= last; kg++ {
			data, err := f.b.SnapshotKeyGroup(kg)
			if err != nil {
				t.Fatalf("snapshot of key group %d: %v", kg, err)
			}
			out[kg] = data
		}
	}
	return out
}

// restoreRange builds a fixture for [first, last] from snaps, registering
// its states before or after the restore.
func restoreRange(t fataler, snaps map[int][]byte, first, last int, clk clock.Clock, ttl state.TTLConfig, registerFirst bool) *fixture {
	t.Helper()
	f := &fixture{b: NewBackend[int64](first, last, clk)}
	if registerFirst {
		f.register(t, ttl, stateNames...)
	}
	for kg := first; kg <= last; kg++ {
		if err := f.b.RestoreKeyGroup(kg, snaps[kg]); err != nil {
			t.Fatalf("restore of key group %d: %v", kg, err)
		}
	}
	if !registerFirst {
		f.register(t, ttl, stateNames...)
	}
	f.checkInvariants(t)
	return f
}

func equalDumps(t fataler, got, want map[string]string) {
	t.Helper()
	if len(want) == 0 {
		t.Fatalf("nothing to compare: the original state is empty")
	}
	if maps.Equal(got, want) {
		return
	}
	for k, w := range want {
		if g, ok := got[k]; !ok || g != w {
			t.Fatalf("entry %s: restored %q, original %q (%d vs %d entries)", k, g, w, len(got), len(want))
		}
	}
	for k, g := range got {
		if _, ok := want[k]; !ok {
			t.Fatalf("restored entry %s = %q does not exist in the original", k, g)
		}
	}
}

var ttlConfigs = map[string]state.TTLConfig{
	"noTTL": {},
	"TTL":   state.TTL(time.Hour),
}

func TestSnapshotRoundTripAllKinds(t *testing.T) {
	for name, ttl := range ttlConfigs {
		for _, registerFirst := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/registerFirst=%v", name, registerFirst), func(t *testing.T) {
				clk := clock.NewManual(1000)
				orig := newFixture(t, 0, 15, clk, ttl)
				populate([]*fixture{orig}, clk, 200, 16, 1)
				want := orig.dump(nil)
				snaps := snapshotAll(t, orig)
				if got := orig.dump(nil); !maps.Equal(got, want) {
					t.Fatal("taking a snapshot changed the state")
				}
				re := restoreRange(t, snaps, 0, 15, clk, ttl, registerFirst)
				equalDumps(t, re.dump(nil), want)
				if re.b.KeyCount() != orig.b.KeyCount() {
					t.Fatalf("KeyCount %d, want %d", re.b.KeyCount(), orig.b.KeyCount())
				}
				// The restored handles read what the original ones read.
				for k := range int64(200) {
					kg := kgOf(k, 16)
					for _, f := range []*fixture{orig, re} {
						f.b.SetCurrentKey(k, kg)
						f.v.SetNamespace("w1")
						f.l.SetNamespace("w1")
						f.m.SetNamespace(window.TimeWindow{Start: 0, End: 1000})
					}
					if a, b := fmt.Sprint(orig.v.Value()), fmt.Sprint(re.v.Value()); a != b {
						t.Fatalf("key %d value %s, restored %s", k, a, b)
					}
					if a, b := orig.l.Get(), re.l.Get(); !slices.Equal(a, b) {
						t.Fatalf("key %d list %v, restored %v", k, a, b)
					}
					if a, b := maps.Collect(orig.m.All()), maps.Collect(re.m.All()); !maps.Equal(a, b) {
						t.Fatalf("key %d map %v, restored %v", k, a, b)
					}
					if a, b := fmt.Sprint(orig.a.Get()), fmt.Sprint(re.a.Get()); a != b {
						t.Fatalf("key %d aggregate %s, restored %s", k, a, b)
					}
				}
			})
		}
	}
}

func TestSnapshotRescale(t *testing.T) {
	const maxP, keys = 128, 600
	for name, ttl := range ttlConfigs {
		t.Run(name, func(t *testing.T) {
			clk := clock.NewManual(5000)
			a := newFixture(t, 0, 63, clk, ttl)
			b := newFixture(t, 64, 127, clk, ttl)
			populate([]*fixture{a, b}, clk, keys, maxP, 2)
			want := dumpAll(a, b)
			snaps := snapshotAll(t, a, b)

			// Scale in: two subtasks into one.
			one := restoreRange(t, snaps, 0, 127, clk, ttl, false)
			equalDumps(t, one.dump(nil), want)

			// Scale out again, unevenly, from the merged backend's snapshots.
			snaps = snapshotAll(t, one)
			var parts []*fixture
			for _, r := range [][2]int{{0, 41}, {42, 42}, {43, 127}} {
				parts = append(parts, restoreRange(t, snaps, r[0], r[1], clk, ttl, r[0] == 42))
			}
			equalDumps(t, dumpAll(parts...), want)

			// Every key reads its state in the subtask that now owns it.
			for k := range int64(keys) {
				kg := kgOf(k, maxP)
				src, dst := route([]*fixture{a, b}, kg), route(parts, kg)
				for _, f := range []*fixture{src, dst} {
					f.b.SetCurrentKey(k, kg)
					f.r.SetNamespace("")
				}
				if x, y := fmt.Sprint(src.r.Get()), fmt.Sprint(dst.r.Get()); x != y {
					t.Fatalf("key %d: reducing %s before, %s after rescale", k, x, y)
				}
			}
		})
	}
}

// TestSnapshotOfUnregisteredRestoredState restores into a backend that
// registers only some states, snapshots it again (the others are carried
// over as restored) and restores that into a backend with all states.
func TestSnapshotOfUnregisteredRestoredState(t *testing.T) {
	ttl := state.TTL(time.Hour)
	clk := clock.NewManual(1000)
	orig := newFixture(t, 0, 7, clk, ttl)
	populate([]*fixture{orig}, clk, 100, 8, 3)
	want := orig.dump(nil)
	snaps := snapshotAll(t, orig)

	mid := &fixture{b: NewBackend[int64](0, 7, clk)}
	for kg := range 8 {
		if err := mid.b.RestoreKeyGroup(kg, snaps[kg]); err != nil {
			t.Fatal(err)
		}
	}
	if mid.b.KeyCount() != orig.b.KeyCount() {
		t.Fatalf("KeyCount of restored, unregistered state = %d, want %d", mid.b.KeyCount(), orig.b.KeyCount())
	}
	if n := len(slices.Collect(mid.b.Keys("value"))); n != 0 {
		t.Fatalf("Keys of an unregistered state yields %d keys", n)
	}
	mid.register(t, ttl, "value", "map")
	// A registered state can be written; the others are carried as is.
	mid.b.SetCurrentKey(1, kgOf(1, 8))
	mid.v.Update("changed")
	want[fmt.Sprintf("value|%d|1|", kgOf(1, 8))] = fmt.Sprintf("changed|%d", clk.NowMillis())

	final := restoreRange(t, snapshotAll(t, mid), 0, 7, clk, ttl, false)
	equalDumps(t, final.dump(nil), want)
}

// TestSnapshotIsPointInTime checks that later changes do not reach a
// snapshot already taken, lists and maps included.
func TestSnapshotIsPointInTime(t *testing.T) {
	clk := clock.NewManual(0)
	f := newFixture(t, 0, 0, clk, state.TTLConfig{})
	f.b.SetCurrentKey(7, 0)
	f.v.Update("before")
	f.l.AddAll([]int{1, 2})
	f.m.Put("a", 1)
	want := f.dump(nil)
	data, err := f.b.SnapshotKeyGroup(0)
	if err != nil {
		t.Fatal(err)
	}
	f.v.Update("after")
	f.l.Add(3)
	f.m.Put("a", 2)
	f.m.Put("b", 3)
	re := restoreRange(t, map[int][]byte{0: data}, 0, 0, clk, state.TTLConfig{}, false)
	equalDumps(t, re.dump(nil), want)
}

// TestSnapshotTTL checks that timestamps survive, expired entries are
// written as they are and expire after the restore, and that TTL may be
// turned off, not on, by a restore.
func TestSnapshotTTL(t *testing.T) {
	clk := clock.NewManual(100)
	ttl := state.TTL(10 * time.Millisecond)
	ttl.DisableBackgroundCleanup = true
	f := newFixture(t, 0, 0, clk, ttl)
	f.b.SetCurrentKey(1, 0)
	f.v.Update("old") // ts 100, expires at 110
	f.l.Add(1)        // ts 100
	clk.Set(105)
	f.l.Add(2) // ts 105
	f.m.Put("x", 5)
	clk.Set(112)
	f.b.SetCurrentKey(2, 0)
	f.v.Update("new") // ts 112
	data, err := f.b.SnapshotKeyGroup(0)
	if err != nil {
		t.Fatal(err)
	}
	want := f.dump(nil)
	if len(want) != 4 {
		t.Fatalf("expected 4 entries (one expired) before the snapshot, have %v", want)
	}

	re := restoreRange(t, map[int][]byte{0: data}, 0, 0, clk, ttl, false)
	equalDumps(t, re.dump(nil), want)
	re.b.SetCurrentKey(1, 0)
	if _, ok := re.v.Value(); ok {
		t.Fatal("value expired before the snapshot is readable after the restore")
	}
	if got := re.l.Get(); !slices.Equal(got, []int{2}) {
		t.Fatalf("list after restore at 112 = %v, want [2]", got)
	}
	clk.Set(121)
	re.b.SetCurrentKey(2, 0)
	if v, ok := re.v.Value(); !ok || v != "new" {
		t.Fatalf("value = %q %v at 121, want new (expires at 122)", v, ok)
	}
	clk.Set(122)
	if _, ok := re.v.Value(); ok {
		t.Fatal("restored timestamp not kept: value alive at 122")
	}

	// TTL on -> off: timestamps are dropped.
	off := restoreRange(t, map[int][]byte{0: data}, 0, 0, clk, state.TTLConfig{}, false)
	off.b.SetCurrentKey(1, 0)
	if v, ok := off.v.Value(); !ok || v != "old" {
		t.Fatalf("without TTL, restored value = %q %v, want old", v, ok)
	}
	if c := off.v.lookup(); c.ts != 0 {
		t.Fatalf("timestamp %d kept without TTL", c.ts)
	}

	// TTL off -> on: an error at registration.
	plain := newFixture(t, 0, 0, clk, state.TTLConfig{})
	plain.b.SetCurrentKey(1, 0)
	plain.v.Update("x")
	pdata, err := plain.b.SnapshotKeyGroup(0)
	if err != nil {
		t.Fatal(err)
	}
	b := NewBackend[int64](0, 0, clk)
	if err := b.RestoreKeyGroup(0, pdata); err != nil {
		t.Fatal(err)
	}
	_, err = GetValue[int64, string](b, state.Value[string]("value", state.WithTTL(ttl)))
	if err == nil || !strings.Contains(err.Error(), "without TTL") {
		t.Fatalf("registering a restored state with TTL turned on: %v", err)
	}
}

// upperCodec stores strings upper-cased and counts its calls, to show that
// the descriptor's codec is used both ways.
type upperCodec struct{ appends, decodes *int }

func (c upperCodec) Append(dst []byte, v string) ([]byte, error) {
	*c.appends++
	return appendString(dst, strings.ToUpper(v)), nil
}

func (c upperCodec) Decode(src []byte) (string, []byte, error) {
	*c.decodes++
	b, rest, err := readBytes(src)
	return string(b), rest, err
}

type failCodec struct{}

func (failCodec) Append(dst []byte, _ string) ([]byte, error) {
	return dst, errors.New("cannot encode")
}
func (failCodec) Decode(src []byte) (string, []byte, error) {
	return "", src, errors.New("cannot decode")
}

func TestSnapshotUsesDescriptorCodecs(t *testing.T) {
	var ap, de int
	uc := upperCodec{&ap, &de}
	clk := clock.NewManual(0)
	b := NewBackend[string](0, 3, clk)
	v := must[*Value[string, struct{}, string]](t)(GetValue[string, struct{}](b, state.Value[string]("v", state.WithCodec[string](uc))))
	m := must[*Map[string, struct{}, string, string]](t)(GetMap[string, struct{}](b,
		state.Map[string, string]("m", state.WithCodec[string](uc), state.WithKeyCodec[string](uc))))
	b.SetCurrentKey("k", 2)
	v.Update("hello")
	m.Put("key", "val")
	data := must[[]byte](t)(b.SnapshotKeyGroup(2))
	if ap != 3 {
		t.Fatalf("codec Append called %d times, want 3", ap)
	}
	b2 := NewBackend[string](0, 3, clk)
	if err := b2.RestoreKeyGroup(2, data); err != nil {
		t.Fatal(err)
	}
	v2 := must[*Value[string, struct{}, string]](t)(GetValue[string, struct{}](b2, state.Value[string]("v", state.WithCodec[string](uc))))
	m2 := must[*Map[string, struct{}, string, string]](t)(GetMap[string, struct{}](b2,
		state.Map[string, string]("m", state.WithCodec[string](uc), state.WithKeyCodec[string](uc))))
	b2.SetCurrentKey("k", 2)
	if got, _ := v2.Value(); got != "HELLO" || de != 3 {
		t.Fatalf("restored %q with %d decodes, want HELLO with 3", got, de)
	}
	if got, _ := m2.Get("KEY"); got != "VAL" {
		t.Fatalf("restored map = %v", maps.Collect(m2.All()))
	}

	// A codec that cannot decode fails the registration, with the state's
	// name, and leaves the restored entries for a later registration.
	b3 := NewBackend[string](0, 3, clk)
	if err := b3.RestoreKeyGroup(2, data); err != nil {
		t.Fatal(err)
	}
	_, err := GetValue[string, struct{}](b3, state.Value[string]("v", state.WithCodec[string](failCodec{})))
	if err == nil || !strings.Contains(err.Error(), `"v"`) || !strings.Contains(err.Error(), "cannot decode") {
		t.Fatalf("registration with a failing codec: %v", err)
	}
	if _, ok := b3.states["v"]; ok {
		t.Fatal("failed registration was kept")
	}
	v3 := must[*Value[string, struct{}, string]](t)(GetValue[string, struct{}](b3, state.Value[string]("v", state.WithCodec[string](uc))))
	b3.SetCurrentKey("k", 2)
	if got, _ := v3.Value(); got != "HELLO" {
		t.Fatalf("second registration restored %q", got)
	}

	// A codec that cannot encode fails the snapshot, and dst is unchanged.
	b4 := NewBackend[string](0, 3, clk)
	v4 := must[*Value[string, struct{}, string]](t)(GetValue[string, struct{}](b4, state.Value[string]("v", state.WithCodec[string](failCodec{}))))
	b4.SetCurrentKey("k", 1)
	v4.Update("x")
	dst := []byte("prefix")
	out, err := b4.AppendKeyGroupSnapshot(dst, 1)
	if err == nil || !strings.Contains(err.Error(), `"v"`) || string(out) != "prefix" {
		t.Fatalf("snapshot with a failing codec: %q, %v", out, err)
	}
}

func TestSnapshotGobValues(t *testing.T) {
	clk := clock.NewManual(0)
	b := NewBackend[string](0, 0, clk)
	v := must[*Value[string, struct{}, gobbed]](t)(GetValue[string, struct{}](b, state.Value[gobbed]("g")))
	b.SetCurrentKey("k", 0)
	in := gobbed{Tags: map[string]int{"x": 1}, Items: []string{"a"}}
	v.Update(in)
	data := must[[]byte](t)(b.SnapshotKeyGroup(0))
	b2 := NewBackend[string](0, 0, clk)
	if err := b2.RestoreKeyGroup(0, data); err != nil {
		t.Fatal(err)
	}
	v2 := must[*Value[string, struct{}, gobbed]](t)(GetValue[string, struct{}](b2, state.Value[gobbed]("g")))
	b2.SetCurrentKey("k", 0)
	if got, _ := v2.Value(); fmt.Sprint(got) != fmt.Sprint(in) {
		t.Fatalf("gob round trip: %+v", got)
	}

	type opaque struct{ s []int }
	o := must[*Value[string, struct{}, opaque]](t)(GetValue[string, struct{}](b, state.Value[opaque]("o")))
	o.Update(opaque{})
	if _, err := b.SnapshotKeyGroup(0); err == nil || !strings.Contains(err.Error(), "gob") || !strings.Contains(err.Error(), `"o"`) {
		t.Fatalf("snapshot of a value gob cannot encode: %v", err)
	}
}

func TestRestoreErrors(t *testing.T) {
	clk := clock.NewManual(0)
	src := newFixture(t, 0, 7, clk, state.TTLConfig{})
	populate([]*fixture{src}, clk, 50, 8, 4)
	snaps := snapshotAll(t, src)
	kg := kgOf(0, 8)
	data := snaps[kg]

	fresh := func() *Backend[int64] { return NewBackend[int64](0, 7, clk) }
	wantErr := func(what string, err error, sub string) {
		t.Helper()
		if err == nil || !strings.Contains(err.Error(), sub) {
			t.Errorf("%s: error %v, want one containing %q", what, err, sub)
		}
	}

	wantErr("outside range", NewBackend[int64](8, 15, clk).RestoreKeyGroup(kg, data), "outside")
	wantErr("other key group", fresh().RestoreKeyGroup((kg+1)%8, data), "snapshot is of key group")
	wantErr("other key type", NewBackend[string](0, 7, clk).RestoreKeyGroup(kg, data), "key: the type changed (saved as int64; the job has string)")
	b := fresh()
	if err := b.RestoreKeyGroup(kg, data); err != nil {
		t.Fatal(err)
	}
	wantErr("twice", b.RestoreKeyGroup(kg, data), "already restored")

	b = fresh()
	v := must[*Value[int64, string, string]](t)(GetValue[int64, string](b, state.Value[string]("value")))
	b.SetCurrentKey(0, kg)
	v.Update("live")
	wantErr("into live entries", b.RestoreKeyGroup(kg, data), "already has entries")

	// Incompatible registrations after a restore.
	for _, c := range []struct {
		what, sub string
		reg       func(b *Backend[int64]) error
	}{
		{"kind", `state "value": it was saved as value state and the job has list state`, func(b *Backend[int64]) error {
			_, err := GetList[int64, string](b, state.List[string]("value"))
			return err
		}},
		{"value type", `state "value": value: the type changed (saved as string; the job has int64)`, func(b *Backend[int64]) error {
			_, err := GetValue[int64, string](b, state.Value[int64]("value"))
			return err
		}},
		{"namespace type", `state "value": namespace: the type changed (saved as string; the job has an empty type)`, func(b *Backend[int64]) error {
			_, err := GetValue[int64, struct{}](b, state.Value[string]("value"))
			return err
		}},
	} {
		b := fresh()
		if err := b.RestoreKeyGroup(kg, data); err != nil {
			t.Fatal(err)
		}
		wantErr(c.what, c.reg(b), c.sub)
		// The same incompatibility is reported when the state is
		// registered before the restore.
		b = fresh()
		if c.reg(b) == nil {
			wantErr(c.what+" (registered first)", b.RestoreKeyGroup(kg, data), c.sub)
			if b.restored != nil && b.restored[kg] {
				t.Errorf("%s: failed restore marked the key group restored", c.what)
			}
		}
	}

	// An unsupported version, with a valid checksum.
	bad := slices.Clone(data)
	bad[4] = 3
	fixCRC(bad)
	wantErr("version", fresh().RestoreKeyGroup(kg, bad), "unsupported snapshot version 3")
}

func fixCRC(data []byte) {
	n := len(data) - 4
	binary.LittleEndian.PutUint32(data[n:], crc32.Checksum(data[:n], castagnoli))
}

// TestRestoreCorruptInput feeds truncated and damaged snapshots: each must
// fail with ErrCorrupt and leave the backend as it was.
func TestRestoreCorruptInput(t *testing.T) {
	clk := clock.NewManual(0)
	src := newFixture(t, 0, 0, clk, state.TTL(time.Hour))
	populate([]*fixture{src}, clk, 6, 1, 5)
	data := snapshotAll(t, src)[0]
	want := src.dump(nil)

	b := NewBackend[int64](0, 0, clk)
	check := func(what string, in []byte) {
		t.Helper()
		err := b.RestoreKeyGroup(0, in)
		if !errors.Is(err, ErrCorrupt) {
			t.Fatalf("%s: error %v, want ErrCorrupt", what, err)
		}
		if b.KeyCount() != 0 || b.restored != nil {
			t.Fatalf("%s: a failed restore changed the backend", what)
		}
	}
	for n := range len(data) {
		check(fmt.Sprintf("truncated to %d of %d bytes", n, len(data)), data[:n])
	}
	check("extended", append(slices.Clone(data), 0))
	for i := range data {
		for _, x := range []byte{0x01, 0x80, 0xFF} {
			bad := slices.Clone(data)
			bad[i] ^= x
			check(fmt.Sprintf("byte %d ^ %#x", i, x), bad)
		}
	}
	// The backend is still usable.
	if err := b.RestoreKeyGroup(0, data); err != nil {
		t.Fatal(err)
	}
	f := &fixture{b: b}
	f.register(t, state.TTL(time.Hour), stateNames...)
	equalDumps(t, f.dump(nil), want)
}

// TestRestoreDamageBehindValidChecksum damages every byte of a snapshot and
// fixes the checksum, so that the parser and the decoders meet the damage:
// restore and registration may fail, never panic, and what they accept can
// be snapshotted again.
func TestRestoreDamageBehindValidChecksum(t *testing.T) {
	clk := clock.NewManual(0)
	src := newFixture(t, 0, 0, clk, state.TTL(time.Hour))
	populate([]*fixture{src}, clk, 4, 1, 6)
	data := snapshotAll(t, src)[0]
	for i := range len(data) - 4 {
		for _, x := range []byte{0x01, 0x7F, 0x80} {
			bad := slices.Clone(data)
			bad[i] ^= x
			fixCRC(bad)
			restoreDamaged(t, bad)
		}
	}
}

func restoreDamaged(t *testing.T, data []byte) {
	t.Helper()
	clk := clock.NewManual(0)
	b := NewBackend[int64](0, 0, clk)
	if b.RestoreKeyGroup(0, data) != nil {
		return
	}
	ttl := state.TTL(time.Hour)
	opt := state.WithTTL(ttl)
	_, _ = GetValue[int64, string](b, state.Value[string]("value", opt))
	_, _ = GetList[int64, string](b, state.List[int]("list", opt))
	_, _ = GetMap[int64, window.TimeWindow](b, state.Map[string, int64]("map", opt))
	_, _ = GetReducing[int64, string](b, state.Reducing("reducing", func(a, b int64) int64 { return a + b }, opt))
	_, _ = GetAggregating[int64, struct{}](b, state.Aggregating[int, avgAcc, float64]("agg", avg{}, opt))
	for _, r := range b.states {
		switch tb := r.tbl.(type) {
		case *table[int64, string, string]:
			checkInvariants(t, tb)
		case *table[int64, string, listData[int]]:
			checkInvariants(t, tb)
		}
	}
	if _, err := b.SnapshotKeyGroup(0); err != nil {
		t.Fatalf("snapshot of accepted damaged data: %v", err)
	}
}

// FuzzRestoreKeyGroup restores arbitrary bytes (with a fixed-up checksum)
// and registers the fixture's states; nothing may panic.
func FuzzRestoreKeyGroup(f *testing.F) {
	clk := clock.NewManual(0)
	src := newFixture(f, 0, 0, clk, state.TTL(time.Hour))
	populate([]*fixture{src}, clk, 3, 1, 7)
	f.Add(snapshotAll(f, src)[0])
	f.Add([]byte("WKGS\x01\x00\x05int64\x00\x00\x00\x00\x00"))
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) >= 8 {
			fixCRC(data)
		}
		restoreDamaged(t, data)
	})
}
