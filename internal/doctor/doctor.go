// Package doctor diagnoses a running job from snapshots of its metrics
// (monitor.Snapshot, as the REST API serves them) taken over a short
// observation window: the five failures of the field guide to two-stream
// jobs, each reported with its evidence (numbers), its cause and its fix.
//
//  1. watermark-gap: a two-input operator's input watermarks far apart
//     (its results late); names the slow input, its source, split and
//     subtask, and whether the input is silent (idleness) or behind.
//  2. alignment: checkpoints slow because of barrier alignment; names the
//     operator, subtask and input whose barrier came last and the
//     throughput gap between the inputs.
//  3. state-growth: state entries or timers rising while the operator's
//     watermark stands still (cleanup timers cannot fire), or keyed state
//     without timers or TTL growing.
//  4. hot-key: one subtask overloaded (records or busy time per subtask
//     skewed); names the hot keys.
//  5. inverted-bounds: an interval join that matches little while the
//     mirrored bounds Between(-upper, -lower) would match much more.
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
	// Kind is watermark-gap, alignment, state-growth, hot-key or
	// inverted-bounds.
	Kind     string   `json:"kind"`
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
	return o
}

// Analyze diagnoses a job from its samples, oldest first (at least one;
// growth and rates need two). Findings are ordered by kind, then vertex.
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
	return out
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
					continue
				}
				wmNow, in := watermarkOf(st)
				wmThen, _ := watermarkOf(prev)
				growth := fmt.Sprintf("state entries %d -> %d, timers %d -> %d in %.1f s", p.StateEntries, op.StateEntries, p.Timers, op.Timers, secs)
				if len(st.InputWatermarks) > 0 && wmNow == wmThen && wmNow != math.MaxInt64 {
					f := Finding{Kind: "state-growth", Vertex: v.Name, Subtask: st.Index}
					stalled := "its input"
					if in >= 0 {
						stalled = fmt.Sprintf("input %d", in+1)
						if direct, _ := upstreamSource(last, v, in); direct != nil {
							stalled += " (from " + direct.Name + ")"
						}
					}
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
		for _, ks := range v.KeySkew {
			for _, k := range ks.Keys {
				share := float64(k.Count) / float64(max(ks.Sampled, 1))
				if share >= 0.5/float64(v.Parallelism) || k.Subtask == hot && share >= 0.05 {
					name := fmt.Sprintf("%q", k.Key)
					if k.Key == monitor.Redacted {
						name, redacted = "[key redacted]", true
					}
					keys = append(keys, fmt.Sprintf("%s (%.0f%% of sampled records, to subtask %d)", name, 100*share, k.Subtask))
				}
				if len(keys) == 5 {
					break
				}
			}
			if len(keys) > 0 {
				f.Evidence = append(f.Evidence, fmt.Sprintf("hot keys (one record in %d sampled, %d samples): %s", ks.Every, ks.Sampled, strings.Join(keys, ", ")))
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
