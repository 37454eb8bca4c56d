package timer

import (
	"errors"
	"math"
	"slices"
	"testing"

	"pgregory.net/rapid"
)

type svc = Service[int, string]
type tmr = Timer[int, string]

// collect returns a fire callback that appends the timers it sees to out.
func collect(out *[]tmr) func(tmr) error {
	return func(t tmr) error { *out = append(*out, t); return nil }
}

func TestServiceInitialState(t *testing.T) {
	s := NewService[int, string]()
	if s.CurrentWatermark() != math.MinInt64 {
		t.Fatalf("CurrentWatermark = %d, want MinInt64", s.CurrentWatermark())
	}
	if _, ok := s.NextProcessingTime(); ok {
		t.Fatal("NextProcessingTime ok with no timers")
	}
	if s.EventTimers().Len() != 0 || s.ProcessingTimers().Len() != 0 {
		t.Fatal("queues not empty")
	}
}

func TestServiceEventTimeOrderAndDedup(t *testing.T) {
	s := NewService[int, string]()
	s.RegisterEventTime(1, 11, "w", 20)
	s.RegisterEventTime(2, 12, "w", 10)
	s.RegisterEventTime(1, 11, "w", 20) // duplicate: no-op
	s.RegisterEventTime(3, 13, "w", 10)
	s.RegisterEventTime(1, 11, "v", 30)
	s.DeleteEventTime(9, "w", 10) // missing: no-op
	var got []tmr
	if err := s.AdvanceWatermark(20, collect(&got)); err != nil {
		t.Fatal(err)
	}
	want := []tmr{
		{Timestamp: 10, Key: 2, Namespace: "w", KeyGroup: 12},
		{Timestamp: 10, Key: 3, Namespace: "w", KeyGroup: 13},
		{Timestamp: 20, Key: 1, Namespace: "w", KeyGroup: 11},
	}
	if !slices.Equal(got, want) {
		t.Fatalf("fired %v, want %v", got, want)
	}
	if s.EventTimers().Len() != 1 {
		t.Fatalf("%d timers left, want 1", s.EventTimers().Len())
	}
}

func TestServiceDomainsAreSeparate(t *testing.T) {
	s := NewService[int, string]()
	s.RegisterEventTime(1, 0, "w", 5)
	s.RegisterProcessingTime(1, 0, "w", 5)
	if s.EventTimers().Len() != 1 || s.ProcessingTimers().Len() != 1 {
		t.Fatal("same timer in both domains should be held once in each")
	}
	s.DeleteProcessingTime(1, "w", 5)
	if s.EventTimers().Len() != 1 || s.ProcessingTimers().Len() != 0 {
		t.Fatal("DeleteProcessingTime touched the event-time queue")
	}
	var got []tmr
	_ = s.AdvanceProcessingTime(100, collect(&got))
	if len(got) != 0 {
		t.Fatalf("processing advance fired event timers: %v", got)
	}
	s.DeleteEventTime(1, "w", 5)
	_ = s.AdvanceWatermark(100, collect(&got))
	if len(got) != 0 {
		t.Fatalf("deleted timer fired: %v", got)
	}
}

func TestServiceLateRegistrationWaitsForNextAdvance(t *testing.T) {
	s := NewService[int, string]()
	var got []tmr
	_ = s.AdvanceWatermark(100, collect(&got))
	s.RegisterEventTime(1, 0, "w", 50) // behind the watermark: does not fire now
	if len(got) != 0 {
		t.Fatal("timer fired on registration")
	}
	_ = s.AdvanceWatermark(100, collect(&got))
	if len(got) != 1 || got[0].Timestamp != 50 {
		t.Fatalf("fired %v, want the timer at 50", got)
	}
}

func TestServiceWatermarkVisibleInCallback(t *testing.T) {
	s := NewService[int, string]()
	s.RegisterEventTime(1, 0, "w", 5)
	s.RegisterEventTime(1, 0, "w", 7)
	seen := 0
	err := s.AdvanceWatermark(10, func(tmr) error {
		seen++
		if wm := s.CurrentWatermark(); wm != 10 {
			t.Errorf("CurrentWatermark in callback = %d, want 10", wm)
		}
		return nil
	})
	if err != nil || seen != 2 {
		t.Fatalf("err %v, fired %d", err, seen)
	}
}

func TestServiceDeleteInOwnCallbackIsNoOp(t *testing.T) {
	s := NewService[int, string]()
	s.RegisterEventTime(1, 0, "w", 5)
	s.RegisterEventTime(2, 0, "w", 6)
	var got []tmr
	err := s.AdvanceWatermark(10, func(x tmr) error {
		got = append(got, x)
		s.DeleteEventTime(x.Key, x.Namespace, x.Timestamp)
		if s.EventTimers().Contains(x.Timestamp, x.Key, x.Namespace) {
			t.Errorf("firing timer %v still queued", x)
		}
		return nil
	})
	if err != nil || len(got) != 2 {
		t.Fatalf("err %v, fired %v", err, got)
	}
}

func TestServiceDeleteOtherInCallback(t *testing.T) {
	s := NewService[int, string]()
	s.RegisterEventTime(1, 0, "w", 5)
	s.RegisterEventTime(2, 0, "w", 6)
	var got []tmr
	_ = s.AdvanceWatermark(10, func(x tmr) error {
		got = append(got, x)
		s.DeleteEventTime(2, "w", 6)
		return nil
	})
	if len(got) != 1 || got[0].Key != 1 {
		t.Fatalf("fired %v, want only key 1", got)
	}
}

func TestServiceRegisterDuringFire(t *testing.T) {
	s := NewService[int, string]()
	s.RegisterEventTime(1, 0, "w", 5)
	var got []int64
	_ = s.AdvanceWatermark(10, func(x tmr) error {
		got = append(got, x.Timestamp)
		if len(got) == 1 {
			s.RegisterEventTime(1, 0, "w", 8)  // due: fires in this advance
			s.RegisterEventTime(1, 0, "w", 3)  // due and earlier than the last fired: fires next
			s.RegisterEventTime(1, 0, "w", 11) // not due
			s.RegisterEventTime(1, 0, "w", 5)  // the firing timer itself again: due, fires again
		}
		return nil
	})
	if want := []int64{5, 3, 5, 8}; !slices.Equal(got, want) {
		t.Fatalf("fired %v, want %v", got, want)
	}
	if p, _ := s.EventTimers().Peek(); s.EventTimers().Len() != 1 || p.Timestamp != 11 {
		t.Fatalf("left %d timers, head %v", s.EventTimers().Len(), p)
	}
}

func TestServiceErrorStopsAdvance(t *testing.T) {
	s := NewService[int, string]()
	for ts := int64(1); ts <= 4; ts++ {
		s.RegisterProcessingTime(1, 0, "w", ts)
	}
	boom := errors.New("boom")
	var got []int64
	err := s.AdvanceProcessingTime(10, func(x tmr) error {
		got = append(got, x.Timestamp)
		if x.Timestamp == 2 {
			return boom
		}
		return nil
	})
	if !errors.Is(err, boom) || !slices.Equal(got, []int64{1, 2}) {
		t.Fatalf("err %v, fired %v", err, got)
	}
	if next, ok := s.NextProcessingTime(); !ok || next != 3 {
		t.Fatalf("NextProcessingTime = %d %v, want 3", next, ok)
	}
	got = nil
	if err := s.AdvanceProcessingTime(10, collect2(&got)); err != nil || !slices.Equal(got, []int64{3, 4}) {
		t.Fatalf("err %v, fired %v", err, got)
	}
}

func collect2(out *[]int64) func(tmr) error {
	return func(x tmr) error { *out = append(*out, x.Timestamp); return nil }
}

func TestServiceProcessingTime(t *testing.T) {
	s := NewService[int, string]()
	s.RegisterProcessingTime(1, 0, "w", 30)
	s.RegisterProcessingTime(2, 0, "w", 10)
	s.RegisterProcessingTime(3, 0, "w", 20)
	if next, ok := s.NextProcessingTime(); !ok || next != 10 {
		t.Fatalf("NextProcessingTime = %d %v", next, ok)
	}
	var got []int64
	_ = s.AdvanceProcessingTime(20, collect2(&got))
	if !slices.Equal(got, []int64{10, 20}) {
		t.Fatalf("fired %v", got)
	}
	if next, ok := s.NextProcessingTime(); !ok || next != 30 {
		t.Fatalf("NextProcessingTime = %d %v", next, ok)
	}
	if s.CurrentWatermark() != math.MinInt64 {
		t.Fatal("processing time advance moved the watermark")
	}
}

func TestServiceNoAllocsSteadyState(t *testing.T) {
	s := NewService[int, string]()
	nop := func(tmr) error { return nil }
	wm := int64(0)
	round := func() {
		for i := range 64 {
			s.RegisterEventTime(i, i, "w", wm+int64(i%8))
		}
		wm += 8
		_ = s.AdvanceWatermark(wm, nop)
	}
	for range 10 {
		round()
	}
	// Timestamps are new every round, so the index map sees fresh keys;
	// allow rare rehashes but no per-timer allocation.
	if a := testing.AllocsPerRun(100, round); a > 1 {
		t.Errorf("%v allocs per 64 register+fire, want ~0", a)
	}
}

// domainModel is the brute-force model of one domain: the set of pending
// timers with their registration order.
type domainModel map[[3]int64]int // (ts, key, ns index) -> registration number

var namespaces = []string{"a", "b"}

func nsIndex(ns string) int64 { return int64(slices.Index(namespaces, ns)) }

// next returns the timer that must fire next with limit, if any.
func (m domainModel) next(limit int64) ([3]int64, bool) {
	var best [3]int64
	bestSeq, found := 0, false
	for id, seq := range m {
		if id[0] > limit {
			continue
		}
		if !found || id[0] < best[0] || (id[0] == best[0] && seq < bestSeq) {
			best, bestSeq, found = id, seq, true
		}
	}
	return best, found
}

// TestServiceModel drives a Service and a brute-force model with random
// registers, deletes and advances (including registers and deletes from
// inside callbacks and failing callbacks) and checks that every timer fires
// exactly once, in (timestamp, registration) order, exactly when it was
// registered and not deleted and its timestamp is <= the advanced time.
func TestServiceModel(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		s := NewService[int, string]()
		models := [2]domainModel{{}, {}} // 0 event time, 1 processing time
		seq := 0
		register := func(d int, key int, ns string, ts int64) {
			id := [3]int64{ts, int64(key), nsIndex(ns)}
			if d == 0 {
				s.RegisterEventTime(key, key*10, ns, ts)
			} else {
				s.RegisterProcessingTime(key, key*10, ns, ts)
			}
			if _, ok := models[d][id]; !ok {
				seq++
				models[d][id] = seq
			}
		}
		remove := func(d int, key int, ns string, ts int64) {
			if d == 0 {
				s.DeleteEventTime(key, ns, ts)
			} else {
				s.DeleteProcessingTime(key, ns, ts)
			}
			delete(models[d], [3]int64{ts, int64(key), nsIndex(ns)})
		}
		drawTimer := func(t *rapid.T) (int, string, int64) {
			return rapid.IntRange(0, 2).Draw(t, "key"),
				rapid.SampledFrom(namespaces).Draw(t, "ns"),
				rapid.Int64Range(-3, 20).Draw(t, "ts")
		}
		check := func() {
			if got, want := s.EventTimers().Len(), len(models[0]); got != want {
				t.Fatalf("event timers = %d, model %d", got, want)
			}
			if got, want := s.ProcessingTimers().Len(), len(models[1]); got != want {
				t.Fatalf("processing timers = %d, model %d", got, want)
			}
			id, ok := models[1].next(math.MaxInt64)
			if next, gotOK := s.NextProcessingTime(); gotOK != ok || (ok && next != id[0]) {
				t.Fatalf("NextProcessingTime = %d %v, model %v %v", next, gotOK, id, ok)
			}
		}
		boom := errors.New("boom")
		for range rapid.IntRange(0, 60).Draw(t, "ops") {
			d := rapid.IntRange(0, 1).Draw(t, "domain")
			switch rapid.SampledFrom([]string{"register", "register", "delete", "advance"}).Draw(t, "op") {
			case "register":
				k, ns, ts := drawTimer(t)
				register(d, k, ns, ts)
			case "delete":
				k, ns, ts := drawTimer(t)
				remove(d, k, ns, ts)
			case "advance":
				limit := rapid.Int64Range(-5, 25).Draw(t, "limit")
				budget := 8 // callback registrations per advance, to terminate
				failed := false
				fire := func(x tmr) error {
					if d == 0 && s.CurrentWatermark() != limit {
						t.Fatalf("watermark in callback = %d, want %d", s.CurrentWatermark(), limit)
					}
					id, ok := models[d].next(limit)
					if !ok {
						t.Fatalf("fired %v but the model has nothing due at %d", x, limit)
					}
					want := tmr{Timestamp: id[0], Key: int(id[1]), Namespace: namespaces[id[2]], KeyGroup: int(id[1]) * 10}
					if x != want {
						t.Fatalf("fired %v, want %v", x, want)
					}
					delete(models[d], id)
					for range rapid.IntRange(0, 2).Draw(t, "actions") {
						switch rapid.IntRange(0, 3).Draw(t, "action") {
						case 0:
							if budget > 0 {
								budget--
								k, ns, ts := drawTimer(t)
								register(rapid.IntRange(0, 1).Draw(t, "cbDomain"), k, ns, ts)
							}
						case 1:
							k, ns, ts := drawTimer(t)
							remove(rapid.IntRange(0, 1).Draw(t, "cbDomain"), k, ns, ts)
						case 2:
							remove(d, x.Key, x.Namespace, x.Timestamp) // self: no-op
						case 3:
							if rapid.IntRange(0, 9).Draw(t, "fail") == 0 {
								failed = true
								return boom
							}
						}
					}
					return nil
				}
				var err error
				if d == 0 {
					err = s.AdvanceWatermark(limit, fire)
				} else {
					err = s.AdvanceProcessingTime(limit, fire)
				}
				if failed != (err != nil) {
					t.Fatalf("advance error %v, callback failed %v", err, failed)
				}
				if !failed {
					if id, ok := models[d].next(limit); ok {
						t.Fatalf("timer %v due at %d did not fire", id, limit)
					}
				}
				if d == 0 && s.CurrentWatermark() != limit {
					t.Fatalf("watermark = %d, want %d", s.CurrentWatermark(), limit)
				}
			}
			check()
		}
	})
}

// TestServiceFiresSortedSet checks, without callback side effects, that an
// advance fires exactly the registered-and-not-deleted timers with ts <= wm,
// each once and in non-decreasing timestamp order.
func TestServiceFiresSortedSet(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		s := NewService[int, string]()
		set := map[tmr]bool{}
		wm := int64(math.MinInt64)
		for range rapid.IntRange(0, 80).Draw(t, "ops") {
			x := tmr{
				Timestamp: rapid.Int64Range(0, 30).Draw(t, "ts"),
				Key:       rapid.IntRange(0, 3).Draw(t, "key"),
				Namespace: rapid.SampledFrom(namespaces).Draw(t, "ns"),
			}
			switch rapid.IntRange(0, 3).Draw(t, "op") {
			case 0, 1:
				s.RegisterEventTime(x.Key, 0, x.Namespace, x.Timestamp)
				set[x] = true
			case 2:
				s.DeleteEventTime(x.Key, x.Namespace, x.Timestamp)
				delete(set, x)
			case 3:
				wm = max(wm, rapid.Int64Range(0, 35).Draw(t, "wm"))
				var fired []tmr
				if err := s.AdvanceWatermark(wm, collect(&fired)); err != nil {
					t.Fatal(err)
				}
				var want []tmr
				for y := range set {
					if y.Timestamp <= wm {
						want = append(want, y)
						delete(set, y)
					}
				}
				if !slices.IsSortedFunc(fired, func(a, b tmr) int { return int(a.Timestamp - b.Timestamp) }) {
					t.Fatalf("fired out of order: %v", fired)
				}
				seen := map[tmr]bool{}
				for _, y := range fired {
					if seen[y] {
						t.Fatalf("%v fired twice", y)
					}
					seen[y] = true
				}
				if len(seen) != len(want) {
					t.Fatalf("fired %v, want the set %v", fired, want)
				}
				for _, y := range want {
					if !seen[y] {
						t.Fatalf("%v did not fire", y)
					}
				}
			}
		}
	})
}

func BenchmarkRegisterAndAdvance(b *testing.B) {
	s := NewService[int64, struct{}]()
	nop := func(Timer[int64, struct{}]) error { return nil }
	const backlog = 10000 // timers pending at any time
	var i int64
	for b.Loop() {
		// Register at a pseudo-random time ahead, then advance by one.
		ts := i + int64(uint64(i)*0x9E3779B97F4A7C15>>50)%backlog
		s.RegisterEventTime(i%1000, 0, struct{}{}, ts)
		_ = s.AdvanceWatermark(i, nop)
		i++
	}
}

func BenchmarkRegisterAndAdvanceStringKeys(b *testing.B) {
	s := NewService[string, int64]()
	keys := []string{"user-1", "user-2", "user-3", "user-4", "user-5", "user-6", "user-7", "user-8"}
	nop := func(Timer[string, int64]) error { return nil }
	var i int64
	for b.Loop() {
		s.RegisterEventTime(keys[i%8], 0, i/100, i+int64(i%97))
		if i%16 == 0 {
			_ = s.AdvanceWatermark(i, nop)
		}
		i++
	}
}

// BenchmarkRegisterAndAdvanceSharedTimestamps is the window operator's
// pattern: 10k keys each register a timer at the same window end, and the
// watermark passes one window end every 10k registrations.
func BenchmarkRegisterAndAdvanceSharedTimestamps(b *testing.B) {
	s := NewService[int64, int64]()
	nop := func(Timer[int64, int64]) error { return nil }
	const keys = 10_000
	var i int64
	for b.Loop() {
		end := i/keys*1000 + 999
		s.RegisterEventTime(i%keys, 0, end-999, end)
		if i%keys == keys-1 {
			_ = s.AdvanceWatermark(end, nop)
		}
		i++
	}
}
