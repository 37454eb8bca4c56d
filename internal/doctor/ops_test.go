package doctor

import (
	"strings"
	"testing"

	"github.com/weirstream/weir/internal/monitor"
)

// The blind spots and false alarms of issue 33 §1, staged as recorded
// samples (the end-to-end tests in cmd/weir stage them on live jobs).

func without(t *testing.T, fs []Finding, kind string) {
	t.Helper()
	for _, f := range fs {
		if f.Kind == kind {
			t.Fatalf("unexpected %s finding: %+v", kind, f)
		}
	}
}

func text(f Finding) string {
	return f.Title + "\n" + strings.Join(f.Evidence, "\n") + "\n" + f.Cause + "\n" + f.Fix
}

// expired returns a failed checkpoint that no subtask acknowledged.
func expired(id int64) monitor.Checkpoint {
	return monitor.Checkpoint{ID: id, Status: "FAILED", FailureReason: "expired", TriggerTimestamp: 990_000 + 1000*id, EndTimestamp: 993_000 + 1000*id,
		Failure: "checkpoint expired: not complete after 3s (0 of 3 tasks acknowledged)",
		Vertices: map[string][]monitor.SubtaskCheckpoint{
			"o": {{Subtask: 0}}, "p": {{Subtask: 0}}, "j": {{Subtask: 0}, {Subtask: 1}}}}
}

// backPressured makes the sources back-pressured 95% of the time and
// the join busy 98% (it is the bottleneck).
func backPressured(samples []*monitor.Snapshot) {
	for i, s := range samples {
		n := int64(i+1) * 1e9
		for vi := range s.Vertices {
			v := &s.Vertices[vi]
			for si := range v.Subtasks {
				st := &v.Subtasks[si]
				if v.ID == "j" {
					st.BusyNanos, st.IdleNanos, st.BackPressuredNanos = n*98/100, n*2/100, 0
				} else {
					st.BusyNanos, st.IdleNanos, st.BackPressuredNanos = n*4/100, n/100, n*95/100
				}
			}
		}
	}
}

func TestCheckpointsExpireBehindBackPressure(t *testing.T) {
	s := healthy()
	s.cps = []monitor.Checkpoint{expired(23), expired(22), expired(21), {ID: 20, Status: "COMPLETED", EndTimestamp: 1_000_500}}
	samples := s.samples(5)
	backPressured(samples)
	for _, snap := range samples {
		snap.Job.Checkpointing = &monitor.CheckpointConfig{TimeoutMs: 3000, Tolerable: 100}
	}
	f := findOne(t, Analyze(samples, Options{}), "checkpoint-failure")
	mentions(t, f, "checkpoints expire: 0 of 4 subtasks acknowledged checkpoint 23 within the checkpoint timeout (3s)",
		"the last 3 checkpoints failed (3 expired); the last completed checkpoint is 20",
		"not acknowledged by: join (subtask 0, 1), orders (subtask 0), payments (subtask 0)",
		"back-pressured over the window: orders 95%, payments 95%",
		"the bottleneck: sink join, busy 98%", "barriers are stuck behind back-pressure",
		"weir.UnalignedCheckpoints()", "relieve the sink join (more parallelism", "CheckpointTimeout")
	if f.Vertex != "join" || f.Note {
		t.Fatalf("finding %+v", f)
	}

	// Unaligned already: no advice to enable them.
	for _, snap := range samples {
		snap.Job.Checkpointing.Unaligned = true
	}
	f = findOne(t, Analyze(samples, Options{}), "checkpoint-failure")
	if strings.Contains(f.Fix, "UnalignedCheckpoints") {
		t.Fatalf("unaligned checkpoints advised to a job that has them: %s", f.Fix)
	}
	mentions(t, f, "back-pressured by the sink join")

	// A checkpoint completed after the failures: the streak is over.
	s.cps = append([]monitor.Checkpoint{{ID: 24, Status: "COMPLETED"}}, s.cps...)
	without(t, Analyze(s.samples(5), Options{}), "checkpoint-failure")
}

func TestCheckpointsExpireSlowUpload(t *testing.T) {
	s := healthy()
	c := expired(9)
	c.Failure = "checkpoint 9 expired: not complete after 3s (3 of 3 tasks acknowledged)"
	for id, subs := range c.Vertices {
		for i := range subs {
			subs[i].Acked, subs[i].SyncMs, subs[i].AsyncMs = true, 10, 2900
		}
		c.Vertices[id] = subs
	}
	s.cps = []monitor.Checkpoint{c}
	samples := s.samples(3)
	for _, snap := range samples {
		snap.Job.Checkpointing = &monitor.CheckpointConfig{TimeoutMs: 3000}
	}
	f := findOne(t, Analyze(samples, Options{}), "checkpoint-failure")
	mentions(t, f, "4 of 4 subtasks acknowledged", "took 2.91s (asynchronous part 2.9s)", "state uploads", "Lengthen CheckpointTimeout", "incremental checkpoints")
}

func TestCheckpointsDeclinedAndNotStored(t *testing.T) {
	s := healthy()
	s.cps = []monitor.Checkpoint{{ID: 4, Status: "FAILED", FailureReason: "declined",
		Failure: `checkpoint 4 declined by join (subtask 1): state "v": cannot encode`}}
	f := findOne(t, Analyze(s.samples(3), Options{}), "checkpoint-failure")
	mentions(t, f, "checkpoints are declined", `declined by join (subtask 1): state "v": cannot encode`, "codec")

	s.cps = []monitor.Checkpoint{{ID: 5, Status: "FAILED", FailureReason: "store", Failure: "checkpoint 5 could not be stored: open /cp/5: permission denied"},
		{ID: 4, Status: "FAILED", FailureReason: "store", Failure: "checkpoint 4 could not be stored: open /cp/4: permission denied"}}
	samples := s.samples(3)
	for _, snap := range samples {
		snap.Job.Checkpointing = &monitor.CheckpointConfig{TimeoutMs: 60000, Storage: "file:///cp", Tolerable: 2}
	}
	f = findOne(t, Analyze(samples, Options{}), "checkpoint-failure")
	mentions(t, f, "checkpoints are not stored", "the last 2 checkpoints failed (2 store)", "permission denied", "file:///cp", "writable", "after 2 consecutive failures")

	// Abandoned checkpoints (a task finished first) are no failure to diagnose.
	s.cps = []monitor.Checkpoint{{ID: 6, Status: "FAILED", FailureReason: "abandoned", Failure: "checkpoint 6 abandoned: every task has finished"}}
	without(t, Analyze(s.samples(3), Options{}), "checkpoint-failure")
}

// TestStateBytesGrowth: a ListState appended to without TTL, as issue 33
// saw it: entries flat at 50, bytes and checkpoint size rising.
func TestStateBytesGrowth(t *testing.T) {
	s := healthy()
	s.entries = func(int64) int64 { return 50 }
	s.timers = func(int64) int64 { return 0 }
	sizes := []int64{520_000, 560_000, 610_000, 655_000, 704_000}
	for i, n := range sizes {
		id := int64(10 + i)
		s.cps = append([]monitor.Checkpoint{{ID: id, Status: "COMPLETED", TriggerTimestamp: 1_000_000 + 2000*int64(i), StateSize: 3 * n,
			Vertices: map[string][]monitor.SubtaskCheckpoint{"j": {
				{Subtask: 0, Acked: true, OperatorSizes: map[string]int64{"join-uid": n}},
				{Subtask: 1, Acked: true, OperatorSizes: map[string]int64{"join-uid": 1000}}}}}}, s.cps...)
	}
	samples := s.samples(5)
	for _, snap := range samples {
		for i := range snap.Vertices[2].Subtasks {
			op := &snap.Vertices[2].Subtasks[i].Operators[0]
			op.UID, op.StatesWithoutTTL = "join-uid", 1
		}
	}
	fs := Analyze(samples, Options{})
	f := findOne(t, fs, "state-growth")
	mentions(t, f, "keyed state grows in bytes (508 KiB -> 688 KiB) while its entries stand still (50)",
		"from checkpoint 10 to checkpoint 14 (8.0 s apart)", "state entries 50 -> 50", "checkpoint size of the job 1.5 MiB -> 2.0 MiB",
		"ListState", "state.WithTTL")
	if f.Subtask != 0 {
		t.Fatalf("subtask %d (subtask 1's state is steady)", f.Subtask)
	}
	for _, g := range fs {
		if g.Kind == "state-growth" && g.Subtask == 1 {
			t.Fatalf("steady state reported: %+v", g)
		}
	}

	// With timers pending (a window's contents grow until it fires) or
	// without a state lacking TTL, the growth may be cleared: no finding.
	for _, snap := range samples {
		snap.Vertices[2].Subtasks[0].Operators[0].Timers = 50
	}
	without(t, Analyze(samples, Options{}), "state-growth")
	for _, snap := range samples {
		op := &snap.Vertices[2].Subtasks[0].Operators[0]
		op.Timers, op.StatesWithoutTTL = 0, 0
	}
	without(t, Analyze(samples, Options{}), "state-growth")

	// State that shrinks between checkpoints is cleared: no finding.
	s.cps[1].Vertices["j"][0].OperatorSizes["join-uid"] = 800_000
	samples = s.samples(5)
	for _, snap := range samples {
		for i := range snap.Vertices[2].Subtasks {
			op := &snap.Vertices[2].Subtasks[i].Operators[0]
			op.UID, op.StatesWithoutTTL = "join-uid", 1
		}
	}
	without(t, Analyze(samples, Options{}), "state-growth")

	// Without checkpoints in the history, the samples' state bytes tell.
	s.cps = nil
	samples = s.samples(5)
	for i, snap := range samples {
		op := &snap.Vertices[2].Subtasks[0].Operators[0]
		op.StateBytes, op.StatesWithoutTTL = 100_000+30_000*int64(i), 1
	}
	f = findOne(t, Analyze(samples, Options{}), "state-growth")
	mentions(t, f, "98 KiB -> 215 KiB", "in 4.0 s")
}

func TestCrashLoop(t *testing.T) {
	s := healthy()
	samples := s.samples(5) // 1 001 000 .. 1 005 000
	var xs []monitor.Exception
	for i := range 7 {
		xs = append(xs, monitor.Exception{Name: "*errors.errorString", Message: "operator \"parse\" (subtask 1): bad record \"x\"\nmore",
			Timestamp: 1_005_000 - 47_000 + int64(i)*7800, Task: "parse", Subtask: 1, Restarted: true})
	}
	for i, snap := range samples {
		snap.Job.Restarts = 5 + i/2
		snap.Exceptions = xs
		snap.Job.State = "RESTARTING"
	}
	f := findOne(t, Analyze(samples, Options{}), "crash-loop")
	mentions(t, f, "crash loop: 7 restarts in 47 s", `parse (subtask 1): *errors.errorString: operator "parse" (subtask 1): bad record "x"`,
		"7 restarts since the start", "the job is RESTARTING", "all 7 recent failures are the same exception", "deterministic", "FixedDelayRestart", "side output")
	if strings.Contains(text(f), "more") {
		t.Fatalf("the message's further lines are quoted: %s", text(f))
	}

	// The same failures long ago (before the crash window): no finding.
	old := append([]monitor.Exception(nil), xs...)
	for i := range old {
		old[i].Timestamp -= 120_000
	}
	for _, snap := range samples {
		snap.Exceptions, snap.Job.Restarts = old, 7
	}
	without(t, Analyze(samples, Options{}), "crash-loop")

	// Two restarts are not a loop.
	for _, snap := range samples {
		snap.Exceptions = xs[5:]
	}
	without(t, Analyze(samples, Options{}), "crash-loop")

	// Redacted texts: the finding stands and says how to see them.
	for i, snap := range samples {
		snap.Exceptions = xs
		samples[i] = snap.Redact()
	}
	f = findOne(t, Analyze(samples, Options{}), "crash-loop")
	mentions(t, f, "[message redacted]", "--token")
}

// declare gives the test job's sources their declared bounds (ms).
func declare(samples []*monitor.Snapshot, orders, payments int64, group string, drift int64) {
	for _, snap := range samples {
		snap.Vertices[0].Operators[0].Watermarks = &monitor.Watermarks{OutOfOrderness: orders, AlignmentGroup: group, MaxDrift: drift}
		snap.Vertices[1].Operators[0].Watermarks = &monitor.Watermarks{OutOfOrderness: payments, AlignmentGroup: group, MaxDrift: drift}
	}
}

func TestWatermarkGapByDesign(t *testing.T) {
	s := healthy()
	s.w2 = func(i int64) int64 { return 1000*i - 8*60_000 }
	samples := s.samples(5)
	declare(samples, 0, 23*60_000+30_000, "", 0)
	fs := Analyze(samples, Options{})
	f := findOne(t, fs, "watermark-gap")
	mentions(t, f, "8m0s behind", "by design", "declared out-of-orderness bounds: input 2 (payments) 23m30s, input 1 (orders) 0s",
		"lowering it would make the records that come later than the new bound late")
	if !f.Note || Problems(fs) != 0 || strings.Contains(f.Fix, "reduce its out-of-orderness bound") {
		t.Fatalf("a gap the bounds explain is reported as a problem: %+v", fs)
	}

	// A gap beyond the bounds is a problem again.
	s.w2 = func(i int64) int64 { return 1000*i - 30*60_000 }
	samples = s.samples(5)
	declare(samples, 0, 23*60_000+30_000, "", 0)
	f = findOne(t, Analyze(samples, Options{}), "watermark-gap")
	if f.Note {
		t.Fatalf("a gap beyond the declared bounds is a note: %+v", f)
	}

	// Sources aligned with a drift of a minute: a 40 s gap is by design.
	s.w2 = func(i int64) int64 { return 1000*i - 40_000 }
	samples = s.samples(5)
	declare(samples, 0, 0, "g", 60_000)
	f = findOne(t, Analyze(samples, Options{}), "watermark-gap")
	mentions(t, f, `aligned in group "g"`, "1m0s ahead")
	if !f.Note {
		t.Fatalf("finding %+v", f)
	}
}

// TestAlignmentIsNotStateGrowth: alignment pauses the orders while the
// payments' watermark stands still; no state-growth with WithIdleness.
func TestAlignmentIsNotStateGrowth(t *testing.T) {
	s := healthy()
	s.w2 = func(int64) int64 { return 42_000 }
	s.w1 = func(int64) int64 { return 42_500 }
	s.entries = func(i int64) int64 { return 1000 * i }
	samples := s.samples(5)
	declare(samples, 0, 0, "pay", 500)
	for _, snap := range samples {
		snap.Vertices[0].Subtasks[0].Operators[0].Splits[0].Paused = true
	}
	fs := Analyze(samples, Options{})
	without(t, fs, "state-growth")
	f := findOne(t, fs, "watermark-alignment")
	mentions(t, f, "watermark alignment holds a source back", "paused by watermark alignment: split orders-0 of orders (subtask 0",
		`group "pay", maximum drift 500ms`, "input 2 (from payments)", "state entries 1000 -> 5000")
	if !f.Note || Problems(fs) != 0 {
		t.Fatalf("alignment reported as a problem: %+v", fs)
	}
	for _, g := range fs {
		if strings.Contains(g.Fix, "WithIdleness(") {
			t.Fatalf("idleness advised under alignment: %+v", g)
		}
	}
}

// TestHotKeyRecentShare: a key that becomes hot late has its share over
// the window, not the (diluted) share since the start.
func TestHotKeyRecentShare(t *testing.T) {
	s := healthy()
	s.subtasks = func(i int64) []int64 { return []int64{100 * i, 1900 * i} }
	samples := s.samples(5)
	for i, snap := range samples {
		n := int64(i)
		// 2000 sampled before the window, all "old"; then 200 per
		// second, 90% "acme".
		snap.Vertices[2].KeySkew = []monitor.KeySkew{{Every: 16, Sampled: 2000 + 200*n,
			Keys: []monitor.HotKey{{Key: "old", Count: 2000 + 20*n, Subtask: 0}, {Key: "acme", Count: 180 * n, Subtask: 1}}}}
	}
	f := findOne(t, Analyze(samples, Options{}), "hot-key")
	mentions(t, f, `hot keys in the last 4.0 s (one record in 16 sampled, 800 samples): "acme" (90% of sampled records, to subtask 1)`)
	if strings.Contains(text(f), `"acme" (25%`) {
		t.Fatalf("cumulative share reported: %s", text(f))
	}
	// Too few samples in the window: the share since the start, said so.
	f = findOne(t, Analyze(samples[3:], Options{MinKeySamples: 500}), "hot-key")
	mentions(t, f, "hot keys since the start", `"acme" (`)
}
