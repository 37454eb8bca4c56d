package weir

import (
	"github.com/weirstream/weir/internal/job"
)

// TaskIO is the part of TaskMetrics about the network and keys: what a
// subtask exchanged with other subtasks (Flink's task-level numRecordsIn,
// numRecordsOut, numBytesIn and numBytesOut) and the key sketches of its
// writers into keyBy exchanges. Records and bytes passed between chained
// operators are not counted. Bytes are in-memory sizes: Weir does not
// serialize records between subtasks, so a record of type T moves
// unsafe.Sizeof(Record[T]) bytes (strings, slices and pointers count
// their headers only); a broadcast record counts once per consumer.
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

// OperatorGauges is the part of OperatorMetrics that operators publish
// now and then (at most every 100 ms and when their task goes idle), not
// per record.
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
	Splits []SplitMetrics
	// Join is an interval join's sample of its probes (nil for other
	// operators).
	Join *JoinSample
}

// SplitMetrics describes one split of a source subtask: records read,
// the split's current watermark (its generator's last, MinWatermark
// before any), whether it is idle or has ended, and whether watermark
// alignment pauses it (WithWatermarkAlignment: its watermark, or its
// subtask's, ran more than the maximum drift ahead of the group).
type SplitMetrics struct {
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

// operatorMetrics converts an operator's counters for the API.
func operatorMetrics(o job.OperatorMetrics) OperatorMetrics {
	om := OperatorMetrics{Name: o.Name, RecordsIn: o.RecordsIn, RecordsOut: o.RecordsOut, InputWatermarks: o.InputWatermarks,
		OutputWatermark: o.OutputWatermark, OutputIdle: o.OutputIdle, LateRecordsDropped: o.LateRecordsDropped,
		OperatorGauges: OperatorGauges{UID: o.UID, InputIdle: o.InputIdle, InputRecords: o.InputRecords, Keyed: o.Keyed,
			StateEntries: o.StateEntries, Timers: o.Timers, TimersRegistered: o.TimersRegistered, StatesWithoutTTL: o.StatesWithoutTTL}}
	for _, g := range o.Gauges {
		om.Gauges = append(om.Gauges, Gauge{Name: g.Name, Labels: g.Labels, Value: g.Value})
	}
	for _, s := range o.Splits {
		om.Splits = append(om.Splits, SplitMetrics(s))
	}
	if o.Join != nil {
		j := JoinSample(*o.Join)
		om.Join = &j
	}
	om.UserMetrics = userMetrics(o.User)
	return om
}
