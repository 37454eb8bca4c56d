// Package clusterjob holds what the root package and a cluster engine
// (internal/cluster, reached through the kafkacluster plugin) share about
// a job run as a cluster member, with no Kafka client: the job's
// description (Spec), the checkpoint store of its tasks (Store) and the
// tasks an instance owns (Owned), which the REST API and the metrics read.
package clusterjob

import (
	"context"
	"log/slog"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/weirstream/weir/internal/engine"
)

// Store keeps the checkpoints of every task in the store all instances
// share.
type Store interface {
	// Save stores checkpoint id of task.
	Save(ctx context.Context, task string, id int64, acks []engine.TaskAck) error
	// Load returns checkpoint id of task: per operator UID, its snapshots.
	Load(ctx context.Context, task string, id int64) (map[string][]engine.OperatorSnapshot, error)
	// LastID returns the largest checkpoint id stored for task (0: none).
	LastID(ctx context.Context, task string) (int64, error)
	// Committed is told that checkpoint id of task is committed: the
	// checkpoints before it may go. Save deletes nothing: a stored
	// checkpoint whose commit fails is never loaded, and the committed
	// one must outlive any number of those.
	Committed(ctx context.Context, task string, id int64) error
}

// Spec describes the job a cluster member runs, as the root package
// builds it.
type Spec struct {
	// Job names the job: its consumer group, topics and transactional ids
	// are named after it; every instance runs the same program with the
	// same name.
	Job string
	// Nodes is the job graph, as one process would run it.
	Nodes []*engine.Node
	// Runtime holds the plan settings (max parallelism, batch size,
	// credits, chaining, clock); Checkpoint, Restore and Task are set per
	// task.
	Runtime engine.Config
	// Interval and Timeout are the checkpoint interval (the latency of a
	// repartition topic and of the output) and timeout.
	Interval, Timeout time.Duration
	// Store keeps the tasks' checkpoints.
	Store  Store
	Logger *slog.Logger
	// Owned, if set, is kept up to date with the tasks the instance owns
	// (their states, checkpoints, input positions and plans), for the
	// REST API and the metrics.
	Owned *Owned
}

// What an instance tells about the tasks it owns: the REST API and the
// metrics read an Owned (Config.Owned), and every committed checkpoint
// names its task's input positions in the metadata of its pointer, from
// which `weir cluster status` computes each task's lag.

// Task states, as TaskInfo.State reads.
const (
	// TaskRestoring: assigned; fencing the previous owner, reading the
	// committed checkpoint and loading it.
	TaskRestoring = "RESTORING"
	// TaskRunning: the task's plan runs.
	TaskRunning = "RUNNING"
	// TaskRestarting: an attempt failed; the next starts after a backoff.
	TaskRestarting = "RESTARTING"
)

// TaskInfo is one task an instance owns. Times are milliseconds of the
// job's clock (0: not yet).
type TaskInfo struct {
	// ID is "<stage>-<partition>"; Stage and Partition its parts, Global
	// its index over the job (its partition of the tasks topic).
	ID        string
	Stage     string
	Partition int
	Global    int
	// Tasks is the stage's task count (its parallelism).
	Tasks int
	State string
	// Attempt counts the attempts since the task was assigned (1 first).
	Attempt int
	// AssignedAt is when the group gave the task to the instance,
	// RestoredAt when its committed checkpoint was loaded (or found
	// absent), RunningAt when its plan was built and started, and
	// FirstCommitAt when the first checkpoint after that committed.
	AssignedAt, RestoredAt, RunningAt, FirstCommitAt int64
	// Restored is the checkpoint the current attempt started from (0:
	// none).
	Restored int64
	// Committed is the last checkpoint the task committed here (its
	// transaction with its output), at CommittedAt; 0: none yet.
	Committed   int64
	CommittedAt int64
	// Inputs are the positions (the next offset to read) of the task's
	// input partitions in its last committed checkpoint: source topics
	// and repartition topics.
	Inputs []engine.PartitionOffset
	// Plan is the running attempt's plan (nil while restoring): its
	// tasks' metrics are the task's.
	Plan *engine.Plan
}

// Owned holds the tasks an instance owns now, for its REST API and
// metrics; Run keeps it up to date. The zero value is ready to use.
type Owned struct {
	mu     sync.Mutex
	member string
	group  string
	tasks  map[string]*TaskInfo
}

// Member returns the instance's consumer group member id ("" before it
// joined) and the group.
func (o *Owned) Member() (member, group string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.member, o.group
}

// Tasks returns copies of the owned tasks, by id.
func (o *Owned) Tasks() []TaskInfo {
	o.mu.Lock()
	defer o.mu.Unlock()
	out := make([]TaskInfo, 0, len(o.tasks))
	for _, t := range o.tasks {
		c := *t
		c.Inputs = slices.Clone(t.Inputs)
		out = append(out, c)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Global < out[j].Global })
	return out
}

// SetMember records the instance's member id and group.
func (o *Owned) SetMember(member, group string) {
	if o == nil {
		return
	}
	o.mu.Lock()
	o.member, o.group = member, group
	o.mu.Unlock()
}

// Update changes task id's entry under the lock, creating it as init
// returns it if it is missing.
func (o *Owned) Update(id string, init func() TaskInfo, f func(*TaskInfo)) {
	if o == nil {
		return
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.tasks == nil {
		o.tasks = map[string]*TaskInfo{}
	}
	ti := o.tasks[id]
	if ti == nil {
		c := init()
		ti = &c
		o.tasks[id] = ti
	}
	f(ti)
}

// Remove drops task id's entry.
func (o *Owned) Remove(id string) {
	if o == nil {
		return
	}
	o.mu.Lock()
	delete(o.tasks, id)
	o.mu.Unlock()
}
