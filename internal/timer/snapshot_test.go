package timer

import (
	"bytes"
	"cmp"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"math"
	"slices"
	"strings"
	"testing"

	"pgregory.net/rapid"

	istate "github.com/weirstream/weir/internal/state"
	"github.com/weirstream/weir/window"
)

var (
	intCodec    = istate.DefaultCodec[int]()
	stringCodec = istate.DefaultCodec[string]()
)

// sortedTimers returns the timers of q ordered by every field.
func sortedTimers[K cmp.Ordered, N comparable](q *Queue[K, N], nsKey func(N) string) []Timer[K, N] {
	ts := slices.Collect(q.All())
	slices.SortFunc(ts, func(a, b Timer[K, N]) int {
		return cmp.Or(cmp.Compare(a.Timestamp, b.Timestamp), cmp.Compare(a.Key, b.Key),
			cmp.Compare(nsKey(a.Namespace), nsKey(b.Namespace)), cmp.Compare(a.KeyGroup, b.KeyGroup))
	})
	return ts
}

// contents returns both queues of services, merged, in a canonical order.
func contents(ss ...*svc) (ev, pr []tmr) {
	for _, s := range ss {
		ev = append(ev, slices.Collect(s.event.All())...)
		pr = append(pr, slices.Collect(s.proc.All())...)
	}
	order := func(a, b tmr) int {
		return cmp.Or(cmp.Compare(a.Timestamp, b.Timestamp), cmp.Compare(a.Key, b.Key),
			cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.KeyGroup, b.KeyGroup))
	}
	slices.SortFunc(ev, order)
	slices.SortFunc(pr, order)
	return ev, pr
}

func sameContents(t *testing.T, got, want []*svc) {
	t.Helper()
	ge, gp := contents(got...)
	we, wp := contents(want...)
	if len(we)+len(wp) == 0 {
		t.Fatal("nothing to compare")
	}
	if !slices.Equal(ge, we) {
		t.Fatalf("event-time timers\n got %v\nwant %v", ge, we)
	}
	if !slices.Equal(gp, wp) {
		t.Fatalf("processing-time timers\n got %v\nwant %v", gp, wp)
	}
}

// kgOf is a stand-in key-group assignment.
func kgOf(key, maxP int) int { return key * 7 % maxP }

// fill registers timers of keys 0..keys-1 in the service owning each key's
// group, with ties on timestamps across and within key groups.
func fill(ss []*svc, ranges [][2]int, keys, maxP int) {
	for k := range keys {
		kg := kgOf(k, maxP)
		for i, r := range ranges {
			if kg < r[0] || kg > r[1] {
				continue
			}
			s := ss[i]
			s.RegisterEventTime(k, kg, "w", int64(k%5))
			s.RegisterEventTime(k, kg, "v", int64(k%3)*10)
			s.RegisterProcessingTime(k, kg, "", int64(1000+k%4))
			if k%2 == 0 {
				s.RegisterProcessingTime(k, kg, "x", math.MaxInt64)
				s.RegisterEventTime(k, kg, "neg", math.MinInt64)
			}
		}
	}
}

func snapshotEach(t *testing.T, s *svc, first, last int) map[int][]byte {
	t.Helper()
	out := map[int][]byte{}
	for kg := first; kg <= last; kg++ {
		data, err := s.SnapshotKeyGroup(kg, intCodec, stringCodec)
		if err != nil {
			t.Fatal(err)
		}
		out[kg] = data
	}
	return out
}

func restoreInto(t *testing.T, snaps map[int][]byte, first, last int) *svc {
	t.Helper()
	s := NewService[int, string]()
	for kg := first; kg <= last; kg++ {
		if err := s.RestoreKeyGroup(kg, snaps[kg], intCodec, stringCodec); err != nil {
			t.Fatalf("restore of key group %d: %v", kg, err)
		}
	}
	return s
}

// fireAll fires every timer of s, event time first, and returns them in
// firing order.
func fireAll(t interface{ Fatal(...any) }, s *svc) []tmr {
	var out []tmr
	f := func(x tmr) error { out = append(out, x); return nil }
	if err := s.AdvanceWatermark(math.MaxInt64, f); err != nil {
		t.Fatal(err)
	}
	if err := s.AdvanceProcessingTime(math.MaxInt64, f); err != nil {
		t.Fatal(err)
	}
	return out
}

func TestTimerSnapshotRoundTrip(t *testing.T) {
	s := NewService[int, string]()
	fill([]*svc{s}, [][2]int{{0, 7}}, 40, 8)
	// The watermark is not part of a snapshot; a timer behind it stays.
	if err := s.AdvanceWatermark(2, func(tmr) error { return nil }); err != nil {
		t.Fatal(err)
	}
	s.RegisterEventTime(99, kgOf(99, 8), "late", 1)
	snaps := snapshotEach(t, s, 0, 7)

	// Restore the key groups in reverse order: timers still fire in the
	// original order, ties across key groups included.
	re := NewService[int, string]()
	for kg := 7; kg >= 0; kg-- {
		if err := re.RestoreKeyGroup(kg, snaps[kg], intCodec, stringCodec); err != nil {
			t.Fatal(err)
		}
	}
	sameContents(t, []*svc{re}, []*svc{s})
	if re.CurrentWatermark() != math.MinInt64 {
		t.Fatalf("restored watermark %d", re.CurrentWatermark())
	}
	if ts, ok := re.NextProcessingTime(); !ok || ts != 1000 {
		t.Fatalf("NextProcessingTime = %d %v", ts, ok)
	}
	// A timer registered after the restore comes after the restored ones
	// with the same timestamp, in both.
	s.RegisterEventTime(123, 0, "new", 0)
	re.RegisterEventTime(123, 0, "new", 0)
	if got, want := fireAll(t, re), fireAll(t, s); !slices.Equal(got, want) {
		t.Fatalf("restored timers fired\n %v\nwant %v", got, want)
	}
}

func TestTimerSnapshotKeyGroupsInOnePass(t *testing.T) {
	s := NewService[int, string]()
	fill([]*svc{s}, [][2]int{{0, 15}}, 100, 16)
	each := snapshotEach(t, s, 0, 15)
	all, err := s.SnapshotKeyGroups(0, 15, intCodec, stringCodec)
	if err != nil {
		t.Fatal(err)
	}
	for kg := range 16 {
		if !slices.Equal(all[kg], each[kg]) {
			t.Fatalf("key group %d: SnapshotKeyGroups and SnapshotKeyGroup differ", kg)
		}
	}
	if _, err := s.SnapshotKeyGroups(0, 14, intCodec, stringCodec); err == nil || !strings.Contains(err.Error(), "outside") {
		t.Fatalf("timer outside the range: %v", err)
	}
	if _, err := s.SnapshotKeyGroups(3, 2, intCodec, stringCodec); err == nil {
		t.Fatal("empty range accepted")
	}
}

func TestTimerSnapshotRescale(t *testing.T) {
	const maxP = 128
	in := [][2]int{{0, 63}, {64, 127}}
	a, b := NewService[int, string](), NewService[int, string]()
	fill([]*svc{a, b}, in, 1000, maxP)
	snaps := snapshotEach(t, a, 0, 63)
	for kg, d := range snapshotEach(t, b, 64, 127) {
		snaps[kg] = d
	}
	one := restoreInto(t, snaps, 0, 127)
	sameContents(t, []*svc{one}, []*svc{a, b})

	again, err := one.SnapshotKeyGroups(0, 127, intCodec, stringCodec)
	if err != nil {
		t.Fatal(err)
	}
	m := map[int][]byte{}
	for kg, d := range again {
		m[kg] = d
	}
	var parts []*svc
	for _, r := range [][2]int{{0, 10}, {11, 100}, {101, 127}} {
		p := restoreInto(t, m, r[0], r[1])
		for _, x := range slices.Concat(slices.Collect(p.event.All()), slices.Collect(p.proc.All())) {
			if x.KeyGroup < r[0] || x.KeyGroup > r[1] || x.KeyGroup != kgOf(x.Key, maxP) {
				t.Fatalf("timer %v restored into [%d, %d]", x, r[0], r[1])
			}
		}
		parts = append(parts, p)
	}
	sameContents(t, parts, []*svc{a, b})
}

func TestTimerSnapshotWindowNamespace(t *testing.T) {
	s := NewService[string, window.TimeWindow]()
	s.RegisterEventTime("k", 3, window.TimeWindow{Start: 0, End: 10}, 9)
	s.RegisterProcessingTime("k", 3, window.TimeWindow{Start: -10, End: 0}, 5)
	kc, nc := istate.DefaultCodec[string](), istate.DefaultCodec[window.TimeWindow]()
	data, err := s.SnapshotKeyGroup(3, kc, nc)
	if err != nil {
		t.Fatal(err)
	}
	re := NewService[string, window.TimeWindow]()
	if err := re.RestoreKeyGroup(3, data, kc, nc); err != nil {
		t.Fatal(err)
	}
	key := func(w window.TimeWindow) string { return w.String() }
	if !slices.Equal(sortedTimers(re.EventTimers(), key), sortedTimers(s.EventTimers(), key)) ||
		!slices.Equal(sortedTimers(re.ProcessingTimers(), key), sortedTimers(s.ProcessingTimers(), key)) {
		t.Fatal("window timers differ after the restore")
	}
	// Types must match.
	other := NewService[string, string]()
	if err := other.RestoreKeyGroup(3, data, kc, stringCodec); err == nil || !strings.Contains(err.Error(), "window.TimeWindow") {
		t.Fatalf("restore into other namespace type: %v", err)
	}
}

func fixCRC(data []byte) {
	n := len(data) - 4
	binary.LittleEndian.PutUint32(data[n:], crc32.Checksum(data[:n], castagnoli))
}

func TestTimerRestoreErrors(t *testing.T) {
	s := NewService[int, string]()
	fill([]*svc{s}, [][2]int{{0, 3}}, 20, 4)
	data, err := s.SnapshotKeyGroup(1, intCodec, stringCodec)
	if err != nil {
		t.Fatal(err)
	}
	if err := NewService[int, string]().RestoreKeyGroup(2, data, intCodec, stringCodec); err == nil || !strings.Contains(err.Error(), "key group 1") {
		t.Errorf("other key group: %v", err)
	}
	bad := slices.Clone(data)
	bad[4] = 9
	fixCRC(bad)
	if err := NewService[int, string]().RestoreKeyGroup(1, bad, intCodec, stringCodec); err == nil || !strings.Contains(err.Error(), "version 9") {
		t.Errorf("other version: %v", err)
	}

	re := NewService[int, string]()
	check := func(what string, in []byte) {
		t.Helper()
		err := re.RestoreKeyGroup(1, in, intCodec, stringCodec)
		if !errors.Is(err, ErrCorrupt) {
			t.Fatalf("%s: %v, want ErrCorrupt", what, err)
		}
		if re.event.Len()+re.proc.Len() != 0 {
			t.Fatalf("%s: a failed restore added timers", what)
		}
	}
	for n := range len(data) {
		check(fmt.Sprintf("truncated to %d", n), data[:n])
	}
	for i := range data {
		for _, x := range []byte{1, 0x80} {
			bad := slices.Clone(data)
			bad[i] ^= x
			check(fmt.Sprintf("byte %d ^ %#x", i, x), bad)
		}
	}
	// Damage behind a valid checksum: errors or timers, never a panic.
	for i := range len(data) - 4 {
		for _, x := range []byte{1, 0x7F, 0x80} {
			bad := slices.Clone(data)
			bad[i] ^= x
			fixCRC(bad)
			_ = NewService[int, string]().RestoreKeyGroup(1, bad, intCodec, stringCodec)
		}
	}
}

// TestRapidTimerSnapshotRestore registers and deletes random timers in
// random key groups, fires some, snapshots every key group and restores
// the snapshots into services that split the range at random points: they
// must hold exactly the original timers.
func TestRapidTimerSnapshotRestore(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		maxP := rapid.IntRange(1, 16).Draw(t, "maxP")
		s := NewService[int, string]()
		keys := rapid.IntRange(0, 20)
		nss := rapid.SampledFrom([]string{"", "a", "b"})
		times := rapid.Int64Range(-5, 30)
		for range rapid.IntRange(0, 100).Draw(t, "ops") {
			k := keys.Draw(t, "key")
			kg := kgOf(k, maxP)
			switch rapid.IntRange(0, 5).Draw(t, "op") {
			case 0, 1:
				s.RegisterEventTime(k, kg, nss.Draw(t, "ns"), times.Draw(t, "ts"))
			case 2:
				s.RegisterProcessingTime(k, kg, nss.Draw(t, "ns"), times.Draw(t, "ts"))
			case 3:
				s.DeleteEventTime(k, nss.Draw(t, "ns"), times.Draw(t, "ts"))
			case 4:
				_ = s.AdvanceWatermark(times.Draw(t, "wm"), func(tmr) error { return nil })
			case 5:
				_ = s.AdvanceProcessingTime(times.Draw(t, "now"), func(tmr) error { return nil })
			}
		}
		all, err := s.SnapshotKeyGroups(0, maxP-1, intCodec, stringCodec)
		if err != nil {
			t.Fatal(err)
		}
		var parts []*svc
		for start := 0; start < maxP; {
			end := rapid.IntRange(start, maxP-1).Draw(t, "end")
			p := NewService[int, string]()
			for _, kg := range rapid.Permutation(rangeOf(start, end)).Draw(t, "order") {
				if err := p.RestoreKeyGroup(kg, all[kg], intCodec, stringCodec); err != nil {
					t.Fatal(err)
				}
			}
			parts = append(parts, p)
			start = end + 1
		}
		ge, gp := contents(parts...)
		we, wp := contents(s)
		if !slices.Equal(ge, we) || !slices.Equal(gp, wp) {
			t.Fatalf("restored\n %v %v\nwant %v %v", ge, gp, we, wp)
		}
		// Restored into one service in any order, the timers fire in the
		// original order.
		one := NewService[int, string]()
		for _, kg := range rapid.Permutation(rangeOf(0, maxP-1)).Draw(t, "merge order") {
			if err := one.RestoreKeyGroup(kg, all[kg], intCodec, stringCodec); err != nil {
				t.Fatal(err)
			}
		}
		if got, want := fireAll(t, one), fireAll(t, s); !slices.Equal(got, want) {
			t.Fatalf("fired\n %v\nwant %v", got, want)
		}
	})
}

func rangeOf(first, last int) []int {
	var r []int
	for i := first; i <= last; i++ {
		r = append(r, i)
	}
	return r
}

// BenchmarkSnapshotTimers1M snapshots 1M event-time timers spread over 128
// key groups with SnapshotKeyGroups (ns/op is the whole snapshot).
func BenchmarkSnapshotTimers1M(b *testing.B) {
	const n = 1_000_000
	s := NewService[int, string]()
	for k := range n {
		s.RegisterEventTime(k, k%128, "", int64(k%1000))
	}
	b.ReportAllocs()
	b.ResetTimer()
	size := 0
	for b.Loop() {
		out, err := s.SnapshotKeyGroups(0, 127, intCodec, stringCodec)
		if err != nil {
			b.Fatal(err)
		}
		size = 0
		for _, d := range out {
			size += len(d)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/n, "ns/timer")
	b.ReportMetric(float64(size)/n, "bytes/timer")
}

// BenchmarkRestoreTimers1M restores the snapshot of
// BenchmarkSnapshotTimers1M into a fresh service per iteration.
func BenchmarkRestoreTimers1M(b *testing.B) {
	const n = 1_000_000
	s := NewService[int, string]()
	for k := range n {
		s.RegisterEventTime(k, k%128, "", int64(k%1000))
	}
	snaps, err := s.SnapshotKeyGroups(0, 127, intCodec, stringCodec)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		re := NewService[int, string]()
		for kg, d := range snaps {
			if err := re.RestoreKeyGroup(kg, d, intCodec, stringCodec); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/n, "ns/timer")
}

// FuzzTimerRestoreKeyGroup restores arbitrary bytes (with a fixed-up
// checksum); nothing may panic, and what is accepted can be snapshotted
// again.
func FuzzTimerRestoreKeyGroup(f *testing.F) {
	s := NewService[int, string]()
	fill([]*svc{s}, [][2]int{{0, 0}}, 5, 1)
	data, err := s.SnapshotKeyGroup(0, intCodec, stringCodec)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(data)
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) >= 8 {
			fixCRC(data)
		}
		re := NewService[int, string]()
		if re.RestoreKeyGroup(0, data, intCodec, stringCodec) != nil {
			return
		}
		if _, err := re.SnapshotKeyGroup(0, intCodec, stringCodec); err != nil {
			t.Fatal(err)
		}
	})
}

// BenchmarkViewTimers1M takes the view of BenchmarkSnapshotTimers1M's
// timers (the part of an asynchronous snapshot at the barrier); encode
// is the rest, on another goroutine.
func BenchmarkViewTimers1M(b *testing.B) {
	const n = 1_000_000
	s := NewService[int, string]()
	for k := range n {
		s.RegisterEventTime(k, k%128, "", int64(k%1000))
	}
	b.Run("view", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := s.View(0, 127); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/n, "ns/timer")
	})
	b.Run("encode", func(b *testing.B) {
		v, err := s.View(0, 127)
		if err != nil {
			b.Fatal(err)
		}
		for b.Loop() {
			for kg := range 128 {
				if _, err := v.AppendKeyGroupSnapshot(nil, kg, intCodec, stringCodec); err != nil {
					b.Fatal(err)
				}
			}
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/n, "ns/timer")
	})
}

// TestViewEqualsSnapshot checks that a view, encoded after the service
// changed, gives the bytes SnapshotKeyGroups gave at the view.
func TestViewEqualsSnapshot(t *testing.T) {
	s := NewService[int, string]()
	for k := range 5000 {
		s.RegisterEventTime(k, k%16, fmt.Sprint(k%3), int64(k%70))
		if k%7 == 0 {
			s.RegisterProcessingTime(k, k%16, "p", int64(k%11))
		}
	}
	want, err := s.SnapshotKeyGroups(0, 15, intCodec, stringCodec)
	if err != nil {
		t.Fatal(err)
	}
	v, err := s.View(0, 15)
	if err != nil {
		t.Fatal(err)
	}
	for k := range 3000 {
		s.DeleteEventTime(k, fmt.Sprint(k%3), int64(k%70))
		s.RegisterEventTime(k+9000, k%16, "x", int64(k))
	}
	if err := s.AdvanceWatermark(40, func(Timer[int, string]) error { return nil }); err != nil {
		t.Fatal(err)
	}
	for kg := range 16 {
		got, err := v.AppendKeyGroupSnapshot(nil, kg, intCodec, stringCodec)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want[kg]) {
			t.Fatalf("key group %d: the view's snapshot differs from the synchronous one", kg)
		}
	}
	if _, err := v.AppendKeyGroupSnapshot(nil, 16, intCodec, stringCodec); err == nil {
		t.Fatal("a key group outside the range was accepted")
	}
}
