package job

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/weirstream/weir/internal/clusterjob"
	"github.com/weirstream/weir/internal/engine"
	"github.com/weirstream/weir/internal/monitor"
)

// Monitor holds the job's identity, its times and its failures.
type Monitor struct {
	mu         sync.Mutex
	id         string
	startMs    int64
	endMs      int64
	restarts   int
	restart    bool
	exceptions []monitor.Exception
}

// Start gives the job a new id and records its start.
func (m *Monitor) Start() {
	var b [16]byte
	rand.Read(b[:])
	m.mu.Lock()
	m.id = hex.EncodeToString(b[:])
	m.startMs = time.Now().UnixMilli()
	m.endMs = -1
	m.mu.Unlock()
}

// End records the job's end.
func (m *Monitor) End() {
	m.mu.Lock()
	m.endMs = time.Now().UnixMilli()
	m.mu.Unlock()
}

// Restarting records that the job is restarting (on) or runs again.
func (m *Monitor) Restarting(on bool) {
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

// Failure records an attempt's failure.
func (m *Monitor) Failure(err error) {
	x := monitor.Exception{Name: fmt.Sprintf("%T", err), Message: err.Error(), Timestamp: time.Now().UnixMilli(), Subtask: -1}
	var oe *engine.OperatorError
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

// ID returns the job's id: 32 hex digits, new at each start.
func (m *Monitor) ID() string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.id
}

// IsRestarting reports whether the job is restarting.
func (m *Monitor) IsRestarting() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.restart
}

// ShipStrategy names a partitioning as Flink's REST API does.
func ShipStrategy(p engine.Partitioning) string {
	if p == engine.PartitionDefault {
		return "FORWARD"
	}
	return p.String()
}

// Job returns the job's description for the monitor (without its state
// and status, which the handle knows).
func (r *Runner) Job(name string) (monitor.Job, []monitor.Exception) {
	c := r.Cfg
	r.Mon.mu.Lock()
	job := monitor.Job{
		ID: r.Mon.id, Name: name, StartTime: r.Mon.startMs, EndTime: r.Mon.endMs,
		MaxParallelism: c.MaxParallelism, Parallelism: c.Parallelism, Restarts: r.Mon.restarts,
		Config: r.configStrings(),
	}
	exceptions := append([]monitor.Exception(nil), r.Mon.exceptions...)
	r.Mon.mu.Unlock()
	if cp := c.Checkpoint; cp != nil {
		job.Checkpointing = &monitor.CheckpointConfig{
			ExactlyOnce: cp.ExactlyOnce, IntervalMs: cp.Interval.Milliseconds(), TimeoutMs: cp.Timeout.Milliseconds(),
			MinPauseMs: cp.MinPause.Milliseconds(), Unaligned: cp.Unaligned, AlignedTimeout: cp.AlignedTimeout.Milliseconds(),
			Tolerable: cp.Tolerable, Storage: cp.StoreName, StateBackend: c.StateBackend,
		}
	}
	return job, exceptions
}

// configStrings lists the job's settings (Flink's user config).
func (r *Runner) configStrings() map[string]string {
	c := r.Cfg
	return map[string]string{
		"parallelism.default":              strconv.Itoa(c.Parallelism),
		"pipeline.max-parallelism":         strconv.Itoa(c.MaxParallelism),
		"pipeline.auto-watermark-interval": c.WMInterval.String(),
		"weir.buffer-size":                 strconv.Itoa(c.BatchSize),
		"weir.buffer-credits":              strconv.Itoa(c.Credits),
		"pipeline.operator-chaining":       strconv.FormatBool(c.Chaining),
		"weir.key-sampling":                strconv.Itoa(c.KeySample),
		"state.backend.type":               c.StateBackend,
		"restart-strategy":                 c.RestartName,
	}
}

// ClusterOf describes the tasks a cluster member owns.
func ClusterOf(o *clusterjob.Owned) *monitor.Cluster {
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

// SubtaskStatus returns a subtask's Flink status in a job of status job.
func SubtaskStatus(job string, finished bool) string {
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

// OperatorSizes returns each operator's state size per subtask in a
// checkpoint.
func OperatorSizes(c *monitor.Checkpoint) map[string]map[int]int64 {
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

// Checkpoints returns the checkpoint statistics for the monitor.
func (r *Runner) Checkpoints() monitor.Checkpoints {
	v := r.Stats.View()
	out := monitor.Checkpoints{Counts: monitor.CheckpointCounts(v.Counts), History: []monitor.Checkpoint{}}
	for _, r := range v.History {
		out.History = append(out.History, checkpointOf(r))
	}
	conv := func(r *engine.CheckpointRecord) *monitor.Checkpoint {
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

func checkpointOf(r engine.CheckpointRecord) monitor.Checkpoint {
	c := monitor.Checkpoint{
		ID: r.ID, Savepoint: r.Savepoint, Status: r.Status, TriggerTimestamp: r.TriggerTimestamp, LatestAck: r.LatestAck,
		EndTimestamp: r.EndTimestamp, Failure: r.FailureMsg, FailureReason: r.FailureReason, ExternalPath: r.ExternalPath, Vertices: map[string][]monitor.SubtaskCheckpoint{},
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
