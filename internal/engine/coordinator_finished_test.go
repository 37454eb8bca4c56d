package engine

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/weirstream/weir/internal/clock"
)

// finRig drives a coordinator over two source tasks and one downstream
// task, some of which finish (FLIP-147).
type finRig struct {
	t     *testing.T
	clk   *clock.Manual
	c     *coordinator
	tasks []*Task // a, b (sources), dst
	// stored holds each persisted checkpoint's acks as "task:state".
	stored map[int64][]string
	done   []int64
	fail   []error
}

func newFinRig(t *testing.T) *finRig {
	r := &finRig{t: t, clk: clock.NewManual(0), stored: map[int64][]string{}}
	for _, name := range []string{"a", "b", "dst"} {
		tk := NewTask(name, 0, r.clk)
		tk.SetInbox(make(chan message, 16))
		tk.source = name != "dst"
		r.tasks = append(r.tasks, tk)
	}
	cfg := CheckpointConfig{Interval: 100 * time.Millisecond, Timeout: time.Minute,
		Persist: func(_ context.Context, id int64, acks []TaskAck) error {
			var s []string
			for _, a := range acks {
				if a.ID != id {
					t.Errorf("checkpoint %d persisted with an ack of %d", id, a.ID)
				}
				st := ""
				if len(a.Ops) > 0 {
					st = string(a.Ops[0].State)
				}
				s = append(s, a.Task+":"+st)
			}
			slices.Sort(s)
			r.stored[id] = s
			return nil
		},
		OnComplete: func(id int64) { r.done = append(r.done, id) },
		Fail:       func(err error) { r.fail = append(r.fail, err) },
	}
	r.c = newCoordinator(cfg, r.clk, r.tasks, nil, nil)
	return r
}

func (r *finRig) tick(at int64) {
	r.clk.Set(at)
	r.c.onTick(context.Background(), at)
}

// triggered returns the checkpoints triggered at task i since the last call.
func (r *finRig) triggered(i int) []int64 {
	var ids []int64
	for {
		select {
		case m := <-r.tasks[i].inbox:
			if tm, ok := m.(triggerMsg); ok {
				ids = append(ids, tm.id)
			}
		default:
			return ids
		}
	}
}

func (r *finRig) ack(i int, id int64, state string) {
	tk := r.tasks[i]
	r.c.onAck(context.Background(), TaskAck{ID: id, Task: tk.Name, Subtask: tk.Subtask,
		Ops: []OperatorSnapshot{{UID: tk.Name, State: []byte(state)}}})
}

func (r *finRig) expectStored(id int64, want ...string) {
	r.t.Helper()
	got, ok := r.stored[id]
	if !ok {
		r.t.Fatalf("checkpoint %d not stored (stored: %v)", id, r.stored)
	}
	if !slices.Equal(got, want) {
		r.t.Fatalf("checkpoint %d stored %v, want %v", id, got, want)
	}
}

// TestCoordinatorCheckpointsAfterTasksFinish: a source that reached its
// end takes part in a checkpoint (its final state), then finishes; later
// checkpoints are triggered at the running source only and count the
// finished task with its final state; a task whose input ended is
// triggered directly; once every running task has ended its input, the
// final checkpoint is triggered at once, without waiting for the interval;
// once all have finished, nothing more is triggered.
func TestCoordinatorCheckpointsAfterTasksFinish(t *testing.T) {
	r := newFinRig(t)
	const a, b, dst = 0, 1, 2

	r.tick(100)
	if got := fmt.Sprint(r.triggered(a), r.triggered(b), r.triggered(dst)); got != "[1] [1] []" {
		t.Fatalf("checkpoint 1 triggered at a, b, dst: %s", got)
	}
	r.ack(a, 1, "a@10")
	r.ack(b, 1, "b@10")
	r.ack(dst, 1, "d1")
	r.expectStored(1, "a:a@10", "b:b@10", "dst:d1")

	// a reaches its end: it still runs (waiting for its final checkpoint)
	// and is triggered as before.
	r.tasks[a].inputEnded.Store(true)
	r.tick(150)
	if len(r.c.queue) != 0 || r.c.pending != nil {
		t.Fatal("a checkpoint started before the interval while b still runs")
	}
	r.tick(200)
	if got := fmt.Sprint(r.triggered(a), r.triggered(b)); got != "[2] [2]" {
		t.Fatalf("checkpoint 2 triggered at a, b: %s", got)
	}
	r.ack(a, 2, "a@end")
	r.ack(b, 2, "b@20")
	r.ack(dst, 2, "d2")
	r.expectStored(2, "a:a@end", "b:b@20", "dst:d2")

	// a finished after checkpoint 2: checkpoint 3 goes on without it.
	r.tasks[a].finished.Store(true)
	r.tick(300)
	if got := fmt.Sprint(r.triggered(a), r.triggered(b)); got != "[] [3]" {
		t.Fatalf("checkpoint 3 triggered at a, b: %s", got)
	}
	r.ack(b, 3, "b@30")
	if _, ok := r.stored[3]; ok {
		t.Fatal("checkpoint 3 stored before dst acknowledged it")
	}
	r.ack(dst, 3, "d3")
	r.expectStored(3, "a:a@end", "b:b@30", "dst:d3")

	// b finishes while checkpoint 4 is in flight, before acknowledging
	// it: it counts with its state in the latest completed checkpoint.
	r.tasks[b].inputEnded.Store(true)
	r.tick(400)
	if got := r.triggered(b); !slices.Equal(got, []int64{4}) {
		t.Fatalf("checkpoint 4 triggered at b: %v", got)
	}
	r.tasks[b].finished.Store(true)
	r.c.wake()
	r.tick(401)
	// dst's input has ended: no barrier can reach it, it is triggered
	// directly.
	r.tasks[dst].inputEnded.Store(true)
	r.tick(402)
	if got := r.triggered(dst); !slices.Equal(got, []int64{4}) {
		t.Fatalf("checkpoint 4 triggered at dst: %v", got)
	}
	r.tick(403)
	if got := r.triggered(dst); len(got) != 0 {
		t.Fatalf("checkpoint 4 triggered twice at dst: %v", got)
	}
	r.ack(dst, 4, "d4")
	r.expectStored(4, "a:a@end", "b:b@30", "dst:d4")

	// Every running task (dst) has ended its input: the next checkpoint,
	// its final one, starts at once.
	r.tick(410)
	if got := r.triggered(dst); !slices.Equal(got, []int64{5}) {
		t.Fatalf("final checkpoint triggered at dst: %v, want [5] at once", got)
	}
	r.ack(dst, 5, "d5")
	r.expectStored(5, "a:a@end", "b:b@30", "dst:d5")
	if !slices.Equal(r.done, []int64{1, 2, 3, 4, 5}) {
		t.Fatalf("completed %v, want 1..5", r.done)
	}
	r.tasks[dst].finished.Store(true)
	r.tick(1000)
	if r.c.pending != nil || len(r.triggered(a))+len(r.triggered(b))+len(r.triggered(dst)) != 0 {
		t.Fatal("a checkpoint was triggered after every task finished")
	}
	if len(r.fail) != 0 {
		t.Fatalf("failed: %v", r.fail)
	}
}

// TestCoordinatorFinishedWithoutFinalState: a task that finished with no
// completed checkpoint holding its state (the job had none yet) cannot be
// counted; the checkpoint is abandoned without counting as a failure.
// Savepoints are refused once a task's input has ended.
func TestCoordinatorFinishedWithoutFinalState(t *testing.T) {
	r := newFinRig(t)
	r.tick(100)
	r.tasks[0].finished.Store(true)
	r.ack(1, 1, "b")
	r.ack(2, 1, "d")
	if r.c.pending != nil || len(r.stored) != 0 {
		t.Fatalf("checkpoint 1 completed without a's state: %v", r.stored)
	}
	if len(r.fail) != 0 || r.c.failures != 0 {
		t.Fatalf("the abandoned checkpoint counted as a failure: %v", r.fail)
	}

	r2 := newFinRig(t)
	r2.tasks[2].inputEnded.Store(true)
	var got error
	r2.c.onRequest(context.Background(), &SavepointRequest{
		Persist: func(context.Context, int64, []TaskAck) error { return nil },
		Done:    func(_ int64, err error) { got = err },
	})
	if got == nil || !strings.Contains(got.Error(), "end of its input") {
		t.Fatalf("savepoint with an ended input: %v, want a refusal", got)
	}
}

// TestFinishedAckLeavesOutKeyedFiles: a finished task's acknowledgement,
// reused in a later checkpoint, keeps its operator state but not keyed
// state kept as files (staged once, gone after they were stored).
func TestFinishedAckLeavesOutKeyedFiles(t *testing.T) {
	a := TaskAck{ID: 3, Task: "k", Ops: []OperatorSnapshot{
		{UID: "pebble", KeyGroups: map[int][]byte{1: {0}}, KeyedFiles: struct{}{}},
		{UID: "heap", KeyGroups: map[int][]byte{2: {7}}, State: []byte("s")},
	}}
	got := finishedAck(a, 9)
	if got.ID != 9 || got.Ops[0].KeyedFiles != nil || got.Ops[0].KeyGroups != nil {
		t.Fatalf("pebble snapshot reused as %+v", got.Ops[0])
	}
	if string(got.Ops[1].State) != "s" || len(got.Ops[1].KeyGroups) != 1 {
		t.Fatalf("heap snapshot reused as %+v", got.Ops[1])
	}
	if a.Ops[0].KeyedFiles == nil {
		t.Fatal("the stored acknowledgement was changed")
	}
}

// TestCoordinatorFailedTaskIsNotFinished: a task whose loop ended with an
// error (it failed, or was cancelled because another task failed) did not
// reach the end of its input, so its latest acknowledgement is not its
// final state. The checkpoint in flight is abandoned rather than completed
// with that older state next to the newer positions of the sources that
// acknowledged it (a restore would then lose what dst had processed in
// between), and no checkpoint is triggered after.
func TestCoordinatorFailedTaskIsNotFinished(t *testing.T) {
	r := newFinRig(t)
	const a, b, dst = 0, 1, 2

	r.tick(100)
	r.triggered(a)
	r.triggered(b)
	r.ack(a, 1, "a@10")
	r.ack(b, 1, "b@10")
	r.ack(dst, 1, "d1")
	r.expectStored(1, "a:a@10", "b:b@10", "dst:d1")

	r.tick(200)
	r.triggered(a)
	r.triggered(b)
	r.ack(a, 2, "a@20")
	r.ack(b, 2, "b@20")
	// dst is cancelled before its barrier arrives: the job is failing.
	r.tasks[dst].stopped.Store(true)
	r.tasks[dst].finished.Store(true)
	r.tick(250)
	if _, ok := r.stored[2]; ok {
		t.Fatalf("checkpoint 2 stored with the state of a stopped task: %v", r.stored[2])
	}
	if r.c.pending != nil {
		t.Fatal("checkpoint 2 still pending after a task stopped")
	}
	r.tick(300)
	r.tick(400)
	if got := fmt.Sprint(r.triggered(a), r.triggered(b)); got != "[] []" {
		t.Fatalf("checkpoints triggered after a task stopped: %s", got)
	}
	if len(r.stored) != 1 {
		t.Fatalf("stored %v, want checkpoint 1 only", r.stored)
	}
}
