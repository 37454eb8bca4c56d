package engine

import (
	"context"
	"reflect"
	"runtime/pprof"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/weirstream/weir/internal/sketch"
	"github.com/weirstream/weir/metrics"
)

// Metrics collection (the REST API, Prometheus and `weir doctor` read
// them). Everything here is counted by a task's goroutine with at most
// one atomic operation per batch of records, or published by the task
// goroutine now and then (Task.refresh), and read from any goroutine.

// IOCounters count what a subtask exchanges over the network (Flink's
// task-level numRecordsIn/Out and numBytesIn/Out): records and bytes that
// reached its input gates, records its operators handed to exchange
// writers and bytes those writers sent. Chained hand-offs are not
// counted. Bytes are the records' in-memory size: Weir does not serialize
// records between subtasks, so a batch of n records of type T moves
// n * unsafe.Sizeof(Record[T]) bytes (strings, slices and pointers count
// their headers, not what they point to); a broadcast record counts once
// per consumer it is copied to.
type IOCounters struct {
	RecordsIn  atomic.Int64
	BytesIn    atomic.Int64
	RecordsOut atomic.Int64
	BytesOut   atomic.Int64
}

// recordSize returns the in-memory size of one Record[T].
func recordSize[T any]() int64 { return int64(reflect.TypeFor[Record[T]]().Size()) }

// liveTimes tells what a task is doing right now, so that a reader can
// add the stretch in progress to the accumulated busy, idle and
// back-pressured times (a task busy for a minute has accounted nothing
// yet otherwise).
type liveTimes struct {
	base    time.Time    // the task's creation; the other fields count from it
	since   atomic.Int64 // start of the busy or idle stretch in progress
	idle    atomic.Bool
	bpSince atomic.Int64 // start of a blocked send in progress, 0 if none
}

func (l *liveTimes) at(t time.Time) int64 { return int64(t.Sub(l.base)) + 1 }

func (l *liveTimes) mark(t time.Time, idle bool) {
	l.since.Store(l.at(t))
	l.idle.Store(idle)
}

// Times returns the busy (including back-pressured), idle and
// back-pressured time of the task up to now, with the stretches in
// progress.
func (m *TaskMetrics) Times() (busy, idle, bp time.Duration) {
	busy = time.Duration(m.BusyNanos.Load())
	idle = time.Duration(m.IdleNanos.Load())
	bp = time.Duration(m.BackPressuredNanos.Load())
	if m.live.base.IsZero() || m.finished.Load() {
		return
	}
	now := m.live.at(time.Now())
	if s := m.live.since.Load(); s > 0 && now > s {
		if m.live.idle.Load() {
			idle += time.Duration(now - s)
		} else {
			busy += time.Duration(now - s)
		}
	}
	if s := m.live.bpSince.Load(); s > 0 && now > s {
		bp += time.Duration(now - s)
	}
	return
}

// Finished reports whether the task has ended.
func (m *TaskMetrics) Finished() bool { return m.finished.Load() }

// StateGauges are an operator's state gauges that its task publishes
// from its goroutine (Task.refresh, at most every refreshEvery and when
// the task goes idle) for other goroutines to read.
type StateGauges struct {
	// StateEntries is the number of keyed-state entries (one per key and
	// namespace of each state; window contents count one per window and
	// key; join buffers one per buffered record).
	StateEntries atomic.Int64
	// StateBytes estimates the keyed state's size in bytes, where known
	// (the size of the last checkpoint's snapshot of it otherwise).
	StateBytes atomic.Int64
	// Timers is the number of registered event- and processing-time
	// timers (pending cleanups for the interval join).
	Timers atomic.Int64
	// StatesWithoutTTL is the number of registered keyed states that have
	// no TTL; TimersRegistered the timers registered since the start.
	StatesWithoutTTL atomic.Int64
	TimersRegistered atomic.Int64
}

// StateReporter is implemented by operators that publish StateGauges.
// The task calls ReportState on its goroutine.
type StateReporter interface {
	ReportState(g *StateGauges)
}

// SplitMetrics describe one split of a source subtask (the public
// metrics.Split, which the job's snapshot serves as it is).
type SplitMetrics = metrics.Split

// JoinSample is what an interval join counts on a sample of its probes
// (the public metrics.JoinSample).
type JoinSample = metrics.JoinSample

// JoinSampler is implemented by operators that sample their probes.
type JoinSampler interface {
	JoinSample() JoinSample
}

// KeySketch is the sampled heavy-hitters sketch of one producer subtask's
// writer into a keyBy (hash) exchange: Target names the consumer vertex
// (its head operator), Every the sampling stride (one record in Every).
type KeySketch struct {
	Target string
	Every  int
	Sketch *sketch.SpaceSaving
}

// keySketchCapacity is the number of keys a KeySketch tracks.
const keySketchCapacity = 64

// refreshEvery is how often a busy task publishes its gauges and accounts
// its busy time.
const refreshEvery = 100 * time.Millisecond

// SplitReporter is implemented by source operators: per-split metrics,
// readable from any goroutine.
type SplitReporter interface {
	SplitMetrics() []SplitMetrics
}

// refresher holds a task's gauge publishers; only the task goroutine uses
// it.
type refresher struct {
	ops  []gaugeOp
	last time.Time
}

type gaugeOp struct {
	r StateReporter
	g *StateGauges
}

// refresh publishes every operator's gauges if refreshEvery has passed
// since the last time (or force).
func (t *Task) refresh(now time.Time, force bool) {
	r := &t.gauges
	if len(r.ops) == 0 || (!force && now.Sub(r.last) < refreshEvery) {
		return
	}
	r.last = now
	for _, o := range r.ops {
		o.r.ReportState(o.g)
	}
}

// The pprof labels of task goroutines (internal/rest reads them).
const (
	LabelVertex  = "weir_vertex"
	LabelSubtask = "weir_subtask"
)

// labelGoroutine labels the task goroutine with its vertex and subtask
// for CPU profiles; the goroutines it starts inherit the labels.
func (t *Task) labelGoroutine(ctx context.Context) context.Context {
	ctx = pprof.WithLabels(ctx, pprof.Labels(LabelVertex, t.Vertex, LabelSubtask, strconv.Itoa(t.Subtask)))
	pprof.SetGoroutineLabels(ctx)
	return ctx
}
