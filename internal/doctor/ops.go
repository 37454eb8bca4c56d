package doctor

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/weirstream/weir/internal/monitor"
)

// The failures of operations: checkpoints that fail, and a crash loop.

// busyShares returns a subtask's busy and back-pressured shares of its
// time between two samples (0..1; ok false if it did not run).
func busyShares(prev, st *monitor.Subtask) (busy, bp float64, ok bool) {
	if st == nil {
		return 0, 0, false
	}
	var p monitor.Subtask
	if prev != nil {
		p = *prev
	}
	b := float64(st.BusyNanos - p.BusyNanos)
	i := float64(st.IdleNanos - p.IdleNanos)
	q := float64(st.BackPressuredNanos - p.BackPressuredNanos)
	total := b + i + q
	if total <= 0 {
		return 0, 0, false
	}
	return b / total, q / total, true
}

// vertexShares returns a vertex's busiest subtask's busy share and its
// most back-pressured subtask's back-pressured share over the window.
func vertexShares(first, last *monitor.Snapshot, v *monitor.Vertex) (busy, bp float64) {
	for i := range v.Subtasks {
		b, q, ok := busyShares(subtaskOf(first, v.ID, i), &v.Subtasks[i])
		if ok {
			busy, bp = max(busy, b), max(bp, q)
		}
	}
	return
}

// isSink tells whether no vertex reads v.
func isSink(snap *monitor.Snapshot, v *monitor.Vertex) bool {
	for _, u := range snap.Vertices {
		for _, in := range u.Inputs {
			if in.From == v.ID {
				return false
			}
		}
	}
	return true
}

// bottleneck returns the vertex that back-pressures the others: among
// the vertices that are not back-pressured themselves (under half the
// time), the busiest one downstream of a back-pressured vertex; nil if no
// vertex is back-pressured half the time.
func bottleneck(first, last *monitor.Snapshot) (bn *monitor.Vertex, busy float64, pressured []string) {
	pressuredIDs := map[string]bool{}
	for i := range last.Vertices {
		v := &last.Vertices[i]
		if _, bp := vertexShares(first, last, v); bp >= 0.5 {
			pressuredIDs[v.ID] = true
			pressured = append(pressured, fmt.Sprintf("%s %.0f%%", v.Name, 100*bp))
		}
	}
	if len(pressuredIDs) == 0 {
		return nil, 0, nil
	}
	for i := range last.Vertices {
		v := &last.Vertices[i]
		if pressuredIDs[v.ID] {
			continue
		}
		fed := false
		for _, in := range v.Inputs {
			fed = fed || pressuredIDs[in.From]
		}
		b, _ := vertexShares(first, last, v)
		if fed && (bn == nil || b > busy) {
			bn, busy = v, b
		}
	}
	return bn, busy, pressured
}

// unacked lists the subtasks of a checkpoint that did not acknowledge it,
// by vertex name, and counts the acknowledged and all subtasks.
func unacked(snap *monitor.Snapshot, c monitor.Checkpoint) (names []string, acked, total int) {
	ids := make([]string, 0, len(c.Vertices))
	for id := range c.Vertices {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	for _, id := range ids {
		var subs []string
		for _, sc := range c.Vertices[id] {
			total++
			if sc.Acked {
				acked++
			} else {
				subs = append(subs, fmt.Sprint(sc.Subtask))
			}
		}
		if len(subs) == 0 {
			continue
		}
		name := id
		if v := snap.Vertex(id); v != nil {
			name = v.Name
		}
		names = append(names, fmt.Sprintf("%s (subtask %s)", name, strings.Join(subs, ", ")))
	}
	return
}

func streak(n int) string {
	if n == 1 {
		return "the last checkpoint failed"
	}
	return fmt.Sprintf("the last %d checkpoints failed", n)
}

// checkpointFailures reports the checkpoints that failed since the last
// one that completed (a failing streak, not one failure in the past),
// with the cause of the newest failure.
func checkpointFailures(first, last *monitor.Snapshot, opts Options) []Finding {
	var failed []monitor.Checkpoint // newest first
	for _, c := range last.Checkpoints.History {
		if c.Savepoint || c.Status == "IN_PROGRESS" {
			continue
		}
		if c.Status == "COMPLETED" {
			break
		}
		if c.Status == "FAILED" && c.FailureReason != "abandoned" {
			failed = append(failed, c)
		}
	}
	if len(failed) == 0 {
		return nil
	}
	c := failed[0]
	reasons := map[string]int{}
	for _, x := range failed {
		reasons[x.FailureReason]++
	}
	var parts []string
	for _, r := range []string{"expired", "declined", "store", ""} {
		if n := reasons[r]; n > 0 {
			name := r
			if r == "" {
				name = "failed"
			}
			parts = append(parts, fmt.Sprintf("%d %s", n, name))
		}
	}
	f := Finding{Kind: "checkpoint-failure", Subtask: -1}
	cfg := last.Job.Checkpointing
	timeout := "the checkpoint timeout"
	aligned := true
	if cfg != nil {
		timeout = "the checkpoint timeout (" + ms(cfg.TimeoutMs) + ")"
		aligned = !cfg.Unaligned
	}
	since := "no checkpoint of the history completed"
	for _, x := range last.Checkpoints.History {
		if x.Status == "COMPLETED" && !x.Savepoint {
			since = fmt.Sprintf("the last completed checkpoint is %d, %s before the last sample", x.ID, ms(max(last.Timestamp-x.EndTimestamp, 0)))
			break
		}
	}
	f.Evidence = append(f.Evidence,
		fmt.Sprintf("%s (%s); %s", streak(len(failed)), strings.Join(parts, ", "), since),
		fmt.Sprintf("checkpoint %d: %s", c.ID, c.Failure),
		fmt.Sprintf("checkpoint counts: %d completed, %d failed, %d in progress (%d failed in the window)",
			last.Checkpoints.Counts.Completed, last.Checkpoints.Counts.Failed, last.Checkpoints.Counts.InProgress,
			last.Checkpoints.Counts.Failed-first.Checkpoints.Counts.Failed))
	tolerate := "Until one completes, a restart replays everything since the last completed checkpoint"
	if cfg != nil {
		tolerate += fmt.Sprintf(", and after %d consecutive failures (TolerableCheckpointFailures) the job fails", cfg.Tolerable)
	}
	tolerate += "."
	switch c.FailureReason {
	case "expired":
		names, acked, total := unacked(last, c)
		f.Title = fmt.Sprintf("checkpoints expire: %d of %d subtasks acknowledged checkpoint %d within %s", acked, total, c.ID, timeout)
		if len(names) > 0 {
			if len(names) > 6 {
				names = append(names[:6], fmt.Sprintf("and %d more", len(names)-6))
			}
			f.Evidence = append(f.Evidence, "not acknowledged by: "+strings.Join(names, ", "))
		}
		bn, busy, pressured := bottleneck(first, last)
		var slowest, slowestPhase int64
		for _, subs := range c.Vertices {
			for _, sc := range subs {
				if sc.Acked && sc.SyncMs+sc.AsyncMs > slowest {
					slowest, slowestPhase = sc.SyncMs+sc.AsyncMs, sc.AsyncMs
				}
			}
		}
		switch {
		case len(pressured) > 0:
			f.Evidence = append(f.Evidence, "back-pressured over the window: "+strings.Join(pressured, ", "))
			what := "an operator downstream"
			if bn != nil {
				what = bn.Name
				f.Vertex = bn.Name
				kind := "operator"
				if isSink(last, bn) {
					kind = "sink"
				}
				f.Evidence = append(f.Evidence, fmt.Sprintf("the bottleneck: %s %s, busy %.0f%% of the time", kind, bn.Name, 100*busy))
				what = kind + " " + bn.Name
			}
			if aligned {
				f.Cause = fmt.Sprintf("The barriers are stuck behind back-pressure: the %s cannot keep up, the buffers ahead of it are full, and an aligned checkpoint's barrier must wait behind every queued record (and alignment holds the inputs whose barrier came first), so not every subtask acknowledges within %s. %s", what, timeout, tolerate)
				f.Fix = fmt.Sprintf("Enable unaligned checkpoints (weir.UnalignedCheckpoints(), or AlignedCheckpointTimeout(d) to switch when alignment takes longer than d), so barriers overtake the queued records; relieve the %s (more parallelism, a faster function or sink, fixing skew); or lengthen CheckpointTimeout. Fewer buffer credits (WithBufferCredits) also queue less ahead of the barriers.", what)
			} else {
				f.Cause = fmt.Sprintf("The job is back-pressured by the %s: even unaligned barriers wait for the busy subtasks to take their snapshots, and they do not acknowledge within %s. %s", what, timeout, tolerate)
				f.Fix = fmt.Sprintf("Relieve the %s (more parallelism, a faster function or sink, fixing skew), or lengthen CheckpointTimeout.", what)
			}
		case acked == total || (slowest > 0 && cfg != nil && 2*slowest >= cfg.TimeoutMs):
			f.Evidence = append(f.Evidence, fmt.Sprintf("the slowest acknowledged snapshot took %s (asynchronous part %s)", ms(slowest), ms(slowestPhase)))
			f.Cause = fmt.Sprintf("Writing the snapshots takes the time: the subtasks' state uploads (their asynchronous part) or storing the checkpoint do not finish within %s. %s", timeout, tolerate)
			f.Fix = "Lengthen CheckpointTimeout; make the state smaller (state TTL, fewer or smaller values) or use incremental checkpoints of the pebble state backend; check the checkpoint store's throughput."
		default:
			f.Cause = fmt.Sprintf("Some subtasks did not take their snapshot within %s (busy with long-running records or timers, or blocked in a user function). %s", timeout, tolerate)
			f.Fix = "Find what blocks the subtasks that did not acknowledge (the flame graph of their vertex); lengthen CheckpointTimeout if their work is legitimately long."
		}
	case "declined":
		f.Title = fmt.Sprintf("checkpoints are declined: a task fails to take its snapshot (checkpoint %d)", c.ID)
		f.Cause = "A subtask could not snapshot its state (the message above names it and the error: a state value that cannot be encoded, a failing state backend or local disk). " + tolerate
		f.Fix = "Fix the error the message names in that operator's snapshot (its state's codec, the state backend's directory and free space); the next checkpoint after the fix completes on its own."
	case "store":
		f.Title = fmt.Sprintf("checkpoints are not stored: every subtask acknowledged checkpoint %d, but the checkpoint store failed", c.ID)
		store := "the checkpoint storage"
		if cfg != nil && cfg.Storage != "" {
			store += " (" + cfg.Storage + ")"
		}
		f.Cause = fmt.Sprintf("Writing the checkpoint to %s fails (the message above has the store's error). %s", store, tolerate)
		f.Fix = "Fix the store: the directory or bucket exists and is writable, credentials and permissions, free space, network; a store that is just slow needs a longer CheckpointTimeout."
	default:
		f.Title = fmt.Sprintf("checkpoints fail (checkpoint %d)", c.ID)
		f.Cause = "The checkpoint failed: " + c.Failure + ". " + tolerate
		f.Fix = "Fix what the failure message names."
	}
	return []Finding{f}
}

// crashLoop reports a job that restarts again and again: at least
// opts.Restarts restarts within opts.CrashWindow of the last sample (the
// exceptions after which it restarted), or within the window itself.
func crashLoop(first, last *monitor.Snapshot, opts Options) []Finding {
	since := last.Timestamp - opts.CrashWindow.Milliseconds()
	var recent []monitor.Exception
	for _, x := range last.Exceptions {
		if x.Restarted && x.Timestamp >= since {
			recent = append(recent, x)
		}
	}
	inWindow := last.Job.Restarts - first.Job.Restarts
	n := max(len(recent), inWindow)
	if n < opts.Restarts || len(last.Exceptions) == 0 {
		return nil
	}
	x := last.Exceptions[len(last.Exceptions)-1]
	span := float64(last.Timestamp-first.Timestamp) / 1000
	if len(recent) >= inWindow && len(recent) > 0 {
		span = float64(last.Timestamp-recent[0].Timestamp) / 1000
	}
	f := Finding{Kind: "crash-loop", Subtask: x.Subtask, Vertex: x.Task}
	f.Title = fmt.Sprintf("the job is in a crash loop: %d restarts in %.0f s, each after %s", n, span, x.Name)
	where := ""
	if x.Task != "" {
		where = fmt.Sprintf(" in %s (subtask %d)", x.Task, x.Subtask)
	}
	msg := x.Message
	if msg == monitor.Redacted {
		msg = "[message redacted]"
	}
	if i := strings.IndexByte(msg, '\n'); i >= 0 {
		msg = msg[:i]
	}
	if len(msg) > 300 {
		msg = msg[:300] + "..."
	}
	f.Evidence = append(f.Evidence,
		fmt.Sprintf("%d restarts since the start, %d in the last %.0f s; the job is %s", last.Job.Restarts, n, span, last.Job.State),
		fmt.Sprintf("the last exception, at %s%s: %s: %s", time.UnixMilli(x.Timestamp).UTC().Format("15:04:05.000"), where, x.Name, msg))
	same := 0
	for _, y := range recent {
		if y.Name == x.Name && y.Task == x.Task {
			same++
		}
	}
	if x.Message == monitor.Redacted {
		f.Evidence = append(f.Evidence, "exception texts are redacted by the server: give weir doctor --token (a server with rest.WithToken), or start the server with rest.WithOpenDetails")
	}
	if same >= 2 && same == len(recent) {
		f.Evidence = append(f.Evidence, fmt.Sprintf("all %d recent failures are the same exception in the same task", same))
		f.Cause = "Every attempt fails the same way: a deterministic failure (a bug, a record the function cannot handle, a resource that is missing). Each restart resumes from the last checkpoint and meets the same failure again, so the job makes no progress while it looks alive."
	} else {
		f.Cause = "The attempts keep failing and the restart strategy keeps restarting the job: it makes little or no progress between restarts."
	}
	f.Fix = "Fix the exception's cause (its stack trace is in the dashboard's exceptions and /jobs/:id/exceptions); if bad records cause it, validate them and send them to a side output instead of failing; and bound the restarts (FixedDelayRestart(n, d) or ExponentialDelayRestart) so that a loop ends in a failed job that alerts."
	return []Finding{f}
}
