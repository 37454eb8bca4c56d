package weir

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"sync"
	"time"

	"github.com/weirstream/weir/internal/clock"
	"github.com/weirstream/weir/internal/clusterjob"
	"github.com/weirstream/weir/internal/monitor"
	"github.com/weirstream/weir/internal/runtime"
	"github.com/weirstream/weir/internal/sketch"
)

// The job's model for the REST API, Prometheus, the dashboard and
// `weir doctor` (internal/monitor), built from JobHandle.Metrics, the
// plan's vertices and the checkpoint statistics.

type monitorSnapshot = monitor.Snapshot

// defaultKeySample is the default key-sketch stride (WithKeySampling).
const defaultKeySample = 1024

// checkpointHistory is the number of checkpoints whose statistics are
// kept (Flink's web.checkpoints.history).
const checkpointHistory = 10

// WithKeySampling sets how many records of a keyBy share one sample for
// its key sketch (the heaviest keys the REST API, the dashboard and
// `weir doctor` show): one record in every (default 1024, 0 disables the
// sketches). A sample costs a key formatting and a sketch update.
func WithKeySampling(every int) Option { return func(c *config) { c.keySample = max(every, 0) } }

// jobMonitor holds the job's identity, its times and its failures.
type jobMonitor struct {
	mu         sync.Mutex
	id         string
	startMs    int64
	endMs      int64
	restarts   int
	restart    bool
	exceptions []monitor.Exception
}

func (m *jobMonitor) start(clk clock.Clock) {
	var b [16]byte
	rand.Read(b[:])
	m.mu.Lock()
	m.id = hex.EncodeToString(b[:])
	m.startMs = time.Now().UnixMilli()
	m.endMs = -1
	m.mu.Unlock()
}

func (m *jobMonitor) end() {
	m.mu.Lock()
	m.endMs = time.Now().UnixMilli()
	m.mu.Unlock()
}

func (m *jobMonitor) restarting(on bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.restart = on
	if on {
		m.restarts++
		if n := len(m.exceptions); n > 0 {
			m.exceptions[n-1].Restarted = true
		}
	}
}

// failure records an attempt's failure.
func (m *jobMonitor) failure(err error, _ bool) {
	x := monitor.Exception{Name: fmt.Sprintf("%T", err), Message: err.Error(), Timestamp: time.Now().UnixMilli(), Subtask: -1}
	var oe *runtime.OperatorError
	if errors.As(err, &oe) {
		x.Name = fmt.Sprintf("%T", oe.Err)
		x.Message = fmt.Sprintf("operator %q (subtask %d): %v", oe.Operator, oe.Subtask, oe.Err)
		x.Stacktrace, x.Task, x.Subtask = oe.Stack, oe.Operator, oe.Subtask
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.exceptions = append(m.exceptions, x)
	if len(m.exceptions) > 16 {
		m.exceptions = m.exceptions[len(m.exceptions)-16:]
	}
}

// restored records what the job starts from in the checkpoint statistics.
func (e *Environment) restored(cp *Checkpoint, what string) {
	e.cpStats.Restored(runtime.RestoredCheckpoint{ID: cp.ID, Timestamp: time.Now().UnixMilli(), Savepoint: e.cfg.savepoint != nil && what != fmt.Sprintf("checkpoint %d", cp.ID), ExternalPath: what})
}

// ID returns the job's id: 32 hex digits, new at each ExecuteAsync, as
// Flink's JobID (the REST API's :jobid).
func (h *JobHandle) ID() string {
	h.env.mon.mu.Lock()
	defer h.env.mon.mu.Unlock()
	return h.env.mon.id
}

// state returns the job's Flink status.
func (h *JobHandle) state() string {
	select {
	case <-h.done:
	default:
		h.env.mon.mu.Lock()
		r := h.env.mon.restart
		h.env.mon.mu.Unlock()
		if r {
			return "RESTARTING"
		}
		return "RUNNING"
	}
	// Flink's status of a job stopped with a savepoint is FINISHED;
	// Job.Status tells it apart.
	switch h.Status().Status {
	case JobFinished, JobStoppedWithSavepoint:
		return "FINISHED"
	case JobCanceled:
		return "CANCELED"
	}
	return "FAILED"
}

func shipStrategy(p runtime.Partitioning) string {
	if p == runtime.PartitionDefault {
		return "FORWARD"
	}
	return p.String()
}

// snapshot builds the job's monitor.Snapshot.
func (h *JobHandle) snapshot() *monitor.Snapshot {
	e := h.env
	plans := h.taskPlans()
	e.mon.mu.Lock()
	job := monitor.Job{
		ID: e.mon.id, Name: h.name, StartTime: e.mon.startMs, EndTime: e.mon.endMs,
		MaxParallelism: e.cfg.maxParallelism, Parallelism: e.cfg.parallelism, Restarts: e.mon.restarts,
		Config: e.configStrings(),
	}
	exceptions := append([]monitor.Exception(nil), e.mon.exceptions...)
	e.mon.mu.Unlock()
	job.State = h.state()
	res := h.Status()
	job.Status, job.Savepoint = res.Status.String(), res.Savepoint
	if c := e.checkpoint; c != nil {
		job.Checkpointing = &monitor.CheckpointConfig{
			ExactlyOnce: c.exactlyOnce, IntervalMs: c.interval.Milliseconds(), TimeoutMs: c.timeout.Milliseconds(),
			MinPauseMs: c.minPause.Milliseconds(), Unaligned: c.unaligned, AlignedTimeout: c.alignedTimeout.Milliseconds(),
			Tolerable: c.tolerable, Storage: fmt.Sprintf("%T", c.store), StateBackend: e.stateBackendName(),
		}
	}
	snap := &monitor.Snapshot{Timestamp: time.Now().UnixMilli(), Job: job, Exceptions: exceptions}
	snap.Checkpoints = checkpointsOf(e.cpStats.View())
	byUID := map[string]int{}
	var metrics []TaskMetrics
	for _, tp := range plans {
		for _, v := range tp.plan.Vertices {
			if _, ok := byUID[v.UID]; ok {
				continue // a vertex of another task of the same stage
			}
			mv := monitor.Vertex{ID: monitor.VertexID(v.UID), UID: v.UID, Name: v.Name, Parallelism: v.Parallelism}
			if tp.cluster {
				mv.Parallelism = tp.tasks
			}
			for _, op := range v.Operators {
				mv.Operators = append(mv.Operators, monitor.Operator{Name: op.Name, UID: op.UID, Kind: op.Kind})
			}
			for _, in := range v.Inputs {
				mv.Inputs = append(mv.Inputs, monitor.Input{From: monitor.VertexID(in.From), Input: in.Input, ShipStrategy: shipStrategy(in.Partition), Side: in.Side})
			}
			byUID[v.UID] = len(snap.Vertices)
			snap.Vertices = append(snap.Vertices, mv)
		}
		metrics = append(metrics, tp.metrics()...)
	}
	if h.cluster != nil {
		snap.Cluster = clusterOf(h.cluster)
		sort.SliceStable(metrics, func(i, j int) bool { return metrics[i].Subtask < metrics[j].Subtask })
	}
	sketches := map[string][][]sketch.Item{} // by target name
	every := map[string]int{}
	sampled := map[string]int64{}
	sizes := operatorSizes(snap.Checkpoints.Completed)
	for _, tm := range metrics {
		i, ok := byUID[tm.Vertex]
		if !ok {
			continue
		}
		st := monitor.Subtask{
			Index: tm.Subtask, Status: subtaskStatus(job.State, tm.Finished),
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

// clusterOf describes the tasks a cluster member owns.
func clusterOf(o *clusterjob.Owned) *monitor.Cluster {
	member, group := o.Member()
	c := &monitor.Cluster{Member: member, Group: group, Tasks: []monitor.ClusterTask{}}
	for _, t := range o.Tasks() {
		ct := monitor.ClusterTask{
			ID: t.ID, Stage: t.Stage, Partition: t.Partition, Tasks: t.Tasks, State: t.State, Attempt: t.Attempt,
			AssignedAt: t.AssignedAt, RestoredAt: t.RestoredAt, RunningAt: t.RunningAt, FirstCommitAt: t.FirstCommitAt,
			RestoredCheckpoint: t.Restored, CommittedCheckpoint: t.Committed, CommittedAt: t.CommittedAt,
			Vertices: []string{}, Inputs: []monitor.InputPosition{},
		}
		if t.Plan != nil {
			for _, v := range t.Plan.Vertices {
				ct.Vertices = append(ct.Vertices, monitor.VertexID(v.UID))
			}
		}
		for _, in := range t.Inputs {
			ct.Inputs = append(ct.Inputs, monitor.InputPosition{Topic: in.Topic, Partition: in.Partition, Offset: in.Offset})
		}
		c.Tasks = append(c.Tasks, ct)
	}
	return c
}

func subtaskStatus(job string, finished bool) string {
	switch {
	case finished && (job == "RUNNING" || job == "FINISHED" || job == "RESTARTING"):
		return "FINISHED"
	case job == "FAILED":
		return "FAILED"
	case job == "CANCELED":
		return "CANCELED"
	case finished:
		return "FINISHED"
	}
	return "RUNNING"
}

// operatorSizes returns each operator's state size per subtask in a
// checkpoint.
func operatorSizes(c *monitor.Checkpoint) map[string]map[int]int64 {
	out := map[string]map[int]int64{}
	if c == nil {
		return out
	}
	for _, subs := range c.Vertices {
		for _, s := range subs {
			for uid, n := range s.OperatorSizes {
				if out[uid] == nil {
					out[uid] = map[int]int64{}
				}
				out[uid][s.Subtask] = n
			}
		}
	}
	return out
}

func checkpointsOf(v runtime.CheckpointStatsView) monitor.Checkpoints {
	out := monitor.Checkpoints{Counts: monitor.CheckpointCounts(v.Counts), History: []monitor.Checkpoint{}}
	for _, r := range v.History {
		out.History = append(out.History, checkpointOf(r))
	}
	conv := func(r *runtime.CheckpointRecord) *monitor.Checkpoint {
		if r == nil {
			return nil
		}
		c := checkpointOf(*r)
		return &c
	}
	out.Completed, out.Savepoint, out.Failed = conv(v.Completed), conv(v.Savepoint), conv(v.Failed)
	if r := v.Restored; r != nil {
		out.Restored = &monitor.Restored{ID: r.ID, Timestamp: r.Timestamp, Savepoint: r.Savepoint, ExternalPath: r.ExternalPath}
	}
	return out
}

func checkpointOf(r runtime.CheckpointRecord) monitor.Checkpoint {
	c := monitor.Checkpoint{
		ID: r.ID, Savepoint: r.Savepoint, Status: r.Status, TriggerTimestamp: r.TriggerTimestamp, LatestAck: r.LatestAck,
		EndTimestamp: r.EndTimestamp, Failure: r.FailureMsg, ExternalPath: r.ExternalPath, Vertices: map[string][]monitor.SubtaskCheckpoint{},
	}
	c.StateSize, c.InFlight = r.StateSize()
	msOf := func(d time.Duration) int64 { return d.Milliseconds() }
	for uid, subs := range r.Vertices {
		var out []monitor.SubtaskCheckpoint
		for _, s := range subs {
			out = append(out, monitor.SubtaskCheckpoint{
				Subtask: s.Subtask, Acked: s.Acked, AckTimestamp: s.AckTimestamp, StateSize: s.StateSize, OperatorSizes: s.OperatorSizes,
				StartDelayMs: msOf(s.Stats.StartDelay), AlignmentMs: msOf(s.Stats.Alignment), SyncMs: msOf(s.Stats.Sync), AsyncMs: msOf(s.Stats.Async),
				InFlight: s.Stats.InFlight, Unaligned: s.Stats.Unaligned, LastInput: s.Stats.LastInput, LastChannel: s.Stats.LastChannel,
			})
			c.Unaligned = c.Unaligned || s.Stats.Unaligned
		}
		c.Vertices[monitor.VertexID(uid)] = out
	}
	return c
}

// configStrings lists the job's settings (Flink's user config).
func (e *Environment) configStrings() map[string]string {
	c := e.cfg
	m := map[string]string{
		"parallelism.default":              strconv.Itoa(c.parallelism),
		"pipeline.max-parallelism":         strconv.Itoa(c.maxParallelism),
		"pipeline.auto-watermark-interval": c.wmInterval.String(),
		"weir.buffer-size":                 strconv.Itoa(c.batchSize),
		"weir.buffer-credits":              strconv.Itoa(c.credits),
		"pipeline.operator-chaining":       strconv.FormatBool(c.chaining),
		"weir.key-sampling":                strconv.Itoa(c.keySample),
		"state.backend.type":               e.stateBackendName(),
		"restart-strategy":                 "none",
	}
	if c.restart != nil {
		m["restart-strategy"] = fmt.Sprintf("%T", c.restart)
	}
	return m
}

func (e *Environment) stateBackendName() string {
	if e.cfg.stateBackend == nil {
		return "hashmap"
	}
	return e.cfg.stateBackend.Name()
}
