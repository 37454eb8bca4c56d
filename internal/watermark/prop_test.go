package watermark

import (
	"testing"

	"pgregory.net/rapid"
)

// valveModel is StatusWatermarkValve written out literally, with no heap:
// per-channel state, and every minimum or maximum recomputed by a full scan.
type valveModel struct {
	wm        []int64
	idle      []bool
	aligned   []bool
	last      int64
	valveIdle bool
}

func newValveModel(n int) *valveModel {
	m := &valveModel{wm: make([]int64, n), idle: make([]bool, n), aligned: make([]bool, n), last: Min}
	for i := range n {
		m.wm[i] = Min
		m.aligned[i] = true
	}
	return m
}

func (m *valveModel) newMin() []Event {
	found := false
	min := int64(Max)
	for i := range m.wm {
		if m.aligned[i] {
			found = true
			if m.wm[i] < min {
				min = m.wm[i]
			}
		}
	}
	if found && min > m.last {
		m.last = min
		return []Event{WatermarkEvent(min)}
	}
	return nil
}

func (m *valveModel) watermark(ch int, wm int64) []Event {
	if m.valveIdle || m.idle[ch] {
		return nil
	}
	if wm <= m.wm[ch] {
		return nil
	}
	m.wm[ch] = wm
	if !m.aligned[ch] && wm >= m.last {
		m.aligned[ch] = true
	}
	return m.newMin()
}

func (m *valveModel) status(ch int, idle bool) []Event {
	var out []Event
	if idle && !m.idle[ch] {
		m.idle[ch] = true
		m.aligned[ch] = false
		anyActive := false
		for _, i := range m.idle {
			if !i {
				anyActive = true
			}
		}
		if !anyActive {
			if m.wm[ch] == m.last {
				max := int64(Min)
				for _, w := range m.wm {
					if w > max {
						max = w
					}
				}
				if max > m.last {
					m.last = max
					out = append(out, WatermarkEvent(max))
				}
			}
			m.valveIdle = true
			out = append(out, StatusEvent(true))
		} else if m.wm[ch] == m.last {
			out = append(out, m.newMin()...)
		}
	} else if !idle && m.idle[ch] {
		m.idle[ch] = false
		if m.wm[ch] >= m.last {
			m.aligned[ch] = true
		}
		if m.valveIdle {
			m.valveIdle = false
			out = append(out, StatusEvent(false))
		}
	}
	return out
}

// A small watermark range makes ties, regressions and re-alignment common;
// Min and Max appear now and then.
func genWatermark() *rapid.Generator[int64] {
	return rapid.OneOf(
		rapid.Int64Range(-2, 12),
		rapid.Int64Range(-2, 12),
		rapid.Int64Range(-2, 12),
		rapid.Int64Range(-2, 40),
		rapid.SampledFrom([]int64{Min, Min + 1, Max - 1, Max}),
	)
}

// genValveWatermark mostly moves a channel's watermark forward by a little,
// as real channels do, so that channels overtake each other, fall behind the
// output and catch up again; sometimes it draws any watermark.
func genValveWatermark(cur int64) *rapid.Generator[int64] {
	if cur < Min/2 || cur > Max/2 { // Min, Max and their neighbours
		cur = 0
	}
	return rapid.OneOf(
		rapid.Int64Range(cur-1, cur+6),
		rapid.Int64Range(cur-1, cur+6),
		rapid.Int64Range(cur-1, cur+6),
		genWatermark(),
	)
}

func TestValveMatchesModel(t *testing.T) {
	// The valve's rarest states (an aligned channel above the last output
	// while nothing is emitted) need several idle/active round trips in the
	// right order; rapid's default 100 cases per Check rarely reach them, so
	// check ten times as many.
	for range 10 {
		rapid.Check(t, checkValveAgainstModel)
	}
}

func checkValveAgainstModel(t *rapid.T) {
	n := rapid.IntRange(1, 4).Draw(t, "channels")
	v := NewValve(n)
	m := newValveModel(n)
	steps := rapid.IntRange(1, 300).Draw(t, "steps")
	lastOut := int64(Min)
	wantIdle := false
	out := make([]Event, 0, 4)
	for s := range steps {
		ch := rapid.IntRange(0, n-1).Draw(t, "ch")
		op := rapid.IntRange(0, 5).Draw(t, "op")
		if op == 5 { // toggle the channel's status
			op = 3
			if m.idle[ch] {
				op = 4
			}
		}
		// Sometimes append behind existing content: it must be kept.
		prefix := rapid.Bool().Draw(t, "prefix")
		out = out[:0]
		if prefix {
			out = append(out, StatusEvent(true))
		}
		var want []Event
		switch {
		case op <= 2:
			wm := genValveWatermark(m.wm[ch]).Draw(t, "wm")
			out = v.Watermark(ch, wm, out)
			want = m.watermark(ch, wm)
		case op == 3:
			out = v.Status(ch, true, out)
			want = m.status(ch, true)
		default:
			out = v.Status(ch, false, out)
			want = m.status(ch, false)
		}
		got := out
		if prefix {
			if len(got) == 0 || got[0] != StatusEvent(true) {
				t.Fatalf("step %d: prefix lost: %v", s, got)
			}
			got = got[1:]
		}
		if !sameEvents(got, want) {
			t.Fatalf("step %d (ch %d op %d): valve emitted %v, model %v", s, ch, op, got, want)
		}
		// Output watermarks strictly increase; statuses alternate.
		for _, e := range got {
			if e.IsStatus {
				if e.Idle != !wantIdle {
					t.Fatalf("step %d: repeated status %v", s, e)
				}
				wantIdle = e.Idle
			} else {
				if e.Watermark <= lastOut {
					t.Fatalf("step %d: output watermark %d after %d", s, e.Watermark, lastOut)
				}
				if wantIdle {
					t.Fatalf("step %d: watermark %d emitted while idle", s, e.Watermark)
				}
				lastOut = e.Watermark
			}
		}
		if v.Output() != m.last || v.Idle() != m.valveIdle {
			t.Fatalf("step %d: valve (out %d idle %v), model (out %d idle %v)", s, v.Output(), v.Idle(), m.last, m.valveIdle)
		}
		// Invariants: aligned == active && wm >= last output; the valve is
		// idle iff every channel is; the heap holds exactly the aligned ones.
		allIdle := true
		aligned := 0
		for i := range n {
			if m.aligned[i] != (!m.idle[i] && m.wm[i] >= m.last) {
				t.Fatalf("step %d: channel %d aligned=%v idle=%v wm=%d last=%d", s, i, m.aligned[i], m.idle[i], m.wm[i], m.last)
			}
			if m.aligned[i] {
				aligned++
			}
			if (v.chans[i].pos >= 0) != m.aligned[i] || v.chans[i].wm != m.wm[i] || v.chans[i].idle != m.idle[i] {
				t.Fatalf("step %d: channel %d state differs from the model", s, i)
			}
			allIdle = allIdle && m.idle[i]
		}
		if allIdle != m.valveIdle || len(v.heap) != aligned {
			t.Fatalf("step %d: allIdle %v valveIdle %v heap %d aligned %d", s, allIdle, m.valveIdle, len(v.heap), aligned)
		}
	}
}

// combinerModel is Flink 2.2's IndexedCombinedWatermarkStatus written out
// literally: the minimum over the active inputs, or with all idle the
// maximum over all of them (FLINK-38454), never going back.
type combinerModel struct {
	wm       []int64
	idle     []bool
	combined int64
	allIdle  bool
}

func (m *combinerModel) update() bool {
	all := true
	for _, i := range m.idle {
		all = all && i
	}
	m.allIdle = all
	candidate := int64(Max)
	if all {
		candidate = int64(Min)
		for _, w := range m.wm {
			candidate = max(candidate, w)
		}
	}
	for i, w := range m.wm {
		if !m.idle[i] && w < candidate {
			candidate = w
		}
	}
	if candidate > m.combined {
		m.combined = candidate
		return true
	}
	return false
}

func TestCombinerMatchesModel(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		const n = 2
		c := NewCombiner(n)
		m := &combinerModel{wm: []int64{Min, Min}, idle: make([]bool, n), combined: Min}
		var gotOut, wantOut outModel
		steps := rapid.IntRange(0, 100).Draw(t, "steps")
		for s := range steps {
			in := rapid.IntRange(0, n-1).Draw(t, "input")
			op := rapid.IntRange(0, 3).Draw(t, "op")
			var adv, madv bool
			if op <= 1 {
				wm := genWatermark().Draw(t, "wm")
				adv = c.Watermark(in, wm)
				m.idle[in] = false
				m.wm[in] = max(m.wm[in], wm)
				madv = m.update()
				if adv {
					gotOut.watermark(c.Combined())
				}
				if madv {
					wantOut.watermark(m.combined)
				}
			} else {
				idle := op == 2
				wasIdle, mWasIdle := c.Idle(), m.allIdle
				adv = c.Status(in, idle)
				m.idle[in] = idle
				madv = m.update()
				if adv {
					gotOut.watermark(c.Combined())
				}
				if wasIdle != c.Idle() {
					gotOut.status(c.Idle())
				}
				if madv {
					wantOut.watermark(m.combined)
				}
				if mWasIdle != m.allIdle {
					wantOut.status(m.allIdle)
				}
			}
			if adv != madv || c.Combined() != m.combined || c.Idle() != m.allIdle {
				t.Fatalf("step %d: combiner (adv %v comb %d idle %v), model (adv %v comb %d idle %v)",
					s, adv, c.Combined(), c.Idle(), madv, m.combined, m.allIdle)
			}
			if !sameEvents(gotOut.got, wantOut.got) {
				t.Fatalf("step %d: output %v, model %v", s, gotOut.got, wantOut.got)
			}
		}
		// The forwarded watermarks strictly increase.
		last := int64(Min)
		for _, e := range gotOut.got {
			if !e.IsStatus {
				if e.Watermark <= last {
					t.Fatalf("output watermark %d after %d", e.Watermark, last)
				}
				last = e.Watermark
			}
		}
	})
}

// Whatever a generator does, an Emitter's output is well formed: watermarks
// strictly increase, statuses alternate starting with IDLE.
func TestEmitterWellFormed(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		var got []Event
		e := NewEmitter(func(ev Event) { got = append(got, ev) })
		for range rapid.IntRange(0, 60).Draw(t, "steps") {
			switch rapid.IntRange(0, 3).Draw(t, "op") {
			case 0, 1:
				e.EmitWatermark(genWatermark().Draw(t, "wm"))
			case 2:
				e.MarkIdle()
			default:
				e.MarkActive()
			}
		}
		last, idle := int64(Min), false
		for _, ev := range got {
			if ev.IsStatus {
				if ev.Idle == idle {
					t.Fatalf("repeated status in %v", got)
				}
				idle = ev.Idle
			} else {
				if ev.Watermark <= last || idle {
					t.Fatalf("bad watermark in %v", got)
				}
				last = ev.Watermark
			}
		}
		if e.Last() != last || e.Idle() != idle {
			t.Fatalf("Last %d Idle %v, stream says %d %v", e.Last(), e.Idle(), last, idle)
		}
	})
}
