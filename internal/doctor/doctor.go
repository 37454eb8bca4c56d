// Package doctor diagnoses a running job from snapshots of its metrics
// (monitor.Snapshot, as the REST API serves them) taken over a short
// observation window: the five failures of the field guide to two-stream
// jobs and the failures of operations (checkpoints that fail, state that
// grows in bytes, a crash loop), each reported with its evidence
// (numbers), its cause and its fix; and, as notes, what looks like a
// failure but is by design.
//
//  1. watermark-gap: a two-input operator's input watermarks far apart
//     (its results late); names the slow input, its source, split and
//     subtask, and whether the input is silent (idleness) or behind. A
//     gap the inputs' declared out-of-orderness bounds (or their
//     watermark alignment's maximum drift) account for is a note: by
//     design.
//  2. alignment: checkpoints slow because of barrier alignment; names the
//     operator, subtask and input whose barrier came last and the
//     throughput gap between the inputs.
//  3. state-growth: state entries or timers rising while the operator's
//     watermark stands still (cleanup timers cannot fire), keyed state
//     without timers or TTL growing, or state bytes (in the operator's
//     checkpoints) growing within a steady set of keys, with no timer
//     pending (lists or maps appended to without TTL).
//  4. hot-key: one subtask overloaded (records or busy time per subtask
//     skewed); names the hot keys with their share over the window (since
//     the start only when the window sampled too few records).
//  5. inverted-bounds: an interval join that matches little while the
//     mirrored bounds Between(-upper, -lower) would match much more.
//  6. checkpoint-failure: the latest checkpoints failed (expired, declined
//     or not stored); for expired ones, which subtasks did not
//     acknowledge and why (barriers stuck behind back-pressure, a slow
//     sink, a slow snapshot upload), with the fix.
//  7. crash-loop: the job restarted again and again (Options.Restarts
//     times within Options.CrashWindow, or in the window); the restarts
//     and the last exception.
//  8. watermark-alignment (a note): watermark alignment pauses a source
//     and an operator's watermark waits on the group's slowest source;
//     reported instead of state growth (idleness would not help).
//
// Analyze is a pure function of the samples, so recorded samples make a
// test case; Observe takes them from a live job.
package doctor

import (
	"fmt"
	"math"
	"sort"
	"strings"
	"time"

	"github.com/weirstream/weir/internal/monitor"
)

// Finding is one diagnosis.
type Finding struct {
	// Kind is watermark-gap, alignment, state-growth, hot-key,
	// inverted-bounds, checkpoint-failure, crash-loop or
	// watermark-alignment.
	Kind string `json:"kind"`
	// Note marks a finding that tells what is by design (a watermark gap
	// the declared bounds explain, alignment holding a source back): no
	// failure, nothing to fix.
	Note     bool     `json:"note,omitempty"`
	Title    string   `json:"title"`
	Vertex   string   `json:"vertex"`
	Subtask  int      `json:"subtask"` // -1: the vertex as a whole
	Evidence []string `json:"evidence"`
	Cause    string   `json:"cause"`
	Fix      string   `json:"fix"`
}

// Options are the thresholds of the diagnoses; zero values take the
// defaults.
type Options struct {
	// WatermarkGap is the input watermark difference reported (default 10 s).
	WatermarkGap time.Duration
	// Alignment is the alignment duration reported (default 1 s).
	Alignment time.Duration
	// StateGrowth is the growth of entries or timers reported (default 100).
	StateGrowth int64
	// Skew is the ratio of the busiest subtask's records (or busy time)
	// to the mean reported (default 1.5: with two subtasks, one gets 75%).
	Skew float64
	// MinProbes is the sampled probes an interval join needs before its
	// match rate is judged (default 50).
	MinProbes int64
	// StateBytesGrowth is the relative growth of an operator's state bytes
	// reported when its entries stand still (default 0.2: 20%), if it is
	// at least MinStateBytes (default 16 KiB).
	StateBytesGrowth float64
	MinStateBytes    int64
	// Restarts is the restarts within CrashWindow (default 1 minute)
	// reported as a crash loop (default 3).
	Restarts    int
	CrashWindow time.Duration
	// MinKeySamples is the sampled records a window needs for the hot
	// keys' shares to be taken over the window rather than since the
	// start (default 100).
	MinKeySamples int64
}

func (o Options) withDefaults() Options {
	if o.WatermarkGap <= 0 {
		o.WatermarkGap = 10 * time.Second
	}
	if o.Alignment <= 0 {
		o.Alignment = time.Second
	}
	if o.StateGrowth <= 0 {
		o.StateGrowth = 100
	}
	if o.Skew <= 0 {
		o.Skew = 1.5
	}
	if o.MinProbes <= 0 {
		o.MinProbes = 50
	}
	if o.StateBytesGrowth <= 0 {
		o.StateBytesGrowth = 0.2
	}
	if o.MinStateBytes <= 0 {
		o.MinStateBytes = 16 << 10
	}
	if o.Restarts <= 0 {
		o.Restarts = 3
	}
	if o.CrashWindow <= 0 {
		o.CrashWindow = time.Minute
	}
	if o.MinKeySamples <= 0 {
		o.MinKeySamples = 100
	}
	return o
}

// Analyze diagnoses a job from its samples, oldest first (at least one;
// growth and rates need two). Findings are ordered by rule (watermark
// gaps, alignment, state growth with the alignment notes, hot keys,
// bounds, checkpoint failures, crash loops), then vertex.
func Analyze(samples []*monitor.Snapshot, opts Options) []Finding {
	opts = opts.withDefaults()
	var out []Finding
	if len(samples) == 0 {
		return out
	}
	first, last := samples[0], samples[len(samples)-1]
	out = append(out, watermarkGaps(first, last, opts)...)
	out = append(out, alignments(first, last, opts)...)
	out = append(out, stateGrowth(samples, opts)...)
	out = append(out, hotKeys(first, last, opts)...)
	out = append(out, invertedBounds(last, opts)...)
	out = append(out, checkpointFailures(first, last, opts)...)
	out = append(out, crashLoop(first, last, opts)...)
	return out
}

// Problems counts the findings that are not notes.
func Problems(fs []Finding) int {
	n := 0
	for _, f := range fs {
		if !f.Note {
			n++
		}
	}
	return n
}

func ms(d int64) string { return (time.Duration(d) * time.Millisecond).String() }

func fmtWM(wm int64) string {
	switch wm {
	case monitor.MinWatermark:
		return "none yet"
	case math.MaxInt64:
		return "end of input"
	}
	return fmt.Sprintf("%d (%s)", wm, time.UnixMilli(wm).UTC().Format("2006-01-02 15:04:05.000"))
}

func secondsBetween(a, b *monitor.Snapshot) float64 {
	return max(float64(b.Timestamp-a.Timestamp)/1000, 0.001)
}

// subtaskOf returns subtask i of vertex id in snap.
func subtaskOf(snap *monitor.Snapshot, id string, i int) *monitor.Subtask {
	v := snap.Vertex(id)
	if v == nil || i >= len(v.Subtasks) {
		return nil
	}
	return &v.Subtasks[i]
}

func inputRecords(st *monitor.Subtask, in int) int64 {
	if st == nil || in >= len(st.InputRecords) {
		return 0
	}
	return st.InputRecords[in]
}

// upstreamSource follows input in of vertex v back to a source vertex,
// through first inputs.
func upstreamSource(snap *monitor.Snapshot, v *monitor.Vertex, in int) (*monitor.Vertex, *monitor.Vertex) {
	var from *monitor.Vertex
	for _, e := range v.Inputs {
		if e.Input == in {
			from = snap.Vertex(e.From)
			break
		}
	}
	direct := from
	for seen := 0; from != nil && seen < len(snap.Vertices); seen++ {
		if len(from.Operators) > 0 && from.Operators[0].Kind == "source" {
			return direct, from
		}
		if len(from.Inputs) == 0 {
			break
		}
		from = snap.Vertex(from.Inputs[0].From)
	}
	return direct, nil
}

// slowestSplit returns the split of a source vertex with the lowest
// watermark (silent splits first), its subtask and how many records it
// read between the samples.
func slowestSplit(first, last *monitor.Snapshot, src *monitor.Vertex) (split monitor.Split, subtask int, read int64, ok bool) {
	before := map[string]int64{}
	if fv := first.Vertex(src.ID); fv != nil {
		for _, st := range fv.Subtasks {
			for _, op := range st.Operators {
				for _, sp := range op.Splits {
					before[sp.ID] = sp.Records
				}
			}
		}
	}
	for _, st := range src.Subtasks {
		for _, op := range st.Operators {
			for _, sp := range op.Splits {
				if sp.Ended || sp.Idle {
					continue
				}
				r := sp.Records - before[sp.ID]
				better := !ok || (r == 0 && read > 0) || ((r == 0) == (read == 0) && sp.Watermark < split.Watermark)
				if better {
					split, subtask, read, ok = sp, st.Index, r, true
				}
			}
		}
	}
	return
}

// declared follows input in of vertex v upstream (through first inputs)
// to the nearest operator that declares a watermark strategy; it returns
// the declaration and the operator's name (nil if none is found).
func declared(snap *monitor.Snapshot, v *monitor.Vertex, in int) (*monitor.Watermarks, string) {
	var from *monitor.Vertex
	for _, e := range v.Inputs {
		if e.Input == in {
			from = snap.Vertex(e.From)
			break
		}
	}
	for seen := 0; from != nil && seen < len(snap.Vertices); seen++ {
		for i := len(from.Operators) - 1; i >= 0; i-- {
			if w := from.Operators[i].Watermarks; w != nil {
				return w, from.Operators[i].Name
			}
		}
		if len(from.Inputs) == 0 {
			break
		}
		from = snap.Vertex(from.Inputs[0].From)
	}
	return nil, ""
}

// byDesign tells whether a gap (ms) between the slow and the fast input
// of v is what their declared watermark strategies make it: the slow
// input's out-of-orderness bound exceeds the fast one's by about the gap
// (its watermark trails its events by that much more), or both inputs'
// sources are aligned in one group whose maximum drift allows it. It
// returns the evidence and the cause.
func byDesign(snap *monitor.Snapshot, v *monitor.Vertex, slow, fast int, gap int64, opts Options) (evidence []string, cause string, ok bool) {
	ws, ns := declared(snap, v, slow)
	wf, nf := declared(snap, v, fast)
	if ws == nil || wf == nil || ws.OutOfOrderness < 0 || wf.OutOfOrderness < 0 {
		return nil, "", false
	}
	allowed := ws.OutOfOrderness - wf.OutOfOrderness
	aligned := ws.AlignmentGroup != "" && ws.AlignmentGroup == wf.AlignmentGroup
	if aligned {
		allowed += ws.MaxDrift
	}
	if allowed <= 0 || gap > allowed+opts.WatermarkGap.Milliseconds() {
		return nil, "", false
	}
	evidence = append(evidence, fmt.Sprintf("declared out-of-orderness bounds: input %d (%s) %s, input %d (%s) %s",
		slow+1, ns, ms(ws.OutOfOrderness), fast+1, nf, ms(wf.OutOfOrderness)))
	cause = fmt.Sprintf("Input %d's strategy declares an out-of-orderness bound %s longer than input %d's: its watermark trails its newest events by that much more, so a gap of up to about %s between the inputs is what the job asks for.",
		slow+1, ms(ws.OutOfOrderness-wf.OutOfOrderness), fast+1, ms(ws.OutOfOrderness-wf.OutOfOrderness))
	if aligned {
		evidence = append(evidence, fmt.Sprintf("both inputs' sources align their watermarks in group %q with a maximum drift of %s", ws.AlignmentGroup, ms(ws.MaxDrift)))
		cause = fmt.Sprintf("Both inputs' sources are aligned in group %q, which lets one run up to %s ahead of the other; with the declared out-of-orderness bounds (input %d %s, input %d %s) the gap is within what the job asks for.",
			ws.AlignmentGroup, ms(ws.MaxDrift), slow+1, ms(ws.OutOfOrderness), fast+1, ms(wf.OutOfOrderness))
	}
	return evidence, cause, true
}

func watermarkGaps(first, last *monitor.Snapshot, opts Options) []Finding {
	var out []Finding
	gap := opts.WatermarkGap.Milliseconds()
	secs := secondsBetween(first, last)
	for vi := range last.Vertices {
		v := &last.Vertices[vi]
		for _, st := range v.Subtasks {
			if len(st.InputWatermarks) != 2 || st.Status != "RUNNING" {
				continue
			}
			w1, w2 := st.InputWatermarks[0], st.InputWatermarks[1]
			if w1 == math.MaxInt64 || w2 == math.MaxInt64 {
				continue // an input ended
			}
			slow, fast := 0, 1
			if w2 < w1 {
				slow, fast = 1, 0
			}
			ws, wf := st.InputWatermarks[slow], st.InputWatermarks[fast]
			if wf == monitor.MinWatermark || (ws != monitor.MinWatermark && wf-ws < gap) {
				continue
			}
			if slow < len(st.InputIdle) && st.InputIdle[slow] {
				continue // an idle input holds nothing back
			}
			prev := subtaskOf(first, v.ID, st.Index)
			got := inputRecords(&st, slow) - inputRecords(prev, slow)
			gotFast := inputRecords(&st, fast) - inputRecords(prev, fast)
			f := Finding{Kind: "watermark-gap", Vertex: v.Name, Subtask: st.Index}
			gapText := "no watermark at all"
			if ws != monitor.MinWatermark {
				gapText = ms(wf - ws)
			}
			f.Title = fmt.Sprintf("%s (subtask %d): input %d's watermark is %s behind input %d's; results wait for it", v.Name, st.Index, slow+1, gapText, fast+1)
			f.Evidence = append(f.Evidence,
				fmt.Sprintf("input %d watermark %s, input %d watermark %s", slow+1, fmtWM(ws), fast+1, fmtWM(wf)),
				fmt.Sprintf("in the last %.1f s input %d received %d records (%.0f/s), input %d %d (%.0f/s)", secs, slow+1, got, float64(got)/secs, fast+1, gotFast, float64(gotFast)/secs))
			if ws != monitor.MinWatermark && got > 0 {
				if ev, cause, ok := byDesign(last, v, slow, fast, wf-ws, opts); ok {
					f.Note = true
					f.Title = fmt.Sprintf("%s (subtask %d): input %d's watermark is %s behind input %d's, as its declared watermark strategy makes it: by design", v.Name, st.Index, slow+1, gapText, fast+1)
					f.Evidence = append(f.Evidence, ev...)
					f.Cause = cause
					f.Fix = "Nothing to fix if the bound matches how late the input's events really come: lowering it would make the records that come later than the new bound late (dropped, or sent to the late side output). Lower it only if the data is known to be less out of order."
					out = append(out, f)
					continue
				}
			}
			direct, src := upstreamSource(last, v, slow)
			where := fmt.Sprintf("input %d", slow+1)
			if direct != nil {
				where = fmt.Sprintf("input %d (from %s)", slow+1, direct.Name)
			}
			if src != nil {
				if sp, sub, read, ok := slowestSplit(first, last, src); ok {
					f.Evidence = append(f.Evidence, fmt.Sprintf("its source %s: split %s of subtask %d has watermark %s and read %d records in the last %.1f s",
						src.Name, sp.ID, sub, fmtWM(sp.Watermark), read, secs))
					where += fmt.Sprintf(", source %s, split %s, subtask %d", src.Name, sp.ID, sub)
				}
			}
			if got == 0 {
				f.Cause = where + " is silent: it sends no records, so its watermark does not advance and holds back the operator's (the minimum of its inputs')."
				f.Fix = "Declare the silent source idle after a while: WatermarkStrategy.WithIdleness(d) on it (then the other input's watermark alone drives event time), or feed it."
			} else {
				f.Cause = where + " is behind: its events are older than the other input's (a lagging or slower source, or a larger out-of-orderness bound), and the operator's watermark is the minimum of its inputs'."
				f.Fix = "Speed up or scale the slow source (more partitions or parallelism), reduce its out-of-orderness bound, or align the sources' watermarks (watermark alignment) so the fast one waits."
			}
			out = append(out, f)
		}
	}
	return out
}

func alignments(first, last *monitor.Snapshot, opts Options) []Finding {
	var out []Finding
	limit := opts.Alignment.Milliseconds()
	type worst struct {
		c  monitor.Checkpoint
		sc monitor.SubtaskCheckpoint
	}
	byVertex := map[string]worst{}
	for _, c := range last.Checkpoints.History {
		for vid, subs := range c.Vertices {
			for _, sc := range subs {
				if !sc.Acked || sc.AlignmentMs < limit {
					continue
				}
				if w, ok := byVertex[vid]; !ok || sc.AlignmentMs > w.sc.AlignmentMs {
					byVertex[vid] = worst{c, sc}
				}
			}
		}
	}
	ids := make([]string, 0, len(byVertex))
	for id := range byVertex {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	secs := secondsBetween(first, last)
	for _, vid := range ids {
		w := byVertex[vid]
		v := last.Vertex(vid)
		if v == nil {
			continue
		}
		in := w.sc.LastInput
		f := Finding{Kind: "alignment", Vertex: v.Name, Subtask: w.sc.Subtask}
		f.Title = fmt.Sprintf("%s (subtask %d): checkpoint %d waited %s for barrier alignment; the last barrier came on input %d", v.Name, w.sc.Subtask, w.c.ID, ms(w.sc.AlignmentMs), in+1)
		e2e := w.sc.AckTimestamp - w.c.TriggerTimestamp
		f.Evidence = append(f.Evidence, fmt.Sprintf("checkpoint %d: alignment %s of %s end to end at this subtask (first barrier after %s; sync %s, async %s)",
			w.c.ID, ms(w.sc.AlignmentMs), ms(e2e), ms(w.sc.StartDelayMs), ms(w.sc.SyncMs), ms(w.sc.AsyncMs)))
		if w.sc.LastChannel >= 0 {
			f.Evidence = append(f.Evidence, fmt.Sprintf("the last barrier arrived on input %d, channel %d", in+1, w.sc.LastChannel))
		}
		st := subtaskOf(last, vid, w.sc.Subtask)
		prev := subtaskOf(first, vid, w.sc.Subtask)
		if st != nil && len(st.InputRecords) > 1 {
			var parts []string
			for i := range st.InputRecords {
				parts = append(parts, fmt.Sprintf("input %d %.0f records/s", i+1, float64(inputRecords(st, i)-inputRecords(prev, i))/secs))
			}
			f.Evidence = append(f.Evidence, "throughput in the last "+fmt.Sprintf("%.1f s: ", secs)+strings.Join(parts, ", "))
		}
		direct, _ := upstreamSource(last, v, in)
		slow := fmt.Sprintf("input %d", in+1)
		if direct != nil {
			slow += " (from " + direct.Name + ")"
		}
		f.Cause = fmt.Sprintf("The barrier on %s comes last: the records queued ahead of it on that input (back-pressure upstream, or a slow or skewed producer) must be processed first, while the inputs that delivered their barrier are held.", slow)
		f.Fix = "Enable unaligned checkpoints (weir.UnalignedCheckpoints(), or AlignedCheckpointTimeout(d) to switch after d), relieve the back-pressure on that input (scale the slow operator, fix skew), or lower WithBufferCredits so less data queues ahead of barriers."
		out = append(out, f)
	}
	return out
}

// watermarkOf returns the combined input watermark of a subtask.
func watermarkOf(st *monitor.Subtask) (int64, int) {
	lo, idx := int64(math.MaxInt64), -1
	for i, wm := range st.InputWatermarks {
		if i < len(st.InputIdle) && st.InputIdle[i] {
			continue
		}
		if wm < lo {
			lo, idx = wm, i
		}
	}
	return lo, idx
}

func stateGrowth(samples []*monitor.Snapshot, opts Options) []Finding {
	var out []Finding
	first, last := samples[0], samples[len(samples)-1]
	if len(samples) < 2 {
		return out
	}
	secs := secondsBetween(first, last)
	for vi := range last.Vertices {
		v := &last.Vertices[vi]
		for si := range v.Subtasks {
			st := &v.Subtasks[si]
			prev := subtaskOf(first, v.ID, si)
			if prev == nil || st.Status != "RUNNING" {
				continue
			}
			for oi, op := range st.Operators {
				if !op.Keyed || oi >= len(prev.Operators) {
					continue
				}
				p := prev.Operators[oi]
				dEntries, dTimers := op.StateEntries-p.StateEntries, op.Timers-p.Timers
				if dEntries < opts.StateGrowth && dTimers < opts.StateGrowth {
					if f, ok := bytesGrowth(first, last, v, st.Index, p, op, opts); ok {
						out = append(out, f)
					}
					continue
				}
				wmNow, in := watermarkOf(st)
				wmThen, _ := watermarkOf(prev)
				growth := fmt.Sprintf("state entries %d -> %d, timers %d -> %d in %.1f s", p.StateEntries, op.StateEntries, p.Timers, op.Timers, secs)
				if len(st.InputWatermarks) > 0 && wmNow == wmThen && wmNow != math.MaxInt64 {
					stalled := "its input"
					if in >= 0 {
						stalled = fmt.Sprintf("input %d", in+1)
						if direct, _ := upstreamSource(last, v, in); direct != nil {
							stalled += " (from " + direct.Name + ")"
						}
					}
					if f, ok := alignmentHold(first, last, v, st.Index, op.Name, stalled, wmNow, growth); ok {
						out = append(out, f)
						continue
					}
					f := Finding{Kind: "state-growth", Vertex: v.Name, Subtask: st.Index}
					f.Title = fmt.Sprintf("%s (subtask %d): state grows while the watermark of %s stands still", op.Name, st.Index, stalled)
					f.Evidence = append(f.Evidence, growth, fmt.Sprintf("watermark of %s: %s at the start and at the end of the window", stalled, fmtWM(wmNow)))
					f.Cause = "The operator's cleanup (window ends, join buffers, event-time timers) waits for its watermark, which does not advance: state accumulates without bound."
					f.Fix = "Make the stalled input's watermark advance: declare idle sources with WithIdleness(d), give sources without watermarks a strategy, or use processing-time timers or state TTL for cleanup."
					out = append(out, f)
					continue
				}
				if op.Timers == 0 && op.TimersRegistered == 0 && op.StatesWithoutTTL > 0 && dEntries >= opts.StateGrowth {
					f := Finding{Kind: "state-growth", Vertex: v.Name, Subtask: st.Index}
					f.Title = fmt.Sprintf("%s (subtask %d): keyed state grows and nothing ever clears it (no timer, no TTL)", op.Name, st.Index)
					f.Evidence = append(f.Evidence, growth, fmt.Sprintf("%d registered states without TTL, 0 timers ever registered", op.StatesWithoutTTL))
					f.Cause = "The function keeps state per key but registers no timer and its states have no TTL: every new key adds state that stays forever."
					f.Fix = "Give the states a TTL (state.WithTTL(state.TTL(d))) or register a timer per key that clears its state (ctx.TimerService().RegisterEventTimeTimer, then Clear in OnTimer)."
					out = append(out, f)
				}
			}
		}
	}
	return out
}

// sourcesUpstream returns the source vertices that feed v, through all
// inputs, nearest first.
func sourcesUpstream(snap *monitor.Snapshot, v *monitor.Vertex) []*monitor.Vertex {
	var out []*monitor.Vertex
	seen := map[string]bool{v.ID: true}
	queue := []*monitor.Vertex{v}
	for len(queue) > 0 {
		x := queue[0]
		queue = queue[1:]
		for _, e := range x.Inputs {
			u := snap.Vertex(e.From)
			if u == nil || seen[u.ID] {
				continue
			}
			seen[u.ID] = true
			if len(u.Operators) > 0 && u.Operators[0].Kind == "source" {
				out = append(out, u)
			}
			queue = append(queue, u)
		}
	}
	return out
}

// alignmentHold reports, as a note, an operator whose watermark stands
// still while watermark alignment pauses splits of a source upstream of
// it: alignment holds that source back until the group's slowest source
// catches up, which no idleness would change.
func alignmentHold(first, last *monitor.Snapshot, v *monitor.Vertex, subtask int, opName, stalled string, wm int64, growth string) (Finding, bool) {
	var paused []string
	group := ""
	var drift int64
	for _, src := range sourcesUpstream(last, v) {
		for _, snap := range []*monitor.Snapshot{first, last} {
			sv := snap.Vertex(src.ID)
			if sv == nil {
				continue
			}
			for _, st := range sv.Subtasks {
				for _, op := range st.Operators {
					for _, sp := range op.Splits {
						if sp.Paused {
							paused = append(paused, fmt.Sprintf("split %s of %s (subtask %d, watermark %s)", sp.ID, src.Name, st.Index, fmtWM(sp.Watermark)))
						}
					}
				}
			}
			if len(paused) > 0 {
				break // the last sample's pauses, else the first's
			}
		}
		if w := src.Operators[0].Watermarks; w != nil && w.AlignmentGroup != "" && len(paused) > 0 && group == "" {
			group, drift = w.AlignmentGroup, w.MaxDrift
		}
	}
	if len(paused) == 0 {
		return Finding{}, false
	}
	if len(paused) > 5 {
		paused = append(paused[:5], fmt.Sprintf("and %d more", len(paused)-5))
	}
	f := Finding{Kind: "watermark-alignment", Note: true, Vertex: v.Name, Subtask: subtask}
	f.Title = fmt.Sprintf("%s (subtask %d): watermark alignment holds a source back; the watermark of %s waits for the slowest source of its group", opName, subtask, stalled)
	f.Evidence = append(f.Evidence, "paused by watermark alignment: "+strings.Join(paused, ", "),
		fmt.Sprintf("watermark of %s: %s at the start and at the end of the window", stalled, fmtWM(wm)), growth)
	what := "Watermark alignment"
	if group != "" {
		what = fmt.Sprintf("Watermark alignment (group %q, maximum drift %s)", group, ms(drift))
	}
	f.Cause = what + " pauses the splits that run ahead of the group's slowest source until it catches up. The operator's watermark waits for that source, so its timers (and the state they clean up) wait too: the source is active, not idle."
	f.Fix = "Nothing to fix while the slowest source advances: alignment is holding the fast one back on purpose, and WithIdleness would not apply (the slowest source is not silent). If the wait lasts, make the slowest source of the group advance (more parallelism or partitions, or timestamps that move), or raise the maximum drift."
	return f, true
}

// completedCheckpoints returns the completed checkpoints of the history, oldest
// first.
func completedCheckpoints(snap *monitor.Snapshot) []monitor.Checkpoint {
	var out []monitor.Checkpoint
	for _, c := range snap.Checkpoints.History {
		if c.Status == "COMPLETED" && !c.Savepoint {
			out = append(out, c)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

// opSize returns the state size of operator uid in subtask sub of a
// checkpoint, and whether the checkpoint has it.
func opSize(c monitor.Checkpoint, uid string, sub int) (int64, bool) {
	for _, subs := range c.Vertices {
		for _, sc := range subs {
			if n, ok := sc.OperatorSizes[uid]; ok && sc.Subtask == sub {
				return n, true
			}
		}
	}
	return 0, false
}

func kib(n int64) string {
	switch {
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 10<<10:
		return fmt.Sprintf("%.0f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d B", n)
}

// bytesGrowth reports keyed state that grows in bytes while its entries
// stand still, no timer is pending and a state has no TTL: the
// operator's state size in the completed checkpoints of
// the history (or, with fewer than two, its state bytes in the samples)
// rises steadily.
func bytesGrowth(first, last *monitor.Snapshot, v *monitor.Vertex, sub int, p, op monitor.OpMetric, opts Options) (Finding, bool) {
	if op.Timers > 0 || op.StatesWithoutTTL == 0 {
		// A pending timer may clear it (a window's contents grow until
		// it fires), and a TTL expires it.
		return Finding{}, false
	}
	var from, to int64
	span := ""
	cps := completedCheckpoints(last)
	var sizes []int64
	var ids []int64
	for _, c := range cps {
		if n, ok := opSize(c, op.UID, sub); ok {
			sizes, ids = append(sizes, n), append(ids, c.ID)
		}
	}
	if len(sizes) >= 2 {
		from, to = sizes[0], sizes[len(sizes)-1]
		for i := 1; i < len(sizes); i++ {
			if sizes[i] < sizes[i-1] {
				return Finding{}, false // it shrinks too: state is cleared
			}
		}
		var t0, t1 int64
		for _, c := range cps {
			if c.ID == ids[0] {
				t0 = c.TriggerTimestamp
			}
			if c.ID == ids[len(ids)-1] {
				t1 = c.TriggerTimestamp
			}
		}
		span = fmt.Sprintf("from checkpoint %d to checkpoint %d (%.1f s apart)", ids[0], ids[len(ids)-1], float64(t1-t0)/1000)
	} else {
		from, to = p.StateBytes, op.StateBytes
		span = fmt.Sprintf("in %.1f s", secondsBetween(first, last))
	}
	if from <= 0 || to-from < opts.MinStateBytes || float64(to) < float64(from)*(1+opts.StateBytesGrowth) {
		return Finding{}, false
	}
	f := Finding{Kind: "state-growth", Vertex: v.Name, Subtask: sub}
	f.Title = fmt.Sprintf("%s (subtask %d): keyed state grows in bytes (%s -> %s) while its entries stand still (%d)", op.Name, sub, kib(from), kib(to), op.StateEntries)
	f.Evidence = append(f.Evidence,
		fmt.Sprintf("state bytes of %s in subtask %d's checkpoints %s -> %s %s", op.Name, sub, kib(from), kib(to), span),
		fmt.Sprintf("state entries %d -> %d over the window (the keys are the same: each key's value grows)", p.StateEntries, op.StateEntries))
	if op.StateEntries > 0 {
		f.Evidence = append(f.Evidence, fmt.Sprintf("%s per entry now", kib(to/op.StateEntries)))
	}
	if len(cps) >= 2 {
		f.Evidence = append(f.Evidence, fmt.Sprintf("checkpoint size of the job %s -> %s from checkpoint %d to %d", kib(cps[0].StateSize), kib(cps[len(cps)-1].StateSize), cps[0].ID, cps[len(cps)-1].ID))
	}
	if op.StatesWithoutTTL > 0 {
		f.Evidence = append(f.Evidence, fmt.Sprintf("registered states without TTL: %d", op.StatesWithoutTTL))
	}
	f.Cause = "The set of keys is steady but each key's state keeps growing: a ListState or MapState appended to (or a value that accumulates) and never trimmed, expired or cleared. The state, and every checkpoint, grows without bound."
	f.Fix = "Bound each key's state: give the state a TTL (state.WithTTL(state.TTL(d))), trim or clear the list in a timer (ctx.TimerService().RegisterEventTimeTimer, then Clear or Update in OnTimer), or keep an aggregate (state.Reducing, state.Aggregating) instead of the elements."
	return f, true
}

func hotKeys(first, last *monitor.Snapshot, opts Options) []Finding {
	var out []Finding
	secs := secondsBetween(first, last)
	for vi := range last.Vertices {
		v := &last.Vertices[vi]
		if v.Parallelism < 2 || len(v.KeySkew) == 0 {
			continue
		}
		fv := first.Vertex(v.ID)
		recs := make([]float64, len(v.Subtasks))
		busy := make([]float64, len(v.Subtasks))
		var sum, busySum float64
		for i, st := range v.Subtasks {
			var p monitor.Subtask
			if fv != nil && i < len(fv.Subtasks) {
				p = fv.Subtasks[i]
			}
			recs[i] = float64(st.RecordsIn - p.RecordsIn)
			if first == last {
				recs[i] = float64(st.RecordsIn)
			}
			busy[i] = float64(st.BusyNanos - p.BusyNanos)
			sum += recs[i]
			busySum += busy[i]
		}
		if sum == 0 {
			continue
		}
		hot := 0
		for i := range recs {
			if recs[i] > recs[hot] {
				hot = i
			}
		}
		mean := sum / float64(len(recs))
		skew := recs[hot] / mean
		busyMean := busySum / float64(len(busy))
		busySkew := 0.0
		if busyMean > 0 {
			busySkew = busy[hot] / busyMean
		}
		if skew < opts.Skew && busySkew < opts.Skew {
			continue
		}
		f := Finding{Kind: "hot-key", Vertex: v.Name, Subtask: hot}
		f.Title = fmt.Sprintf("%s: subtask %d gets %.1fx the mean share of records", v.Name, hot, skew)
		var parts []string
		for i, r := range recs {
			parts = append(parts, fmt.Sprintf("%d: %.0f/s", i, r/secs))
		}
		f.Evidence = append(f.Evidence, "records in per subtask: "+strings.Join(parts, ", "))
		if busyMean > 0 {
			f.Evidence = append(f.Evidence, fmt.Sprintf("busy time of subtask %d: %.1fx the mean", hot, busySkew))
		}
		var keys []string
		redacted := false
		for j, ks := range v.KeySkew {
			var before *monitor.KeySkew
			if fv != nil && j < len(fv.KeySkew) && first != last {
				before = &fv.KeySkew[j]
			}
			shares, sampled, window := keyShares(ks, before, opts)
			for _, k := range shares {
				if k.share >= 0.5/float64(v.Parallelism) || k.Subtask == hot && k.share >= 0.05 {
					name := fmt.Sprintf("%q", k.Key)
					if k.Key == monitor.Redacted {
						name, redacted = "[key redacted]", true
					}
					keys = append(keys, fmt.Sprintf("%s (%.0f%% of sampled records, to subtask %d)", name, 100*k.share, k.Subtask))
				}
				if len(keys) == 5 {
					break
				}
			}
			if len(keys) > 0 {
				when := "since the start"
				if window {
					when = fmt.Sprintf("in the last %.1f s", secs)
				}
				f.Evidence = append(f.Evidence, fmt.Sprintf("hot keys %s (one record in %d sampled, %d samples): %s", when, ks.Every, sampled, strings.Join(keys, ", ")))
				if redacted {
					f.Evidence = append(f.Evidence, "key values are redacted by the server: give weir doctor --token (a server with rest.WithToken), or start the server with rest.WithOpenDetails")
				}
				break
			}
		}
		f.Cause = "The keys are skewed: a few hot keys hash to one subtask, which does most of the work while the others wait."
		f.Fix = "Salt the hot keys and aggregate in two stages: key by (key, salt) with a small random or round-robin salt, pre-aggregate, then key by the key alone to combine the partials."
		out = append(out, f)
	}
	return out
}

// keyShare is a hot key's share of the sampled records.
type keyShare struct {
	monitor.HotKey
	share float64
}

// keyShares returns the keys of a key sketch with their shares, largest
// first: over the window (the counts' growth since before, the same
// sketch in the first sample) when the window sampled at least
// MinKeySamples records and the keys are not redacted, else since the
// start. It returns the records
// sampled in the span it used and whether that is the window.
func keyShares(ks monitor.KeySkew, before *monitor.KeySkew, opts Options) ([]keyShare, int64, bool) {
	var out []keyShare
	matchable := true // redacted keys cannot be matched between the sketches
	for _, k := range ks.Keys {
		matchable = matchable && k.Key != monitor.Redacted
	}
	if before != nil && matchable && ks.Sampled-before.Sampled >= opts.MinKeySamples {
		n := ks.Sampled - before.Sampled
		then := map[string]int64{}
		for _, k := range before.Keys {
			then[k.Key] = k.Count
		}
		for _, k := range ks.Keys {
			// A key the first sketch did not hold had at most its
			// smallest count then: take 0, an upper bound of the growth.
			d := max(k.Count-then[k.Key], 0)
			out = append(out, keyShare{k, float64(d) / float64(n)})
		}
		sort.SliceStable(out, func(i, j int) bool { return out[i].share > out[j].share })
		return out, n, true
	}
	for _, k := range ks.Keys {
		out = append(out, keyShare{k, float64(k.Count) / float64(max(ks.Sampled, 1))})
	}
	return out, ks.Sampled, false
}

func invertedBounds(last *monitor.Snapshot, opts Options) []Finding {
	var out []Finding
	for vi := range last.Vertices {
		v := &last.Vertices[vi]
		var probes, matched, mirrored int64
		var lower, upper int64
		opName := ""
		for _, st := range v.Subtasks {
			for _, op := range st.Operators {
				if op.Join == nil {
					continue
				}
				probes += op.Join.Probes
				matched += op.Join.Matched
				mirrored += op.Join.MirroredMatched
				lower, upper, opName = op.Join.Lower, op.Join.Upper, op.Name
			}
		}
		if probes < opts.MinProbes {
			continue
		}
		rate, mrate := float64(matched)/float64(probes), float64(mirrored)/float64(probes)
		if rate >= 0.2 || mrate < 2*rate+0.1 {
			continue
		}
		left, right := "the left stream", "the right stream"
		for _, in := range v.Inputs {
			if u := last.Vertex(in.From); u != nil {
				if in.Input == 0 {
					left = u.Name
				} else {
					right = u.Name
				}
			}
		}
		f := Finding{Kind: "inverted-bounds", Vertex: v.Name, Subtask: -1}
		f.Title = fmt.Sprintf("%s: the interval join's bounds look inverted: %.0f%% of sampled records matched, %.0f%% would with Between(%s, %s)",
			opName, 100*rate, 100*mrate, ms(-upper), ms(-lower))
		f.Evidence = append(f.Evidence,
			fmt.Sprintf("bounds Between(%s, %s): right.ts - left.ts must be in [%d, %d] ms", ms(lower), ms(upper), lower, upper),
			fmt.Sprintf("of %d sampled probes (one record in 64 of each side), %d found a partner; %d would have with the mirrored bounds", probes, matched, mirrored))
		f.Cause = fmt.Sprintf("The base (left) stream is %s and the other is %s: a pair matches when %s's timestamp minus %s's is in [lower, upper]. The data says the offset has the other sign: the bounds are written for the streams the other way round.", left, right, right, left)
		f.Fix = fmt.Sprintf("Use Between(%s, %s) with %s as the base stream, or swap the join's inputs and keep the bounds.", ms(-upper), ms(-lower), left)
		out = append(out, f)
	}
	return out
}
