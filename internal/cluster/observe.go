package cluster

import (
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/weirstream/weir/internal/runtime"
)

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
	Inputs []runtime.PartitionOffset
	// Plan is the running attempt's plan (nil while restoring): its
	// tasks' metrics are the task's.
	Plan *runtime.Plan
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

func (o *Owned) setMember(member, group string) {
	if o == nil {
		return
	}
	o.mu.Lock()
	o.member, o.group = member, group
	o.mu.Unlock()
}

// update changes task id's entry (creating it) under the lock.
func (o *Owned) update(t taskRef, f func(*TaskInfo)) {
	if o == nil {
		return
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.tasks == nil {
		o.tasks = map[string]*TaskInfo{}
	}
	ti := o.tasks[t.id]
	if ti == nil {
		ti = &TaskInfo{ID: t.id, Stage: t.st.name, Partition: t.index, Global: t.st.base + t.index, Tasks: t.st.tasks}
		o.tasks[t.id] = ti
	}
	f(ti)
}

func (o *Owned) remove(id string) {
	if o == nil {
		return
	}
	o.mu.Lock()
	delete(o.tasks, id)
	o.mu.Unlock()
}

// inputPositions returns the positions of a task's inputs in the
// snapshots of one checkpoint: the Kafka sources' (their encoded splits
// and positions) and the repartition readers'.
func (m *member) inputPositions(t taskRef, acks []runtime.TaskAck) []runtime.PartitionOffset {
	sources := map[string]runtime.ClusterSource{}
	for _, n := range t.st.nodes {
		if cs, ok := n.Connector.(runtime.ClusterSource); ok && n.Kind == runtime.KindSource {
			sources[runtime.UIDOf(n)] = cs
		}
	}
	var out []runtime.PartitionOffset
	for _, a := range acks {
		for _, op := range a.Ops {
			if topic, ok := strings.CutPrefix(op.UID, remoteInUID); ok {
				if next, err := runtime.DecodeRemoteReaderOffset(op.State); err == nil {
					out = append(out, runtime.PartitionOffset{Topic: topic, Partition: int32(t.index), Offset: next})
				}
				continue
			}
			cs := sources[op.UID]
			if cs == nil || len(op.State) == 0 {
				continue
			}
			splits, pos, err := runtime.DecodeSourceState(op.State)
			if err != nil {
				continue
			}
			if offs, err := cs.SplitOffsets(splits, pos); err == nil {
				out = append(out, offs...)
			}
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Topic != out[j].Topic {
			return out[i].Topic < out[j].Topic
		}
		if out[i].Partition != out[j].Partition {
			return out[i].Partition < out[j].Partition
		}
		return out[i].Offset < out[j].Offset
	})
	// Two sources of one topic in a task: keep the smaller position.
	return slices.CompactFunc(out, func(a, b runtime.PartitionOffset) bool {
		return a.Topic == b.Topic && a.Partition == b.Partition
	})
}

// remoteInUID prefixes the UID of a repartition topic's reader.
const remoteInUID = "cluster-in-"

// maxPointerMetadata bounds the pointer's metadata below the brokers'
// offset.metadata.max.bytes (4096 by default); positions that do not fit
// are left out (status then shows no lag for the task).
const maxPointerMetadata = 3500

// pointerMetadata is the metadata of a task's committed checkpoint
// pointer: "weir checkpoint ID task TASK in TOPIC:P=NEXT,...".
func pointerMetadata(id int64, task string, in []runtime.PartitionOffset) string {
	meta := "weir checkpoint " + strconv.FormatInt(id, 10) + " task " + task
	if len(in) == 0 {
		return meta
	}
	var b strings.Builder
	b.WriteString(meta)
	b.WriteString(" in ")
	for i, p := range in {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, "%s:%d=%d", p.Topic, p.Partition, p.Offset)
	}
	if b.Len() > maxPointerMetadata {
		return meta
	}
	return b.String()
}

// parsePointerMetadata returns the task and input positions of a
// pointer's metadata (ok false: not a Weir pointer).
func parsePointerMetadata(meta string) (task string, in []runtime.PartitionOffset, ok bool) {
	_, rest, ok := strings.Cut(meta, " task ")
	if !ok {
		return "", nil, false
	}
	task, list, _ := strings.Cut(rest, " in ")
	for _, item := range strings.Split(list, ",") {
		tp, off, ok1 := strings.Cut(item, "=")
		i := strings.LastIndexByte(tp, ':')
		if !ok1 || i < 0 {
			continue
		}
		p, err1 := strconv.ParseInt(tp[i+1:], 10, 32)
		o, err2 := strconv.ParseInt(off, 10, 64)
		if err1 == nil && err2 == nil {
			in = append(in, runtime.PartitionOffset{Topic: tp[:i], Partition: int32(p), Offset: o})
		}
	}
	return task, in, true
}
