package timer

import (
	"cmp"
	"math/rand/v2"
	"slices"
	"testing"

	"pgregory.net/rapid"
)

func tm(ts int64, key int, ns string) Timer[int, string] {
	return Timer[int, string]{Timestamp: ts, Key: key, Namespace: ns, KeyGroup: key % 7}
}

func TestQueueOrderAndDedup(t *testing.T) {
	q := NewQueue[int, string]()
	for _, x := range []Timer[int, string]{tm(5, 1, "a"), tm(3, 2, "a"), tm(5, 0, "a"), tm(1, 1, "b"), tm(5, 1, "b")} {
		if !q.Add(x) {
			t.Fatalf("Add(%v) = false on first add", x)
		}
	}
	dup := tm(5, 1, "a")
	dup.KeyGroup = 99
	if q.Add(dup) {
		t.Fatal("duplicate Add returned true")
	}
	if q.Len() != 5 {
		t.Fatalf("Len = %d, want 5", q.Len())
	}
	if !q.Contains(3, 2, "a") || q.Contains(3, 2, "b") {
		t.Fatal("Contains wrong")
	}
	if p, ok := q.Peek(); !ok || p != tm(1, 1, "b") {
		t.Fatalf("Peek = %v %v", p, ok)
	}
	// Ties at 5 come out in registration order; KeyGroup is the original.
	want := []Timer[int, string]{tm(1, 1, "b"), tm(3, 2, "a"), tm(5, 1, "a"), tm(5, 0, "a"), tm(5, 1, "b")}
	for i, w := range want {
		got, ok := q.Poll()
		if !ok || got != w {
			t.Fatalf("Poll %d = %v %v, want %v", i, got, ok, w)
		}
	}
	if _, ok := q.Poll(); ok {
		t.Fatal("Poll on empty queue returned ok")
	}
	if _, ok := q.Peek(); ok {
		t.Fatal("Peek on empty queue returned ok")
	}
}

func TestQueueDelete(t *testing.T) {
	q := NewQueue[int, string]()
	q.Add(tm(1, 1, "a"))
	q.Add(tm(2, 1, "a"))
	q.Add(tm(3, 1, "a"))
	if q.Delete(2, 1, "b") || q.Delete(4, 1, "a") {
		t.Fatal("Delete of a missing timer returned true")
	}
	if !q.Delete(1, 1, "a") || q.Delete(1, 1, "a") {
		t.Fatal("Delete wrong")
	}
	if p, _ := q.Peek(); p.Timestamp != 2 {
		t.Fatalf("head after delete = %v", p)
	}
	// Re-adding after delete works and gets a new registration order.
	if !q.Add(tm(1, 1, "a")) {
		t.Fatal("re-Add after Delete returned false")
	}
	if q.Len() != 3 {
		t.Fatalf("Len = %d", q.Len())
	}
}

func TestQueueZeroValueAndAll(t *testing.T) {
	var q Queue[int, string]
	if q.Delete(1, 1, "a") || q.Contains(1, 1, "a") || q.Len() != 0 {
		t.Fatal("zero queue not empty")
	}
	q.Add(tm(2, 1, "a"))
	q.Add(tm(1, 2, "a"))
	q.Add(tm(3, 3, "a"))
	var got []Timer[int, string]
	for x := range q.All() {
		got = append(got, x)
	}
	slices.SortFunc(got, func(a, b Timer[int, string]) int { return cmp.Compare(a.Timestamp, b.Timestamp) })
	if !slices.Equal(got, []Timer[int, string]{tm(1, 2, "a"), tm(2, 1, "a"), tm(3, 3, "a")}) {
		t.Fatalf("All = %v", got)
	}
	n := 0
	for range q.All() {
		n++
		break
	}
	if n != 1 {
		t.Fatal("All ignored early break")
	}
}

func TestQueueNoAllocsSteadyState(t *testing.T) {
	q := NewQueue[int, string]()
	const n = 256
	round := func() {
		for i := range n {
			q.Add(Timer[int, string]{Timestamp: int64(i * 7 % n), Key: i, Namespace: "w"})
		}
		for range n / 2 {
			q.Poll()
		}
		for i := range n / 2 {
			q.Delete(int64(i*7%n), i, "w")
		}
		for q.Len() > 0 {
			q.Poll()
		}
	}
	round()
	if a := testing.AllocsPerRun(20, round); a != 0 {
		t.Errorf("%v allocs per round of %d adds, want 0", a, n)
	}
}

// TestQueueModel checks Queue against a sorted-slice model.
func TestQueueModel(t *testing.T) {
	type entry struct {
		t   Timer[int, string]
		seq int
	}
	rapid.Check(t, func(t *rapid.T) {
		q := NewQueue[int, string]()
		var model []entry
		seq := 0
		find := func(ts int64, k int, ns string) int {
			return slices.IndexFunc(model, func(e entry) bool {
				return e.t.Timestamp == ts && e.t.Key == k && e.t.Namespace == ns
			})
		}
		for range rapid.IntRange(0, 200).Draw(t, "ops") {
			ts := rapid.Int64Range(0, 15).Draw(t, "ts")
			k := rapid.IntRange(0, 3).Draw(t, "key")
			ns := rapid.SampledFrom([]string{"a", "b"}).Draw(t, "ns")
			switch rapid.IntRange(0, 2).Draw(t, "op") {
			case 0:
				want := find(ts, k, ns) < 0
				if got := q.Add(tm(ts, k, ns)); got != want {
					t.Fatalf("Add(%d,%d,%s) = %v, want %v", ts, k, ns, got, want)
				}
				if want {
					seq++
					model = append(model, entry{tm(ts, k, ns), seq})
				}
			case 1:
				i := find(ts, k, ns)
				if got := q.Delete(ts, k, ns); got != (i >= 0) {
					t.Fatalf("Delete(%d,%d,%s) = %v, want %v", ts, k, ns, got, i >= 0)
				}
				if i >= 0 {
					model = slices.Delete(model, i, i+1)
				}
			case 2:
				got, ok := q.Poll()
				if ok != (len(model) > 0) {
					t.Fatalf("Poll ok = %v with %d modelled", ok, len(model))
				}
				if ok {
					i := 0
					for j, e := range model {
						m := model[i]
						if e.t.Timestamp < m.t.Timestamp || (e.t.Timestamp == m.t.Timestamp && e.seq < m.seq) {
							i = j
						}
					}
					if got != model[i].t {
						t.Fatalf("Poll = %v, want %v", got, model[i].t)
					}
					model = slices.Delete(model, i, i+1)
				}
			}
			if q.Len() != len(model) {
				t.Fatalf("Len = %d, want %d", q.Len(), len(model))
			}
		}
		n := 0
		for x := range q.All() {
			if find(x.Timestamp, x.Key, x.Namespace) < 0 {
				t.Fatalf("All yielded unmodelled %v", x)
			}
			n++
		}
		if n != len(model) {
			t.Fatalf("All yielded %d, want %d", n, len(model))
		}
	})
}

// TestQueueModelLong runs long random sequences of adds, deletes, peeks,
// polls and snapshots' iterations against a sorted-slice model, in phases
// that leave thousands of deleted timers in sorted runs and in the pending
// list (so that compaction, merges of many runs and dead heads are all
// exercised), with restored registration numbers mixed in.
func TestQueueModelLong(t *testing.T) {
	type entry struct {
		t   Timer[int, string]
		seq uint64
		ord int
	}
	for seed := range uint64(2) {
		rng := rand.New(rand.NewPCG(seed, 7))
		q := NewQueue[int, string]()
		var model []entry
		var seq uint64
		ord := 0
		find := func(ts int64, k int, ns string) int {
			return slices.IndexFunc(model, func(e entry) bool {
				return e.t.Timestamp == ts && e.t.Key == k && e.t.Namespace == ns
			})
		}
		least := func() int {
			i := 0
			for j, e := range model {
				m := model[i]
				if e.t.Timestamp < m.t.Timestamp || (e.t.Timestamp == m.t.Timestamp && (e.seq < m.seq || (e.seq == m.seq && e.ord < m.ord))) {
					i = j
				}
			}
			return i
		}
		for phase := range 12 {
			// add-heavy, delete-heavy and poll-heavy phases in turn
			pAdd, pDel := []int{70, 20, 30}[phase%3], []int{15, 75, 20}[phase%3]
			for range 3000 {
				ts := rng.Int64N(400) + int64(phase)*20
				k := rng.IntN(40)
				ns := []string{"a", "b"}[rng.IntN(2)]
				switch p := rng.IntN(100); {
				case p < pAdd:
					tmr := tm(ts, k, ns)
					want := find(ts, k, ns) < 0
					restoredSeq := uint64(0)
					if rng.IntN(10) == 0 && seq > 0 {
						restoredSeq = 1 + rng.Uint64N(seq) // an older number, as a restore gives
					}
					if got := q.add(tmr, restoredSeq); got != want {
						t.Fatalf("add(%v) = %v, want %v", tmr, got, want)
					}
					if want {
						s := restoredSeq
						if s == 0 {
							seq++
							s = seq
						}
						ord++
						model = append(model, entry{tmr, s, ord})
					}
				case p < pAdd+pDel:
					if len(model) > 0 && rng.IntN(4) > 0 {
						e := model[rng.IntN(len(model))]
						ts, k, ns = e.t.Timestamp, e.t.Key, e.t.Namespace
					}
					i := find(ts, k, ns)
					if got := q.Delete(ts, k, ns); got != (i >= 0) {
						t.Fatalf("Delete(%d,%d,%s) = %v, want %v", ts, k, ns, got, i >= 0)
					}
					if i >= 0 {
						model = slices.Delete(model, i, i+1)
					}
				case p < 97:
					peek := rng.IntN(2) == 0
					var got Timer[int, string]
					var ok bool
					if peek {
						got, ok = q.Peek()
					} else {
						got, ok = q.Poll()
					}
					if ok != (len(model) > 0) {
						t.Fatalf("Peek/Poll ok = %v with %d modelled", ok, len(model))
					}
					if ok {
						i := least()
						if got != model[i].t {
							t.Fatalf("phase %d: Peek/Poll = %v, want %v", phase, got, model[i].t)
						}
						if !peek {
							model = slices.Delete(model, i, i+1)
						}
					}
				default:
					var got []Timer[int, string]
					for x := range q.All() {
						got = append(got, x)
					}
					want := slices.Clone(model)
					slices.SortStableFunc(want, func(a, b entry) int {
						if c := cmp.Compare(a.t.Timestamp, b.t.Timestamp); c != 0 {
							return c
						}
						if c := cmp.Compare(a.seq, b.seq); c != 0 {
							return c
						}
						return cmp.Compare(a.ord, b.ord)
					})
					if len(got) != len(want) {
						t.Fatalf("All yielded %d timers, want %d", len(got), len(want))
					}
					for i := range got {
						if got[i] != want[i].t {
							t.Fatalf("All[%d] = %v, want %v", i, got[i], want[i].t)
						}
					}
				}
				if q.Len() != len(model) {
					t.Fatalf("Len = %d, want %d", q.Len(), len(model))
				}
			}
		}
		for len(model) > 0 {
			i := least()
			got, ok := q.Poll()
			if !ok || got != model[i].t {
				t.Fatalf("final Poll = %v %v, want %v", got, ok, model[i].t)
			}
			model = slices.Delete(model, i, i+1)
		}
		if _, ok := q.Poll(); ok || q.Len() != 0 {
			t.Fatal("queue not empty at the end")
		}
	}
}

// TestQueueCompacts deletes most of a large queue's timers after they were
// sorted into runs and while more are pending: the dead refs are dropped
// (memory stays bounded by the live timers) and the order is kept.
func TestQueueCompacts(t *testing.T) {
	q := NewQueue[int, string]()
	for i := range 5000 {
		q.Add(tm(int64(i%977), i, "w"))
	}
	q.Peek() // into runs
	for i := range 5000 {
		q.Add(tm(int64(i%613), i, "p"))
	}
	for i := range 5000 {
		if i%10 != 0 {
			q.Delete(int64(i%977), i, "w")
			q.Delete(int64(i%613), i, "p")
		}
	}
	if q.Len() != 1000 {
		t.Fatalf("Len = %d, want 1000", q.Len())
	}
	if q.dead > q.n+compactSlack {
		t.Fatalf("%d dead refs kept for %d live timers", q.dead, q.n)
	}
	last := int64(-1)
	for q.Len() > 0 {
		x, _ := q.Poll()
		if x.Timestamp < last {
			t.Fatalf("Poll went back from %d to %d", last, x.Timestamp)
		}
		last = x.Timestamp
	}
}
