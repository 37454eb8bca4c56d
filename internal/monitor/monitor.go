// Package monitor is the model of a running job that Weir's REST API,
// Prometheus exporter, dashboard and `weir doctor` share: a Snapshot of
// every subtask's counters and gauges, the checkpoints' statistics and
// the job's exceptions at one instant, as the REST API serves it under
// /weir/jobs/:jobid/snapshot (JSON field names below). Counters are
// cumulative; rates come from two snapshots (Rates).
package monitor

import (
	"crypto/md5"
	"encoding/hex"
	"math"
	"sort"
	"strings"
)

// MinWatermark is the watermark of an input that has none yet.
const MinWatermark = math.MinInt64

// Snapshot is a job at one instant.
type Snapshot struct {
	// Timestamp is wall-clock time in milliseconds when it was taken.
	Timestamp   int64       `json:"timestamp"`
	Job         Job         `json:"job"`
	Vertices    []Vertex    `json:"vertices"`
	Checkpoints Checkpoints `json:"checkpoints"`
	Exceptions  []Exception `json:"exceptions"`
	// Cluster is set for a cluster member (weir.WithKafkaCluster): the
	// instance and the tasks it owns now. Vertices then hold the owned
	// tasks as subtasks (subtask index = the task's partition).
	Cluster *Cluster `json:"cluster,omitempty"`
}

// Cluster is a cluster member's view of its job.
type Cluster struct {
	// Member is the instance's consumer group member id, Group the group.
	Member string `json:"member"`
	Group  string `json:"group"`
	// Tasks are the tasks (stage x partition) the instance owns now.
	Tasks []ClusterTask `json:"tasks"`
}

// ClusterTask is one task a cluster member owns. Times are milliseconds
// since the epoch (0: not yet).
type ClusterTask struct {
	ID        string `json:"id"`
	Stage     string `json:"stage"`
	Partition int    `json:"partition"`
	// Tasks is the stage's task count.
	Tasks int `json:"tasks"`
	// State is RESTORING, RUNNING or RESTARTING.
	State   string `json:"state"`
	Attempt int    `json:"attempt"`
	// Vertices are the IDs of the task's vertices (its subtask in each
	// is Partition).
	Vertices   []string `json:"vertices"`
	AssignedAt int64    `json:"assigned-at"`
	RestoredAt int64    `json:"restored-at"`
	RunningAt  int64    `json:"running-at"`
	// FirstCommitAt is when the task's first checkpoint here committed.
	FirstCommitAt int64 `json:"first-commit-at"`
	// RestoredCheckpoint is the checkpoint the task started from (0:
	// none), CommittedCheckpoint the last it committed here, at
	// CommittedAt.
	RestoredCheckpoint  int64 `json:"restored-checkpoint"`
	CommittedCheckpoint int64 `json:"committed-checkpoint"`
	CommittedAt         int64 `json:"committed-at"`
	// Inputs are the positions of the task's input partitions in its
	// last committed checkpoint.
	Inputs []InputPosition `json:"inputs"`
}

// InputPosition is the next offset to read of a Kafka partition.
type InputPosition struct {
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
	Offset    int64  `json:"offset"`
}

// Job describes the job.
type Job struct {
	ID   string `json:"id"`
	Name string `json:"name"`
	// State is Flink's job status: RUNNING, FINISHED, FAILED, CANCELED,
	// RESTARTING.
	State string `json:"state"`
	// Status is Weir's status of the job (weir.JobStatus): RUNNING,
	// FINISHED, STOPPED_WITH_SAVEPOINT, CANCELED or FAILED. Unlike State
	// it tells a job stopped with a savepoint (FINISHED in Flink) from one
	// whose input ended.
	Status string `json:"status"`
	// Savepoint is the path of the savepoint a STOPPED_WITH_SAVEPOINT job
	// stopped with.
	Savepoint      string `json:"savepoint,omitempty"`
	StartTime      int64  `json:"start-time"`
	EndTime        int64  `json:"end-time"` // -1 while running
	MaxParallelism int    `json:"max-parallelism"`
	Parallelism    int    `json:"parallelism"`
	Restarts       int    `json:"restarts"`
	// Checkpointing is the checkpoint configuration (nil: none).
	Checkpointing *CheckpointConfig `json:"checkpointing,omitempty"`
	// Config holds the job's settings as strings (Flink's user config).
	Config map[string]string `json:"config"`
}

// CheckpointConfig is the checkpoint configuration.
type CheckpointConfig struct {
	ExactlyOnce    bool   `json:"exactly-once"`
	IntervalMs     int64  `json:"interval"`
	TimeoutMs      int64  `json:"timeout"`
	MinPauseMs     int64  `json:"min-pause"`
	Unaligned      bool   `json:"unaligned"`
	AlignedTimeout int64  `json:"aligned-timeout"`
	Tolerable      int    `json:"tolerable-failures"`
	Storage        string `json:"storage"`
	StateBackend   string `json:"state-backend"`
}

// Vertex is one chain of operators (Flink's job vertex).
type Vertex struct {
	// ID is 32 hex digits, as Flink's JobVertexID (VertexID).
	ID          string     `json:"id"`
	UID         string     `json:"uid"`
	Name        string     `json:"name"`
	Parallelism int        `json:"parallelism"`
	Operators   []Operator `json:"operators"`
	Inputs      []Input    `json:"inputs"`
	Subtasks    []Subtask  `json:"subtasks"`
	// KeySkew holds the key sketch of each keyBy into the vertex's input,
	// merged over the producing subtasks.
	KeySkew []KeySkew `json:"key-skew,omitempty"`
}

// Operator is one operator of a vertex.
type Operator struct {
	Name string `json:"name"`
	UID  string `json:"uid"`
	// Kind is "source", "one-input" or "two-input".
	Kind string `json:"kind"`
	// Watermarks is the watermark strategy the operator declares (a
	// source, or a timestamp assigner); nil if none.
	Watermarks *Watermarks `json:"watermarks,omitempty"`
}

// Watermarks is what an operator's watermark strategy declares.
type Watermarks struct {
	// OutOfOrderness is the bound in ms (0: monotonous timestamps; -1:
	// none declared, as with no watermarks or a custom generator).
	OutOfOrderness int64 `json:"out-of-orderness"`
	// Idleness is the idleness timeout in ms (0: none).
	Idleness int64 `json:"idleness"`
	// AlignmentGroup and MaxDrift (ms) are its watermark alignment
	// ("": none).
	AlignmentGroup string `json:"alignment-group,omitempty"`
	MaxDrift       int64  `json:"max-drift,omitempty"`
}

// Input is a network edge into a vertex.
type Input struct {
	// From is the producing vertex's ID.
	From string `json:"from"`
	// Input is the head operator's input (0 or 1).
	Input int `json:"input"`
	// ShipStrategy is Flink's name: FORWARD, REBALANCE, HASH, BROADCAST,
	// GLOBAL.
	ShipStrategy string `json:"ship-strategy"`
	Side         string `json:"side,omitempty"`
}

// Subtask is one subtask's counters and gauges.
type Subtask struct {
	Index int `json:"subtask"`
	// Status is Flink's execution state: RUNNING, FINISHED, CANCELED, FAILED.
	Status     string `json:"status"`
	RecordsIn  int64  `json:"records-in"`
	RecordsOut int64  `json:"records-out"`
	BytesIn    int64  `json:"bytes-in"`
	BytesOut   int64  `json:"bytes-out"`
	// BusyNanos excludes back-pressured time (Flink's busy time);
	// busy + idle + back-pressured is the subtask's run time.
	BusyNanos          int64 `json:"busy-ns"`
	IdleNanos          int64 `json:"idle-ns"`
	BackPressuredNanos int64 `json:"backpressured-ns"`
	// InputWatermarks, InputIdle and InputRecords are per network input
	// of the head operator (two for a two-input operator).
	InputWatermarks []int64 `json:"input-watermarks"`
	InputIdle       []bool  `json:"input-idle"`
	InputRecords    []int64 `json:"input-records"`
	// OutputWatermark is the last operator's output watermark, if known.
	OutputWatermark *int64     `json:"output-watermark,omitempty"`
	Checkpoints     int64      `json:"checkpoints"`
	Operators       []OpMetric `json:"operators"`
}

// OpMetric is one operator's counters and gauges in one subtask.
type OpMetric struct {
	Name               string `json:"name"`
	UID                string `json:"uid"`
	RecordsIn          int64  `json:"records-in"`
	RecordsOut         int64  `json:"records-out"`
	LateRecordsDropped int64  `json:"late-records-dropped"`
	// Keyed is set for operators that report state gauges.
	Keyed            bool  `json:"keyed"`
	StateEntries     int64 `json:"state-entries"`
	StateBytes       int64 `json:"state-bytes"`
	Timers           int64 `json:"timers"`
	TimersRegistered int64 `json:"timers-registered"`
	StatesWithoutTTL int64 `json:"states-without-ttl"`
	// InputWatermarks of this operator, when known (the head's inputs).
	InputWatermarks []int64 `json:"input-watermarks,omitempty"`
	// OutputWatermark is the operator's output watermark (Flink's
	// currentOutputWatermark; MinWatermark before the first), nil if
	// unknown.
	OutputWatermark *int64             `json:"output-watermark,omitempty"`
	Splits          []Split            `json:"splits,omitempty"`
	Gauges          []Gauge            `json:"gauges,omitempty"`
	Join            *JoinSample        `json:"join,omitempty"`
	Extra           map[string]float64 `json:"extra,omitempty"`
	// User holds the metrics the operator's functions registered
	// (metrics.Group), sorted by name.
	User []UserMetric `json:"user-metrics,omitempty"`
}

// UserMetric is a metric a user function registered.
type UserMetric struct {
	Name string `json:"name"`
	// Kind is "counter", "gauge" or "histogram".
	Kind string `json:"kind"`
	// Value is a counter's count, a gauge's value (0 if it is not a
	// finite number) or a histogram's count.
	Value float64 `json:"value"`
	// Histogram holds a histogram's statistics.
	Histogram *HistogramStats `json:"histogram,omitempty"`
}

// HistogramStats are a histogram's statistics: Count and Sum over all
// updates, the others over its window of the latest ones.
type HistogramStats struct {
	Count  int64   `json:"count"`
	Sum    float64 `json:"sum"`
	Min    int64   `json:"min"`
	Max    int64   `json:"max"`
	Mean   float64 `json:"mean"`
	StdDev float64 `json:"stddev"`
	P50    float64 `json:"p50"`
	P75    float64 `json:"p75"`
	P90    float64 `json:"p90"`
	P95    float64 `json:"p95"`
	P98    float64 `json:"p98"`
	P99    float64 `json:"p99"`
	P999   float64 `json:"p999"`
}

// Split is one source split of a subtask.
type Split struct {
	ID        string `json:"id"`
	Records   int64  `json:"records"`
	Watermark int64  `json:"watermark"`
	Idle      bool   `json:"idle"`
	Ended     bool   `json:"ended"`
	// Paused is set while watermark alignment pauses the split.
	Paused bool `json:"paused,omitempty"`
}

// Gauge is a value an operator publishes (a Kafka source's consumer lag
// per partition), with labels that tell which part of it.
type Gauge struct {
	Name   string            `json:"name"`
	Labels map[string]string `json:"labels,omitempty"`
	Value  float64           `json:"value"`
}

// Scope renders a gauge's labels as Flink scopes a metric: "k1.v1.k2.v2."
// with the keys sorted ("" without labels).
func (g Gauge) Scope() string {
	keys := make([]string, 0, len(g.Labels))
	for k := range g.Labels {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	for _, k := range keys {
		b.WriteString(k + "." + g.Labels[k] + ".")
	}
	return b.String()
}

// JoinSample is an interval join's probe sample.
type JoinSample struct {
	Lower           int64  `json:"lower"`
	Upper           int64  `json:"upper"`
	Left            string `json:"left"`
	Right           string `json:"right"`
	Probes          int64  `json:"probes"`
	Matched         int64  `json:"matched"`
	MirroredMatched int64  `json:"mirrored-matched"`
}

// KeySkew is the merged key sketch of one keyBy.
type KeySkew struct {
	// Every is the sampling stride: one record in Every is counted.
	Every   int      `json:"every"`
	Sampled int64    `json:"sampled"`
	Keys    []HotKey `json:"keys"`
}

// HotKey is one of the heaviest sampled keys.
type HotKey struct {
	Key string `json:"key"`
	// Count and Error are in sampled records: Count bounds the key's
	// sampled count from above, Count-Error from below.
	Count   int64 `json:"count"`
	Error   int64 `json:"error"`
	Subtask int   `json:"subtask"`
}

// Checkpoints are the checkpoints' statistics.
type Checkpoints struct {
	Counts    CheckpointCounts `json:"counts"`
	History   []Checkpoint     `json:"history"`
	Completed *Checkpoint      `json:"completed,omitempty"`
	Savepoint *Checkpoint      `json:"savepoint,omitempty"`
	Failed    *Checkpoint      `json:"failed,omitempty"`
	Restored  *Restored        `json:"restored,omitempty"`
}

// CheckpointCounts are Flink's counts.
type CheckpointCounts struct {
	Restored   int64 `json:"restored"`
	Total      int64 `json:"total"`
	InProgress int64 `json:"in_progress"`
	Completed  int64 `json:"completed"`
	Failed     int64 `json:"failed"`
}

// Restored tells what the job restored from.
type Restored struct {
	ID           int64  `json:"id"`
	Timestamp    int64  `json:"restore_timestamp"`
	Savepoint    bool   `json:"is_savepoint"`
	ExternalPath string `json:"external_path"`
}

// Checkpoint is one checkpoint.
type Checkpoint struct {
	ID        int64 `json:"id"`
	Savepoint bool  `json:"savepoint"`
	// Status is IN_PROGRESS, COMPLETED or FAILED.
	Status           string `json:"status"`
	Unaligned        bool   `json:"unaligned"`
	TriggerTimestamp int64  `json:"trigger-timestamp"`
	LatestAck        int64  `json:"latest-ack"`
	EndTimestamp     int64  `json:"end-timestamp"`
	StateSize        int64  `json:"state-size"`
	InFlight         int64  `json:"persisted-data"`
	Failure          string `json:"failure,omitempty"`
	// FailureReason classifies a failure: expired (not every task
	// acknowledged within the timeout), declined (a task failed to take
	// its snapshot), store (storing it failed) or abandoned (a task
	// failed or finished first, or the job ended).
	FailureReason string `json:"failure-reason,omitempty"`
	ExternalPath  string `json:"external-path,omitempty"`
	// Vertices maps a vertex ID to its subtasks' parts.
	Vertices map[string][]SubtaskCheckpoint `json:"vertices"`
}

// SubtaskCheckpoint is one subtask's part of a checkpoint; durations in
// milliseconds.
type SubtaskCheckpoint struct {
	Subtask       int              `json:"subtask"`
	Acked         bool             `json:"acked"`
	AckTimestamp  int64            `json:"ack-timestamp"`
	StateSize     int64            `json:"state-size"`
	OperatorSizes map[string]int64 `json:"operator-sizes,omitempty"`
	StartDelayMs  int64            `json:"start-delay"`
	AlignmentMs   int64            `json:"alignment"`
	SyncMs        int64            `json:"sync"`
	AsyncMs       int64            `json:"async"`
	InFlight      int64            `json:"persisted-data"`
	Unaligned     bool             `json:"unaligned"`
	// LastInput is the head's input whose barrier came last (-1: none).
	LastInput   int `json:"last-input"`
	LastChannel int `json:"last-channel"`
}

// Exception is a failure of the job (an attempt that failed).
type Exception struct {
	Name       string `json:"exceptionName"`
	Message    string `json:"message"`
	Stacktrace string `json:"stacktrace"`
	Timestamp  int64  `json:"timestamp"`
	Task       string `json:"taskName"`
	Subtask    int    `json:"subtask"`
	// Restarted says whether the job restarted after it.
	Restarted bool `json:"restarted"`
}

// VertexID returns a vertex's 32-hex-digit id for its head's UID: the UID
// itself if it is already 32 hex digits (a hash, as Flink's), else the
// MD5 of the UID.
func VertexID(uid string) string {
	if len(uid) == 32 {
		if _, err := hex.DecodeString(uid); err == nil {
			return uid
		}
	}
	sum := md5.Sum([]byte(uid))
	return hex.EncodeToString(sum[:])
}

// Vertex returns the vertex with the given ID or name.
func (s *Snapshot) Vertex(idOrName string) *Vertex {
	for i := range s.Vertices {
		if v := &s.Vertices[i]; v.ID == idOrName || v.Name == idOrName || v.UID == idOrName {
			return v
		}
	}
	return nil
}

// Redacted stands in for a key value or an exception's text in the
// snapshots a REST server shows without its token (the guarded details:
// rest.WithToken, rest.WithOpenDetails).
const Redacted = "redacted: send the server's token (rest.WithToken), or start it with rest.WithOpenDetails"

// Redact returns a copy of s whose key values (KeySkew) and exception
// texts (Message, Stacktrace) are replaced by Redacted; the counts,
// shares, exception names, tasks and times stay. s is not changed.
func (s *Snapshot) Redact() *Snapshot {
	c := *s
	c.Vertices = append([]Vertex(nil), s.Vertices...)
	for i := range c.Vertices {
		v := &c.Vertices[i]
		if len(v.KeySkew) == 0 {
			continue
		}
		v.KeySkew = append([]KeySkew(nil), v.KeySkew...)
		for j := range v.KeySkew {
			ks := &v.KeySkew[j]
			ks.Keys = append([]HotKey(nil), ks.Keys...)
			for k := range ks.Keys {
				ks.Keys[k].Key = Redacted
			}
		}
	}
	if len(s.Exceptions) > 0 {
		c.Exceptions = append([]Exception(nil), s.Exceptions...)
	}
	for i := range c.Exceptions {
		c.Exceptions[i].Message = Redacted
		if c.Exceptions[i].Stacktrace != "" {
			c.Exceptions[i].Stacktrace = Redacted
		}
	}
	return &c
}
