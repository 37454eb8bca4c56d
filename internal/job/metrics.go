package job

import (
	"context"
	"fmt"
	"math"
	"sort"
	"time"

	"github.com/weirstream/weir/internal/capture"
	"github.com/weirstream/weir/internal/clusterjob"
	"github.com/weirstream/weir/internal/engine"
	"github.com/weirstream/weir/internal/monitor"
	"github.com/weirstream/weir/internal/sketch"
	"github.com/weirstream/weir/metrics"
)

// The job's counters (the root's JobHandle.Metrics returns them) and its
// model for the REST API, Prometheus, the dashboard and `weir doctor`
// (internal/monitor), built from them, the plans' vertices and the
// checkpoint statistics.

// TaskPlan is a plan whose subtasks the job runs: the job's plan, or one
// task of a cluster member's (whose only subtask stands for the task's
// partition, part of a stage of tasks).
type TaskPlan struct {
	Plan      *engine.Plan
	Cluster   bool
	Partition int // of a cluster task
	Tasks     int // the cluster stage's task count
}

// ClusterPlans returns the plans of the tasks a cluster member runs now.
func ClusterPlans(o *clusterjob.Owned) []TaskPlan {
	var out []TaskPlan
	for _, t := range o.Tasks() {
		if t.Plan != nil {
			out = append(out, TaskPlan{Plan: t.Plan, Cluster: true, Partition: t.Partition, Tasks: t.Tasks})
		}
	}
	return out
}

// Metrics returns the counters of the plans' subtasks.
func Metrics(plans []TaskPlan) []metrics.Task {
	var out []metrics.Task
	for _, tp := range plans {
		out = append(out, tp.metrics()...)
	}
	return out
}

// metrics returns the counters of the plan's subtasks.
func (tp TaskPlan) metrics() []metrics.Task {
	var out []metrics.Task
	for _, t := range tp.Plan.Tasks {
		m := t.Metrics
		busy, idle, bp := m.Times()
		tm := metrics.Task{
			Task: m.Name, Subtask: m.Subtask,
			Busy: busy, Idle: idle,
			BackPressured:   bp,
			Checkpoints:     m.Checkpoints.Load(),
			CheckpointSync:  time.Duration(m.CheckpointSyncNanos.Load()),
			CheckpointAsync: time.Duration(m.CheckpointAsyncNanos.Load()),
		}
		if tp.Cluster {
			tm.Subtask = tp.Partition
		}
		for _, o := range m.Operators {
			om := metrics.Operator{Name: o.Name, RecordsOut: o.RecordsOut()}
			if o.RecordsIn != nil {
				om.RecordsIn = o.RecordsIn()
			}
			if o.InputWatermarks != nil {
				om.InputWatermarks = o.InputWatermarks()
			}
			if o.OutputWatermark != nil {
				om.OutputWatermark, om.OutputIdle = o.OutputWatermark(), o.OutputIdle()
			}
			if o.LateDropped != nil {
				om.LateRecordsDropped = o.LateDropped()
			}
			if o.Gauges != nil {
				for _, g := range o.Gauges() {
					om.Gauges = append(om.Gauges, metrics.Gauge{Name: g.Name, Labels: g.Labels, Value: g.Value})
				}
			}
			operatorGauges(o, &om.OperatorGauges)
			om.UserMetrics = o.User.Values()
			tm.Operators = append(tm.Operators, om)
		}
		taskIO(t, &tm)
		out = append(out, tm)
	}
	return out
}

func taskIO(t *engine.Task, tm *metrics.Task) {
	m := t.Metrics
	tm.Vertex, tm.RecordsIn, tm.RecordsOut = t.Vertex, m.IO.RecordsIn.Load(), m.IO.RecordsOut.Load()
	tm.BytesIn, tm.BytesOut, tm.Finished = m.IO.BytesIn.Load(), m.IO.BytesOut.Load(), m.Finished()
	for _, ks := range m.KeySketches {
		top, total := ks.Sketch.Top(16)
		k := metrics.KeySketch{Target: ks.Target, Every: ks.Every, Sampled: total}
		for _, it := range top {
			k.Keys = append(k.Keys, metrics.HotKey{Key: it.Key, Count: it.Count, Error: it.Error, Subtask: it.Tag})
		}
		tm.KeySketches = append(tm.KeySketches, k)
	}
}

func operatorGauges(o *engine.OperatorMetrics, g *metrics.OperatorGauges) {
	g.UID = o.UID
	if o.InputIdle != nil {
		g.InputIdle = o.InputIdle()
	}
	if o.InputRecords != nil {
		g.InputRecords = o.InputRecords()
	}
	if o.Splits != nil {
		g.Splits = o.Splits()
	}
	if o.Join != nil {
		j := o.Join()
		g.Join = &j
	}
	if gg := o.State; gg != nil && o.Splits == nil {
		g.Keyed = true
		g.StateEntries = gg.StateEntries.Load()
		g.Timers = gg.Timers.Load()
		g.TimersRegistered = gg.TimersRegistered.Load()
		g.StatesWithoutTTL = gg.StatesWithoutTTL.Load()
	}
}

// Handle is what Snapshot reads of a job's handle.
type Handle struct {
	Name string
	// Plans are the plans running now; Owned, for a cluster member, its
	// tasks.
	Plans []TaskPlan
	Owned *clusterjob.Owned
	// Status returns the job's Flink state (RUNNING, RESTARTING, ...),
	// its status (weir.JobStatus's name) and the savepoint it stopped
	// with.
	Status func() (state, status, savepoint string)
}

// Snapshot builds the job's monitor.Snapshot.
func (r *Runner) Snapshot(h Handle) *monitor.Snapshot {
	plans := h.Plans
	job, exceptions := r.Job(h.Name)
	job.State, job.Status, job.Savepoint = h.Status()
	snap := &monitor.Snapshot{Timestamp: time.Now().UnixMilli(), Job: job, Exceptions: exceptions}
	snap.Checkpoints = r.Checkpoints()
	byUID := map[string]int{}
	var tms []metrics.Task
	for _, tp := range plans {
		for _, v := range tp.Plan.Vertices {
			if _, ok := byUID[v.UID]; ok {
				continue // a vertex of another task of the same stage
			}
			mv := monitor.Vertex{ID: monitor.VertexID(v.UID), UID: v.UID, Name: v.Name, Parallelism: v.Parallelism}
			if tp.Cluster {
				mv.Parallelism = tp.Tasks
			}
			for _, op := range v.Operators {
				mo := monitor.Operator{Name: op.Name, UID: op.UID, Kind: op.Kind}
				if w := op.Watermarks; w != nil {
					mo.Watermarks = &monitor.Watermarks{OutOfOrderness: w.OutOfOrderness, Idleness: w.Idleness}
					if a := w.Alignment; a != nil {
						mo.Watermarks.AlignmentGroup, mo.Watermarks.MaxDrift = a.Group, a.MaxDrift
					}
				}
				mv.Operators = append(mv.Operators, mo)
			}
			for _, in := range v.Inputs {
				mv.Inputs = append(mv.Inputs, monitor.Input{From: monitor.VertexID(in.From), Input: in.Input, ShipStrategy: ShipStrategy(in.Partition), Side: in.Side})
			}
			byUID[v.UID] = len(snap.Vertices)
			snap.Vertices = append(snap.Vertices, mv)
		}
		tms = append(tms, tp.metrics()...)
	}
	if h.Owned != nil {
		snap.Cluster = ClusterOf(h.Owned)
		sort.SliceStable(tms, func(i, j int) bool { return tms[i].Subtask < tms[j].Subtask })
	}
	sketches := map[string][][]sketch.Item{} // by target name
	every := map[string]int{}
	sampled := map[string]int64{}
	sizes := OperatorSizes(snap.Checkpoints.Completed)
	for _, tm := range tms {
		i, ok := byUID[tm.Vertex]
		if !ok {
			continue
		}
		st := monitor.Subtask{
			Index: tm.Subtask, Status: SubtaskStatus(job.State, tm.Finished),
			RecordsIn: tm.RecordsIn, RecordsOut: tm.RecordsOut, BytesIn: tm.BytesIn, BytesOut: tm.BytesOut,
			BusyNanos: int64(tm.Busy - tm.BackPressured), IdleNanos: int64(tm.Idle), BackPressuredNanos: int64(tm.BackPressured),
			Checkpoints: tm.Checkpoints,
		}
		for j, om := range tm.Operators {
			if j == 0 {
				st.InputWatermarks, st.InputIdle, st.InputRecords = om.InputWatermarks, om.InputIdle, om.InputRecords
				if len(st.InputIdle) != len(st.InputWatermarks) {
					st.InputIdle = make([]bool, len(st.InputWatermarks))
				}
			}
			mo := monitor.OpMetric{
				Name: om.Name, UID: om.UID, RecordsIn: om.RecordsIn, RecordsOut: om.RecordsOut,
				LateRecordsDropped: om.LateRecordsDropped, Keyed: om.Keyed, StateEntries: om.StateEntries,
				StateBytes: sizes[om.UID][tm.Subtask], Timers: om.Timers, TimersRegistered: om.TimersRegistered,
				StatesWithoutTTL: om.StatesWithoutTTL, InputWatermarks: om.InputWatermarks,
			}
			wm := om.OutputWatermark
			mo.OutputWatermark = &wm
			for _, s := range om.Splits {
				mo.Splits = append(mo.Splits, monitor.Split(s))
			}
			for _, g := range om.Gauges {
				mo.Gauges = append(mo.Gauges, monitor.Gauge{Name: g.Name, Labels: g.Labels, Value: g.Value})
			}
			for _, u := range om.UserMetrics {
				mo.User = append(mo.User, monitorUserMetric(u))
			}
			if j := om.Join; j != nil {
				mo.Join = &monitor.JoinSample{Lower: j.Lower, Upper: j.Upper, Probes: j.Probes, Matched: j.Matched, MirroredMatched: j.MirroredMatched}
			}
			st.Operators = append(st.Operators, mo)
		}
		for _, ks := range tm.KeySketches {
			var items []sketch.Item
			for _, k := range ks.Keys {
				items = append(items, sketch.Item{Key: k.Key, Count: k.Count, Error: k.Error, Tag: k.Subtask})
			}
			sketches[ks.Target] = append(sketches[ks.Target], items)
			every[ks.Target] = ks.Every
			sampled[ks.Target] += ks.Sampled
		}
		v := &snap.Vertices[i]
		v.Subtasks = append(v.Subtasks, st)
	}
	for i := range snap.Vertices {
		v := &snap.Vertices[i]
		head := v.Operators[0].Name
		if tops, ok := sketches[head]; ok {
			ks := monitor.KeySkew{Every: every[head], Sampled: sampled[head]}
			for _, it := range sketch.Merge(16, tops...) {
				ks.Keys = append(ks.Keys, monitor.HotKey{Key: it.Key, Count: it.Count, Error: it.Error, Subtask: it.Tag})
			}
			v.KeySkew = append(v.KeySkew, ks)
		}
	}
	return snap
}

// monitorUserMetric converts a user metric for the monitor model.
func monitorUserMetric(u metrics.UserMetric) monitor.UserMetric {
	m := monitor.UserMetric{Name: u.Name, Kind: u.Kind.String(), Value: u.Value}
	if math.IsNaN(m.Value) || math.IsInf(m.Value, 0) {
		m.Value = 0 // JSON has no such numbers
	}
	if h := u.Histogram; h != nil {
		s := monitor.HistogramStats(*h)
		m.Histogram = &s
	}
	return m
}

// Record captures the inputs of one subtask of a vertex (by id, name or
// head UID) of the job named name, whose model is snap and whose plan
// plan returns, until ctx ends, limit input lines were taken or done is
// closed, and returns them as a scenario file (internal/capture; `weir
// record`).
func Record(ctx context.Context, name string, snap *monitor.Snapshot, plan func() *engine.Plan, done <-chan struct{}, vertex string, subtask int, limit int) ([]byte, error) {
	v := snap.Vertex(vertex)
	if v == nil {
		return nil, fmt.Errorf("no vertex %q in job %s", vertex, name)
	}
	for _, t := range plan().Tasks {
		if monitor.VertexID(t.Vertex) != v.ID || t.Subtask != subtask {
			continue
		}
		start := time.Now()
		rec := capture.New(limit,
			fmt.Sprintf("recorded by weir record from job %q (%s), vertex %q, subtask %d, at %s", name, snap.Job.ID, v.Name, subtask, start.UTC().Format(time.RFC3339)),
			fmt.Sprintf("the inputs of %q as its watermark valves and combiner saw them; replay with: weir scenario --check FILE", v.Operators[0].Name))
		if err := t.StartCapture(ctx, rec); err != nil {
			return nil, fmt.Errorf("vertex %q, subtask %d: %w", v.Name, subtask, err)
		}
		select {
		case <-ctx.Done():
		case <-rec.Full():
		case <-done:
		}
		stopCtx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		err := t.StopCapture(stopCtx)
		rec.Close()
		if err != nil {
			return nil, fmt.Errorf("vertex %q, subtask %d: stopping the capture: %w", v.Name, subtask, err)
		}
		return rec.Scenario(), nil
	}
	return nil, fmt.Errorf("vertex %q has no subtask %d (parallelism %d)", v.Name, subtask, v.Parallelism)
}
