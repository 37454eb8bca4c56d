package cluster

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"strings"

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
		tasks[p] = &TaskStatus{Index: p}
	}
	offs, err := adm.FetchOffsets(ctx, PointerGroup(job))
	if err != nil {
		return nil, fmt.Errorf("job %s: reading the committed checkpoints: %w", job, err)
	}
	offs.Each(func(o kadm.OffsetResponse) {
		if t := tasks[o.Partition]; t != nil && o.Topic == topic && o.Err == nil && o.At > 0 {
			t.Checkpoint = o.At
			if _, id, ok := strings.Cut(o.Metadata, " task "); ok {
				t.Task = id
			}
		}
	})
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
