package engine

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/weirstream/weir/internal/clock"
)

// asyncOp is an operator whose snapshots have an asynchronous part that
// waits for release (and fails with fail, if set); it counts the records
// it processes.
type asyncOp struct {
	processed atomic.Int64
	started   chan int64    // the asynchronous part of checkpoint id started
	release   chan struct{} // lets one asynchronous part finish
	ended     chan error    // the asynchronous part ended with this
	fail      error
	syncCalls atomic.Int64
}

func newAsyncOp() *asyncOp {
	return &asyncOp{started: make(chan int64, 8), release: make(chan struct{}, 8), ended: make(chan error, 8)}
}

func (o *asyncOp) SnapshotState(int64) (OperatorSnapshot, error) {
	o.syncCalls.Add(1)
	return OperatorSnapshot{State: []byte("sync")}, nil
}

func (o *asyncOp) SnapshotStateAsync(id int64) (AsyncSnapshot, error) {
	n := o.processed.Load() // the view: what was processed at the barrier
	fail := o.fail
	return func(ctx context.Context) (OperatorSnapshot, error) {
		o.started <- id
		var err error
		select {
		case <-o.release:
			err = fail
		case <-ctx.Done():
			err = ctx.Err()
		}
		o.ended <- err
		if err != nil {
			return OperatorSnapshot{}, err
		}
		return OperatorSnapshot{State: []byte{byte(n)}}, nil
	}, nil
}

// recordMsg is a record for asyncOp.
type recordMsg struct{ o *asyncOp }

func (m recordMsg) process() error { m.o.processed.Add(1); return nil }

// barrierLog is an exchange writer that records the barriers it forwards.
type barrierLog struct{ barriers chan Barrier }

func (w *barrierLog) Flush() error                  { return nil }
func (w *barrierLog) SetContext(context.Context)    {}
func (w *barrierLog) SetActivity(*clock.Pausable)   {}
func (w *barrierLog) Barrier(b Barrier) error       { w.barriers <- b; return nil }
func (w *barrierLog) expect(t *testing.T, id int64) { t.Helper(); expectBarrier(t, w.barriers, id) }

func expectBarrier(t *testing.T, c <-chan Barrier, id int64) {
	t.Helper()
	if b := <-c; b.ID != id {
		t.Fatalf("barrier %d forwarded, want %d", b.ID, id)
	}
}

// receive waits for a value on c (no deadline: a slow machine may take
// long; a hang ends at go test's -timeout with every stack).
func receive[T any](t *testing.T, c <-chan T, what string) T {
	t.Helper()
	return <-c
}

func noAck(t *testing.T, acks <-chan TaskAck) {
	t.Helper()
	select {
	case a := <-acks:
		t.Fatalf("checkpoint %d acknowledged before its asynchronous part finished", a.ID)
	case <-time.After(20 * time.Millisecond):
	}
}

// runAsyncTask runs a task with op as its only operator until stop or the
// end of the test.
func runAsyncTask(t *testing.T, op *asyncOp) (task *Task, w *barrierLog, acks chan TaskAck, stop func() error) {
	task = NewTask("async", 0, clock.System{})
	task.SetInbox(make(chan message, 64))
	task.SetDone(func() bool { return false })
	w = &barrierLog{barriers: make(chan Barrier, 8)}
	task.AddWriter(w)
	task.AddSnapshotter("op", op)
	acks = make(chan TaskAck, 8)
	task.SetAcks(acks)
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	var err error
	wg.Add(1)
	go func() { defer wg.Done(); err = task.Run(ctx) }()
	var once sync.Once
	stop = func() error { once.Do(func() { cancel(); wg.Wait() }); return err }
	t.Cleanup(func() { stop() })
	return task, w, acks, stop
}

// waitProcessed waits until op has processed n records.
func waitProcessed(t *testing.T, op *asyncOp, n int64) {
	t.Helper()
	for op.processed.Load() < n {
		time.Sleep(time.Millisecond)
	}
}

// TestAsyncSnapshotForwardsBarrierFirst: the task forwards the barrier
// after the synchronous part, goes on processing records while the
// asynchronous part runs, and acknowledges only when that has finished,
// with its result (the state as at the barrier).
func TestAsyncSnapshotForwardsBarrierFirst(t *testing.T) {
	op := newAsyncOp()
	task, w, acks, stop := runAsyncTask(t, op)
	for range 3 {
		task.inbox <- recordMsg{op}
	}
	if !task.Trigger(1) {
		t.Fatal("inbox full")
	}
	if id := receive(t, op.started, "asynchronous part"); id != 1 {
		t.Fatalf("asynchronous part of checkpoint %d, want 1", id)
	}
	w.expect(t, 1)
	for range 5 {
		task.inbox <- recordMsg{op}
	}
	waitProcessed(t, op, 8)
	noAck(t, acks)
	op.release <- struct{}{}
	a := receive(t, acks, "acknowledgement")
	if a.ID != 1 || a.Err != nil || len(a.Ops) != 1 || a.Ops[0].UID != "op" || string(a.Ops[0].State) != string([]byte{3}) {
		t.Fatalf("ack %+v, want checkpoint 1 with the state at the barrier (3 records)", a)
	}
	if n := op.syncCalls.Load(); n != 0 {
		t.Fatalf("SnapshotState called %d times", n)
	}
	if m := task.Metrics; m.Checkpoints.Load() != 1 || m.CheckpointAsyncNanos.Load() <= 0 {
		t.Fatalf("metrics: %d checkpoints, %d ns asynchronous", m.Checkpoints.Load(), m.CheckpointAsyncNanos.Load())
	}
	if err := stop(); !errors.Is(err, context.Canceled) {
		t.Fatalf("Run: %v", err)
	}
}

// TestAsyncSnapshotFailureDeclines: a failing asynchronous part declines
// the checkpoint; the task goes on and takes the next one.
func TestAsyncSnapshotFailureDeclines(t *testing.T) {
	op := newAsyncOp()
	op.fail = errors.New("disk full")
	task, w, acks, _ := runAsyncTask(t, op)
	task.Trigger(1)
	w.expect(t, 1)
	op.release <- struct{}{}
	a := receive(t, acks, "decline")
	if a.ID != 1 || !errors.Is(a.Err, op.fail) || a.Ops != nil {
		t.Fatalf("ack %+v, want checkpoint 1 declined with %v", a, op.fail)
	}
	op.fail = nil // read by the next synchronous part, on the task goroutine after Trigger
	task.Trigger(2)
	w.expect(t, 2)
	op.release <- struct{}{}
	if a := receive(t, acks, "acknowledgement"); a.ID != 2 || a.Err != nil {
		t.Fatalf("ack %+v, want checkpoint 2", a)
	}
}

// TestAsyncSnapshotCancelled: the next barrier cancels an asynchronous
// part still running (its checkpoint was abandoned), and so does the end
// of the task; no acknowledgement comes from either, and no goroutine is
// left behind (goleak).
func TestAsyncSnapshotCancelled(t *testing.T) {
	op := newAsyncOp()
	task, w, acks, stop := runAsyncTask(t, op)
	task.Trigger(1)
	w.expect(t, 1)
	receive(t, op.started, "asynchronous part 1")
	task.Trigger(2)
	w.expect(t, 2)
	if err := receive(t, op.ended, "end of part 1"); !errors.Is(err, context.Canceled) {
		t.Fatalf("part 1 ended with %v, want cancelled", err)
	}
	receive(t, op.started, "asynchronous part 2")
	noAck(t, acks)
	stop()
	if err := receive(t, op.ended, "end of part 2"); !errors.Is(err, context.Canceled) {
		t.Fatalf("part 2 ended with %v, want cancelled", err)
	}
	select {
	case a := <-acks:
		t.Fatalf("ack %+v after cancellation", a)
	default:
	}
}

// TestAsyncSnapshotUnaligned: an unaligned checkpoint forwards the barrier
// at once, and is acknowledged when both the asynchronous part and the
// channel state are complete, with the channel state on the head
// operator's snapshot.
func TestAsyncSnapshotUnaligned(t *testing.T) {
	op := newAsyncOp()
	task, w, acks, _ := runAsyncTask(t, op)
	task.headUID = "op"
	task.parallelism = 1
	var a *Aligner
	a = NewAlignerWith(AlignerConfig{ExactlyOnce: true, Unaligned: true, Time: task,
		Snapshot: task.snapshot, Forward: task.forward, Complete: task.acknowledge, Abort: task.abortCheckpoint})
	a.addChannels(0, 2)
	b := Barrier{ID: 1, Timestamp: task.Now(), Unalignable: true}
	step := func(f func() error) {
		done := make(chan error, 1)
		task.inbox <- funcMsg(func() error { err := f(); done <- err; return err })
		if err := receive(t, done, "step"); err != nil {
			t.Fatal(err)
		}
	}
	step(func() error { _, err := a.barrier(0, 0, b); return err })
	w.expect(t, 1)
	receive(t, op.started, "asynchronous part")
	op.release <- struct{}{}
	receive(t, op.ended, "end of the asynchronous part")
	noAck(t, acks) // the channel state is not complete yet
	step(func() error { _, err := a.barrier(0, 1, b); return err })
	ack := receive(t, acks, "acknowledgement")
	if ack.ID != 1 || ack.Err != nil || len(ack.Ops) != 1 || ack.Ops[0].UID != "op" {
		t.Fatalf("ack %+v", ack)
	}
}

// funcMsg is a step given as a function.
type funcMsg func() error

func (f funcMsg) process() error { return f() }
