package weir

import (
	"context"
	"errors"
	"fmt"
	"path"
	"strings"
	"sync"
	"time"

	"github.com/weirstream/weir/internal/checkpoint/store"
	"github.com/weirstream/weir/internal/cluster"
	"github.com/weirstream/weir/internal/runtime"
)

// ClusterOption configures WithKafkaCluster.
type ClusterOption func(*clusterConfig)

type clusterConfig struct {
	brokers        []string
	sessionTimeout time.Duration
	repartitions   int
	onTasks        func([]string)
}

// WithKafkaCluster makes the job a member of a cluster on Kafka: every
// instance started with the same program and job name (Execute's name)
// joins the job's consumer group, which gives each instance a share of the
// job's tasks (stage x partition: a stage is the part of the job between
// Kafka topics, cut at every keyBy, which writes through a repartition
// topic named after the job and the keyed operator). A task that moves
// (its instance died or a new one joined) restores from its last committed
// checkpoint in the checkpoint storage all instances share (checkpointing
// must be enabled with CheckpointStorage: a directory on a shared file
// system, or s3://). Each task commits its output (repartition topics and
// exactly-once Kafka sinks) and its checkpoint in one Kafka transaction,
// so a read_committed reader sees every result once. bootstrap is a
// comma-separated list of brokers.
func WithKafkaCluster(bootstrap string, opts ...ClusterOption) Option {
	return func(c *config) {
		cc := &clusterConfig{sessionTimeout: 10 * time.Second}
		for _, b := range strings.Split(bootstrap, ",") {
			if b = strings.TrimSpace(b); b != "" {
				cc.brokers = append(cc.brokers, b)
			}
		}
		for _, o := range opts {
			o(cc)
		}
		c.cluster = cc
	}
}

// ClusterSessionTimeout sets the consumer group's session timeout: how long
// the tasks of an instance that died wait before they move (default 10s;
// the broker bounds it by group.min.session.timeout.ms, 6s by default).
func ClusterSessionTimeout(d time.Duration) ClusterOption {
	return func(c *clusterConfig) { c.sessionTimeout = d }
}

// ClusterRepartitions sets the partition count of the repartition topics,
// the task count of the stages after a keyBy (default: that of the stage
// before).
func ClusterRepartitions(n int) ClusterOption { return func(c *clusterConfig) { c.repartitions = n } }

// ClusterOnTasks calls f with the ids of the tasks the instance owns
// whenever they change (for logs and tests).
func ClusterOnTasks(f func(tasks []string)) ClusterOption {
	return func(c *clusterConfig) { c.onTasks = f }
}

// executeCluster runs the job as a cluster member until ctx ends.
func (e *Environment) executeCluster(ctx context.Context, name string) (*JobHandle, error) {
	cc := e.cfg.cluster
	var errs []error
	if len(cc.brokers) == 0 {
		errs = append(errs, errors.New("WithKafkaCluster: no brokers"))
	}
	if cc.sessionTimeout <= 0 || cc.repartitions < 0 {
		errs = append(errs, fmt.Errorf("WithKafkaCluster: session timeout %v and repartitions %d must be positive", cc.sessionTimeout, cc.repartitions))
	}
	if e.checkpoint == nil || e.checkpoint.storage == "" {
		errs = append(errs, errors.New("a cluster job needs checkpoints in storage every instance reaches: EnableCheckpointing(interval, CheckpointStorage(\"/shared/dir\" or \"s3://bucket/prefix\"))"))
	} else if !e.checkpoint.exactlyOnce || e.checkpoint.unaligned {
		errs = append(errs, errors.New("a cluster job runs aligned exactly-once checkpoints (no AtLeastOnce, no unaligned checkpoints)"))
	}
	if name == "" {
		errs = append(errs, errors.New("a cluster job needs a name (Execute's), which names its group and topics"))
	}
	if e.cfg.savepoint != nil {
		errs = append(errs, errors.New("a cluster job restores from its own committed checkpoints, not from a savepoint"))
	}
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("weir: invalid job: %w", err)
	}
	if err := e.check(ctx); err != nil {
		return nil, err
	}
	st := &clusterStore{location: e.checkpoint.storage, job: name, env: e, stores: map[string]CheckpointStore{}}
	jctx, cancel := context.WithCancel(ctx)
	h := &JobHandle{name: name, env: e, cancel: cancel, done: make(chan struct{}), cluster: &cluster.Owned{}}
	log := e.cfg.logger.With("job", name)
	e.mon.start(e.cfg.clock)
	stopREST, err := e.startREST(h, log)
	if err != nil {
		cancel()
		return nil, err
	}
	cfg := cluster.Config{
		Job: name, Brokers: cc.brokers, Nodes: e.nodes,
		Runtime: runtime.Config{MaxParallelism: e.cfg.maxParallelism, BatchSize: e.cfg.batchSize,
			Credits: e.cfg.credits, Chaining: e.cfg.chaining, Clock: e.cfg.clock},
		Interval: e.checkpoint.interval, Timeout: e.checkpoint.timeout,
		SessionTimeout: cc.sessionTimeout, Repartitions: cc.repartitions,
		Store: st, Logger: e.cfg.logger, OnTasks: cc.onTasks, Owned: h.cluster,
	}
	go func() {
		defer stopREST() // its requests end with the job
		defer close(h.done)
		defer e.mon.end()
		defer cancel()
		err := cluster.Run(jctx, cfg)
		if errors.Is(err, context.Canceled) && ctx.Err() != nil {
			err = ctx.Err()
		}
		h.mu.Lock()
		h.err = err
		h.mu.Unlock()
	}()
	return h, nil
}

// clusterStore keeps each task's checkpoints under <location>/<job>/<task>.
type clusterStore struct {
	location, job string
	env           *Environment
	mu            sync.Mutex
	stores        map[string]CheckpointStore
}

func (c *clusterStore) store(task string) (*durableStore, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if s, ok := c.stores[task]; ok {
		return s.(*durableStore), nil
	}
	loc := strings.TrimRight(c.location, "/") + "/" + path.Join(c.job, task)
	r, err := c.env.remotes()
	if err != nil {
		return nil, err
	}
	d, err := newDurableStore(loc, r, "weir.WithStorage")
	if err != nil {
		return nil, err
	}
	d.useLogger(c.env.cfg.logger)
	c.stores[task] = d
	return d, nil
}

func (c *clusterStore) Save(ctx context.Context, task string, id int64, acks []runtime.TaskAck) error {
	d, err := c.store(task)
	if err != nil {
		return err
	}
	// Nothing is deleted here: until its commit the checkpoint is not the
	// task's, and the committed one must stay however many stored ones
	// fail to commit after it (Committed deletes).
	return d.Save(ctx, c.env.assemble(id, acks))
}

// Committed deletes the checkpoints of task older than id, its committed
// one, but for the newest retain-1 of them. A checkpoint that is stored
// and then not committed (its owner died, was fenced, or its commit
// failed) is never loaded, so a store that kept only the newest n stored
// checkpoints would lose the committed one after n such failures, and
// with it every later restore of the task.
func (c *clusterStore) Committed(ctx context.Context, task string, id int64) error {
	d, err := c.store(task)
	if err != nil {
		return err
	}
	es, err := d.s.List(ctx)
	if err != nil {
		return err
	}
	keep := max(c.env.checkpoint.retain, 1) - 1 // older than id
	for _, e := range es {
		if e.Kind == store.Checkpoint && e.ID >= id {
			keep++
		}
	}
	if err := d.Retain(ctx, max(keep, 1)); err != nil {
		return fmt.Errorf("deleting the checkpoints before %d: %w", id, err)
	}
	return nil
}

func (c *clusterStore) Load(ctx context.Context, task string, id int64) (map[string][]runtime.OperatorSnapshot, error) {
	d, err := c.store(task)
	if err != nil {
		return nil, err
	}
	m, err := d.s.Open(ctx, id)
	if err != nil {
		return nil, err
	}
	cp, err := d.load(ctx, m)
	if err != nil {
		return nil, err
	}
	if cp.MaxParallelism != 0 && cp.MaxParallelism != c.env.cfg.maxParallelism {
		return nil, fmt.Errorf("checkpoint %d was taken with max parallelism %d, the job has %d", id, cp.MaxParallelism, c.env.cfg.maxParallelism)
	}
	return runtimeSnapshots(cp.Operators), nil
}

func (c *clusterStore) LastID(ctx context.Context, task string) (int64, error) {
	d, err := c.store(task)
	if err != nil {
		return 0, err
	}
	return d.lastID(ctx)
}
