package statetest

import (
	"fmt"
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/weirstream/weir/internal/clock"
	"github.com/weirstream/weir/state"
)

type suite struct{ f Factory }

// mustError is the panic of must; Run's subtests turn it into a test
// failure.
type mustError struct{ err error }

// must returns v, or fails the running subtest if err is not nil.
func must[T any](v T, err error) T {
	if err != nil {
		panic(mustError{err})
	}
	return v
}

// catch turns a panic of must into a fatal test failure.
func catch(t testing.TB) {
	if p := recover(); p != nil {
		if m, ok := p.(mustError); ok {
			t.Fatal(m.err)
		}
		panic(p)
	}
}

// newBackend returns a backend for all the suite's key groups and its
// clock, standing at 1000.
func (s *suite) newBackend(t testing.TB) (Backend, *clock.Manual) {
	clk := clock.NewManual(1000)
	return s.f.New(t, 0, KeyGroups-1, clk), clk
}

func setKey(b Backend, key string) { b.SetCurrentKey(key, KeyGroupOf(key)) }

func wantValue[V comparable](t testing.TB, what string, got V, ok bool, want V, wantOK bool) {
	t.Helper()
	if ok != wantOK || got != want {
		t.Fatalf("%s = %v, %v; want %v, %v", what, got, ok, want, wantOK)
	}
}

func wantList(t testing.TB, what string, got []string, want ...string) {
	t.Helper()
	if got == nil {
		t.Fatalf("%s: nil list, want a non-nil (possibly empty) one", what)
	}
	if !slices.Equal(got, want) {
		t.Fatalf("%s = %q, want %q", what, got, want)
	}
}

func wantMap(t testing.TB, what string, m state.MapState[string, int64], want map[string]int64) {
	t.Helper()
	got := maps.Collect(m.All())
	if len(got) == 0 && len(want) == 0 {
		if !m.IsEmpty() {
			t.Fatalf("%s: IsEmpty false for an empty map", what)
		}
		return
	}
	if !maps.Equal(got, want) {
		t.Fatalf("%s = %v, want %v", what, got, want)
	}
	keys := slices.Sorted(m.Keys())
	if !slices.Equal(keys, slices.Sorted(maps.Keys(want))) {
		t.Fatalf("%s: Keys = %v", what, keys)
	}
	vals := slices.Sorted(m.Values())
	if !slices.Equal(vals, slices.Sorted(maps.Values(want))) {
		t.Fatalf("%s: Values = %v", what, vals)
	}
	if m.IsEmpty() {
		t.Fatalf("%s: IsEmpty true for %v", what, want)
	}
}

func (s *suite) testValue(t *testing.T) {
	b, _ := s.newBackend(t)
	v := must(s.f.Value(b, state.Value[int64]("v")))
	str := must(s.f.StringValue(b, state.Value[string]("s")))
	setKey(b, "a")
	got, ok := v.Value()
	wantValue(t, "absent value", got, ok, 0, false)
	v.Update(0)
	got, ok = v.Value()
	wantValue(t, "stored zero", got, ok, 0, true)
	v.Update(42)
	got, ok = v.Value()
	wantValue(t, "value", got, ok, 42, true)
	str.Update("héllo")
	sv, ok := str.Value()
	wantValue(t, "string value", sv, ok, "héllo", true)
	v.Clear()
	got, ok = v.Value()
	wantValue(t, "cleared value", got, ok, 0, false)
	v.Clear() // clearing an absent value is fine
	sv, ok = str.Value()
	wantValue(t, "other state after clear", sv, ok, "héllo", true)
}

func (s *suite) testList(t *testing.T) {
	b, _ := s.newBackend(t)
	l := must(s.f.List(b, state.List[string]("l")))
	setKey(b, "a")
	wantList(t, "absent list", l.Get())
	l.Add("x")
	l.AddAll([]string{"y", "z"})
	l.AddAll(nil)
	wantList(t, "after adds", l.Get(), "x", "y", "z")
	got := l.Get()
	got[0] = "changed"
	wantList(t, "after changing a Get copy", l.Get(), "x", "y", "z")
	var seen []string
	for v := range l.All() {
		seen = append(seen, v)
		if len(seen) == 2 {
			break
		}
	}
	if !slices.Equal(seen, []string{"x", "y"}) {
		t.Fatalf("All with break = %q", seen)
	}
	src := []string{"p", "q"}
	l.Update(src)
	src[0] = "changed"
	wantList(t, "after update", l.Get(), "p", "q")
	l.Add("")
	wantList(t, "after adding an empty string", l.Get(), "p", "q", "")
	l.Update(nil)
	wantList(t, "after empty update", l.Get())
	l.Add("r")
	l.Clear()
	wantList(t, "after clear", l.Get())
	if n := len(slices.Collect(l.All())); n != 0 {
		t.Fatalf("All of a cleared list yields %d elements", n)
	}
}

func (s *suite) testMap(t *testing.T) {
	b, _ := s.newBackend(t)
	m := must(s.f.Map(b, state.Map[string, int64]("m")))
	setKey(b, "a")
	got, ok := m.Get("x")
	wantValue(t, "absent entry", got, ok, 0, false)
	wantMap(t, "absent map", m, nil)
	if m.Contains("x") {
		t.Fatal("Contains of an absent entry")
	}
	m.Put("x", 1)
	m.Put("y", 2)
	m.Put("x", 3)
	m.PutAll(map[string]int64{"z": 4, "": 0})
	m.PutAll(nil)
	wantMap(t, "after puts", m, map[string]int64{"x": 3, "y": 2, "z": 4, "": 0})
	got, ok = m.Get("")
	wantValue(t, "entry with empty key and zero value", got, ok, 0, true)
	if !m.Contains("y") || m.Contains("w") {
		t.Fatal("Contains wrong")
	}
	m.Remove("y")
	m.Remove("w")
	wantMap(t, "after removes", m, map[string]int64{"x": 3, "z": 4, "": 0})
	n := 0
	for range m.All() {
		n++
		break
	}
	if n != 1 {
		t.Fatal("All with break")
	}
	m.Remove("x")
	m.Remove("z")
	m.Remove("")
	wantMap(t, "after removing every entry", m, nil)
	m.Put("k", 7)
	m.Clear()
	wantMap(t, "after clear", m, nil)
}

func (s *suite) testMapModify(t *testing.T) {
	b, _ := s.newBackend(t)
	m := must(s.f.Map(b, state.Map[string, int64]("m")))
	setKey(b, "a")
	want := map[string]int64{}
	for i := range 20 {
		k := fmt.Sprint("k", i)
		m.Put(k, int64(i))
		want[k] = int64(i)
	}
	for k, v := range m.All() {
		if v%2 == 0 {
			m.Remove(k)
			delete(want, k)
		} else {
			m.Put(k, v*10)
			want[k] = v * 10
		}
	}
	wantMap(t, "after modifying during iteration", m, want)
}

func (s *suite) testReducing(t *testing.T) {
	b, _ := s.newBackend(t)
	r := must(s.f.Reducing(b, state.Reducing[int64]("r", func(a, b int64) int64 { return a*10 + b })))
	setKey(b, "a")
	got, ok := r.Get()
	wantValue(t, "absent", got, ok, 0, false)
	r.Add(1)
	r.Add(2)
	r.Add(3)
	got, ok = r.Get()
	wantValue(t, "folded in order", got, ok, 123, true)
	r.Clear()
	got, ok = r.Get()
	wantValue(t, "cleared", got, ok, 0, false)
	r.Add(5)
	got, ok = r.Get()
	wantValue(t, "first after clear", got, ok, 5, true)
}

func (s *suite) testAggregating(t *testing.T) {
	b, _ := s.newBackend(t)
	a := must(s.f.Aggregating(b, state.Aggregating[int64, Avg, float64]("avg", AvgFunction{})))
	setKey(b, "a")
	got, ok := a.Get()
	wantValue(t, "absent", got, ok, 0, false)
	a.Add(1)
	a.Add(2)
	a.Add(6)
	got, ok = a.Get()
	wantValue(t, "average", got, ok, 3, true)
	a.Clear()
	got, ok = a.Get()
	wantValue(t, "cleared", got, ok, 0, false)
}

func (s *suite) testKeyIsolation(t *testing.T) {
	b, _ := s.newBackend(t)
	v := must(s.f.Value(b, state.Value[int64]("v")))
	l := must(s.f.List(b, state.List[string]("l")))
	m := must(s.f.Map(b, state.Map[string, int64]("m")))
	keys := []string{"a", "b", "c", "", "ab", "a\x00", "long-key-" + string(make([]byte, 100))}
	for i, k := range keys {
		setKey(b, k)
		v.Update(int64(i))
		l.Add(k)
		m.Put(k, int64(i))
	}
	for i, k := range keys {
		setKey(b, k)
		got, ok := v.Value()
		wantValue(t, fmt.Sprintf("value of %q", k), got, ok, int64(i), true)
		wantList(t, fmt.Sprintf("list of %q", k), l.Get(), k)
		wantMap(t, fmt.Sprintf("map of %q", k), m, map[string]int64{k: int64(i)})
	}
	setKey(b, "a")
	v.Clear()
	m.Clear()
	setKey(b, "ab")
	got, ok := v.Value()
	wantValue(t, "neighbour after clear", got, ok, 4, true)
	wantMap(t, "neighbour map after clear", m, map[string]int64{"ab": 4})
	setKey(b, "zz-unused")
	got, ok = v.Value()
	wantValue(t, "unused key", got, ok, 0, false)
}

func (s *suite) testRegistration(t *testing.T) {
	b, _ := s.newBackend(t)
	v1 := must(s.f.Value(b, state.Value[int64]("v")))
	v2 := must(s.f.Value(b, state.Value[int64]("v")))
	setKey(b, "a")
	v1.Update(9)
	got, ok := v2.Value()
	wantValue(t, "second handle of the same state", got, ok, 9, true)
	if _, err := s.f.List(b, state.List[string]("v")); err == nil {
		t.Fatal("registering a value state's name as a list state succeeded")
	}
	if _, err := s.f.StringValue(b, state.Value[string]("v")); err == nil {
		t.Fatal("registering a value state with another value type succeeded")
	}
	if _, err := s.f.Value(b, state.Value[int64]("v", state.WithTTL(state.TTL(time.Second)))); err == nil {
		t.Fatal("registering a state again with TTL succeeded")
	}
	if _, err := s.f.Value(b, state.Value[int64]("")); err == nil {
		t.Fatal("an empty name was accepted")
	}
	if _, err := s.f.Reducing(b, state.ReducingDescriptor[int64]{Name: "r"}); err == nil {
		t.Fatal("a reducing state without a function was accepted")
	}
}

func (s *suite) testNamespaces(t *testing.T) {
	b, _ := s.newBackend(t)
	v := must(s.f.NamespacedValue(b, state.Value[int64]("v")))
	l := must(s.f.NamespacedList(b, state.List[string]("l")))
	m := must(s.f.NamespacedMap(b, state.Map[string, int64]("m")))
	setKey(b, "a")
	for ns := int64(-2); ns <= 2; ns++ {
		v.SetNamespace(ns)
		l.SetNamespace(ns)
		m.SetNamespace(ns)
		v.Update(ns * 100)
		l.Add(fmt.Sprint(ns))
		m.Put("k", ns)
	}
	setKey(b, "b")
	v.SetNamespace(0)
	got, ok := v.Value()
	wantValue(t, "other key, namespace 0", got, ok, 0, false)
	setKey(b, "a")
	for ns := int64(-2); ns <= 2; ns++ {
		v.SetNamespace(ns)
		l.SetNamespace(ns)
		m.SetNamespace(ns)
		got, ok := v.Value()
		wantValue(t, fmt.Sprint("namespace ", ns), got, ok, ns*100, true)
		wantList(t, fmt.Sprint("list in namespace ", ns), l.Get(), fmt.Sprint(ns))
		wantMap(t, fmt.Sprint("map in namespace ", ns), m, map[string]int64{"k": ns})
	}
	m.SetNamespace(1)
	m.Clear()
	m.SetNamespace(2)
	wantMap(t, "namespace 2 after clearing namespace 1", m, map[string]int64{"k": 2})
}

func (s *suite) testKeyGroupRange(t *testing.T) {
	clk := clock.NewManual(0)
	b := s.f.New(t, 2, 3, clk)
	func() {
		defer func() {
			if recover() == nil {
				t.Fatal("SetCurrentKey outside the range did not panic")
			}
		}()
		b.SetCurrentKey("a", 4)
	}()
	if _, err := b.SnapshotKeyGroup(1); err == nil {
		t.Fatal("snapshot of a key group outside the range succeeded")
	}
}

func ttlConfig(d time.Duration, u state.UpdateType, vis state.Visibility) state.TTLConfig {
	c := state.TTL(d)
	c.Update, c.Visibility, c.CleanupEntries = u, vis, 0
	return c
}

func (s *suite) testTTLValue(t *testing.T) {
	b, clk := s.newBackend(t)
	v := must(s.f.Value(b, state.Value[int64]("v", state.WithTTL(state.TTL(10*time.Millisecond)))))
	setKey(b, "a")
	v.Update(1) // at 1000, expires at 1010
	clk.Set(1009)
	got, ok := v.Value()
	wantValue(t, "before expiry", got, ok, 1, true)
	clk.Set(1010)
	got, ok = v.Value()
	wantValue(t, "at expiry (inclusive)", got, ok, 0, false)
	v.Update(2) // at 1010
	clk.Set(1015)
	v.Value() // reads do not refresh under OnCreateAndWrite
	clk.Set(1020)
	got, ok = v.Value()
	wantValue(t, "read did not refresh", got, ok, 0, false)
	v.Update(3) // 1020
	clk.Set(1025)
	v.Update(4) // writes refresh
	clk.Set(1030)
	got, ok = v.Value()
	wantValue(t, "write refreshed", got, ok, 4, true)
}

func (s *suite) testTTLValueReadAndWrite(t *testing.T) {
	b, clk := s.newBackend(t)
	v := must(s.f.Value(b, state.Value[int64]("v",
		state.WithTTL(ttlConfig(10*time.Millisecond, state.UpdateOnReadAndWrite, state.NeverReturnExpired)))))
	setKey(b, "a")
	v.Update(1) // 1000
	clk.Set(1008)
	got, ok := v.Value() // refreshed to 1008
	wantValue(t, "first read", got, ok, 1, true)
	clk.Set(1017)
	got, ok = v.Value() // refreshed to 1017
	wantValue(t, "read refreshed", got, ok, 1, true)
	clk.Set(1027)
	got, ok = v.Value()
	wantValue(t, "expired", got, ok, 0, false)
}

func (s *suite) testTTLReturnExpired(t *testing.T) {
	b, clk := s.newBackend(t)
	v := must(s.f.Value(b, state.Value[int64]("v",
		state.WithTTL(ttlConfig(10*time.Millisecond, state.UpdateOnCreateAndWrite, state.ReturnExpiredIfNotCleanedUp)))))
	setKey(b, "a")
	v.Update(5)
	clk.Set(2000)
	got, ok := v.Value()
	wantValue(t, "expired value returned once", got, ok, 5, true)
	got, ok = v.Value()
	wantValue(t, "then cleaned up", got, ok, 0, false)
}

func (s *suite) testTTLList(t *testing.T) {
	b, clk := s.newBackend(t)
	l := must(s.f.List(b, state.List[string]("l", state.WithTTL(state.TTL(10*time.Millisecond)))))
	setKey(b, "a")
	l.Add("a") // 1000
	clk.Set(1005)
	l.AddAll([]string{"b", "c"}) // 1005
	clk.Set(1009)
	wantList(t, "before any expiry", l.Get(), "a", "b", "c")
	clk.Set(1010)
	wantList(t, "first element expired", l.Get(), "b", "c")
	l.Add("d") // 1010
	clk.Set(1015)
	wantList(t, "per-element expiry", slices.Collect(l.All()), "d")
	clk.Set(1020)
	wantList(t, "all expired", l.Get())
	l.Update([]string{"e"}) // 1020
	clk.Set(1029)
	wantList(t, "after update", l.Get(), "e")
}

func (s *suite) testTTLMap(t *testing.T) {
	b, clk := s.newBackend(t)
	m := must(s.f.Map(b, state.Map[string, int64]("m", state.WithTTL(state.TTL(10*time.Millisecond)))))
	setKey(b, "a")
	m.Put("x", 1) // 1000
	clk.Set(1005)
	m.PutAll(map[string]int64{"y": 2}) // 1005
	clk.Set(1010)
	got, ok := m.Get("x")
	wantValue(t, "expired entry", got, ok, 0, false)
	if m.Contains("x") || !m.Contains("y") {
		t.Fatal("Contains with TTL wrong")
	}
	wantMap(t, "unexpired entries", m, map[string]int64{"y": 2})
	m.Put("y", 3) // refresh at 1010
	clk.Set(1019)
	wantMap(t, "refreshed entry", m, map[string]int64{"y": 3})
	clk.Set(1020)
	if !m.IsEmpty() {
		t.Fatal("IsEmpty false when every entry expired")
	}
	wantMap(t, "all expired", m, nil)
}

func (s *suite) testTTLFold(t *testing.T) {
	b, clk := s.newBackend(t)
	ttl := state.WithTTL(state.TTL(10 * time.Millisecond))
	r := must(s.f.Reducing(b, state.Reducing[int64]("r", func(a, b int64) int64 { return a + b }, ttl)))
	a := must(s.f.Aggregating(b, state.Aggregating[int64, Avg, float64]("a", AvgFunction{}, ttl)))
	setKey(b, "a")
	r.Add(1)
	r.Add(2)
	a.Add(2)
	a.Add(4)
	clk.Set(1009)
	got, ok := r.Get()
	wantValue(t, "reduced", got, ok, 3, true)
	avg, ok := a.Get()
	wantValue(t, "aggregated", avg, ok, 3, true)
	clk.Set(1010)
	r.Add(10) // the expired value is replaced
	a.Add(10)
	got, ok = r.Get()
	wantValue(t, "reduced after expiry", got, ok, 10, true)
	avg, ok = a.Get()
	wantValue(t, "aggregated after expiry", avg, ok, 10, true)
	clk.Set(1020)
	got, ok = r.Get()
	wantValue(t, "reduced expired", got, ok, 0, false)
	avg, ok = a.Get()
	wantValue(t, "aggregated expired", avg, ok, 0, false)
}

// handles is one registration of every kind of state in a backend.
type handles struct {
	v   state.ValueState[int64]
	l   state.ListState[string]
	m   state.MapState[string, int64]
	r   state.ReducingState[int64]
	a   state.AggregatingState[int64, float64]
	nsv NamespacedValue
}

func (s *suite) register(t testing.TB, b Backend) *handles {
	t.Helper()
	return &handles{
		v:   must(s.f.Value(b, state.Value[int64]("v"))),
		l:   must(s.f.List(b, state.List[string]("l"))),
		m:   must(s.f.Map(b, state.Map[string, int64]("m"))),
		r:   must(s.f.Reducing(b, state.Reducing[int64]("r", func(a, b int64) int64 { return a + b }))),
		a:   must(s.f.Aggregating(b, state.Aggregating[int64, Avg, float64]("a", AvgFunction{}))),
		nsv: must(s.f.NamespacedValue(b, state.Value[int64]("nsv"))),
	}
}

func testKeys(n int) []string {
	keys := make([]string, n)
	for i := range keys {
		keys[i] = fmt.Sprint("key-", i)
	}
	return keys
}

// fill writes state derived from i for each key.
func (h *handles) fill(b Backend, keys []string) {
	for i, k := range keys {
		setKey(b, k)
		h.v.Update(int64(i))
		if i%3 != 0 { // some keys have no list
			h.l.AddAll([]string{k, fmt.Sprint(i)})
		}
		h.m.Put("a", int64(i))
		h.m.Put(k, 1)
		h.r.Add(int64(i))
		h.r.Add(1)
		h.a.Add(int64(i))
		h.a.Add(int64(i) + 2)
		h.nsv.SetNamespace(int64(i % 4))
		h.nsv.Update(int64(i) * 7)
	}
}

// check verifies the state fill wrote for the keys whose key group is in
// first..last; the other keys must have none.
func (h *handles) check(t testing.TB, b Backend, keys []string, first, last int) {
	t.Helper()
	for i, k := range keys {
		kg := KeyGroupOf(k)
		if kg < first || kg > last {
			continue
		}
		setKey(b, k)
		got, ok := h.v.Value()
		wantValue(t, "value of "+k, got, ok, int64(i), true)
		if i%3 != 0 {
			wantList(t, "list of "+k, h.l.Get(), k, fmt.Sprint(i))
		} else {
			wantList(t, "list of "+k, h.l.Get())
		}
		wantMap(t, "map of "+k, h.m, map[string]int64{"a": int64(i), k: 1})
		got, ok = h.r.Get()
		wantValue(t, "reducing of "+k, got, ok, int64(i)+1, true)
		avg, ok := h.a.Get()
		wantValue(t, "aggregating of "+k, avg, ok, float64(i)+1, true)
		for ns := int64(0); ns < 4; ns++ {
			h.nsv.SetNamespace(ns)
			got, ok := h.nsv.Value()
			if ns == int64(i%4) {
				wantValue(t, "namespaced value of "+k, got, ok, int64(i)*7, true)
			} else {
				wantValue(t, "other namespace of "+k, got, ok, 0, false)
			}
		}
	}
}

func (s *suite) snapshotAll(t testing.TB, b Backend, first, last int) map[int][]byte {
	t.Helper()
	out := map[int][]byte{}
	for kg := first; kg <= last; kg++ {
		out[kg] = must(b.SnapshotKeyGroup(kg))
	}
	return out
}

func restore(t testing.TB, b Backend, snaps map[int][]byte, first, last int) {
	t.Helper()
	for kg := first; kg <= last; kg++ {
		if err := b.RestoreKeyGroup(kg, snaps[kg]); err != nil {
			t.Fatal(err)
		}
	}
}

// testSnapshotRescale snapshots every key group of a backend and restores
// them into two backends that split the range, then merges those two
// again into one (scale out, then in).
func (s *suite) testSnapshotRescale(t *testing.T) {
	keys := testKeys(200)
	src, _ := s.newBackend(t)
	h := s.register(t, src)
	h.fill(src, keys)
	h.check(t, src, keys, 0, KeyGroups-1)
	snaps := s.snapshotAll(t, src, 0, KeyGroups-1)
	// A snapshot is read-only: the source still holds its state.
	h.check(t, src, keys, 0, KeyGroups-1)

	mid := KeyGroups / 2
	lo := s.f.New(t, 0, mid-1, clock.NewManual(1000))
	hi := s.f.New(t, mid, KeyGroups-1, clock.NewManual(1000))
	restore(t, lo, snaps, 0, mid-1)
	restore(t, hi, snaps, mid, KeyGroups-1)
	hlo, hhi := s.register(t, lo), s.register(t, hi)
	hlo.check(t, lo, keys, 0, mid-1)
	hhi.check(t, hi, keys, mid, KeyGroups-1)
	// A change after the restore is in the next snapshot.
	var k0 string
	for _, k := range keys {
		if KeyGroupOf(k) < mid {
			k0 = k
			break
		}
	}
	setKey(lo, k0)
	hlo.v.Update(-1)

	merged := s.f.New(t, 0, KeyGroups-1, clock.NewManual(1000))
	m1 := s.snapshotAll(t, lo, 0, mid-1)
	m2 := s.snapshotAll(t, hi, mid, KeyGroups-1)
	maps.Copy(m1, m2)
	restore(t, merged, m1, 0, KeyGroups-1)
	hm := s.register(t, merged)
	setKey(merged, k0)
	got, ok := hm.v.Value()
	wantValue(t, "changed value after merge", got, ok, -1, true)
	hm.v.Update(int64(slices.Index(keys, k0)))
	hm.check(t, merged, keys, 0, KeyGroups-1)
}

// testRestoreRegistrationOrder restores into a backend whose states are
// registered before the restore, and into one that registers them after.
func (s *suite) testRestoreRegistrationOrder(t *testing.T) {
	keys := testKeys(50)
	src, _ := s.newBackend(t)
	h := s.register(t, src)
	h.fill(src, keys)
	snaps := s.snapshotAll(t, src, 0, KeyGroups-1)

	before, _ := s.newBackend(t)
	hb := s.register(t, before)
	restore(t, before, snaps, 0, KeyGroups-1)
	hb.check(t, before, keys, 0, KeyGroups-1)

	after, _ := s.newBackend(t)
	restore(t, after, snaps, 0, KeyGroups-1)
	// Unregistered restored state survives a snapshot as it was.
	again := s.snapshotAll(t, after, 0, KeyGroups-1)
	third, _ := s.newBackend(t)
	restore(t, third, again, 0, KeyGroups-1)
	ha := s.register(t, after)
	ha.check(t, after, keys, 0, KeyGroups-1)
	h3 := s.register(t, third)
	h3.check(t, third, keys, 0, KeyGroups-1)
}

func (s *suite) testSnapshotTTL(t *testing.T) {
	src, clk := s.newBackend(t)
	ttl := state.WithTTL(state.TTL(10 * time.Millisecond))
	v := must(s.f.Value(src, state.Value[int64]("v", ttl)))
	l := must(s.f.List(src, state.List[string]("l", ttl)))
	m := must(s.f.Map(src, state.Map[string, int64]("m", ttl)))
	setKey(src, "a")
	v.Update(1)
	l.Add("x")
	m.Put("k", 1) // all at 1000
	clk.Set(1005)
	l.Add("y")
	m.Put("j", 2) // at 1005
	snaps := s.snapshotAll(t, src, 0, KeyGroups-1)

	// Restored with TTL: the timestamps come along.
	dst := s.f.New(t, 0, KeyGroups-1, clock.NewManual(1009))
	restore(t, dst, snaps, 0, KeyGroups-1)
	v2 := must(s.f.Value(dst, state.Value[int64]("v", ttl)))
	l2 := must(s.f.List(dst, state.List[string]("l", ttl)))
	m2 := must(s.f.Map(dst, state.Map[string, int64]("m", ttl)))
	setKey(dst, "a")
	got, ok := v2.Value()
	wantValue(t, "restored TTL value before expiry", got, ok, 1, true)
	wantList(t, "restored TTL list before expiry", l2.Get(), "x", "y")
	wantMap(t, "restored TTL map before expiry", m2, map[string]int64{"k": 1, "j": 2})

	later := s.f.New(t, 0, KeyGroups-1, clock.NewManual(1010))
	restore(t, later, snaps, 0, KeyGroups-1)
	v3 := must(s.f.Value(later, state.Value[int64]("v", ttl)))
	l3 := must(s.f.List(later, state.List[string]("l", ttl)))
	m3 := must(s.f.Map(later, state.Map[string, int64]("m", ttl)))
	setKey(later, "a")
	got, ok = v3.Value()
	wantValue(t, "restored TTL value at expiry", got, ok, 0, false)
	wantList(t, "restored TTL list, first expired", l3.Get(), "y")
	wantMap(t, "restored TTL map, first expired", m3, map[string]int64{"j": 2})

	// Restored without TTL: the timestamps are dropped, nothing expires.
	plain := s.f.New(t, 0, KeyGroups-1, clock.NewManual(1_000_000))
	restore(t, plain, snaps, 0, KeyGroups-1)
	v4 := must(s.f.Value(plain, state.Value[int64]("v")))
	l4 := must(s.f.List(plain, state.List[string]("l")))
	m4 := must(s.f.Map(plain, state.Map[string, int64]("m")))
	setKey(plain, "a")
	got, ok = v4.Value()
	wantValue(t, "restored without TTL", got, ok, 1, true)
	wantList(t, "list restored without TTL", l4.Get(), "x", "y")
	wantMap(t, "map restored without TTL", m4, map[string]int64{"k": 1, "j": 2})
	// And the snapshot without timestamps cannot come back with TTL.
	psnaps := s.snapshotAll(t, plain, 0, KeyGroups-1)
	withTTL, _ := s.newBackend(t)
	must(s.f.Value(withTTL, state.Value[int64]("v", ttl)))
	var failed bool
	for kg := range KeyGroups {
		if err := withTTL.RestoreKeyGroup(kg, psnaps[kg]); err != nil {
			failed = true
		}
	}
	if !failed {
		t.Fatal("a snapshot without TTL restored into a state with TTL")
	}
}

func (s *suite) testRestoreErrors(t *testing.T) {
	src, _ := s.newBackend(t)
	v := must(s.f.Value(src, state.Value[int64]("v")))
	setKey(src, "a")
	v.Update(1)
	kg := KeyGroupOf("a")
	snap := must(src.SnapshotKeyGroup(kg))

	dst, _ := s.newBackend(t)
	bad := slices.Clone(snap)
	bad[len(bad)/2] ^= 0xFF
	if err := dst.RestoreKeyGroup(kg, bad); err == nil {
		t.Fatal("a corrupt snapshot was restored")
	}
	if err := dst.RestoreKeyGroup((kg+1)%KeyGroups, snap); err == nil {
		t.Fatal("a snapshot was restored as another key group")
	}
	if err := dst.RestoreKeyGroup(kg, snap[:len(snap)-1]); err == nil {
		t.Fatal("a truncated snapshot was restored")
	}
	// Failed restores left nothing behind: the real one works.
	if err := dst.RestoreKeyGroup(kg, snap); err != nil {
		t.Fatal(err)
	}
	if err := dst.RestoreKeyGroup(kg, snap); err == nil {
		t.Fatal("a key group was restored twice")
	}
	if _, err := s.f.StringValue(dst, state.Value[string]("v")); err == nil {
		t.Fatal("restored int64 state registered as a string state")
	}
	v2 := must(s.f.Value(dst, state.Value[int64]("v")))
	setKey(dst, "a")
	got, ok := v2.Value()
	wantValue(t, "restored after failed attempts", got, ok, 1, true)

	small := s.f.New(t, kg, kg, clock.NewManual(0))
	if err := small.RestoreKeyGroup((kg+1)%KeyGroups, must(src.SnapshotKeyGroup((kg+1)%KeyGroups))); err == nil {
		t.Fatal("a key group outside the range was restored")
	}
	// A registered state with entries in the key group refuses a restore.
	busy, _ := s.newBackend(t)
	bv := must(s.f.Value(busy, state.Value[int64]("v")))
	setKey(busy, "a")
	bv.Update(5)
	if err := busy.RestoreKeyGroup(kg, snap); err == nil {
		t.Fatal("restore into a key group with entries succeeded")
	}
}

func (s *suite) testManyKeys(t *testing.T) {
	b, _ := s.newBackend(t)
	v := must(s.f.Value(b, state.Value[int64]("count")))
	const n = 5000
	for round := range 3 {
		for i := range n {
			setKey(b, fmt.Sprint(i))
			c, ok := v.Value()
			if ok != (round > 0) || c != int64(round) {
				t.Fatalf("round %d key %d: %d, %v", round, i, c, ok)
			}
			v.Update(c + 1)
		}
	}
	snaps := s.snapshotAll(t, b, 0, KeyGroups-1)
	dst, _ := s.newBackend(t)
	restore(t, dst, snaps, 0, KeyGroups-1)
	v2 := must(s.f.Value(dst, state.Value[int64]("count")))
	for i := range n {
		setKey(dst, fmt.Sprint(i))
		if c, ok := v2.Value(); !ok || c != 3 {
			t.Fatalf("restored key %d: %d, %v", i, c, ok)
		}
	}
}
