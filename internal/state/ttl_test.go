package state

import (
	"maps"
	"math"
	"slices"
	"testing"
	"time"

	"github.com/weirstream/weir/internal/clock"
	"github.com/weirstream/weir/state"
)

const ttl10 = 10 * time.Millisecond

// ttlValue returns a backend on a manual clock at 0 and a TTL value state.
func ttlValue(t *testing.T, c state.TTLConfig) (*clock.Manual, *Backend[string], *Value[string, struct{}, string]) {
	t.Helper()
	clk := clock.NewManual(0)
	b := NewBackend[string](0, 3, clk)
	v, err := GetValue[string, struct{}](b, state.Value[string]("v", state.WithTTL(c)))
	if err != nil {
		t.Fatal(err)
	}
	b.SetCurrentKey("k", 1)
	return clk, b, v
}

func wantValue(t *testing.T, v *Value[string, struct{}, string], at int64, want string, wantOK bool) {
	t.Helper()
	got, ok := v.Value()
	if got != want || ok != wantOK {
		t.Fatalf("value() at %d = (%q, %v), want (%q, %v)", at, got, ok, want, wantOK)
	}
}

// V17, first vector: OnCreateAndWrite, NeverReturnExpired. Expiry is
// inclusive and the entry is physically removed.
func TestV17OnCreateAndWriteNeverReturnExpired(t *testing.T) {
	clk, b, v := ttlValue(t, state.TTL(ttl10))
	v.Update("v")
	clk.Set(9)
	wantValue(t, v, 9, "v", true)
	clk.Set(10)
	wantValue(t, v, 10, "", false)
	if n := b.KeyCount(); n != 0 {
		t.Fatalf("expired entry not removed: KeyCount = %d", n)
	}
}

// V17, second vector: OnReadAndWrite refreshes the timestamp on reads.
func TestV17OnReadAndWrite(t *testing.T) {
	c := state.TTL(ttl10)
	c.Update = state.UpdateOnReadAndWrite
	clk, _, v := ttlValue(t, c)
	v.Update("v")
	clk.Set(9)
	wantValue(t, v, 9, "v", true) // ts becomes 9
	clk.Set(18)
	wantValue(t, v, 18, "v", true) // ts becomes 18
	clk.Set(28)
	wantValue(t, v, 28, "", false)
}

// V17, third vector: ReturnExpiredIfNotCleanedUp returns the expired value
// once and removes it in the same read. Background (incremental) cleanup is
// off here: with it, the access itself may clean the entry up first (see
// TestReturnExpiredAfterIncrementalCleanup).
func TestV17ReturnExpiredIfNotCleanedUp(t *testing.T) {
	c := state.TTL(ttl10)
	c.Visibility = state.ReturnExpiredIfNotCleanedUp
	c.DisableBackgroundCleanup = true
	clk, b, v := ttlValue(t, c)
	v.Update("v")
	clk.Set(15)
	wantValue(t, v, 15, "v", true)
	if n := b.KeyCount(); n != 0 {
		t.Fatalf("returned expired entry not removed: KeyCount = %d", n)
	}
	clk.Set(16)
	wantValue(t, v, 16, "", false)
}

// With Flink's default incremental cleanup, the access runs the cleanup step
// first (accessCallback), which drops the expired entry before the read.
func TestReturnExpiredAfterIncrementalCleanup(t *testing.T) {
	c := state.TTL(ttl10)
	c.Visibility = state.ReturnExpiredIfNotCleanedUp
	clk, _, v := ttlValue(t, c)
	v.Update("v")
	clk.Set(15)
	wantValue(t, v, 15, "", false)
}

// V17, fourth vector: list TTL is per element.
func TestV17ListPerElement(t *testing.T) {
	clk := clock.NewManual(0)
	b := NewBackend[string](0, 0, clk)
	l := must[*List[string, struct{}, string]](t)(GetList[string, struct{}](b, state.List[string]("l", state.WithTTL(state.TTL(ttl10)))))
	b.SetCurrentKey("k", 0)
	l.Add("a")
	clk.Set(5)
	l.Add("b")
	clk.Set(12)
	if got := l.Get(); !slices.Equal(got, []string{"b"}) {
		t.Fatalf("get() at 12 = %v, want [b]", got)
	}
	if got := slices.Collect(l.All()); !slices.Equal(got, []string{"b"}) {
		t.Fatalf("All at 12 = %v, want [b]", got)
	}
	clk.Set(15)
	if got := l.Get(); len(got) != 0 {
		t.Fatalf("get() at 15 = %v, want []", got)
	}
	if n := b.KeyCount(); n != 0 {
		t.Fatalf("fully expired list not removed: KeyCount = %d", n)
	}
}

func TestTTLExpiryOverflowGuard(t *testing.T) {
	c := state.TTL(ttl10)
	clk, _, v := ttlValue(t, c)
	clk.Set(math.MaxInt64 - 5)
	v.Update("v")
	// Unguarded, MaxInt64-5 + 10 wraps negative and the value would read as
	// expired at once. Guarded, it expires at MaxInt64.
	clk.Set(math.MaxInt64 - 1)
	wantValue(t, v, math.MaxInt64-1, "v", true)
	clk.Set(math.MaxInt64)
	wantValue(t, v, math.MaxInt64, "", false)

	// Negative timestamps are not capped. (The manual clock never goes
	// back, so start a new one.)
	clk = clock.NewManual(-100)
	b := NewBackend[string](0, 0, clk)
	v = must[*Value[string, struct{}, string]](t)(GetValue[string, struct{}](b, state.Value[string]("v", state.WithTTL(c))))
	b.SetCurrentKey("k", 0)
	v.Update("n")
	clk.Set(-91)
	wantValue(t, v, -91, "n", true)
	clk.Set(-90)
	wantValue(t, v, -90, "", false)
}

func TestTTLWriteRefreshesAndUpdateDisabled(t *testing.T) {
	clk, _, v := ttlValue(t, state.TTL(ttl10))
	v.Update("a")
	clk.Set(8)
	v.Update("b") // a write sets the timestamp
	clk.Set(17)
	wantValue(t, v, 17, "b", true)
	// OnCreateAndWrite: the read at 17 did not refresh.
	clk.Set(18)
	wantValue(t, v, 18, "", false)

	c := state.TTL(ttl10)
	c.Update = state.UpdateDisabled
	clk, _, v = ttlValue(t, c)
	v.Update("x")
	clk.Set(1 << 40)
	wantValue(t, v, 1<<40, "x", true)
}

func TestTTLListReadAndWriteAndVisibility(t *testing.T) {
	clk := clock.NewManual(0)
	b := NewBackend[string](0, 0, clk)
	c := state.TTL(ttl10)
	c.Update = state.UpdateOnReadAndWrite
	l := must[*List[string, struct{}, string]](t)(GetList[string, struct{}](b, state.List[string]("l", state.WithTTL(c))))
	b.SetCurrentKey("k", 0)
	l.AddAll([]string{"a", "b"})
	clk.Set(6)
	l.Add("c")
	clk.Set(9)
	if got := l.Get(); !slices.Equal(got, []string{"a", "b", "c"}) {
		t.Fatalf("at 9 = %v", got)
	}
	// The read at 9 refreshed every element.
	clk.Set(18)
	if got := l.Get(); !slices.Equal(got, []string{"a", "b", "c"}) {
		t.Fatalf("at 18 = %v", got)
	}
	clk.Set(28)
	if got := l.Get(); len(got) != 0 {
		t.Fatalf("at 28 = %v", got)
	}

	// ReturnExpiredIfNotCleanedUp: expired elements are returned once.
	c = state.TTL(ttl10)
	c.Visibility = state.ReturnExpiredIfNotCleanedUp
	c.DisableBackgroundCleanup = true
	l2 := must[*List[string, struct{}, string]](t)(GetList[string, struct{}](b, state.List[string]("l2", state.WithTTL(c))))
	clk.Set(100)
	l2.Add("old")
	clk.Set(105)
	l2.Add("new")
	clk.Set(111)
	if got := l2.Get(); !slices.Equal(got, []string{"old", "new"}) {
		t.Fatalf("first read = %v, want [old new]", got)
	}
	if got := l2.Get(); !slices.Equal(got, []string{"new"}) {
		t.Fatalf("second read = %v, want [new]", got)
	}
	// Update sets every element's timestamp.
	l2.Update([]string{"u1", "u2"})
	clk.Set(120)
	if got := l2.Get(); !slices.Equal(got, []string{"u1", "u2"}) {
		t.Fatalf("after update = %v", got)
	}
}

func TestTTLMapPerEntry(t *testing.T) {
	clk := clock.NewManual(0)
	b := NewBackend[string](0, 0, clk)
	m := must[*Map[string, struct{}, string, int]](t)(GetMap[string, struct{}](b, state.Map[string, int]("m", state.WithTTL(state.TTL(ttl10)))))
	b.SetCurrentKey("k", 0)
	m.Put("a", 1)
	clk.Set(5)
	m.PutAll(map[string]int{"b": 2, "c": 3})
	clk.Set(12)
	if _, ok := m.Get("a"); ok {
		t.Fatal("a not expired at 12")
	}
	if v, ok := m.Get("b"); !ok || v != 2 {
		t.Fatal("b expired at 12")
	}
	if m.Contains("a") || !m.Contains("c") || m.IsEmpty() {
		t.Fatal("Contains/IsEmpty")
	}
	if got := maps.Collect(m.All()); !maps.Equal(got, map[string]int{"b": 2, "c": 3}) {
		t.Fatalf("All at 12 = %v", got)
	}
	m.Put("d", 4)
	clk.Set(15)
	if got := slices.Sorted(m.Keys()); !slices.Equal(got, []string{"d"}) {
		t.Fatalf("Keys at 15 = %v, want [d]", got)
	}
	if got := slices.Collect(m.Values()); !slices.Equal(got, []int{4}) {
		t.Fatalf("Values at 15 = %v", got)
	}
	clk.Set(22)
	if !m.IsEmpty() {
		t.Fatal("not empty at 22")
	}
	if n := b.KeyCount(); n != 0 {
		t.Fatalf("KeyCount = %d, want 0", n)
	}

	// OnReadAndWrite and ReturnExpiredIfNotCleanedUp, per entry.
	c := state.TTL(ttl10)
	c.Update = state.UpdateOnReadAndWrite
	c.Visibility = state.ReturnExpiredIfNotCleanedUp
	c.CleanupEntries = 0
	m2 := must[*Map[string, struct{}, string, int]](t)(GetMap[string, struct{}](b, state.Map[string, int]("m2", state.WithTTL(c))))
	clk.Set(100)
	m2.PutAll(map[string]int{"r": 1, "s": 2})
	clk.Set(109)
	if !m2.Contains("r") { // a read: refreshes r
		t.Fatal("r")
	}
	clk.Set(110)
	if m2.IsEmpty() {
		t.Fatal("IsEmpty with entries present")
	}
	if v, ok := m2.Get("s"); !ok || v != 2 { // expired, returned once
		t.Fatal("expired s not returned")
	}
	if _, ok := m2.Get("s"); ok {
		t.Fatal("expired s returned twice")
	}
	if v, ok := m2.Get("r"); !ok || v != 1 {
		t.Fatal("refreshed r expired")
	}
	// Iteration also returns an expired entry once, and refreshes live ones.
	m2.Put("x", 9)
	clk.Set(119) // r and x (ts 110) expire at 120
	if got := maps.Collect(m2.All()); !maps.Equal(got, map[string]int{"r": 1, "x": 9}) {
		t.Fatalf("All at 119 = %v", got) // refreshes both to 119
	}
	clk.Set(125)
	m2.Put("y", 0)
	for range 2 {
		if got := maps.Collect(m2.All()); !maps.Equal(got, map[string]int{"r": 1, "x": 9, "y": 0}) {
			t.Fatalf("All at 125 = %v, want r and x refreshed at 119", got)
		}
	}
	clk.Set(135)
	if m2.IsEmpty() { // expired entries are still returnable: not empty
		t.Fatal("IsEmpty with returnable expired entries")
	}
	if got := maps.Collect(m2.All()); !maps.Equal(got, map[string]int{"r": 1, "x": 9, "y": 0}) {
		t.Fatalf("All at 135 = %v, want every expired entry once", got)
	}
	if got := maps.Collect(m2.All()); len(got) != 0 {
		t.Fatalf("second All at 135 = %v, want none", got)
	}
}

func TestTTLReducingAndAggregating(t *testing.T) {
	clk := clock.NewManual(0)
	b := NewBackend[string](0, 0, clk)
	c := state.TTL(ttl10)
	c.DisableBackgroundCleanup = true // reach the expired-but-stored branches
	r := must[*Reducing[string, int, int]](t)(GetReducing[string, int](b, state.Reducing("r", func(a, b int) int { return a + b }, state.WithTTL(c))))
	a := must[*Aggregating[string, int, int, avgAcc, float64]](t)(GetAggregating[string, int](b, state.Aggregating[int, avgAcc, float64]("a", avg{}, state.WithTTL(c))))
	b.SetCurrentKey("k", 0)
	r.Add(5)
	a.Add(5)
	clk.Set(9)
	r.Add(1) // within TTL: folded, timestamp 9
	a.Add(1)
	clk.Set(18)
	if v, ok := r.Get(); !ok || v != 6 {
		t.Fatalf("reducing at 18 = (%v, %v), want 6", v, ok)
	}
	if v, ok := a.Get(); !ok || v != 3 {
		t.Fatalf("aggregating at 18 = (%v, %v), want 3", v, ok)
	}
	clk.Set(19)
	if _, ok := r.Get(); ok {
		t.Fatal("reducing not expired at 19")
	}
	r.Add(5)
	a.Add(2) // the expired accumulator is replaced by a fresh one
	if v, _ := r.Get(); v != 5 {
		t.Fatal("reducing")
	}
	if v, _ := a.Get(); v != 2 {
		t.Fatalf("aggregating after expiry = %v, want 2", v)
	}
	clk.Set(40)
	r.Add(7) // stored 5 expired at 29: replaced, not folded
	if v, _ := r.Get(); v != 7 {
		t.Fatalf("reducing after expiry = %v, want 7", v)
	}

	// Merging with TTL: an expired source is skipped, the result gets now.
	clk.Set(100)
	r.SetNamespace(1)
	r.Add(1)
	clk.Set(105)
	r.SetNamespace(2)
	r.Add(2)
	r.SetNamespace(3)
	r.Add(3)
	clk.Set(110) // namespace 1 expired
	r.MergeNamespaces(3, []int{1, 2})
	r.SetNamespace(3)
	if v, ok := r.Get(); !ok || v != 5 {
		t.Fatalf("TTL merge = (%v, %v), want 5", v, ok)
	}
	clk.Set(119) // the merge at 110 set the timestamp
	if v, ok := r.Get(); !ok || v != 5 {
		t.Fatal("merged value expired before 120")
	}
	clk.Set(120)
	if _, ok := r.Get(); ok {
		t.Fatal("merged value not expired at 120")
	}

	// A live first source merged with an expired one keeps its value and
	// gets the merge time.
	clk.Set(140)
	r.SetNamespace(10)
	r.Add(10)
	clk.Set(145)
	r.SetNamespace(11)
	r.Add(11)
	clk.Set(150) // namespace 10 expired
	r.MergeNamespaces(12, []int{11, 10})
	r.SetNamespace(12)
	clk.Set(159) // 11's own timestamp (145) would expire it at 155
	if v, ok := r.Get(); !ok || v != 11 {
		t.Fatalf("merge with an expired later source = (%v, %v), want 11", v, ok)
	}

	clk.Set(170)
	a.SetNamespace(1)
	a.Add(10)
	clk.Set(175)
	a.SetNamespace(2)
	a.Add(20)
	clk.Set(180)
	a.MergeNamespaces(2, []int{1})
	if v, ok := a.Get(); !ok || v != 20 {
		t.Fatalf("aggregating TTL merge = (%v, %v), want 20", v, ok)
	}

	// With TTL, Add still folds as reduce(stored, new).
	s := must[*Reducing[string, struct{}, string]](t)(GetReducing[string, struct{}](b,
		state.Reducing("s", func(a, b string) string { return a + b }, state.WithTTL(c))))
	s.Add("a")
	s.Add("b")
	if v, _ := s.Get(); v != "ab" {
		t.Fatalf("TTL reducing = %q, want ab", v)
	}
	// ReturnExpiredIfNotCleanedUp: Add folds into an expired, stored value
	// (Flink's TtlReduceFunction uses getUnexpired, which honours the
	// visibility).
	c.Visibility = state.ReturnExpiredIfNotCleanedUp
	s2 := must[*Reducing[string, struct{}, string]](t)(GetReducing[string, struct{}](b,
		state.Reducing("s2", func(a, b string) string { return a + b }, state.WithTTL(c))))
	s2.Add("old")
	clk.Set(200)
	s2.Add("new")
	if v, _ := s2.Get(); v != "oldnew" {
		t.Fatalf("ReturnExpired reducing = %q, want oldnew", v)
	}
}

func TestIncrementalCleanup(t *testing.T) {
	for _, tc := range []struct {
		name       string
		cfg        func(*state.TTLConfig)
		afterOne   int
		afterMany  int
		perRecord  bool
		noTouching bool
	}{
		{name: "default 5 per access", afterOne: 95, afterMany: 0},
		{name: "off with 0 entries", cfg: func(c *state.TTLConfig) { c.CleanupEntries = 0 }, afterOne: 100, afterMany: 100},
		{name: "disabled", cfg: func(c *state.TTLConfig) { c.DisableBackgroundCleanup = true }, afterOne: 100, afterMany: 100},
		{name: "7 per access", cfg: func(c *state.TTLConfig) { c.CleanupEntries = 7 }, afterOne: 93, afterMany: 0},
		{name: "every record", cfg: func(c *state.TTLConfig) { c.CleanupEveryRecord = true }, afterOne: 95, afterMany: 0, perRecord: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clk := clock.NewManual(0)
			b := NewBackend[int](0, 15, clk)
			c := state.TTL(ttl10)
			if tc.cfg != nil {
				tc.cfg(&c)
			}
			v := must[*Value[int, struct{}, int]](t)(GetValue[int, struct{}](b, state.Value[int]("v", state.WithTTL(c))))
			for k := range 100 {
				b.SetCurrentKey(k, k%16)
				v.Update(k)
			}
			clk.Set(50)
			step := func() {
				if tc.perRecord {
					b.SetCurrentKey(1000, 3) // a record, no state access
				} else {
					b.SetCurrentKey(1000, 3)
					v.Value() // an access of an absent key
				}
			}
			step()
			if n := b.KeyCount(); n != tc.afterOne {
				t.Fatalf("after one step KeyCount = %d, want %d", n, tc.afterOne)
			}
			for range 30 {
				step()
			}
			if n := b.KeyCount(); n != tc.afterMany {
				t.Fatalf("after many steps KeyCount = %d, want %d", n, tc.afterMany)
			}
			checkInvariants(t, v.t)
		})
	}
}

// Incremental cleanup keeps live entries and drops only expired list
// elements and map entries.
func TestIncrementalCleanupListAndMap(t *testing.T) {
	clk := clock.NewManual(0)
	b := NewBackend[int](0, 3, clk)
	c := state.TTL(ttl10)
	c.CleanupEntries = 1000
	l := must[*List[int, struct{}, int]](t)(GetList[int, struct{}](b, state.List[int]("l", state.WithTTL(c))))
	m := must[*Map[int, struct{}, int, int]](t)(GetMap[int, struct{}](b, state.Map[int, int]("m", state.WithTTL(c))))
	for k := range 10 {
		b.SetCurrentKey(k, k%4)
		l.Add(1)
		m.Put(1, 1)
	}
	clk.Set(5)
	for k := range 5 {
		b.SetCurrentKey(k, k%4)
		l.Add(2)
		m.Put(2, 2)
	}
	clk.Set(12)
	b.SetCurrentKey(99, 0)
	l.Get()
	m.IsEmpty()
	if n := b.KeyCount(); n != 10 {
		t.Fatalf("KeyCount = %d, want 10", n)
	}
	for k := range 5 {
		cl := l.t.get(k%4, entryKey[int, struct{}]{key: k})
		if cl == nil || !slices.Equal(cl.v.vals, []int{2}) {
			t.Fatalf("key %d list not purged to [2]", k)
		}
		cm := m.t.get(k%4, entryKey[int, struct{}]{key: k})
		if cm == nil || len(cm.v) != 1 {
			t.Fatalf("key %d map not purged to one entry", k)
		}
	}
	checkInvariants(t, l.t)
	checkInvariants(t, m.t)
}

// fataler is the part of testing.TB and *rapid.T that checks use.
type fataler interface {
	Helper()
	Fatalf(format string, args ...any)
}

// checkInvariants verifies a table's bookkeeping: size, cleanup slots and
// cell positions agree with the maps.
func checkInvariants[K, N comparable, S any](t fataler, tb *table[K, N, S]) {
	t.Helper()
	n := 0
	for g := range tb.groups {
		m := &tb.groups[g]
		n += m.len()
		for _, c := range m.all {
			if c.dead() {
				t.Fatalf("group %d holds a dead cell", g)
			}
		}
		if tb.slots == nil {
			continue
		}
		ss := tb.slots[g]
		if len(ss) != m.len() {
			t.Fatalf("group %d: %d slots, %d entries", g, len(ss), m.len())
		}
		for i, s := range ss {
			if tb.get(g, s.k) != s.c || int(s.c.pos) != i {
				t.Fatalf("group %d slot %d inconsistent", g, i)
			}
		}
	}
	if n != tb.size {
		t.Fatalf("size %d, entries %d", tb.size, n)
	}
}
