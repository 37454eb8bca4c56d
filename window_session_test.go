package weir_test

import (
	"fmt"
	"math"
	"slices"
	"testing"

	"pgregory.net/rapid"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/weirtest"
	"github.com/weirstream/weir/window"
)

// sessEv is an element of the session property test: a key and a unique id.
type sessEv struct {
	K  string
	ID int64
}

// sessSum is the Reduce result: the sum and count of the ids.
type sessSum struct {
	K        string
	Sum, Cnt int64
}

var (
	sessLateTag    = weir.NewOutputTag[sessEv]("session-late")
	sessLateSumTag = weir.NewOutputTag[sessSum]("session-late-sum")
)

// sessSession is one in-flight session of the model: [start, end) and the
// ids of its elements.
type sessSession struct {
	start, end int64
	ids        []int64
}

func (s *sessSession) maxTS() int64 { return s.end - 1 }

// sessModel is a brute-force model of Flink's WindowOperator on event-time
// session windows (static gap) with the default EventTimeTrigger and
// allowed lateness A (reference §3.2, §3.3, §3.5, §3.7), per key:
//
//   - an element at ts gets the window [ts, ts+gap). It merges with every
//     in-flight session it intersects, touching included (a.start <= b.end
//     && a.end >= b.start); the in-flight sessions of a key never intersect
//     each other, so the result is the cover of the new window and those
//     sessions (the sweep of TimeWindow.mergeWindows cannot reach further).
//   - isWindowLate is judged on the window after merging: cleanup time
//     maxTimestamp + A <= watermark. A merged result covers an in-flight
//     session, whose cleanup time is still ahead, so only an element that
//     merges with nothing can be late; it is then dropped and, being late
//     itself (ts + A <= ts + gap - 1 + A <= watermark), goes to the late
//     side output. An element whose own window is late but which merges
//     into a live session is accepted (vector V7 b).
//   - after adding, the trigger fires at once if the (merged) window's max
//     timestamp is <= the watermark (a late-but-allowed element);
//     otherwise the window fires when the watermark reaches its max
//     timestamp (the timer registered by onElement or onMerge; the merged-
//     away windows' timers are deleted).
//   - the window is cleaned up (forgotten) when the watermark reaches
//     maxTimestamp + A.
//
// Every firing emits the window's contents at its max timestamp.
type sessModel struct {
	gap, lateness int64
	list          bool // ProcessWindow listing ids, else Reduce(sum, count) after a Map
	wm            int64
	sessions      map[string][]*sessSession
}

func (m *sessModel) fire(k string, s *sessSession) string {
	if m.list {
		ids := slices.Clone(s.ids)
		slices.Sort(ids)
		return fmt.Sprintf("out %s %d,%d %v@%d", k, s.start, s.end, ids, s.maxTS())
	}
	var sum int64
	for _, id := range s.ids {
		sum += id
	}
	return fmt.Sprintf("out {%s %d %d}@%d", k, sum, len(s.ids), s.maxTS())
}

func (m *sessModel) record(e sessEv, ts int64) []string {
	start, end := ts, ts+m.gap
	var keep, hit []*sessSession
	for _, s := range m.sessions[e.K] {
		if s.start <= end && s.end >= start {
			hit = append(hit, s)
		} else {
			keep = append(keep, s)
		}
	}
	if len(hit) == 0 && end-1+m.lateness <= m.wm {
		if m.list {
			return []string{fmt.Sprintf("side %v@%d", e, ts)}
		}
		return []string{fmt.Sprintf("side %v@%d", sessSum{e.K, e.ID, 1}, ts)}
	}
	merged := &sessSession{start: start, end: end}
	for _, s := range hit {
		merged.start, merged.end = min(merged.start, s.start), max(merged.end, s.end)
		merged.ids = append(merged.ids, s.ids...)
	}
	merged.ids = append(merged.ids, e.ID)
	m.sessions[e.K] = append(keep, merged)
	if merged.maxTS() <= m.wm {
		return []string{m.fire(e.K, merged)}
	}
	return nil
}

func (m *sessModel) watermark(wm int64) []string {
	var out []string
	for k, ss := range m.sessions {
		var keep []*sessSession
		for _, s := range ss {
			if s.maxTS() > m.wm && s.maxTS() <= wm {
				out = append(out, m.fire(k, s))
			}
			if s.maxTS()+m.lateness > wm {
				keep = append(keep, s)
			}
		}
		m.sessions[k] = keep
	}
	m.wm = wm
	out = append(out, fmt.Sprintf("wm %d", wm))
	slices.Sort(out)
	return out
}

// sessLines renders one step's harness events as sorted lines.
func sessLines(evs []weirtest.Event) []string {
	var out []string
	for _, e := range evs {
		switch e.Kind {
		case weirtest.KindRecord:
			out = append(out, fmt.Sprintf("out %v@%d", e.Value, e.TS))
		case weirtest.KindSide:
			out = append(out, fmt.Sprintf("side %v@%d", e.Value, e.TS))
		case weirtest.KindWatermark:
			out = append(out, fmt.Sprintf("wm %d", e.TS))
		}
	}
	slices.Sort(out)
	return out
}

// sessListFn lists a session's ids, sorted (the order of merged contents
// depends on which state window a merge keeps, which Flink leaves to hash
// order).
func sessListFn(k string, ctx weir.ProcessWindowContext[window.TimeWindow], es []sessEv, out weir.Collector[string]) error {
	ids := make([]int64, len(es))
	for i, e := range es {
		ids[i] = e.ID
	}
	slices.Sort(ids)
	w := ctx.Window()
	out.Collect(fmt.Sprintf("%s %d,%d %v", k, w.Start, w.End, ids))
	return nil
}

// TestSessionWindowsAgainstModel holds event-time session windows (static
// gap, default EventTimeTrigger, random allowed lateness, late side output)
// with ProcessWindow (the full contents) or Reduce against sessModel, on
// random out-of-order input with random watermarks: every input step must
// emit exactly the model's multiset of records, late records and
// watermarks.
func TestSessionWindowsAgainstModel(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		gap := rapid.Int64Range(1, 6).Draw(t, "gap")
		lateness := rapid.Int64Range(0, 5).Draw(t, "lateness")
		list := rapid.Bool().Draw(t, "list")
		keyOf := func(e sessEv) string { return e.K }
		var h interface {
			ProcessElement(v sessEv, ts int64) error
			ProcessWatermark(wm int64) error
			EndInput() error
			TakeEvents() []weirtest.Event
		}
		var err error
		if list {
			h, err = weirtest.NewOneInput(func(in weir.DataStream[sessEv]) weir.DataStream[string] {
				ws := weir.Window(weir.KeyBy(in, keyOf), window.EventTimeSessions(wms(gap))).
					AllowedLateness(wms(lateness)).SideOutputLateData(sessLateTag)
				return weir.ProcessWindowFunc(ws, sessListFn)
			}, weirtest.SideOutputs(sessLateTag))
		} else {
			h, err = weirtest.NewOneInput(func(in weir.DataStream[sessEv]) weir.DataStream[sessSum] {
				sums := weir.Map(in, func(e sessEv) sessSum { return sessSum{e.K, e.ID, 1} })
				ws := weir.Window(weir.KeyBy(sums, func(s sessSum) string { return s.K }), window.EventTimeSessions(wms(gap))).
					AllowedLateness(wms(lateness)).SideOutputLateData(sessLateSumTag)
				return weir.Reduce(ws, func(a, b sessSum) sessSum { return sessSum{a.K, a.Sum + b.Sum, a.Cnt + b.Cnt} })
			}, weirtest.SideOutputs(sessLateSumTag))
		}
		if err != nil {
			t.Fatal(err)
		}
		m := &sessModel{gap: gap, lateness: lateness, list: list, wm: math.MinInt64, sessions: map[string][]*sessSession{}}
		wm := int64(-20)
		steps := rapid.IntRange(1, 60).Draw(t, "steps")
		for i := range steps {
			var want []string
			if rapid.IntRange(0, 3).Draw(t, fmt.Sprintf("kind%d", i)) == 0 {
				wm += rapid.Int64Range(1, 6).Draw(t, fmt.Sprintf("wm%d", i))
				if err := h.ProcessWatermark(wm); err != nil {
					t.Fatal(err)
				}
				want = m.watermark(wm)
			} else {
				e := sessEv{rapid.SampledFrom([]string{"a", "b"}).Draw(t, fmt.Sprintf("key%d", i)), int64(i + 1)}
				// Timestamps from well behind the watermark (late even with
				// the largest lateness and gap) to well ahead of it.
				ts := rapid.Int64Range(wm-14, wm+12).Draw(t, fmt.Sprintf("ts%d", i))
				if err := h.ProcessElement(e, ts); err != nil {
					t.Fatal(err)
				}
				want = m.record(e, ts)
			}
			if got := sessLines(h.TakeEvents()); !slices.Equal(got, want) {
				t.Fatalf("step %d: got %v, want %v", i, got, want)
			}
		}
		if err := h.EndInput(); err != nil {
			t.Fatal(err)
		}
		if got, want := sessLines(h.TakeEvents()), m.watermark(math.MaxInt64); !slices.Equal(got, want) {
			t.Fatalf("end: got %v, want %v", got, want)
		}
	})
}
