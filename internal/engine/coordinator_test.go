package engine

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/weirstream/weir/internal/clock"
)

// coordRig drives a coordinator's decisions directly (no goroutine) over a
// manual clock, one source task and one downstream task.
type coordRig struct {
	t        *testing.T
	clk      *clock.Manual
	c        *coordinator
	src, dst *Task
	persist  []int64
	persErr  error
	// left is what the context given to the last Persist had left until
	// its deadline (0: none).
	left time.Duration
	fail []error
}

func newCoordRig(t *testing.T, cfg CheckpointConfig) *coordRig {
	r := &coordRig{t: t, clk: clock.NewManual(0)}
	r.src = NewTask("src", 0, r.clk)
	r.src.SetInbox(make(chan message, 16))
	r.src.source = true
	r.dst = NewTask("dst", 0, r.clk)
	r.dst.SetInbox(make(chan message, 16))
	if cfg.Timeout == 0 {
		cfg.Timeout = time.Minute
	}
	cfg.Persist = func(ctx context.Context, id int64, acks []TaskAck) error {
		r.left = 0
		if d, ok := ctx.Deadline(); ok {
			r.left = time.Until(d)
		}
		if len(acks) != 2 {
			t.Errorf("checkpoint %d persisted with %d acks", id, len(acks))
		}
		r.persist = append(r.persist, id)
		return r.persErr
	}
	cfg.Fail = func(err error) { r.fail = append(r.fail, err) }
	r.c = newCoordinator(cfg, r.clk, []*Task{r.src, r.dst}, nil, nil)
	return r
}

// tick moves the clock to at and lets the coordinator decide.
func (r *coordRig) tick(at int64) {
	r.clk.Set(at)
	r.c.onTick(context.Background(), at)
}

// triggered returns the checkpoint ids triggered at the source since the
// last call.
func (r *coordRig) triggered() []int64 {
	var ids []int64
	for {
		select {
		case m := <-r.src.inbox:
			switch m := m.(type) {
			case triggerMsg:
				ids = append(ids, m.id)
			case notifyMsg:
			default:
				r.t.Fatalf("unexpected message %T at the source", m)
			}
		default:
			return ids
		}
	}
}

// notified returns the completions queued at the downstream task.
func (r *coordRig) notified() []int64 {
	var ids []int64
	for {
		select {
		case m := <-r.dst.inbox:
			if n, ok := m.(notifyMsg); ok {
				ids = append(ids, n.id)
			}
		default:
			return ids
		}
	}
}

func (r *coordRig) ackAll(id int64) {
	r.c.onAck(context.Background(), TaskAck{ID: id, Task: "src"})
	r.c.onAck(context.Background(), TaskAck{ID: id, Task: "dst"})
}

func eqIDs(a []int64, b ...int64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestCoordinatorIntervalAndOneInFlight(t *testing.T) {
	r := newCoordRig(t, CheckpointConfig{Interval: 100 * time.Millisecond, FirstID: 4})
	r.tick(99)
	if got := r.triggered(); len(got) != 0 {
		t.Fatalf("triggered %v before the interval", got)
	}
	r.tick(100)
	if got := r.triggered(); !eqIDs(got, 5) {
		t.Fatalf("triggered %v at the interval, want [5] (numbered after FirstID)", got)
	}
	// Still in flight two intervals later: nothing new.
	r.tick(300)
	if got := r.triggered(); len(got) != 0 {
		t.Fatalf("triggered %v while checkpoint 5 is in flight", got)
	}
	r.ackAll(5)
	if !eqIDs(r.persist, 5) || !eqIDs(r.notified(), 5) {
		t.Fatalf("persisted %v, notified %v", r.persist, r.notified())
	}
	r.tick(300)
	if got := r.triggered(); !eqIDs(got, 6) {
		t.Fatalf("triggered %v after completion, want [6]", got)
	}
	if w := r.c.nextWake(300); w != 400 {
		t.Fatalf("wake at %d while 6 is in flight, want the next look at 400", w)
	}
}

func TestCoordinatorMinPause(t *testing.T) {
	r := newCoordRig(t, CheckpointConfig{Interval: 100 * time.Millisecond, MinPause: 250 * time.Millisecond})
	r.tick(100)
	if got := r.triggered(); !eqIDs(got, 1) {
		t.Fatalf("triggered %v", got)
	}
	r.clk.Set(150)
	r.ackAll(1) // completes at 150: the next may start at 400
	for _, at := range []int64{200, 300, 399} {
		r.tick(at)
		if got := r.triggered(); len(got) != 0 {
			t.Fatalf("triggered %v at %d, within the minimum pause", got, at)
		}
	}
	if w := r.c.nextWake(399); w != 400 {
		t.Fatalf("next wake %d, want 400", w)
	}
	r.tick(400)
	if got := r.triggered(); !eqIDs(got, 2) {
		t.Fatalf("triggered %v at the end of the pause", got)
	}
}

func TestCoordinatorTimeoutAndTolerableFailures(t *testing.T) {
	r := newCoordRig(t, CheckpointConfig{Interval: 10 * time.Millisecond, Timeout: 50 * time.Millisecond, TolerableFailures: 1})
	r.tick(10)
	if got := r.triggered(); !eqIDs(got, 1) {
		t.Fatalf("triggered %v", got)
	}
	r.c.onAck(context.Background(), TaskAck{ID: 1, Task: "src"})
	r.tick(59)
	if r.c.pending == nil {
		t.Fatal("checkpoint 1 expired before its timeout")
	}
	r.tick(60) // expires (failure 1 of 1 tolerated) and starts 2
	if r.c.failures != 1 || len(r.fail) != 0 {
		t.Fatalf("failures %d, fail calls %v", r.c.failures, r.fail)
	}
	if got := r.triggered(); !eqIDs(got, 2) {
		t.Fatalf("triggered %v after the expiry", got)
	}
	// A late ack of the expired checkpoint changes nothing.
	r.c.onAck(context.Background(), TaskAck{ID: 1, Task: "dst"})
	if len(r.persist) != 0 {
		t.Fatalf("an expired checkpoint was persisted: %v", r.persist)
	}
	// Checkpoint 2 completes: the count resets.
	r.ackAll(2)
	if r.c.failures != 0 {
		t.Fatalf("failures %d after a completed checkpoint", r.c.failures)
	}
	// 3 is declined by a task, 4 cannot be stored: two consecutive
	// failures, one more than tolerated.
	r.tick(70)
	r.c.onAck(context.Background(), TaskAck{ID: 3, Task: "dst", Err: errors.New("disk full")})
	if r.c.failures != 1 || len(r.fail) != 0 {
		t.Fatalf("after a decline: failures %d, fail %v", r.c.failures, r.fail)
	}
	r.tick(80)
	r.persErr = errors.New("store unreachable")
	r.ackAll(4)
	if len(r.fail) != 1 || !errors.Is(r.fail[0], ErrTooManyCheckpointFailures) ||
		!strings.Contains(r.fail[0].Error(), "store unreachable") || !strings.Contains(r.fail[0].Error(), "checkpoint 4") {
		t.Fatalf("fail calls %v", r.fail)
	}
	if got := r.notified(); !eqIDs(got, 2) {
		t.Fatalf("notified %v, want only the completed checkpoint 2", got)
	}
	// No checkpoint starts after the job was failed.
	r.triggered()
	r.tick(1000)
	if got := r.triggered(); len(got) != 0 {
		t.Fatalf("triggered %v after failing the job", got)
	}
}

// TestCoordinatorPersistWithinTimeout: storing a checkpoint may take what
// is left of its timeout, and no more (the store retries until then).
func TestCoordinatorPersistWithinTimeout(t *testing.T) {
	r := newCoordRig(t, CheckpointConfig{Interval: 10 * time.Millisecond, Timeout: time.Minute})
	r.tick(10)
	r.triggered()
	r.tick(20_010) // 20 s into checkpoint 1's minute
	r.ackAll(1)
	if !eqIDs(r.persist, 1) {
		t.Fatalf("persisted %v", r.persist)
	}
	if r.left <= 0 || r.left > 40*time.Second || r.left < 30*time.Second {
		t.Fatalf("Persist had %v left until its deadline, want the 40 s left of the timeout", r.left)
	}
}

func TestCoordinatorZeroToleranceFailsOnFirst(t *testing.T) {
	r := newCoordRig(t, CheckpointConfig{Interval: 10 * time.Millisecond, Timeout: 20 * time.Millisecond})
	r.tick(10)
	r.tick(30)
	if len(r.fail) != 1 || !strings.Contains(r.fail[0].Error(), "expired") {
		t.Fatalf("fail calls %v", r.fail)
	}
}

func TestCoordinatorFinishedTaskIsNotAFailure(t *testing.T) {
	r := newCoordRig(t, CheckpointConfig{Interval: 10 * time.Millisecond, Timeout: 20 * time.Millisecond})
	r.tick(10)
	r.dst.finished.Store(true)
	r.tick(20)
	if r.c.pending != nil || r.c.failures != 0 || len(r.fail) != 0 {
		t.Fatalf("pending %v, failures %d, fail %v", r.c.pending, r.c.failures, r.fail)
	}
}

func TestCoordinatorSavepoint(t *testing.T) {
	r := newCoordRig(t, CheckpointConfig{Interval: 100 * time.Millisecond, MinPause: time.Hour})
	var spPersisted []int64
	type result struct {
		id  int64
		err error
	}
	var results []result
	req := func() *SavepointRequest {
		return &SavepointRequest{
			Persist: func(_ context.Context, id int64, acks []TaskAck) error {
				spPersisted = append(spPersisted, id)
				return nil
			},
			Done: func(id int64, err error) { results = append(results, result{id, err}) },
		}
	}
	r.tick(100)
	if got := r.triggered(); !eqIDs(got, 1) {
		t.Fatalf("triggered %v", got)
	}
	// A savepoint requested while checkpoint 1 is in flight waits for it.
	r.c.onRequest(context.Background(), req())
	if got := r.triggered(); len(got) != 0 {
		t.Fatalf("savepoint triggered %v while a checkpoint is in flight", got)
	}
	r.clk.Set(110)
	r.ackAll(1)
	// The pause would hold a checkpoint for an hour; a savepoint goes now.
	if w := r.c.nextWake(110); w != 110 {
		t.Fatalf("wake %d with a savepoint queued", w)
	}
	r.tick(110)
	if got := r.triggered(); !eqIDs(got, 2) {
		t.Fatalf("savepoint triggered %v, want [2]", got)
	}
	r.notified()
	r.ackAll(2)
	if !eqIDs(spPersisted, 2) || !eqIDs(r.persist, 1) || len(results) != 1 || results[0] != (result{2, nil}) {
		t.Fatalf("savepoint persisted %v, checkpoints %v, results %v", spPersisted, r.persist, results)
	}
	if got := r.notified(); len(got) != 0 {
		t.Fatalf("a savepoint was notified as complete: %v", got)
	}
	// A savepoint that expires reports the failure and is not counted.
	r.c.onRequest(context.Background(), req())
	r.tick(110 + time.Minute.Milliseconds())
	if len(results) != 2 || results[1].id != 3 || results[1].err == nil || !strings.Contains(results[1].err.Error(), "expired") {
		t.Fatalf("results %v", results)
	}
	if r.c.failures != 0 || len(r.fail) != 0 {
		t.Fatalf("a failed savepoint counted: failures %d", r.c.failures)
	}
	// Requests still waiting when the job ends are answered.
	r.c.onRequest(context.Background(), req())
	r.c.queue = append(r.c.queue, req())
	r.c.shutdown()
	if len(results) != 4 || results[2].err == nil || results[3].err == nil {
		t.Fatalf("results after shutdown %v", results)
	}
}

func TestCoordinatorStopWithSavepointHoldsSources(t *testing.T) {
	r := newCoordRig(t, CheckpointConfig{Interval: time.Hour})
	acks := make(chan TaskAck, 4)
	r.src.SetAcks(acks)
	var done []error
	ctx, cancel := context.WithCancel(context.Background())
	r.c.onRequest(ctx, &SavepointRequest{
		Stop:    true,
		Persist: func(context.Context, int64, []TaskAck) error { return nil },
		Done:    func(_ int64, err error) { done = append(done, err) },
	})
	m := (<-r.src.inbox).(stopMsg)
	// The source task runs the message: it acknowledges, then holds.
	held := make(chan error, 1)
	go func() { held <- m.process() }()
	a := <-acks
	r.c.onAck(ctx, a)
	// The downstream task acknowledges; completing the savepoint notifies
	// every task and waits for them, so run the downstream inbox.
	go func() {
		n := (<-r.dst.inbox).(notifyWaitMsg)
		n.process()
	}()
	r.c.onAck(ctx, TaskAck{ID: m.id, Task: "dst"})
	if len(done) != 1 || done[0] != nil {
		t.Fatalf("done %v", done)
	}
	select {
	case err := <-held:
		t.Fatalf("the source resumed (%v) before the job was stopped", err)
	default:
	}
	cancel()
	if err := <-held; !errors.Is(err, context.Canceled) {
		t.Fatalf("the held source ended with %v, want context.Canceled (ending its task at once)", err)
	}
}

// TestCoordinatorPersistPanicFailsTheCheckpoint: a panic while a
// checkpoint is stored (in a store or an upload, on the coordinator's
// goroutine) fails that checkpoint instead of the process.
func TestCoordinatorPersistPanicFailsTheCheckpoint(t *testing.T) {
	r := newCoordRig(t, CheckpointConfig{Interval: 10 * time.Millisecond})
	r.c.cfg.Persist = func(context.Context, int64, []TaskAck) error { panic("upload exploded") }
	r.tick(10)
	r.ackAll(1)
	if r.c.pending != nil || len(r.fail) != 1 || !strings.Contains(r.fail[0].Error(), "upload exploded") ||
		!strings.Contains(r.fail[0].Error(), "could not be stored") {
		t.Fatalf("pending %v, fail calls %v", r.c.pending, r.fail)
	}
}

// TestCheckpointStatsFailureReasons: the tracker classifies a failed
// checkpoint by why it failed (the doctor's checkpoint diagnosis reads it).
func TestCheckpointStatsFailureReasons(t *testing.T) {
	stats := NewCheckpointStats(10)
	r := newCoordRig(t, CheckpointConfig{Interval: 10 * time.Millisecond, Timeout: time.Second, TolerableFailures: 100, Stats: stats})
	r.persErr = errors.New("disk full")
	r.tick(10)
	r.ackAll(1) // stored: fails
	r.persErr = nil
	r.tick(20)
	r.c.onAck(context.Background(), TaskAck{ID: 2, Task: "dst", Err: errors.New("cannot encode")})
	r.tick(30)
	r.tick(1030) // checkpoint 3 expires unacknowledged
	want := map[int64]string{1: FailureStore, 2: FailureDeclined, 3: FailureExpired}
	got := map[int64]string{}
	for _, c := range stats.View().History {
		if c.Status == CheckpointFailed {
			got[c.ID] = c.FailureReason
		}
	}
	for id, reason := range want {
		if got[id] != reason {
			t.Errorf("checkpoint %d: reason %q, want %q (all: %v)", id, got[id], reason, got)
		}
	}
}

// TestCoordinatorManualCheckpoint: a request with Checkpoint set (Flink's
// REST checkpoint trigger) waits for the checkpoint in flight, then starts
// a checkpoint at once despite the pause, reports its id when it starts,
// and is persisted, notified and counted as a periodic checkpoint.
func TestCoordinatorManualCheckpoint(t *testing.T) {
	r := newCoordRig(t, CheckpointConfig{Interval: 100 * time.Millisecond, MinPause: time.Hour})
	var started []int64
	req := &SavepointRequest{Checkpoint: true, Done: func(id int64, err error) {
		if err != nil {
			t.Errorf("manual checkpoint: %v", err)
		}
		started = append(started, id)
	}}
	r.tick(100)
	if got := r.triggered(); !eqIDs(got, 1) {
		t.Fatalf("triggered %v", got)
	}
	r.c.onRequest(context.Background(), req)
	if len(started) != 0 || len(r.triggered()) != 0 {
		t.Fatalf("a manual checkpoint started while checkpoint 1 is in flight: %v", started)
	}
	r.clk.Set(110)
	r.ackAll(1)
	r.tick(110)
	if got := r.triggered(); !eqIDs(got, 2) || !eqIDs(started, 2) {
		t.Fatalf("manual checkpoint: triggered %v, started %v, want [2]", got, started)
	}
	if r.c.pending == nil || r.c.pending.sp != nil {
		t.Fatal("the manual checkpoint is not a checkpoint in flight")
	}
	r.notified()
	r.ackAll(2)
	if !eqIDs(r.persist, 1, 2) {
		t.Fatalf("persisted %v, want [1 2]: a manual checkpoint goes to the checkpoint store", r.persist)
	}
	if got := r.notified(); len(got) == 0 {
		t.Fatal("the manual checkpoint's completion was not notified")
	}
}
