package cluster

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/weirstream/weir/internal/clock"
	"github.com/weirstream/weir/internal/clusterjob"
	"github.com/weirstream/weir/internal/engine"
)

// Config is a cluster member's configuration: the job's Spec and the
// Kafka settings.
type Config struct {
	clusterjob.Spec
	Brokers []string
	// SessionTimeout is the consumer group's: how long a dead instance
	// keeps its tasks.
	SessionTimeout time.Duration
	// Repartitions is the partition count of repartition topics (0: the
	// largest upstream stage's task count).
	Repartitions int
	// ClientOpts are added to every Kafka client.
	ClientOpts []kgo.Opt
	// OnTasks, if set, is told the tasks the instance owns after every
	// change.
	OnTasks func(tasks []string)
}

// Aliases of the shared types, for the users of this package.
type (
	// Owned is clusterjob.Owned.
	Owned = clusterjob.Owned
	// TaskInfo is clusterjob.TaskInfo.
	TaskInfo = clusterjob.TaskInfo
	// Store is clusterjob.Store.
	Store = clusterjob.Store
)

// Task states, as TaskInfo.State reads.
const (
	TaskRestoring  = clusterjob.TaskRestoring
	TaskRunning    = clusterjob.TaskRunning
	TaskRestarting = clusterjob.TaskRestarting
)

// updateTask changes t's entry in o (creating it).
func updateTask(o *Owned, t taskRef, f func(*TaskInfo)) {
	o.Update(t.id, func() TaskInfo {
		return TaskInfo{ID: t.id, Stage: t.st.name, Partition: t.index, Global: t.st.base + t.index, Tasks: t.st.tasks}
	}, f)
}

// Topic names of a job.
func tasksTopic(job string) string       { return topicName(job, "tasks") }
func checkpointsTopic(job string) string { return topicName(job, "checkpoints") }

// PointerGroup is the consumer group in which a task's committed
// checkpoint is kept: the offset of partition <global task index> of the
// tasks topic is the checkpoint id, committed in the task's transaction
// with the output of that checkpoint. No consumer ever joins it.
func PointerGroup(job string) string { return topicName(job, "checkpoints") }

// GroupID is the consumer group the instances of a job join.
func GroupID(job string) string { return topicName(job, "weir") }

// TasksTopic is the topic whose partitions stand for the job's tasks.
func TasksTopic(job string) string { return tasksTopic(job) }

type member struct {
	cfg    Config
	log    *slog.Logger
	stages []*stage
	byGlob []taskRef // global index -> task
	manual map[string]bool
	// probeTimeout is checkTransactions' (0: defaultProbeTimeout).
	probeTimeout time.Duration

	mu      sync.Mutex
	running map[int]*runningTask
}

type taskRef struct {
	st    *stage
	index int
	id    string // "<stage>-<index>"
}

type runningTask struct {
	cancel context.CancelFunc
	done   chan struct{}
}

// Run runs the instance until ctx ends: it checks and creates the job's
// topics, joins the job's consumer group and runs the tasks the group
// gives it.
func Run(ctx context.Context, cfg Config) error {
	if cfg.Job == "" || len(cfg.Brokers) == 0 || cfg.Store == nil {
		return errors.New("weir cluster: a job name, brokers and a checkpoint store are needed")
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.SessionTimeout == 0 {
		cfg.SessionTimeout = 10 * time.Second
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = time.Minute
	}
	m := &member{cfg: cfg, log: cfg.Logger.With("job", cfg.Job), running: map[int]*runningTask{}, manual: map[string]bool{}}
	if err := m.prepare(ctx); err != nil {
		return fmt.Errorf("weir cluster: %w", err)
	}
	return m.join(ctx)
}

func (m *member) client(opts ...kgo.Opt) (*kgo.Client, error) {
	all := append([]kgo.Opt{kgo.SeedBrokers(m.cfg.Brokers...)}, m.cfg.ClientOpts...)
	return kgo.NewClient(append(all, opts...)...)
}

// prepare cuts the job into stages, sizes them and creates or checks the
// topics.
func (m *member) prepare(ctx context.Context) error {
	stages, cuts, err := cutStages(m.cfg.Job, m.cfg.Nodes)
	if err != nil {
		return err
	}
	cl, err := m.client()
	if err != nil {
		return err
	}
	defer cl.Close()
	if err := checkTransactions(ctx, m); err != nil {
		return err
	}
	adm := kadm.NewClient(cl)
	if err := sizeStages(ctx, adm, stages, m.cfg.Repartitions); err != nil {
		return err
	}
	m.stages = stages
	total := 0
	for _, st := range stages {
		for i := 0; i < st.tasks; i++ {
			m.byGlob = append(m.byGlob, taskRef{st: st, index: i, id: st.name + "-" + strconv.Itoa(i)})
		}
		total += st.tasks
	}
	want := map[string]int{tasksTopic(m.cfg.Job): total, checkpointsTopic(m.cfg.Job): total}
	m.manual[checkpointsTopic(m.cfg.Job)] = true
	for _, c := range cuts {
		want[c.topic] = c.to.tasks
		m.manual[c.topic] = true
	}
	names := make([]string, 0, len(want))
	for t := range want {
		names = append(names, t)
	}
	sort.Strings(names)
	for _, t := range names {
		if err := ensureTopic(ctx, adm, t, want[t]); err != nil {
			return err
		}
	}
	return nil
}

// ensureTopic creates topic with n partitions, or checks that it has n.
func ensureTopic(ctx context.Context, adm *kadm.Client, topic string, n int) error {
	td, err := adm.ListTopics(ctx, topic)
	if err != nil {
		return fmt.Errorf("describing topic %s: %w", topic, err)
	}
	if d, ok := td[topic]; ok && d.Err == nil {
		if len(d.Partitions) != n {
			return fmt.Errorf("topic %s has %d partitions, the job needs %d (one per task); delete it or give the job the same shape", topic, len(d.Partitions), n)
		}
		return nil
	}
	resp, err := adm.CreateTopic(ctx, int32(n), -1, nil, topic)
	if err == nil {
		err = resp.Err
	}
	if errors.Is(err, kerr.TopicAlreadyExists) {
		// another instance created it meanwhile: check it
		if td, err = listTopics(ctx, adm, []string{topic}); err != nil {
			return fmt.Errorf("describing topic %s: %w", topic, err)
		}
		if got := len(td[topic].Partitions); got != n {
			return fmt.Errorf("topic %s has %d partitions, the job needs %d (one per task); delete it or give the job the same shape", topic, got, n)
		}
		return nil
	}
	if err != nil {
		return fmt.Errorf("creating topic %s: %w", topic, err)
	}
	return nil
}

// defaultProbeTimeout bounds the wait for a transaction coordinator at
// start: a broker whose transaction state log cannot be created (fewer
// brokers than transaction.state.log.replication.factor) answers
// "coordinator not available" for good.
const defaultProbeTimeout = 20 * time.Second

// checkTransactions fails clearly when the brokers have no transactions:
// it initializes a transactional producer of the job's probe id.
func checkTransactions(ctx context.Context, m *member) error {
	probeTimeout := cmp.Or(m.probeTimeout, defaultProbeTimeout)
	cl, err := m.client(kgo.TransactionalID(topicName(m.cfg.Job, "probe")), kgo.RetryTimeout(probeTimeout))
	if err != nil {
		return err
	}
	defer cl.Close()
	// The client gives up retrying after probeTimeout with the brokers'
	// reason; the context is only a safety net behind it (were they equal,
	// the context could end first and hide the reason).
	pctx, cancel := context.WithTimeout(ctx, 2*probeTimeout)
	defer cancel()
	id, _, err := cl.ProducerID(pctx)
	if err == nil && id < 0 {
		// franz-go carries on without a producer id when the broker
		// does not know InitProducerID (before Kafka 0.11).
		err = errors.New("the brokers do not know InitProducerID (a Kafka version before 0.11)")
	}
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return fmt.Errorf("the brokers %v refuse a transactional producer, and a cluster commits every task's output and checkpoint in a Kafka transaction: transactions need Kafka 0.11 or later, a transaction state log the brokers can create (transaction.state.log.replication.factor and min.isr at most the broker count) and, with ACLs, write access to the transactional ids %s-*: %w", m.cfg.Brokers, m.cfg.Job, err)
	}
	return nil
}

// join joins the group and runs the assigned tasks until ctx ends.
func (m *member) join(ctx context.Context) error {
	topic := tasksTopic(m.cfg.Job)
	cl, err := m.client(
		kgo.ConsumerGroup(GroupID(m.cfg.Job)), kgo.ConsumeTopics(topic),
		kgo.SessionTimeout(m.cfg.SessionTimeout), kgo.HeartbeatInterval(max(m.cfg.SessionTimeout/6, 100*time.Millisecond)),
		kgo.DisableAutoCommit(),
		kgo.OnPartitionsAssigned(func(_ context.Context, cl *kgo.Client, a map[string][]int32) {
			member, _ := cl.GroupMetadata()
			m.cfg.Owned.SetMember(member, GroupID(m.cfg.Job))
			m.assigned(ctx, a[topic])
		}),
		kgo.OnPartitionsRevoked(func(_ context.Context, _ *kgo.Client, r map[string][]int32) { m.revoked(r[topic]) }),
		kgo.OnPartitionsLost(func(_ context.Context, _ *kgo.Client, r map[string][]int32) { m.revoked(r[topic]) }),
	)
	if err != nil {
		return fmt.Errorf("weir cluster: %w", err)
	}
	m.log.Info("cluster member joining", "group", GroupID(m.cfg.Job), "tasks", len(m.byGlob))
	for ctx.Err() == nil {
		fs := cl.PollFetches(ctx)
		if err := fs.Err0(); err != nil && ctx.Err() == nil && !errors.Is(err, context.Canceled) {
			m.log.Warn("cluster group poll", "err", err)
		}
	}
	m.stopAll()
	cl.LeaveGroup()
	cl.Close()
	return ctx.Err()
}

func (m *member) assigned(ctx context.Context, parts []int32) {
	m.mu.Lock()
	for _, p := range parts {
		if int(p) >= len(m.byGlob) || m.running[int(p)] != nil {
			continue
		}
		tctx, cancel := context.WithCancel(ctx)
		rt := &runningTask{cancel: cancel, done: make(chan struct{})}
		m.running[int(p)] = rt
		now := m.cfg.Runtime.Clock.NowMillis()
		updateTask(m.cfg.Owned, m.byGlob[p], func(ti *TaskInfo) { ti.State, ti.AssignedAt = TaskRestoring, now })
		m.log.Info("cluster task assigned", "task", m.byGlob[p].id, "at_ms", now)
		go func(t taskRef) {
			defer close(rt.done)
			m.runTask(tctx, t)
		}(m.byGlob[p])
	}
	m.mu.Unlock()
	m.tell()
}

// revoked stops the tasks of parts and waits until they have stopped.
func (m *member) revoked(parts []int32) {
	var stop []*runningTask
	m.mu.Lock()
	var ids []string
	for _, p := range parts {
		if rt := m.running[int(p)]; rt != nil {
			delete(m.running, int(p))
			stop = append(stop, rt)
			ids = append(ids, m.byGlob[p].id)
		}
	}
	m.mu.Unlock()
	for _, rt := range stop {
		rt.cancel()
	}
	for i, rt := range stop {
		<-rt.done
		m.cfg.Owned.Remove(ids[i])
	}
	m.tell()
}

func (m *member) stopAll() {
	m.mu.Lock()
	var parts []int32
	for p := range m.running {
		parts = append(parts, int32(p))
	}
	m.mu.Unlock()
	m.revoked(parts)
}

func (m *member) tell() {
	if m.cfg.OnTasks == nil {
		return
	}
	m.mu.Lock()
	var ids []string
	for p := range m.running {
		ids = append(ids, m.byGlob[p].id)
	}
	m.mu.Unlock()
	sort.Strings(ids)
	m.cfg.OnTasks(ids)
}

// runTask runs a task until ctx ends, restarting it from its committed
// checkpoint after a failure.
func (m *member) runTask(ctx context.Context, t taskRef) {
	log := m.log.With("task", t.id)
	for attempt := 1; ctx.Err() == nil; attempt++ {
		err := m.attempt(ctx, t, log)
		if ctx.Err() != nil {
			return
		}
		log.Warn("cluster task failed; restarting from its committed checkpoint", "attempt", attempt, "err", err)
		updateTask(m.cfg.Owned, t, func(ti *TaskInfo) { ti.State, ti.Plan = TaskRestarting, nil })
		clk := m.cfg.Runtime.Clock
		if clock.Sleep(ctx, clk, clk.NowMillis()+min(int64(attempt)*500, 5000)) != nil {
			return
		}
	}
}

// attempt runs one attempt of a task: it fences the task's previous
// owner, restores the committed checkpoint and runs the task's plan with
// checkpoints that commit the task's transaction.
func (m *member) attempt(ctx context.Context, t taskRef, log *slog.Logger) error {
	glob := t.st.base + t.index
	txnID := topicName(m.cfg.Job, t.id)
	clk := m.cfg.Runtime.Clock
	updateTask(m.cfg.Owned, t, func(ti *TaskInfo) { ti.State, ti.Plan = TaskRestoring, nil; ti.Attempt++ })
	cl, err := m.client(kgo.TransactionalID(txnID), kgo.TransactionTimeout(m.cfg.Timeout+m.cfg.Interval+10*time.Second),
		kgo.RecordPartitioner(partitioner{manual: m.manual, def: kgo.StickyKeyPartitioner(nil)}))
	if err != nil {
		return err
	}
	defer cl.Close()
	// The producer id of the task's transactional id fences an earlier
	// owner and aborts its open transaction: from here on, the committed
	// checkpoint pointer cannot move under us.
	if _, _, err := cl.ProducerID(ctx); err != nil {
		return fmt.Errorf("initializing the transactional producer %s: %w", txnID, err)
	}
	adm := kadm.NewClient(cl)
	committed, err := committedCheckpoint(ctx, adm, m.cfg.Job, glob)
	if err != nil {
		return err
	}
	last, err := m.cfg.Store.LastID(ctx, t.id)
	if err != nil {
		return fmt.Errorf("reading the checkpoint store of task %s: %w", t.id, err)
	}
	rc := m.cfg.Runtime
	if committed > 0 {
		if rc.Restore, err = m.cfg.Store.Load(ctx, t.id, committed); err != nil {
			return fmt.Errorf("task %s: loading its committed checkpoint %d: %w", t.id, committed, err)
		}
	}
	var assignedAt int64
	restoredAt := clk.NowMillis()
	updateTask(m.cfg.Owned, t, func(ti *TaskInfo) { ti.RestoredAt, ti.Restored, assignedAt = restoredAt, committed, ti.AssignedAt })
	log.Info("cluster task restored", "checkpoint", committed, "at_ms", restoredAt, "restore_ms", restoredAt-assignedAt)
	if err := cl.BeginTransaction(); err != nil {
		return err
	}
	prod := newTaskProducer(cl, txnID, PointerGroup(m.cfg.Job), tasksTopic(m.cfg.Job), checkpointsTopic(m.cfg.Job), int32(glob), t.id)
	defer prod.close()
	var runningAt atomic.Int64 // set when the plan starts
	firstDone := false
	rc.Task = &engine.ClusterTask{ID: t.id, Index: t.index, Count: t.st.tasks, Producer: prod}
	rc.Checkpoint = &engine.CheckpointConfig{
		Interval: m.cfg.Interval, Timeout: m.cfg.Timeout, ExactlyOnce: true,
		FirstID: max(committed, last), Logger: log,
		Persist: func(ctx context.Context, id int64, acks []engine.TaskAck) error {
			if err := m.cfg.Store.Save(ctx, t.id, id, acks); err != nil {
				return err
			}
			in := m.inputPositions(t, acks)
			if err := prod.commit(ctx, id, in); err != nil {
				return err
			}
			m.committed(t, log, id, in, !firstDone, runningAt.Load())
			firstDone = true
			if err := m.cfg.Store.Committed(ctx, t.id, id); err != nil {
				log.Warn("old checkpoints could not be deleted", "err", err)
			}
			return nil
		},
		OnAbort:           prod.abandon,
		TolerableFailures: 0,
	}
	failed := make(chan error, 1)
	pctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	defer context.AfterFunc(pctx, prod.shut)() // a writer waiting for room must not hold the task up
	rc.Checkpoint.Fail = func(err error) {
		select {
		case failed <- err:
		default:
		}
		cancel(err)
	}
	plan, err := engine.BuildPlan(pctx, m.taskPlanNodes(t.st), rc)
	if err != nil {
		return fmt.Errorf("task %s: %w", t.id, err)
	}
	now := clk.NowMillis()
	runningAt.Store(now)
	updateTask(m.cfg.Owned, t, func(ti *TaskInfo) { ti.State, ti.Plan, ti.RunningAt = TaskRunning, plan, now })
	log.Info("cluster task running", "from_checkpoint", committed, "at_ms", now, "start_ms", now-restoredAt)
	err = plan.Run(pctx)
	select {
	case ferr := <-failed:
		err = ferr
	default:
	}
	if err == nil && ctx.Err() == nil {
		err = errors.New("the task's plan ended; a cluster task runs until stopped")
	}
	return err
}

// committed records that task t committed checkpoint id with its inputs
// at positions in; the first commit of an attempt (since is when its plan
// started) is logged with the time since: the catch-up after a move.
func (m *member) committed(t taskRef, log *slog.Logger, id int64, in []engine.PartitionOffset, first bool, since int64) {
	now := m.cfg.Runtime.Clock.NowMillis()
	updateTask(m.cfg.Owned, t, func(ti *TaskInfo) {
		ti.Committed, ti.CommittedAt, ti.Inputs = id, now, in
		if first {
			ti.FirstCommitAt = now
		}
	})
	if first {
		log.Info("cluster task first commit", "checkpoint", id, "at_ms", now, "catchup_ms", now-since)
	}
}

// committedCheckpoint returns the checkpoint id task glob committed last
// (0: none).
func committedCheckpoint(ctx context.Context, adm *kadm.Client, job string, glob int) (int64, error) {
	offs, err := adm.FetchOffsets(ctx, PointerGroup(job))
	if err != nil {
		if errors.Is(err, kerr.GroupIDNotFound) {
			return 0, nil
		}
		return 0, fmt.Errorf("reading the committed checkpoints (group %s): %w", PointerGroup(job), err)
	}
	o, ok := offs.Lookup(tasksTopic(job), int32(glob))
	if !ok || o.At < 0 {
		return 0, nil
	}
	if o.Err != nil {
		return 0, o.Err
	}
	return o.At, nil
}

// partitioner sends records of repartition topics to the partition the
// remote writer chose and the others (sink topics) to Kafka's default
// partition for their key.
type partitioner struct {
	manual map[string]bool
	def    kgo.Partitioner
}

func (p partitioner) ForTopic(t string) kgo.TopicPartitioner {
	if p.manual[t] || t == "" {
		return kgo.ManualPartitioner().ForTopic(t)
	}
	return sinkPartitioner{p.def.ForTopic(t)}
}

// sinkPartitioner partitions the records of a sink topic: a record whose
// Partition is set (>= 0, the serializer's choice: the Kafka sink's
// ClusterRecord) goes there, the others where def sends them (their key's
// partition).
type sinkPartitioner struct{ def kgo.TopicPartitioner }

func (p sinkPartitioner) RequiresConsistency(r *kgo.Record) bool {
	return r.Partition >= 0 || p.def.RequiresConsistency(r)
}

func (p sinkPartitioner) Partition(r *kgo.Record, n int) int {
	if r.Partition >= 0 {
		return int(r.Partition)
	}
	return p.def.Partition(r, n)
}

func (p sinkPartitioner) OnNewBatch() {
	if o, ok := p.def.(kgo.TopicPartitionerOnNewBatch); ok {
		o.OnNewBatch()
	}
}
