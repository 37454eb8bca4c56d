// Package cluster runs one job across several processes on Kafka
// (weir.WithCluster(kafkacluster.New(...))): the job graph is cut into stages at its keyed
// exchanges, each stage runs as tasks (stage x partition), a consumer
// group assigns the tasks to the instances, repartition topics carry
// records, watermarks and idle statuses between stages, and every task
// commits its output together with a pointer to its checkpoint in one
// Kafka transaction.
package cluster

import (
	"context"
	"fmt"
	"regexp"
	"sort"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/weirstream/weir/internal/engine"
)

// stage is the part of the job between Kafka topics.
type stage struct {
	idx   int
	name  string         // "s<first node id>", stable across runs of the same program
	nodes []*engine.Node // in the job's (topological) order
	tasks int            // partitions: the stage's task count
	base  int            // the global index of its task 0 (partition of the tasks topic)

	sources []engine.ClusterInput
	ins     []*cut // repartition topics read
	outs    []*cut // repartition topics written
}

// cut is a keyed edge between two stages: a repartition topic.
type cut struct {
	edge     *engine.Edge
	from, to *stage
	topic    string
}

// isCut reports whether e crosses between stages through a repartition
// topic: a hash exchange (keyBy) that is not Prepartitioned, a custom
// partitioning, and every edge that gathers a stream into one instance (a
// global one, or any other into an operator of parallelism 1 from a wider
// one: SetParallelism(1), windowAll). Other edges (forward, rebalance,
// rescale, shuffle) stay in the task: both ends run once per task.
func isCut(e *engine.Edge) bool {
	switch e.Partition {
	case engine.PartitionHash:
		return !e.Prepartitioned
	case engine.PartitionGlobal, engine.PartitionCustom:
		return true
	}
	return narrowing(e)
}

// narrowing reports whether e feeds an operator of parallelism 1 from a
// wider one: one instance of it sees the whole stream, so in a cluster it
// runs in a stage of one task.
func narrowing(e *engine.Edge) bool {
	return e.To.Parallelism == 1 && e.From.Parallelism > 1 && e.Partition != engine.PartitionBroadcast
}

// single reports whether the cut gathers its stream into one task.
func (c *cut) single() bool {
	return c.edge.Partition == engine.PartitionGlobal || narrowing(c.edge)
}

var topicChars = regexp.MustCompile(`[^a-zA-Z0-9._-]+`)

// topicName makes a Kafka topic name of parts.
func topicName(parts ...string) string {
	return topicChars.ReplaceAllString(strings.Join(parts, "-"), "_")
}

// cutStages splits the job into stages: nodes joined by edges that are not
// cuts form one stage.
func cutStages(job string, nodes []*engine.Node) ([]*stage, []*cut, error) {
	parent := map[*engine.Node]*engine.Node{}
	var find func(n *engine.Node) *engine.Node
	find = func(n *engine.Node) *engine.Node {
		if p, ok := parent[n]; ok && p != n {
			r := find(p)
			parent[n] = r
			return r
		}
		parent[n] = n
		return n
	}
	for _, n := range nodes {
		find(n)
		for _, e := range n.Inputs {
			if e.Partition == engine.PartitionBroadcast {
				return nil, nil, fmt.Errorf("operator %q: a broadcast input (broadcast state, BroadcastPartition) cannot run in a cluster yet: every task of the operator would need every record of %q; run the job in one process, or key both inputs (ConnectKeyed) so that each task gets its share", n.Name, e.From.Name)
			}
			if !isCut(e) {
				parent[find(e.From)] = find(n)
			}
		}
	}
	byRoot := map[*engine.Node]*stage{}
	var stages []*stage
	of := map[*engine.Node]*stage{}
	for _, n := range nodes {
		r := find(n)
		st := byRoot[r]
		if st == nil {
			st = &stage{idx: len(stages), name: fmt.Sprintf("s%d", n.ID)}
			byRoot[r] = st
			stages = append(stages, st)
		}
		st.nodes = append(st.nodes, n)
		of[n] = st
	}
	var cuts []*cut
	for _, n := range nodes {
		for _, e := range n.Inputs {
			if !isCut(e) {
				continue
			}
			c := &cut{edge: e, from: of[e.From], to: of[n],
				topic: topicName(job, engine.UIDOf(n), fmt.Sprint(e.Input), "repartition")}
			c.from.outs = append(c.from.outs, c)
			c.to.ins = append(c.to.ins, c)
			cuts = append(cuts, c)
		}
	}
	for _, st := range stages {
		for _, n := range st.nodes {
			if n.Kind != engine.KindSource {
				continue
			}
			cs, ok := n.Connector.(engine.ClusterSource)
			if !ok {
				return nil, nil, fmt.Errorf("source %q: %T cannot run in a cluster; a cluster reads Kafka sources (connector/kafka), whose partitions are its tasks", n.Name, n.Connector)
			}
			brokers, topics, err := cs.ClusterTopics()
			if err != nil {
				return nil, nil, fmt.Errorf("source %q: %w", n.Name, err)
			}
			st.sources = append(st.sources, engine.ClusterInput{Brokers: brokers, Topics: topics})
		}
	}
	if err := checkCopartitioned(stages); err != nil {
		return nil, nil, err
	}
	return stages, cuts, nil
}

// checkCopartitioned refuses an operator whose keyed inputs put a key in
// different tasks: one input Prepartitioned (partitioned as a source
// topic, by the producer's partitioner) and another one read from a
// repartition topic (partitioned by key group).
func checkCopartitioned(stages []*stage) error {
	// from reports whether n's records come from a source topic of its
	// stage and whether from a repartition topic.
	type origin struct{ source, repartition bool }
	memo := map[*engine.Node]origin{}
	var from func(n *engine.Node) origin
	from = func(n *engine.Node) origin {
		if o, ok := memo[n]; ok {
			return o
		}
		var o origin
		if n.Kind == engine.KindSource {
			o.source = true
		}
		for _, e := range n.Inputs {
			if isCut(e) {
				o.repartition = true
				continue
			}
			u := from(e.From)
			o.source, o.repartition = o.source || u.source, o.repartition || u.repartition
		}
		memo[n] = o
		return o
	}
	for _, st := range stages {
		for _, n := range st.nodes {
			var pre, cutIn *engine.Edge
			var preFrom origin
			for _, e := range n.Inputs {
				switch {
				case e.Partition == engine.PartitionHash && e.Prepartitioned:
					o := from(e.From)
					preFrom.source, preFrom.repartition = preFrom.source || o.source, preFrom.repartition || o.repartition
					pre = e
				case isCut(e):
					cutIn = e
				}
			}
			if pre == nil {
				continue
			}
			if cutIn != nil && preFrom.source {
				return fmt.Errorf("operator %q: input %d is a Prepartitioned keyBy (records stay in the task of their source topic partition) but input %d is a keyBy through a repartition topic (records go to the task of their key group): a key would not meet itself; declare both inputs Prepartitioned (co-partitioned topics) or neither", n.Name, pre.Input+1, cutIn.Input+1)
			}
			if preFrom.source && preFrom.repartition {
				return fmt.Errorf("operator %q: its Prepartitioned input %d mixes records of a source topic (partitioned by the producer) with records of a repartition topic (partitioned by key group): a key would not meet itself; drop Prepartitioned", n.Name, pre.Input+1)
			}
		}
	}
	return nil
}

// sizeStages sets every stage's task count: the partition count of its
// source topics (which must all have the same: the stage's inputs are
// co-partitioned), else the repartition count, else the largest upstream
// stage's. Stages are sized in topological order (their inputs first).
func sizeStages(ctx context.Context, adm *kadm.Client, stages []*stage, repartitions int) error {
	for _, st := range stages {
		var topics []string
		for _, in := range st.sources {
			topics = append(topics, in.Topics...)
		}
		if len(topics) == 0 {
			continue
		}
		td, err := listTopics(ctx, adm, topics)
		if err != nil {
			return fmt.Errorf("describing the source topics %v: %w", topics, err)
		}
		counts := map[string]int{}
		for _, t := range topics {
			d, ok := td[t]
			if !ok || d.Err != nil {
				return fmt.Errorf("source topic %s does not exist (a cluster needs its input topics created first): %v", t, d.Err)
			}
			counts[t] = len(d.Partitions)
		}
		for _, t := range topics {
			if st.tasks == 0 {
				st.tasks = counts[t]
			}
			if counts[t] != st.tasks {
				return fmt.Errorf("operators %s run in one task per partition of the source topics %v, which are co-partitioned (partition p of each is task p) but have different partition counts %v; give them the same partition count, or drop the Prepartitioned keyBy that joins them (they then go through repartition topics)", nodeNames(st.nodes), topics, counts)
			}
		}
	}
	for changed := true; changed; {
		changed = false
		for _, st := range stages {
			if st.tasks != 0 {
				continue
			}
			n, ready := repartitions, true
			if allSingle(st.ins) {
				// One instance sees the whole stream (windowAll, Global,
				// SetParallelism(1)): one task.
				n = 1
			}
			for _, c := range st.ins {
				if c.from.tasks == 0 {
					ready = false
				}
				if repartitions == 0 && !allSingle(st.ins) {
					n = max(n, c.from.tasks)
				}
			}
			if ready && n > 0 {
				st.tasks, changed = n, true
			}
		}
	}
	sort.SliceStable(stages, func(i, j int) bool { return stages[i].idx < stages[j].idx })
	base := 0
	for _, st := range stages {
		if st.tasks == 0 {
			return fmt.Errorf("stage %s (operators %s) has no input to size it", st.name, nodeNames(st.nodes))
		}
		st.base = base
		base += st.tasks
	}
	return nil
}

func allSingle(cs []*cut) bool {
	for _, c := range cs {
		if !c.single() {
			return false
		}
	}
	return len(cs) > 0
}

func nodeNames(ns []*engine.Node) string {
	var s []string
	for _, n := range ns {
		s = append(s, n.Name)
	}
	return strings.Join(s, ", ")
}

// taskPlanNodes returns the nodes of one task of st: every node of the
// stage once, a remote reader for every repartition topic read and a
// remote writer for every one written.
func (m *member) taskPlanNodes(st *stage) []*engine.Node {
	clones := map[*engine.Node]*engine.Node{}
	var out []*engine.Node
	nextID := 1 << 30
	for _, c := range st.ins {
		nextID++
		topic := c.topic
		r := c.edge.NewRemoteReader(engine.RemoteReaderSpec{
			Name: "RemoteReader " + topic, UID: remoteInUID + topic, Topic: topic, Channels: c.from.tasks,
			NewFetcher: func(p int, from int64) (engine.RemoteFetcher, error) { return m.newFetcher(topic, p, from) },
		})
		r.ID = nextID
		out = append(out, r)
	}
	readers := map[*engine.Edge]*engine.Node{}
	for i, c := range st.ins {
		readers[c.edge] = out[i]
	}
	for _, n := range st.nodes {
		c := engine.CloneNode(n)
		clones[n] = c
		out = append(out, c)
	}
	for _, n := range st.nodes {
		for _, e := range n.Inputs {
			if r, ok := readers[e]; ok {
				e.Reconnect(r, clones[n])
				continue
			}
			e.Reconnect(clones[e.From], clones[n])
		}
	}
	for _, c := range st.outs {
		nextID++
		w := c.edge.NewRemoteWriter(engine.RemoteWriterSpec{
			Name: "RemoteWriter " + c.topic, UID: "cluster-out-" + c.topic, Topic: c.topic, Partitions: c.to.tasks,
		})
		w.ID = nextID
		c.edge.Reconnect(clones[c.edge.From], w).Input = 0 // the writer's only input, whichever the consumer's was
		out = append(out, w)
	}
	return out
}

// listTopics describes topics, asking again for a few seconds while one is
// unknown (a topic just created may not be in every broker's metadata).
func listTopics(ctx context.Context, adm *kadm.Client, topics []string) (kadm.TopicDetails, error) {
	for try := 0; ; try++ {
		td, err := adm.ListTopics(ctx, topics...)
		if err != nil {
			return nil, err
		}
		missing := false
		for _, t := range topics {
			if d, ok := td[t]; !ok || d.Err != nil {
				missing = true
			}
		}
		if !missing || try == 20 {
			return td, nil
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(250 * time.Millisecond):
		}
	}
}
