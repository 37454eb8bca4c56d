package engine

import (
	"errors"
	"slices"
	"sync"
	"time"
)

// AckStats are a task's timings of one checkpoint (Flink's
// SubtaskStateStats): how long after the checkpoint started its first
// barrier arrived, how long alignment took (first barrier to the snapshot:
// the last barrier, or the switch to unaligned), the synchronous and
// asynchronous parts of its snapshot, the in-flight data it persisted and
// which input's barrier came last.
type AckStats struct {
	StartDelay  time.Duration
	Alignment   time.Duration
	Sync        time.Duration
	Async       time.Duration
	InFlight    int64 // bytes of channel state (unaligned checkpoints)
	Unaligned   bool
	LastInput   int // the head's input (gate) whose barrier came last; -1: none
	LastChannel int
}

// ackTail is what acknowledge hands an asynchronous part: the encoded
// channel state and the alignment's figures.
type ackTail struct {
	channels []byte
	stats    AckStats
}

func (s *AckStats) addTail(t AckStats) {
	s.StartDelay, s.Alignment, s.InFlight, s.Unaligned = t.StartDelay, t.Alignment, t.InFlight, t.Unaligned
	s.LastInput, s.LastChannel = t.LastInput, t.LastChannel
}

// alignStats returns checkpoint id's alignment figures at this task.
func (t *Task) alignStats(id int64, inflight int) AckStats {
	st := AckStats{InFlight: int64(inflight), LastInput: -1, LastChannel: -1}
	if a := t.aligner; a != nil && a.done.id == id {
		d := a.done
		st.StartDelay = time.Duration(d.startDelay) * time.Millisecond
		st.Alignment = d.end.Sub(d.first)
		st.Unaligned = d.unaligned
		st.LastInput, st.LastChannel = d.lastGate, d.lastChannel
	}
	return st
}

// StateSize returns the bytes of an operator snapshot: its key groups,
// operator state and channel state, plus the size of keyed files that
// tell it (a Size() int64 method).
func (s OperatorSnapshot) StateSize() int64 {
	n := int64(len(s.State) + len(s.ChannelState))
	for _, kg := range s.KeyGroups {
		n += int64(len(kg))
	}
	if f, ok := s.KeyedFiles.(interface{ Size() int64 }); ok {
		n += f.Size()
	}
	return n
}

// Checkpoint statuses.
const (
	CheckpointInProgress = "IN_PROGRESS"
	CheckpointCompleted  = "COMPLETED"
	CheckpointFailed     = "FAILED"
)

// Reasons of checkpoint failures (CheckpointRecord.FailureReason).
const (
	// FailureExpired: not every task acknowledged within the timeout.
	FailureExpired = "expired"
	// FailureDeclined: a task failed to take its snapshot.
	FailureDeclined = "declined"
	// FailureStore: every task acknowledged, but storing failed.
	FailureStore = "store"
	// FailureAbandoned: a task failed, finished or could not be reached
	// before it acknowledged, or the job ended.
	FailureAbandoned = "abandoned"
)

// checkpointFailure is a checkpoint's failure with its reason.
type checkpointFailure struct {
	reason string
	err    error
}

func failure(reason string, err error) error { return &checkpointFailure{reason, err} }

func (f *checkpointFailure) Error() string { return f.err.Error() }

func (f *checkpointFailure) Unwrap() error { return f.err }

// SubtaskCheckpoint is one subtask's part of a checkpoint.
type SubtaskCheckpoint struct {
	Subtask int
	// Acked is false while the subtask has not acknowledged.
	Acked bool
	// AckTimestamp is when the coordinator received the acknowledgement
	// (ms, the job's clock).
	AckTimestamp int64
	StateSize    int64
	// OperatorSizes is the state size per operator UID.
	OperatorSizes map[string]int64
	Stats         AckStats
}

// CheckpointRecord is what the tracker knows of one checkpoint.
type CheckpointRecord struct {
	ID               int64
	Savepoint        bool
	Stop             bool
	Status           string
	TriggerTimestamp int64 // ms, the job's clock
	// LatestAck is the time of the latest acknowledgement.
	LatestAck int64
	// EndTimestamp is when it completed or failed.
	EndTimestamp int64
	FailureMsg   string
	// FailureReason classifies a failure: FailureExpired, FailureDeclined,
	// FailureStore, or FailureAbandoned for the others (a task failed or
	// finished first, a trigger not delivered).
	FailureReason string
	ExternalPath  string
	// Vertices holds each vertex's subtasks, by vertex UID.
	Vertices map[string][]SubtaskCheckpoint
}

// StateSize is the total state size of the checkpoint's acknowledgements.
func (r *CheckpointRecord) StateSize() (size, inflight int64) {
	for _, subs := range r.Vertices {
		for _, s := range subs {
			size += s.StateSize
			inflight += s.Stats.InFlight
		}
	}
	return
}

// Acked returns the number of subtasks that acknowledged and of subtasks.
func (r *CheckpointRecord) Acked() (acked, total int) {
	for _, subs := range r.Vertices {
		for _, s := range subs {
			total++
			if s.Acked {
				acked++
			}
		}
	}
	return
}

// CheckpointCounts are Flink's checkpoint counts.
type CheckpointCounts struct {
	Restored, Total, InProgress, Completed, Failed int64
}

// RestoredCheckpoint tells what the job restored from.
type RestoredCheckpoint struct {
	ID           int64
	Timestamp    int64
	Savepoint    bool
	ExternalPath string
}

// CheckpointStats tracks a job's checkpoints across its attempts (Flink's
// CheckpointStatsTracker): counts, the most recent ones and the latest of
// each kind. The coordinator reports to it; anyone may read it.
type CheckpointStats struct {
	mu       sync.Mutex
	keep     int
	counts   CheckpointCounts
	history  []*CheckpointRecord // newest first
	restored *RestoredCheckpoint
	latest   struct{ completed, savepoint, failed *CheckpointRecord }
}

// NewCheckpointStats returns a tracker that keeps the history of the
// latest keep checkpoints (Flink's web.checkpoints.history, default 10).
func NewCheckpointStats(keep int) *CheckpointStats {
	return &CheckpointStats{keep: max(keep, 1)}
}

// CheckpointStatsView is a copy of a tracker's state.
type CheckpointStatsView struct {
	Counts   CheckpointCounts
	History  []CheckpointRecord // newest first
	Restored *RestoredCheckpoint
	// Latest completed checkpoint, savepoint and failed one (nil: none).
	Completed, Savepoint, Failed *CheckpointRecord
}

// View returns a copy of the tracker's state.
func (s *CheckpointStats) View() CheckpointStatsView {
	s.mu.Lock()
	defer s.mu.Unlock()
	v := CheckpointStatsView{Counts: s.counts}
	for _, r := range s.history {
		v.History = append(v.History, r.copy())
	}
	if s.restored != nil {
		r := *s.restored
		v.Restored = &r
	}
	cp := func(r *CheckpointRecord) *CheckpointRecord {
		if r == nil {
			return nil
		}
		c := r.copy()
		return &c
	}
	v.Completed, v.Savepoint, v.Failed = cp(s.latest.completed), cp(s.latest.savepoint), cp(s.latest.failed)
	return v
}

func (r *CheckpointRecord) copy() CheckpointRecord {
	c := *r
	c.Vertices = make(map[string][]SubtaskCheckpoint, len(r.Vertices))
	for k, v := range r.Vertices {
		c.Vertices[k] = slices.Clone(v)
	}
	return c
}

// Restored records that the job restored from a checkpoint or savepoint.
func (s *CheckpointStats) Restored(r RestoredCheckpoint) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.counts.Restored++
	s.restored = &r
}

// SetExternalPath records where checkpoint id was stored.
func (s *CheckpointStats) SetExternalPath(id int64, path string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if r := s.find(id); r != nil {
		r.ExternalPath = path
	}
}

func (s *CheckpointStats) find(id int64) *CheckpointRecord {
	for _, r := range s.history {
		if r.ID == id {
			return r
		}
	}
	return nil
}

func (s *CheckpointStats) started(id int64, sp *SavepointRequest, now int64, tasks []*Task) {
	if s == nil {
		return
	}
	r := &CheckpointRecord{ID: id, Savepoint: sp != nil, Stop: sp != nil && sp.Stop, Status: CheckpointInProgress,
		TriggerTimestamp: now, Vertices: map[string][]SubtaskCheckpoint{}}
	for _, t := range tasks {
		r.Vertices[t.Vertex] = append(r.Vertices[t.Vertex], SubtaskCheckpoint{Subtask: t.Subtask})
	}
	for _, subs := range r.Vertices {
		slices.SortFunc(subs, func(a, b SubtaskCheckpoint) int { return a.Subtask - b.Subtask })
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.counts.Total++
	s.counts.InProgress++
	s.history = append([]*CheckpointRecord{r}, s.history...)
	if len(s.history) > s.keep {
		// Never drop one in progress from the history.
		for i := len(s.history) - 1; i >= 0 && len(s.history) > s.keep; i-- {
			if s.history[i].Status != CheckpointInProgress {
				s.history = slices.Delete(s.history, i, i+1)
			}
		}
	}
}

func (s *CheckpointStats) acked(a TaskAck, now int64) {
	if s == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.find(a.ID)
	if r == nil {
		return
	}
	subs := r.Vertices[a.Vertex]
	for i := range subs {
		if subs[i].Subtask != a.Subtask {
			continue
		}
		sc := &subs[i]
		sc.Acked, sc.AckTimestamp, sc.Stats = true, now, a.Stats
		sc.StateSize = 0
		sc.OperatorSizes = map[string]int64{}
		for _, op := range a.Ops {
			n := op.StateSize()
			sc.StateSize += n
			sc.OperatorSizes[op.UID] += n
		}
	}
	r.LatestAck = max(r.LatestAck, now)
}

func (s *CheckpointStats) ended(id int64, now int64, err error) {
	if s == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.find(id)
	if r == nil || r.Status != CheckpointInProgress {
		return
	}
	s.counts.InProgress--
	r.EndTimestamp = now
	if err != nil {
		r.Status, r.FailureMsg, r.FailureReason = CheckpointFailed, err.Error(), FailureAbandoned
		var f *checkpointFailure
		if errors.As(err, &f) {
			r.FailureReason = f.reason
		}
		s.counts.Failed++
		s.latest.failed = r
		return
	}
	r.Status = CheckpointCompleted
	s.counts.Completed++
	if r.Savepoint {
		s.latest.savepoint = r
	} else {
		s.latest.completed = r
	}
}
