package state

import (
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/weirstream/weir/internal/clock"
	"github.com/weirstream/weir/state"
)

func newTestBackend() *Backend[string] {
	return NewBackend[string](0, 3, clock.NewManual(0))
}

func must[T any](t *testing.T) func(T, error) T {
	return func(v T, err error) T {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
}

func TestValueAbsentUpdateClear(t *testing.T) {
	b := newTestBackend()
	v := must[*Value[string, struct{}, int]](t)(GetValue[string, struct{}](b, state.Value[int]("v")))
	b.SetCurrentKey("a", 1)
	if got, ok := v.Value(); ok || got != 0 {
		t.Fatalf("absent value = (%v, %v), want (0, false)", got, ok)
	}
	v.Update(0) // a stored zero is present
	if got, ok := v.Value(); !ok || got != 0 {
		t.Fatalf("after Update(0) = (%v, %v), want (0, true)", got, ok)
	}
	v.Update(7)
	if got, ok := v.Value(); !ok || got != 7 {
		t.Fatalf("after Update(7) = (%v, %v), want (7, true)", got, ok)
	}
	b.SetCurrentKey("b", 2)
	if _, ok := v.Value(); ok {
		t.Fatal("key b sees key a's value")
	}
	b.SetCurrentKey("a", 1)
	v.Clear()
	if _, ok := v.Value(); ok {
		t.Fatal("value present after Clear")
	}
	if n := b.KeyCount(); n != 0 {
		t.Fatalf("KeyCount after Clear = %d, want 0", n)
	}
}

func TestListSemantics(t *testing.T) {
	b := newTestBackend()
	l := must[*List[string, struct{}, string]](t)(GetList[string, struct{}](b, state.List[string]("l")))
	b.SetCurrentKey("k", 0)

	got := l.Get()
	if got == nil || len(got) != 0 {
		t.Fatalf("Get of absent list = %#v, want empty non-nil slice", got)
	}
	for range l.All() {
		t.Fatal("All of absent list yields an element")
	}

	l.Add("a")
	l.AddAll([]string{"b", "c"})
	l.AddAll(nil)
	l.Add("d")
	if got := l.Get(); !slices.Equal(got, []string{"a", "b", "c", "d"}) {
		t.Fatalf("Get = %v, want [a b c d]", got)
	}
	if got := slices.Collect(l.All()); !slices.Equal(got, []string{"a", "b", "c", "d"}) {
		t.Fatalf("All = %v, want [a b c d]", got)
	}

	// Get returns a fresh copy.
	got = l.Get()
	got[0] = "mutated"
	if l.Get()[0] != "a" {
		t.Fatal("modifying Get's result changed the state")
	}

	// Update stores a copy and replaces the list.
	in := []string{"x", "y"}
	l.Update(in)
	in[0] = "mutated"
	if got := l.Get(); !slices.Equal(got, []string{"x", "y"}) {
		t.Fatalf("after Update = %v, want [x y]", got)
	}

	// Update with an empty list clears the state.
	l.Update([]string{})
	if got := l.Get(); len(got) != 0 {
		t.Fatalf("after Update([]) = %v, want empty", got)
	}
	if n := b.KeyCount(); n != 0 {
		t.Fatalf("KeyCount after Update([]) = %d, want 0", n)
	}
	// An empty AddAll does not create state.
	l.AddAll([]string{})
	if n := b.KeyCount(); n != 0 {
		t.Fatalf("KeyCount after AddAll([]) = %d, want 0", n)
	}

	l.Update([]string{"p"})
	l.Clear()
	if got := l.Get(); len(got) != 0 {
		t.Fatalf("after Clear = %v, want empty", got)
	}
}

func TestListAllSeesStateAtStart(t *testing.T) {
	b := newTestBackend()
	l := must[*List[string, struct{}, int]](t)(GetList[string, struct{}](b, state.List[int]("l")))
	b.SetCurrentKey("k", 0)
	l.AddAll([]int{1, 2, 3})
	var seen []int
	for v := range l.All() {
		seen = append(seen, v)
		l.Add(v * 10) // must not be seen, nor loop forever
		if v == 1 {
			l.Update([]int{7, 8, 9, 10}) // must not change what is seen
		}
	}
	if !slices.Equal(seen, []int{1, 2, 3}) {
		t.Fatalf("iteration saw %v, want [1 2 3]", seen)
	}
	if got := l.Get(); !slices.Equal(got, []int{7, 8, 9, 10, 20, 30}) {
		t.Fatalf("final list = %v, want [7 8 9 10 20 30]", got)
	}
}

func TestMapSemantics(t *testing.T) {
	b := newTestBackend()
	m := must[*Map[string, struct{}, string, int]](t)(GetMap[string, struct{}](b, state.Map[string, int]("m")))
	b.SetCurrentKey("k", 3)

	if v, ok := m.Get("x"); ok || v != 0 {
		t.Fatalf("Get of absent = (%v, %v)", v, ok)
	}
	if m.Contains("x") {
		t.Fatal("Contains of absent")
	}
	if !m.IsEmpty() {
		t.Fatal("IsEmpty of absent map is false")
	}
	for range m.All() {
		t.Fatal("All of empty map yields")
	}
	for range m.Keys() {
		t.Fatal("Keys of empty map yields")
	}
	for range m.Values() {
		t.Fatal("Values of empty map yields")
	}
	m.PutAll(map[string]int{})
	if n := b.KeyCount(); n != 0 {
		t.Fatalf("KeyCount after empty PutAll = %d, want 0", n)
	}

	m.Put("x", 1)
	m.PutAll(map[string]int{"y": 2, "z": 3})
	m.Put("x", 10)
	if v, ok := m.Get("x"); !ok || v != 10 {
		t.Fatalf("Get(x) = (%v, %v), want (10, true)", v, ok)
	}
	if !m.Contains("y") || m.IsEmpty() {
		t.Fatal("Contains(y) false or IsEmpty true")
	}
	want := map[string]int{"x": 10, "y": 2, "z": 3}
	if got := maps.Collect(m.All()); !maps.Equal(got, want) {
		t.Fatalf("All = %v, want %v", got, want)
	}
	keys := slices.Sorted(m.Keys())
	if !slices.Equal(keys, []string{"x", "y", "z"}) {
		t.Fatalf("Keys = %v", keys)
	}
	vals := slices.Sorted(m.Values())
	if !slices.Equal(vals, []int{2, 3, 10}) {
		t.Fatalf("Values = %v", vals)
	}

	// Removing entries while iterating is allowed.
	for k := range m.All() {
		if k != "y" {
			m.Remove(k)
		}
	}
	if got := maps.Collect(m.All()); !maps.Equal(got, map[string]int{"y": 2}) {
		t.Fatalf("after removal = %v, want map[y:2]", got)
	}
	m.Remove("nope")
	m.Remove("y")
	if !m.IsEmpty() {
		t.Fatal("not empty after removing every entry")
	}
	if n := b.KeyCount(); n != 0 {
		t.Fatalf("KeyCount after removing the last entry = %d, want 0 (state removed)", n)
	}
	m.Put("q", 1)
	m.Clear()
	if !m.IsEmpty() || m.Contains("q") {
		t.Fatal("Clear left entries")
	}
}

func TestReducingSemantics(t *testing.T) {
	b := newTestBackend()
	// Non-commutative: shows the order reduce(stored, new), and that the
	// first value is stored as is rather than reduced with a zero value.
	r := must[*Reducing[string, struct{}, string]](t)(GetReducing[string, struct{}](b,
		state.Reducing("r", func(a, b string) string { return "(" + a + b + ")" })))
	b.SetCurrentKey("k", 0)
	if v, ok := r.Get(); ok || v != "" {
		t.Fatalf("Get of empty = (%q, %v)", v, ok)
	}
	r.Add("a")
	if v, _ := r.Get(); v != "a" {
		t.Fatalf("first value = %q, want a (stored as is)", v)
	}
	r.Add("b")
	r.Add("c")
	if v, ok := r.Get(); !ok || v != "((ab)c)" {
		t.Fatalf("Get = (%q, %v), want ((ab)c)", v, ok)
	}
	r.Clear()
	if _, ok := r.Get(); ok {
		t.Fatal("value after Clear")
	}
}

// avg is an aggregate function computing an average; its accumulator starts
// with a marker so tests can tell that CreateAccumulator was used.
type avg struct{}

type avgAcc struct {
	sum, n  int
	created bool
}

func (avg) CreateAccumulator() avgAcc  { return avgAcc{created: true} }
func (avg) Add(v int, a avgAcc) avgAcc { a.sum += v; a.n++; return a }
func (avg) GetResult(a avgAcc) float64 { return float64(a.sum) / float64(a.n) }
func (avg) Merge(a, b avgAcc) avgAcc   { return avgAcc{a.sum + b.sum, a.n + b.n, a.created && b.created} }

func TestAggregatingSemantics(t *testing.T) {
	b := newTestBackend()
	a := must[*Aggregating[string, struct{}, int, avgAcc, float64]](t)(GetAggregating[string, struct{}](b,
		state.Aggregating[int, avgAcc, float64]("a", avg{})))
	b.SetCurrentKey("k", 0)
	if v, ok := a.Get(); ok || v != 0 {
		t.Fatalf("Get of absent = (%v, %v), want (0, false)", v, ok)
	}
	a.Add(1)
	a.Add(4)
	if v, ok := a.Get(); !ok || v != 2.5 {
		t.Fatalf("Get = (%v, %v), want (2.5, true)", v, ok)
	}
	if c := a.lookup(); c == nil || !c.v.created {
		t.Fatal("accumulator was not made by CreateAccumulator")
	}
	a.Clear()
	if _, ok := a.Get(); ok {
		t.Fatal("Get after Clear is present")
	}
}

func TestNamespacesIsolate(t *testing.T) {
	b := newTestBackend()
	v := must[*Value[string, string, int]](t)(GetValue[string, string](b, state.Value[int]("v")))
	l := must[*List[string, string, int]](t)(GetList[string, string](b, state.List[int]("l")))
	m := must[*Map[string, string, string, int]](t)(GetMap[string, string](b, state.Map[string, int]("m")))
	b.SetCurrentKey("k", 0)
	for i, ns := range []string{"w1", "w2"} {
		v.SetNamespace(ns)
		l.SetNamespace(ns)
		m.SetNamespace(ns)
		v.Update(i + 1)
		l.Add(i + 1)
		m.Put("x", i+1)
	}
	for i, ns := range []string{"w1", "w2"} {
		v.SetNamespace(ns)
		l.SetNamespace(ns)
		m.SetNamespace(ns)
		if got, _ := v.Value(); got != i+1 {
			t.Fatalf("value in %s = %d, want %d", ns, got, i+1)
		}
		if got := l.Get(); !slices.Equal(got, []int{i + 1}) {
			t.Fatalf("list in %s = %v", ns, got)
		}
		if got, _ := m.Get("x"); got != i+1 {
			t.Fatalf("map in %s = %d", ns, got)
		}
	}
	v.SetNamespace("w3")
	if _, ok := v.Value(); ok {
		t.Fatal("fresh namespace has a value")
	}
	if v.Namespace() != "w3" {
		t.Fatal("Namespace() does not report the set namespace")
	}
	v.SetNamespace("w1")
	v.Clear()
	v.SetNamespace("w2")
	if got, ok := v.Value(); !ok || got != 2 {
		t.Fatal("clearing w1 affected w2")
	}
	// Keys lists the key once although it has state in two namespaces.
	if got := slices.Collect(b.Keys("l")); !slices.Equal(got, []string{"k"}) {
		t.Fatalf("Keys(l) = %v, want [k]", got)
	}
}

func TestKeyGroupsIsolate(t *testing.T) {
	b := NewBackend[string](4, 7, clock.NewManual(0))
	v := must[*Value[string, struct{}, int]](t)(GetValue[string, struct{}](b, state.Value[int]("v")))
	// The same key in two key groups (which a real assignment never does)
	// addresses two separate entries: state is stored per key group.
	b.SetCurrentKey("k", 4)
	v.Update(1)
	b.SetCurrentKey("k", 7)
	if _, ok := v.Value(); ok {
		t.Fatal("key group 7 sees key group 4's state")
	}
	v.Update(2)
	b.SetCurrentKey("k", 4)
	if got, _ := v.Value(); got != 1 {
		t.Fatalf("key group 4 = %d, want 1", got)
	}
	if b.CurrentKey() != "k" || b.CurrentKeyGroup() != 4 {
		t.Fatal("CurrentKey/CurrentKeyGroup")
	}
	if f, l := b.KeyGroupRange(); f != 4 || l != 7 {
		t.Fatal("KeyGroupRange")
	}
	tbl := v.t
	if tbl.groups[0].len() != 1 || tbl.groups[3].len() != 1 || tbl.groups[1].len() != 0 {
		t.Fatal("entries not stored in their key groups' maps")
	}
}

func TestMergeNamespacesList(t *testing.T) {
	b := newTestBackend()
	l := must[*List[string, string, string]](t)(GetList[string, string](b, state.List[string]("l")))
	b.SetCurrentKey("k", 1)
	set := func(ns string, vs ...string) { l.SetNamespace(ns); l.Update(vs) }
	get := func(ns string) []string { l.SetNamespace(ns); return l.Get() }

	set("t", "t1")
	set("s1", "a", "b")
	set("s2", "c")
	l.SetNamespace("other")
	l.MergeNamespaces("t", []string{"s1", "missing", "s2"})
	if got := get("t"); !slices.Equal(got, []string{"t1", "a", "b", "c"}) {
		t.Fatalf("merged = %v, want [t1 a b c]", got)
	}
	if len(get("s1")) != 0 || len(get("s2")) != 0 {
		t.Fatal("sources not removed")
	}
	if n := b.KeyCount(); n != 1 {
		t.Fatalf("KeyCount = %d, want 1", n)
	}

	// Absent target: the merged sources become the target.
	set("s3", "x")
	set("s4", "y")
	l.MergeNamespaces("new", []string{"s3", "s4"})
	if got := get("new"); !slices.Equal(got, []string{"x", "y"}) {
		t.Fatalf("merged into absent = %v, want [x y]", got)
	}
	if got := get("s3"); len(got) != 0 {
		t.Fatal("source s3 still present")
	}
	// The sources' former lists are not shared with the target.
	set("s3", "z")
	if got := get("new"); !slices.Equal(got, []string{"x", "y"}) {
		t.Fatalf("target changed by writing a former source: %v", got)
	}

	// No sources, or only absent ones: nothing changes.
	l.MergeNamespaces("t", nil)
	l.MergeNamespaces("t", []string{"nothing"})
	if got := get("t"); !slices.Equal(got, []string{"t1", "a", "b", "c"}) {
		t.Fatalf("no-op merge changed target: %v", got)
	}

	// Target among the sources, as Flink: it is taken out first.
	set("u", "u1")
	set("v", "v1")
	l.MergeNamespaces("u", []string{"v", "u"})
	if got := get("u"); !slices.Equal(got, []string{"v1", "u1"}) {
		t.Fatalf("target among sources = %v, want [v1 u1]", got)
	}
}

func TestMergeNamespacesReducing(t *testing.T) {
	b := newTestBackend()
	r := must[*Reducing[string, int, string]](t)(GetReducing[string, int](b,
		state.Reducing("r", func(a, b string) string { return "(" + a + b + ")" })))
	b.SetCurrentKey("k", 0)
	for ns, v := range map[int]string{0: "T", 1: "A", 2: "B", 3: "C"} {
		r.SetNamespace(ns)
		r.Add(v)
	}
	r.MergeNamespaces(0, []int{1, 2, 3})
	r.SetNamespace(0)
	// Flink: sources reduced in order, then reduce(target, merged).
	if v, _ := r.Get(); v != "(T((AB)C))" {
		t.Fatalf("merged = %q, want (T((AB)C))", v)
	}
	for ns := 1; ns <= 3; ns++ {
		r.SetNamespace(ns)
		if _, ok := r.Get(); ok {
			t.Fatalf("source %d not removed", ns)
		}
	}
	// Absent target.
	r.SetNamespace(5)
	r.Add("X")
	r.MergeNamespaces(6, []int{5})
	r.SetNamespace(6)
	if v, _ := r.Get(); v != "X" {
		t.Fatalf("merge into absent = %q, want X", v)
	}
}

type concatAgg struct{}

func (concatAgg) CreateAccumulator() string       { return "" }
func (concatAgg) Add(v string, acc string) string { return acc + v }
func (concatAgg) GetResult(acc string) string     { return "<" + acc + ">" }
func (concatAgg) Merge(a, b string) string        { return "[" + a + "+" + b + "]" }

func TestMergeNamespacesAggregating(t *testing.T) {
	b := newTestBackend()
	a := must[*Aggregating[string, int, string, string, string]](t)(GetAggregating[string, int](b,
		state.Aggregating[string, string, string]("a", concatAgg{})))
	b.SetCurrentKey("k", 2)
	for ns, v := range map[int]string{0: "t", 1: "a", 2: "b"} {
		a.SetNamespace(ns)
		a.Add(v)
	}
	a.MergeNamespaces(0, []int{1, 2})
	a.SetNamespace(0)
	if v, ok := a.Get(); !ok || v != "<[t+[a+b]]>" {
		t.Fatalf("merged = (%q, %v), want <[t+[a+b]]>", v, ok)
	}
	a.SetNamespace(1)
	if _, ok := a.Get(); ok {
		t.Fatal("source not removed")
	}
}

func TestRegistration(t *testing.T) {
	b := newTestBackend()
	v1 := must[*Value[string, struct{}, int]](t)(GetValue[string, struct{}](b, state.Value[int]("s")))
	v2 := must[*Value[string, struct{}, int]](t)(GetValue[string, struct{}](b, state.Value[int]("s")))
	b.SetCurrentKey("k", 0)
	v1.Update(5)
	if got, _ := v2.Value(); got != 5 {
		t.Fatal("second registration does not share the table")
	}
	// Clearing through one handle is seen by the other, whose cache holds
	// the removed cell.
	if got, _ := v1.Value(); got != 5 {
		t.Fatal("v1")
	}
	v2.Clear()
	if _, ok := v1.Value(); ok {
		t.Fatal("v1 still sees a value cleared through v2")
	}
	v2.Update(6)
	if got, _ := v1.Value(); got != 6 {
		t.Fatal("v1 does not see v2's new value")
	}

	// Two configs that both leave TTL off are the same.
	if _, err := GetValue[string, struct{}](b, state.Value[int]("s",
		state.WithTTL(state.TTLConfig{TTL: 1000, Update: state.UpdateDisabled}))); err != nil {
		t.Errorf("disabled TTL config conflicts with no TTL: %v", err)
	}

	cases := []struct {
		name string
		err  error
	}{
		{"list under value name", func() error { _, err := GetList[string, struct{}](b, state.List[int]("s")); return err }()},
		{"reducing under value name", func() error {
			_, err := GetReducing[string, struct{}](b, state.Reducing("s", func(a, b int) int { return a + b }))
			return err
		}()},
		{"other value type", func() error { _, err := GetValue[string, struct{}](b, state.Value[int64]("s")); return err }()},
		{"other namespace type", func() error { _, err := GetValue[string, int](b, state.Value[int]("s")); return err }()},
		{"other TTL", func() error {
			_, err := GetValue[string, struct{}](b, state.Value[int]("s", state.WithTTL(state.TTL(1000))))
			return err
		}()},
	}
	for _, c := range cases {
		if c.err == nil || !strings.Contains(c.err.Error(), `"s"`) {
			t.Errorf("%s: error %v, want one naming state \"s\"", c.name, c.err)
		}
	}
	// Aggregating state with the same accumulator but another result type.
	must[*Aggregating[string, struct{}, string, string, string]](t)(GetAggregating[string, struct{}](b,
		state.Aggregating[string, string, string]("agg", concatAgg{})))
	if _, err := GetAggregating[string, struct{}](b, state.Aggregating[int, avgAcc, float64]("agg", avg{})); err == nil {
		t.Error("aggregating state re-registered with other types")
	}

	invalid := []error{
		func() error { _, err := GetValue[string, struct{}](b, state.Value[int]("")); return err }(),
		func() error { _, err := GetList[string, struct{}](b, state.List[int]("")); return err }(),
		func() error { _, err := GetMap[string, struct{}](b, state.Map[int, int]("")); return err }(),
		func() error { _, err := GetReducing[string, struct{}](b, state.Reducing[int]("r", nil)); return err }(),
		func() error {
			_, err := GetAggregating[string, struct{}](b, state.Aggregating[int, int, int]("a", nil))
			return err
		}(),
		func() error {
			_, err := GetValue[string, struct{}](b, state.Value[int]("ttl", state.WithTTL(state.TTL(-1))))
			return err
		}(),
	}
	for i, err := range invalid {
		if err == nil {
			t.Errorf("invalid descriptor %d accepted", i)
		}
	}
	if _, ok := b.states[""]; ok {
		t.Error("invalid descriptor registered")
	}
}

func expectPanic(t *testing.T, what string, f func()) {
	t.Helper()
	defer func() {
		if recover() == nil {
			t.Errorf("%s: no panic", what)
		}
	}()
	f()
}

func TestProgrammingErrorsPanic(t *testing.T) {
	b := NewBackend[string](2, 5, clock.NewManual(0))
	v := must[*Value[string, struct{}, int]](t)(GetValue[string, struct{}](b, state.Value[int]("v")))
	expectPanic(t, "access before SetCurrentKey", func() { v.Value() })
	expectPanic(t, "update before SetCurrentKey", func() { v.Update(1) })
	expectPanic(t, "key group below range", func() { b.SetCurrentKey("k", 1) })
	expectPanic(t, "key group above range", func() { b.SetCurrentKey("k", 6) })
	expectPanic(t, "empty range", func() { NewBackend[string](3, 2, clock.NewManual(0)) })
	expectPanic(t, "negative range", func() { NewBackend[string](-1, 2, clock.NewManual(0)) })
	expectPanic(t, "nil clock", func() { NewBackend[string](0, 2, nil) })
	b.SetCurrentKey("k", 5)
	v.Update(1)
}

func TestKeysAndKeyCount(t *testing.T) {
	b := NewBackend[int](0, 7, clock.NewManual(0))
	v := must[*Value[int, int, int]](t)(GetValue[int, int](b, state.Value[int]("v")))
	l := must[*List[int, int, int]](t)(GetList[int, int](b, state.List[int]("l")))
	for k := range 20 {
		b.SetCurrentKey(k, k%8)
		v.Update(k)
		if k%2 == 0 {
			v.SetNamespace(1)
			v.Update(k)
			v.SetNamespace(0)
			l.Add(k)
		}
	}
	if got := slices.Sorted(b.Keys("v")); !slices.Equal(got, slices.Collect(intRange(20))) {
		t.Fatalf("Keys(v) = %v", got)
	}
	if got := slices.Sorted(b.Keys("l")); len(got) != 10 || got[1] != 2 {
		t.Fatalf("Keys(l) = %v", got)
	}
	for range b.Keys("unknown") {
		t.Fatal("Keys of unknown state yields")
	}
	if n := b.KeyCount(); n != 20+10+10 {
		t.Fatalf("KeyCount = %d, want 40", n)
	}
	// applyToKeyedState: clear every key while iterating.
	for k := range b.Keys("v") {
		b.SetCurrentKey(k, k%8)
		v.Clear()
		v.SetNamespace(1)
		v.Clear()
		v.SetNamespace(0)
	}
	if n := b.KeyCount(); n != 10 {
		t.Fatalf("KeyCount after clearing v = %d, want 10", n)
	}
	// Early break.
	n := 0
	for range b.Keys("l") {
		n++
		break
	}
	if n != 1 {
		t.Fatal("break")
	}
}

func intRange(n int) func(func(int) bool) {
	return func(yield func(int) bool) {
		for i := range n {
			if !yield(i) {
				return
			}
		}
	}
}

func TestHandleCacheFollowsKeyAndNamespace(t *testing.T) {
	b := newTestBackend()
	v := must[*Value[string, int, int]](t)(GetValue[string, int](b, state.Value[int]("v")))
	b.SetCurrentKey("a", 0)
	v.Update(1)
	b.SetCurrentKey("b", 0) // same key group, other key
	if _, ok := v.Value(); ok {
		t.Fatal("cache leaked key a's cell to key b")
	}
	v.Update(2)
	b.SetCurrentKey("a", 0)
	if got, _ := v.Value(); got != 1 {
		t.Fatal("key a lost its value")
	}
	v.SetNamespace(9)
	if _, ok := v.Value(); ok {
		t.Fatal("cache leaked namespace 0's cell to namespace 9")
	}
	v.Update(3)
	v.SetNamespace(0)
	if got, _ := v.Value(); got != 1 {
		t.Fatal("namespace 0 lost its value")
	}
	// A merge that removes the cached cell.
	r := must[*Reducing[string, int, int]](t)(GetReducing[string, int](b, state.Reducing("r", func(a, b int) int { return a + b })))
	r.SetNamespace(1)
	r.Add(5)
	if got, _ := r.Get(); got != 5 {
		t.Fatal("r")
	}
	r.MergeNamespaces(2, []int{1})
	if _, ok := r.Get(); ok {
		t.Fatal("cached cell of a merged-away namespace still read")
	}
	r.Add(1)
	r.SetNamespace(2)
	if got, _ := r.Get(); got != 5 {
		t.Fatalf("target = %d, want 5", got)
	}
}
