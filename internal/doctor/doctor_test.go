package doctor

import (
	"strings"
	"testing"

	"github.com/weirstream/weir/internal/monitor"
)

// A two-source, one-join job, as recorded samples: sample i is i seconds
// in; the builders below change one thing each.

func src(id, name string, records, wm int64) monitor.Vertex {
	return monitor.Vertex{ID: id, Name: name, Parallelism: 1, Operators: []monitor.Operator{{Name: name, Kind: "source"}},
		Subtasks: []monitor.Subtask{{Index: 0, Status: "RUNNING", RecordsOut: records,
			Operators: []monitor.OpMetric{{Name: name, Splits: []monitor.Split{{ID: name + "-0", Records: records, Watermark: wm}}}}}}}
}

type spec struct {
	w1, w2   func(i int64) int64 // input watermarks of the join at sample i
	r1, r2   func(i int64) int64 // records of the inputs
	entries  func(i int64) int64
	timers   func(i int64) int64
	subtasks func(i int64) []int64 // records in per join subtask
	keys     []monitor.HotKey
	join     *monitor.JoinSample
	noTTL    bool
	cps      []monitor.Checkpoint
}

func healthy() spec {
	return spec{
		w1: func(i int64) int64 { return 1000 * i }, w2: func(i int64) int64 { return 1000*i - 500 },
		r1: func(i int64) int64 { return 1000 * i }, r2: func(i int64) int64 { return 1000 * i },
		entries: func(i int64) int64 { return 500 }, timers: func(i int64) int64 { return 400 },
		subtasks: func(i int64) []int64 { return []int64{1000 * i, 1000*i + 50} },
		keys:     []monitor.HotKey{{Key: "a", Count: 6, Subtask: 0}, {Key: "b", Count: 5, Subtask: 1}},
		join:     &monitor.JoinSample{Lower: 0, Upper: 600000, Probes: 1000, Matched: 700, MirroredMatched: 100},
	}
}

func (s spec) samples(n int64) []*monitor.Snapshot {
	var out []*monitor.Snapshot
	for i := int64(1); i <= n; i++ {
		join := monitor.Vertex{ID: "j", Name: "join", Parallelism: 2, Operators: []monitor.Operator{{Name: "join", Kind: "two-input"}},
			Inputs:  []monitor.Input{{From: "o", Input: 0, ShipStrategy: "HASH"}, {From: "p", Input: 1, ShipStrategy: "HASH"}},
			KeySkew: []monitor.KeySkew{{Every: 16, Sampled: 11, Keys: s.keys}}}
		for k, recs := range s.subtasks(i) {
			st := monitor.Subtask{Index: k, Status: "RUNNING", RecordsIn: recs, BusyNanos: recs * 1000,
				InputWatermarks: []int64{s.w1(i), s.w2(i)}, InputIdle: []bool{false, false}, InputRecords: []int64{s.r1(i) / 2, s.r2(i) / 2},
				Operators: []monitor.OpMetric{{Name: "join", Keyed: true, StateEntries: s.entries(i), Timers: s.timers(i), TimersRegistered: s.timers(i), Join: s.join}}}
			if s.noTTL {
				st.Operators[0].StatesWithoutTTL = 1
			}
			join.Subtasks = append(join.Subtasks, st)
		}
		snap := &monitor.Snapshot{Timestamp: 1_000_000 + 1000*i, Job: monitor.Job{ID: "x", Name: "job", State: "RUNNING"},
			Vertices:    []monitor.Vertex{src("o", "orders", s.r1(i), s.w1(i)), src("p", "payments", s.r2(i), s.w2(i)), join},
			Checkpoints: monitor.Checkpoints{History: s.cps}}
		out = append(out, snap)
	}
	return out
}

func kinds(fs []Finding) string {
	var k []string
	for _, f := range fs {
		k = append(k, f.Kind)
	}
	return strings.Join(k, ",")
}

func findOne(t *testing.T, fs []Finding, kind string) Finding {
	t.Helper()
	var got []Finding
	for _, f := range fs {
		if f.Kind == kind {
			got = append(got, f)
		}
	}
	if len(got) == 0 {
		t.Fatalf("no %s finding; got %s: %+v", kind, kinds(fs), fs)
	}
	return got[0]
}

func mentions(t *testing.T, f Finding, words ...string) {
	t.Helper()
	text := f.Title + "\n" + strings.Join(f.Evidence, "\n") + "\n" + f.Cause + "\n" + f.Fix
	for _, w := range words {
		if !strings.Contains(text, w) {
			t.Errorf("finding does not mention %q:\n%s", w, text)
		}
	}
}

func TestHealthy(t *testing.T) {
	if fs := Analyze(healthy().samples(5), Options{}); len(fs) != 0 {
		t.Fatalf("findings on a healthy job: %+v", fs)
	}
}

func TestWatermarkGapBehind(t *testing.T) {
	s := healthy()
	s.w2 = func(i int64) int64 { return 1000*i - 60_000 }
	f := findOne(t, Analyze(s.samples(5), Options{}), "watermark-gap")
	mentions(t, f, "input 2", "1m0s behind", "payments", "split payments-0 of subtask 0", "is behind", "received 2000 records")
	if f.Vertex != "join" || f.Subtask != 0 {
		t.Fatalf("finding %+v", f)
	}
}

func TestWatermarkGapSilent(t *testing.T) {
	s := healthy()
	s.w2 = func(int64) int64 { return monitor.MinWatermark }
	s.r2 = func(int64) int64 { return 0 }
	f := findOne(t, Analyze(s.samples(5), Options{}), "watermark-gap")
	mentions(t, f, "no watermark at all", "is silent", "WithIdleness", "payments")
	// An input marked idle holds nothing back: no finding.
	idle := s.samples(3)
	for _, snap := range idle {
		for i := range snap.Vertices[2].Subtasks {
			snap.Vertices[2].Subtasks[i].InputIdle[1] = true
		}
	}
	for _, f := range Analyze(idle, Options{}) {
		if f.Kind == "watermark-gap" {
			t.Fatalf("an idle input was reported: %+v", f)
		}
	}
}

func TestAlignment(t *testing.T) {
	s := healthy()
	s.cps = []monitor.Checkpoint{{ID: 7, Status: "COMPLETED", TriggerTimestamp: 1000, Vertices: map[string][]monitor.SubtaskCheckpoint{
		"j": {{Subtask: 0, Acked: true, AckTimestamp: 5000, AlignmentMs: 3500, StartDelayMs: 100, LastInput: 1, LastChannel: 0},
			{Subtask: 1, Acked: true, AckTimestamp: 2000, AlignmentMs: 200, LastInput: 0}}}}}
	s.r2 = func(i int64) int64 { return 100 * i }
	f := findOne(t, Analyze(s.samples(5), Options{}), "alignment")
	mentions(t, f, "checkpoint 7 waited 3.5s", "input 2", "from payments", "input 1 500 records/s, input 2 50 records/s", "unaligned")
	if f.Subtask != 0 {
		t.Fatalf("subtask %d", f.Subtask)
	}
}

func TestStateGrowthStalledWatermark(t *testing.T) {
	s := healthy()
	s.w2 = func(int64) int64 { return 42_000 }
	s.w1 = func(int64) int64 { return 42_500 }
	s.entries = func(i int64) int64 { return 1000 * i }
	f := findOne(t, Analyze(s.samples(5), Options{}), "state-growth")
	mentions(t, f, "state entries 1000 -> 5000", "input 2 (from payments)", "stands still", "WithIdleness")
}

func TestStateGrowthNoCleanup(t *testing.T) {
	s := healthy()
	s.entries = func(i int64) int64 { return 1000 * i }
	s.timers = func(int64) int64 { return 0 }
	s.noTTL = true
	f := findOne(t, Analyze(s.samples(5), Options{}), "state-growth")
	mentions(t, f, "no timer, no TTL", "state.WithTTL")
	// The same growth with timers is a job with more keys, not a leak.
	s.timers = func(i int64) int64 { return 1000 * i }
	for _, f := range Analyze(s.samples(5), Options{}) {
		if f.Kind == "state-growth" {
			t.Fatalf("growth with timers and an advancing watermark reported: %+v", f)
		}
	}
}

func TestHotKey(t *testing.T) {
	s := healthy()
	s.subtasks = func(i int64) []int64 { return []int64{100 * i, 1900 * i} }
	s.keys = []monitor.HotKey{{Key: "acme", Count: 9, Subtask: 1}, {Key: "b", Count: 1, Subtask: 0}}
	f := findOne(t, Analyze(s.samples(5), Options{}), "hot-key")
	mentions(t, f, "subtask 1 gets 1.9x", `"acme" (82% of sampled records, to subtask 1)`, "Salt the hot keys", "two stages")

	// Through a server that redacts key values (no token): the finding
	// stands, the keys are named as redacted, and the evidence says how
	// to see them.
	samples := s.samples(5)
	for i := range samples {
		samples[i] = samples[i].Redact()
	}
	f = findOne(t, Analyze(samples, Options{}), "hot-key")
	mentions(t, f, "subtask 1 gets 1.9x", "[key redacted] (82% of sampled records, to subtask 1)", "--token", "rest.WithOpenDetails")
	for _, e := range f.Evidence {
		if strings.Contains(e, monitor.Redacted) {
			t.Fatalf("the redaction marker is quoted as a key: %s", e)
		}
	}
}

func TestInvertedBounds(t *testing.T) {
	s := healthy()
	s.join = &monitor.JoinSample{Lower: -5000, Upper: 0, Probes: 400, Matched: 4, MirroredMatched: 210}
	f := findOne(t, Analyze(s.samples(3), Options{}), "inverted-bounds")
	mentions(t, f, "1% of sampled records matched, 52% would with Between(0s, 5s)", "base (left) stream is orders", "Use Between(0s, 5s) with orders as the base stream")
	// Too few probes: no judgement.
	s.join = &monitor.JoinSample{Lower: -5000, Upper: 0, Probes: 20, Matched: 0, MirroredMatched: 20}
	for _, f := range Analyze(s.samples(3), Options{}) {
		if f.Kind == "inverted-bounds" {
			t.Fatalf("judged on 20 probes: %+v", f)
		}
	}
}
