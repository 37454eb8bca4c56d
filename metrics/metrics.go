// Package metrics is Weir's metrics API, as Flink's
// org.apache.flink.metrics: the user metrics a function registers from
// its RuntimeContext (Group, Counter, Histogram and gauges), and the
// snapshot of a running job's counters that weir's JobHandle.Metrics
// returns, one Task per subtask with an Operator per chained operator.
//
// The same values back the REST API's metrics and the Prometheus
// endpoint; this package is the Go view of them, for operators of a job
// and for tests, apart from the API a job is written with.
package metrics

import "time"

// Task is a snapshot of one subtask's counters.
type Task struct {
	Task          string
	Subtask       int
	Busy          time.Duration
	Idle          time.Duration
	BackPressured time.Duration
	// Checkpoints is the number of snapshots the subtask took;
	// CheckpointSync is the time its goroutine spent in their synchronous
	// parts (at the barrier, processing stopped), CheckpointAsync the time
	// their asynchronous parts took on other goroutines.
	Checkpoints     int64
	CheckpointSync  time.Duration
	CheckpointAsync time.Duration
	Operators       []Operator
	TaskIO          // records and bytes over the network, key sketches
}

// Operator is a snapshot of one operator's counters in one subtask.
type Operator struct {
	Name       string
	RecordsIn  int64
	RecordsOut int64
	// InputWatermarks holds the current watermark of each input of the
	// operator (weir.MinWatermark before the first one): for the first
	// operator of a task, each network input's (the minimum over its
	// active channels, as Flink's valve); for an operator chained behind
	// another, that one's output watermark. OperatorGauges.InputIdle
	// tells, in the same order, whether each input is idle.
	InputWatermarks []int64
	// OutputWatermark is the latest watermark the operator emitted on its
	// main output (Flink's currentOutputWatermark; weir.MinWatermark
	// before the first), and OutputIdle whether that output has announced
	// idle.
	OutputWatermark int64
	OutputIdle      bool
	// LateRecordsDropped counts the late records a window operator dropped
	// because no late side output was set (Flink's numLateRecordsDropped);
	// 0 for other operators.
	LateRecordsDropped int64
	// Gauges are the values the operator publishes itself, such as a Kafka
	// source's consumer lag per partition (name "kafka_consumer_lag",
	// labels topic and partition).
	Gauges []Gauge
	// UserMetrics are the metrics the operator's functions registered
	// (weir.RuntimeContext.Metrics), sorted by name.
	UserMetrics    []UserMetric
	OperatorGauges // idleness, state, timers, source splits
}

// Gauge is a named value an operator publishes with its metrics, with
// labels that tell which part of the operator it describes.
type Gauge struct {
	Name   string
	Labels map[string]string
	Value  float64
}

// TaskIO is the part of Task about the network and keys: what a
// subtask exchanged with other subtasks (Flink's task-level numRecordsIn,
// numRecordsOut, numBytesIn and numBytesOut) and the key sketches of its
// writers into keyBy exchanges. Records and bytes passed between chained
// operators are not counted. Bytes are in-memory sizes: Weir does not
// serialize records between subtasks, so a record of type T moves
// unsafe.Sizeof(weir.Record[T]) bytes (strings, slices and pointers
// count their headers only); a broadcast record counts once per
// consumer.
type TaskIO struct {
	// Vertex is the UID of the task's first operator.
	Vertex     string
	RecordsIn  int64
	RecordsOut int64
	BytesIn    int64
	BytesOut   int64
	// KeySketches holds, per keyBy the subtask writes into, the heaviest
	// keys of a sample of its records (one in KeySketch.Every).
	KeySketches []KeySketch
	// Finished is set once the subtask has ended.
	Finished bool
}

// KeySketch is the space-saving sketch of the keys one subtask sent into
// a keyBy: the heaviest keys of one record in Every.
type KeySketch struct {
	// Target names the operator the keyBy feeds.
	Target  string
	Every   int
	Sampled int64
	Keys    []HotKey
}

// HotKey is a key of a KeySketch. Count bounds how often the key was
// sampled from above, Count-Error from below; Subtask is the subtask the
// key goes to.
type HotKey struct {
	Key     string
	Count   int64
	Error   int64
	Subtask int
}

// OperatorGauges is the part of Operator that operators publish now and
// then (at most every 100 ms and when their task goes idle), not per
// record.
type OperatorGauges struct {
	// UID is the operator's state id.
	UID string
	// InputIdle tells whether each input of the operator is idle, in the
	// order of InputWatermarks: for a task's first operator, each network
	// input's (every channel idle, its watermark valve's status); for an
	// operator chained behind another, whether that one announced idle. An
	// idle input does not hold the operator's event time back.
	InputIdle []bool
	// InputRecords counts the records of each network input of a task's
	// first operator.
	InputRecords []int64
	// Keyed is set for operators with keyed state and timers (keyed
	// process and co-process functions, windows, interval joins); then
	// StateEntries counts their keyed-state entries (one per key and
	// namespace of each state; a window join or interval join counts
	// buffered records; 0 on the Pebble backend, which does not count),
	// Timers their registered timers (pending cleanups for the interval
	// join), TimersRegistered the timers registered since the start and
	// StatesWithoutTTL the registered states without TTL.
	Keyed            bool
	StateEntries     int64
	Timers           int64
	TimersRegistered int64
	StatesWithoutTTL int64
	// Splits describes a source's splits (nil for other operators).
	Splits []Split
	// Join is an interval join's sample of its probes (nil for other
	// operators).
	Join *JoinSample
}

// Split describes one split of a source subtask: records read, the
// split's current watermark (its generator's last, weir.MinWatermark
// before any), whether it is idle or has ended, and whether watermark
// alignment pauses it (weir.WithWatermarkAlignment: its watermark, or
// its subtask's, ran more than the maximum drift ahead of the group).
type Split struct {
	ID        string
	Records   int64
	Watermark int64
	Idle      bool
	Ended     bool
	Paused    bool
}

// JoinSample is what an interval join counts on one probe in 64: the
// sampled records, those that found a partner within the bounds, and
// those that would have with the mirrored bounds Between(-upper, -lower),
// against what the other side's buffer held. `weir doctor` reads it to
// spot inverted bounds.
type JoinSample struct {
	Lower, Upper    int64
	Probes          int64
	Matched         int64
	MirroredMatched int64
}
