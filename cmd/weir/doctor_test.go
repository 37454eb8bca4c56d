package main

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/examples/troubles/trouble"
	"github.com/weirstream/weir/internal/doctor"
	"github.com/weirstream/weir/internal/monitor"
	"github.com/weirstream/weir/rest"
)

// The doctor's end-to-end tests: each runs the small job of
// examples/troubles that injects one failure, waits (on the job's own snapshots, not on time) until the failure
// shows, then runs `weir doctor` against the job's REST server and checks
// what it reports.

// runJob starts the job of examples/troubles that shows failure (or, for
// "", the job env holds) behind a REST server.
func runJob(t *testing.T, env *weir.Environment, srv rest.Server, failure string) (*weir.JobHandle, *doctor.Client) {
	t.Helper()
	if failure != "" {
		if err := trouble.Build(env, failure, trouble.Options{}); err != nil {
			t.Fatal(err)
		}
	}
	h, err := env.ExecuteAsync(context.Background(), "troubled")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Cancel(); h.Wait(); srv.Close() })
	return h, &doctor.Client{Base: "http://" + srv.Addr()}
}

// newEnv returns an environment with a REST server on a free port.
func newEnv(opts ...weir.Option) (*weir.Environment, rest.Server) {
	return newEnvWith(rest.New("127.0.0.1:0"), opts...)
}

// newEnvWith returns an environment with the REST server srv.
func newEnvWith(srv rest.Server, opts ...weir.Option) (*weir.Environment, rest.Server) {
	return weir.NewEnvironment(append([]weir.Option{weir.WithParallelism(2), weir.WithPlugin(srv),
		weir.WithAutoWatermarkInterval(20 * time.Millisecond), weir.WithKeySampling(8)}, opts...)...), srv
}

// waitFor polls the job's snapshot until cond holds (at most 60 s).
func waitFor(t *testing.T, h *weir.JobHandle, c *doctor.Client, what string, cond func(*monitor.Snapshot) bool) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		s, err := c.Snapshot(context.Background(), h.ID())
		if err == nil && cond(s) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("waiting for %s: %v", what, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func vertex(s *monitor.Snapshot, prefix string) *monitor.Vertex {
	for i := range s.Vertices {
		if strings.HasPrefix(s.Vertices[i].Name, prefix) {
			return &s.Vertices[i]
		}
	}
	return nil
}

// runDoctor runs `weir doctor` against the job and returns its output.
func runDoctor(t *testing.T, c *doctor.Client, wantCode int, args ...string) string {
	t.Helper()
	var out, errb bytes.Buffer
	code := run(append([]string{"doctor", "--url", c.Base, "--samples", "3", "--every", "300ms"}, args...), &out, &errb)
	if code != wantCode {
		t.Fatalf("weir doctor: exit %d, want %d\nstdout:\n%s\nstderr:\n%s", code, wantCode, out.String(), errb.String())
	}
	return out.String()
}

func reported(t *testing.T, out, kind string, words ...string) {
	t.Helper()
	var block string
	for _, part := range strings.Split(out, "\n\n") {
		if strings.Contains(part, "["+kind+"]") {
			block = part
			break
		}
	}
	if block == "" {
		t.Fatalf("weir doctor did not report %s:\n%s", kind, out)
	}
	for _, w := range words {
		if !strings.Contains(block, w) {
			t.Errorf("the %s finding does not mention %q:\n%s", kind, w, block)
		}
	}
}

func TestDoctorWatermarkGap(t *testing.T) {
	env, srv := newEnv()
	h, c := runJob(t, env, srv, "watermark-gap")
	waitFor(t, h, c, "a watermark gap at the join", func(s *monitor.Snapshot) bool {
		v := vertex(s, "join")
		if v == nil || len(v.Subtasks) == 0 {
			return false
		}
		w := v.Subtasks[0].InputWatermarks
		return len(w) == 2 && w[0] > 1_000_000 && w[1] > 900_000 && w[0]-w[1] > 50_000
	})
	out := runDoctor(t, c, 3)
	reported(t, out, "watermark-gap", "input 2's watermark", "behind input 1's", "(from payments)", "source payments, split", "is behind")
}

func TestDoctorAlignment(t *testing.T) {
	env, srv := newEnv(weir.WithParallelism(1), weir.WithBufferSize(128))
	env.EnableCheckpointing(200 * time.Millisecond)
	h, c := runJob(t, env, srv, "alignment")
	waitFor(t, h, c, "a checkpoint aligning for more than 1.5 s at the join", func(s *monitor.Snapshot) bool {
		v := vertex(s, "join")
		if v == nil {
			return false
		}
		for _, cp := range s.Checkpoints.History {
			for _, sc := range cp.Vertices[v.ID] {
				if sc.Acked && sc.AlignmentMs > 1500 && sc.LastInput == 1 {
					return true
				}
			}
		}
		return false
	})
	out := runDoctor(t, c, 3)
	reported(t, out, "alignment", "join", "subtask 0", "the last barrier came on input 2", "(from slow-map)", "unaligned checkpoints")
}

func TestDoctorStateGrowth(t *testing.T) {
	env, srv := newEnv()
	h, c := runJob(t, env, srv, "state-growth")
	waitFor(t, h, c, "state to pile up", func(s *monitor.Snapshot) bool {
		v := vertex(s, "holder")
		return v != nil && len(v.Subtasks) == 2 && v.Subtasks[0].Operators[0].StateEntries > 500
	})
	out := runDoctor(t, c, 3)
	reported(t, out, "state-growth", "holder", "state grows while the watermark of input 1 (from events) stands still", "none yet", "WithIdleness")
}

// TestDoctorHotKey runs the doctor against a server with a token: with
// --token it names the hot keys, without it the finding stands with the
// keys redacted and says how to see them.
func TestDoctorHotKey(t *testing.T) {
	env, srv := newEnvWith(rest.New("127.0.0.1:0", rest.WithToken("doc-token")))
	h, c := runJob(t, env, srv, "hot-key")
	c.Token = "doc-token"
	waitFor(t, h, c, "a few thousand keyed records", func(s *monitor.Snapshot) bool {
		v := vertex(s, "per-customer")
		return v != nil && len(v.KeySkew) > 0 && v.KeySkew[0].Sampled > 500
	})
	out := runDoctor(t, c, 3, "--token", "doc-token")
	reported(t, out, "hot-key", "per-customer", `"acme"`, "Salt the hot keys", "two stages")
	out = runDoctor(t, c, 3)
	reported(t, out, "hot-key", "per-customer", "[key redacted]", "--token", "rest.WithOpenDetails", "Salt the hot keys")
	if strings.Contains(out, "acme") {
		t.Fatalf("weir doctor without the token shows a key:\n%s", out)
	}
}

func TestDoctorInvertedBounds(t *testing.T) {
	env, srv := newEnv()
	h, c := runJob(t, env, srv, "inverted-bounds")
	waitFor(t, h, c, "a few hundred sampled probes", func(s *monitor.Snapshot) bool {
		v := vertex(s, "join")
		var probes int64
		for _, st := range v.Subtasks {
			if j := st.Operators[0].Join; j != nil {
				probes += j.Probes
			}
		}
		return probes > 300
	})
	out := runDoctor(t, c, 3)
	reported(t, out, "inverted-bounds", "look inverted", "Between(0s, 5s)", "base (left) stream is orders", "with orders as the base stream")
}

func TestDoctorHealthy(t *testing.T) {
	env, srv := newEnv()
	env.EnableCheckpointing(200 * time.Millisecond)
	h, c := runJob(t, env, srv, "healthy")
	waitFor(t, h, c, "a completed checkpoint and sampled probes", func(s *monitor.Snapshot) bool {
		v := vertex(s, "join")
		var probes int64
		for _, st := range v.Subtasks {
			if j := st.Operators[0].Join; j != nil {
				probes += j.Probes
			}
		}
		return s.Checkpoints.Counts.Completed > 0 && probes > 300
	})
	out := runDoctor(t, c, 0)
	if !strings.Contains(out, "no finding") {
		t.Fatalf("weir doctor on a healthy job:\n%s", out)
	}
}

// The blind spots and false alarms of issue 33 §1, staged on live jobs.

func TestDoctorCheckpointTimeout(t *testing.T) {
	env, srv := newEnv(trouble.EnvOptions("checkpoint-timeout")...)
	h, c := runJob(t, env, srv, "checkpoint-timeout")
	waitFor(t, h, c, "an expired checkpoint", func(s *monitor.Snapshot) bool {
		for _, cp := range s.Checkpoints.History {
			if cp.Status == "FAILED" && cp.FailureReason == "expired" {
				return true
			}
		}
		return false
	})
	out := runDoctor(t, c, 3)
	reported(t, out, "checkpoint-failure", "checkpoints expire", "within the checkpoint timeout (1s)", "not acknowledged by:",
		"back-pressured over the window: events", "the bottleneck: sink slow-writer", "weir.UnalignedCheckpoints()", "CheckpointTimeout")
}

func TestDoctorStateBytes(t *testing.T) {
	env, srv := newEnv()
	h, c := runJob(t, env, srv, "state-bytes")
	waitFor(t, h, c, "five completed checkpoints, the last over 64 KiB", func(s *monitor.Snapshot) bool {
		return s.Checkpoints.Counts.Completed >= 5 && s.Checkpoints.Completed != nil && s.Checkpoints.Completed.StateSize > 64<<10
	})
	out := runDoctor(t, c, 3)
	reported(t, out, "state-growth", "appender", "keyed state grows in bytes", "while its entries stand still (", "ListState", "state.WithTTL")
	if strings.Contains(out, "stands still\n") || strings.Contains(out, "no timer, no TTL") {
		t.Fatalf("another state-growth diagnosis:\n%s", out)
	}
}

func TestDoctorCrashLoop(t *testing.T) {
	env, srv := newEnvWith(rest.New("127.0.0.1:0", rest.WithOpenDetails()), trouble.EnvOptions("crash-loop")...)
	h, c := runJob(t, env, srv, "crash-loop")
	waitFor(t, h, c, "four restarts", func(s *monitor.Snapshot) bool { return s.Job.Restarts >= 4 })
	out := runDoctor(t, c, 3)
	reported(t, out, "crash-loop", "the job is in a crash loop", "restarts in", "parser", "cannot parse event 500",
		"the same exception in the same task", "FixedDelayRestart")
}

// TestDoctorGapByDesign: a watermark gap the declared bounds make is a
// note, not a finding, and the doctor does not advise lowering the bound.
func TestDoctorGapByDesign(t *testing.T) {
	env, srv := newEnv()
	h, c := runJob(t, env, srv, "gap-by-design")
	waitFor(t, h, c, "both inputs' watermarks at the join", func(s *monitor.Snapshot) bool {
		v := vertex(s, "join")
		if v == nil || len(v.Subtasks) == 0 {
			return false
		}
		w := v.Subtasks[0].InputWatermarks
		return len(w) == 2 && w[0] > 100_000_000 && w[1] > 90_000_000 && w[0]-w[1] > 8*60_000
	})
	out := runDoctor(t, c, 0)
	reported(t, out, "watermark-gap", "note [watermark-gap]", "by design", "declared out-of-orderness bounds: input 2 (payments) 23m30s, input 1 (orders) 0s")
	if !strings.Contains(out, "no finding") || strings.Contains(out, "reduce its out-of-orderness bound") {
		t.Fatalf("a gap by design is reported as a problem:\n%s", out)
	}
}

// TestDoctorWatermarkAlignment: alignment holding a source back is a note
// naming alignment, not state growth with an idleness fix.
func TestDoctorWatermarkAlignment(t *testing.T) {
	env, srv := newEnv()
	h, c := runJob(t, env, srv, "watermark-alignment")
	waitFor(t, h, c, "a paused split and state piling up", func(s *monitor.Snapshot) bool {
		v, live := vertex(s, "matcher"), vertex(s, "live")
		if v == nil || live == nil || len(v.Subtasks) == 0 || v.Subtasks[0].Operators[0].StateEntries < 300 {
			return false
		}
		for _, st := range live.Subtasks {
			for _, sp := range st.Operators[0].Splits {
				if sp.Paused {
					return true
				}
			}
		}
		return false
	})
	out := runDoctor(t, c, 0)
	reported(t, out, "watermark-alignment", "note [watermark-alignment]", "matcher", "paused by watermark alignment: split", `group "feeds", maximum drift 1s`)
	if strings.Contains(out, "[state-growth]") || strings.Contains(out, "WithIdleness(d)") {
		t.Fatalf("alignment reported as state growth:\n%s", out)
	}
}

// TestDoctorLateHotKey: a key that turns hot after 3 s shows its share
// over the window (90%), not its diluted share since the start.
func TestDoctorLateHotKey(t *testing.T) {
	env, srv := newEnvWith(rest.New("127.0.0.1:0", rest.WithOpenDetails()))
	h, c := runJob(t, env, srv, "late-hot-key")
	waitFor(t, h, c, "acme hot, its share since the start still under 60%", func(s *monitor.Snapshot) bool {
		v := vertex(s, "per-customer")
		if v == nil || len(v.KeySkew) == 0 {
			return false
		}
		for _, k := range v.KeySkew[0].Keys {
			if k.Key == "acme" {
				share := float64(k.Count) / float64(v.KeySkew[0].Sampled)
				return share > 0.05 && share < 0.6
			}
		}
		return false
	})
	out := runDoctor(t, c, 3)
	reported(t, out, "hot-key", "per-customer", "hot keys in the last", `"acme" (`)
	i := strings.Index(out, `"acme" (`)
	var share int
	fmt.Sscanf(out[i+len(`"acme" (`):], "%d%%", &share)
	if share < 75 {
		t.Fatalf("acme's share %d%%, want its recent share (90%%):\n%s", share, out)
	}
}

// TestSnapshotDeclaresWatermarks: the snapshot carries the watermark
// strategy each source and timestamp assigner declares (what the doctor
// compares watermark gaps with).
func TestSnapshotDeclaresWatermarks(t *testing.T) {
	env, srv := newEnv(weir.WithChaining(false))
	src := weir.Generate(env, -1, 100, func(i int64) trouble.Event { return trouble.Event{Key: i, TS: i} }, weir.NoWatermarks[trouble.Event]()).Name("raw")
	ts := weir.AssignTimestampsAndWatermarks(src, weir.ForBoundedOutOfOrderness[trouble.Event](5*time.Second).
		WithTimestampAssigner(func(e trouble.Event, _ int64) int64 { return e.TS }).WithIdleness(2*time.Second))
	aligned := weir.Generate(env, -1, 100, func(i int64) trouble.Event { return trouble.Event{Key: i, TS: i} },
		weir.ForMonotonousTimestamps[trouble.Event]().WithWatermarkAlignment("g", 3*time.Second, 0)).Name("aligned")
	weir.Discard(weir.Union(ts, aligned))
	h, c := runJob(t, env, srv, "")
	var s *monitor.Snapshot
	waitFor(t, h, c, "a snapshot", func(x *monitor.Snapshot) bool { s = x; return len(x.Vertices) > 0 })
	want := map[string]monitor.Watermarks{
		"raw":                   {OutOfOrderness: -1},
		"Timestamps/Watermarks": {OutOfOrderness: 5000, Idleness: 2000},
		"aligned":               {OutOfOrderness: 0, AlignmentGroup: "g", MaxDrift: 3000},
	}
	for name, w := range want {
		v := vertex(s, name)
		if v == nil {
			t.Fatalf("no vertex %s in %+v", name, s.Vertices)
		}
		if got := v.Operators[0].Watermarks; got == nil || *got != w {
			t.Errorf("%s declares %+v, want %+v", name, got, w)
		}
	}
	if v := vertex(s, "Discard"); v != nil && v.Operators[0].Watermarks != nil {
		t.Errorf("the sink declares %+v", v.Operators[0].Watermarks)
	}
}
