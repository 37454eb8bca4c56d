package cluster

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strconv"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// TaskStatus is one task of a running cluster job, as `weir cluster
// status` shows it.
type TaskStatus struct {
	// Index is the task's partition of the tasks topic; Task its id
	// ("s1-0"), known once it has committed a checkpoint.
	Index int32
	Task  string
	// Member and Host own the task now ("" when no instance does).
	Member, Host string
	// Checkpoint is the last committed checkpoint (0: none yet).
	Checkpoint int64
	// Inputs are the task's input partitions (source and repartition
	// topics) with their position in the committed checkpoint, the end of
	// each (its last stable offset: what a read_committed reader can
	// read) and the lag between them.
	Inputs []InputLag
	// Lag is the sum of the inputs' lags: the records (and, on
	// repartition topics, transaction markers) written to the task's
	// inputs after its last committed checkpoint's position; -1 when the
	// checkpoint named no positions.
	Lag int64
}

// InputLag is one input partition of a task.
type InputLag struct {
	Topic     string
	Partition int32
	// Committed is the next offset to read in the committed checkpoint,
	// End the partition's last stable offset, Lag End - Committed.
	Committed, End, Lag int64
}

// Instance is a member of a job's group with the tasks it owns.
type Instance struct {
	Member, Host string
	Tasks        []string
}

// Instances groups a job's tasks by owner, in member order; tasks no
// instance owns are under Member "".
func Instances(tasks []TaskStatus) []Instance {
	by := map[string]*Instance{}
	var out []*Instance
	for _, t := range tasks {
		in := by[t.Member]
		if in == nil {
			in = &Instance{Member: t.Member, Host: t.Host}
			by[t.Member] = in
			out = append(out, in)
		}
		in.Tasks = append(in.Tasks, t.Task)
	}
	sort.SliceStable(out, func(i, j int) bool {
		return out[i].Member != "" && (out[j].Member == "" || out[i].Member < out[j].Member)
	})
	res := make([]Instance, len(out))
	for i, in := range out {
		res[i] = *in
	}
	return res
}

// Status reads a job's tasks, their owners and their last committed
// checkpoints from the brokers.
func Status(ctx context.Context, brokers []string, job string, opts ...kgo.Opt) ([]TaskStatus, error) {
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(brokers...)}, opts...)...)
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	topic := tasksTopic(job)
	td, err := adm.ListTopics(ctx, topic)
	if err != nil {
		return nil, err
	}
	d, ok := td[topic]
	if !ok || d.Err != nil {
		return nil, fmt.Errorf("job %s: no tasks topic %s (is the job's name right, has it started?)", job, topic)
	}
	tasks := map[int32]*TaskStatus{}
	for _, p := range d.Partitions.Numbers() {
		tasks[p] = &TaskStatus{Index: p, Lag: -1}
	}
	offs, err := adm.FetchOffsets(ctx, PointerGroup(job))
	if err != nil {
		return nil, fmt.Errorf("job %s: reading the committed checkpoints: %w", job, err)
	}
	var inputs []string
	offs.Each(func(o kadm.OffsetResponse) {
		if t := tasks[o.Partition]; t != nil && o.Topic == topic && o.Err == nil && o.At > 0 {
			t.Checkpoint, t.Lag = o.At, -1
			if id, in, ok := parsePointerMetadata(o.Metadata); ok {
				t.Task = id
				for _, p := range in {
					t.Inputs = append(t.Inputs, InputLag{Topic: p.Topic, Partition: p.Partition, Committed: p.Offset})
					inputs = append(inputs, p.Topic)
				}
			}
		}
	})
	if len(inputs) > 0 {
		slices.Sort(inputs)
		ends, err := adm.ListCommittedOffsets(ctx, slices.Compact(inputs)...)
		if err != nil {
			return nil, fmt.Errorf("job %s: reading the end offsets of the tasks' inputs: %w", job, err)
		}
		for _, t := range tasks {
			if len(t.Inputs) == 0 {
				continue
			}
			t.Lag = 0
			for i := range t.Inputs {
				in := &t.Inputs[i]
				e, ok := ends.Lookup(in.Topic, in.Partition)
				if !ok || e.Err != nil {
					t.Lag = -1
					continue
				}
				in.End, in.Lag = e.Offset, max(e.Offset-in.Committed, 0)
				if t.Lag >= 0 {
					t.Lag += in.Lag
				}
			}
		}
	}
	groups, err := adm.DescribeGroups(ctx, GroupID(job))
	if err != nil {
		return nil, fmt.Errorf("job %s: describing group %s: %w", job, GroupID(job), err)
	}
	for _, g := range groups {
		for _, m := range g.Members {
			a, ok := m.Assigned.AsConsumer()
			if !ok {
				continue
			}
			for _, at := range a.Topics {
				for _, p := range at.Partitions {
					if t := tasks[p]; t != nil && at.Topic == topic {
						t.Member, t.Host = m.ClientID+" "+m.MemberID, m.ClientHost
					}
				}
			}
		}
	}
	out := make([]TaskStatus, 0, len(tasks))
	for _, t := range tasks {
		if t.Task == "" {
			t.Task = "#" + strconv.Itoa(int(t.Index))
		}
		out = append(out, *t)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Index < out[j].Index })
	return out, nil
}
