package weir

import (
	"context"
	"errors"
	"fmt"
	"path"
	"reflect"
	"strings"
	"sync"

	"github.com/weirstream/weir/internal/checkpoint/store"
	"github.com/weirstream/weir/internal/clusterjob"
	"github.com/weirstream/weir/internal/hooks"
	"github.com/weirstream/weir/internal/runtime"
)

// Cluster runs a job as a member of a cluster of processes: every
// instance started with the same program and job name (Execute's name)
// takes a share of the job's tasks, a task that moves restores from its
// last committed checkpoint in the checkpoint storage all instances share,
// and each task commits its output and its checkpoint together. Package
// kafkacluster provides one on Kafka (kafkacluster.New); plug it in with
// WithCluster.
type Cluster interface {
	// Validate reports settings the cluster cannot run with; the job
	// fails with it when it is built.
	Validate() error
}

// WithCluster makes the job a member of the cluster c
// (WithCluster(kafkacluster.New("host:9092", ...))). A cluster job needs
// aligned exactly-once checkpointing into storage every instance reaches
// (EnableCheckpointing with CheckpointStorage: a directory on a shared
// file system, or s3:// with WithStorage), and a name; it restores from
// its own committed checkpoints, never from a savepoint.
func WithCluster(c Cluster) Option { return func(cf *config) { cf.cluster = c } }

// clusterRecordFunc returns the function that makes the Kafka client's
// record for a value of a sink that writes through its cluster task's
// transaction: the sink's method ClusterRecord(v T, ts int64) (R, error),
// R being the client's record pointer, found by reflection so that this
// package does not link the client.
func clusterRecordFunc[T any](sink any) (func(v T, ts int64) (any, error), error) {
	m := reflect.ValueOf(sink).MethodByName("ClusterRecord")
	errType := reflect.TypeFor[error]()
	if !m.IsValid() || m.Type().NumIn() != 2 || m.Type().In(0) != reflect.TypeFor[T]() || m.Type().In(1) != reflect.TypeFor[int64]() ||
		m.Type().NumOut() != 2 || m.Type().Out(0).Kind() != reflect.Pointer || m.Type().Out(1) != errType {
		return nil, fmt.Errorf("sink %T writes through its cluster task's transaction but has no method ClusterRecord(%s, int64) (*Record, error)", sink, reflect.TypeFor[T]())
	}
	return func(v T, ts int64) (any, error) {
		out := m.Call([]reflect.Value{reflect.ValueOf(&v).Elem(), reflect.ValueOf(ts)})
		if err, _ := out[1].Interface().(error); err != nil {
			return nil, err
		}
		if out[0].IsNil() {
			return nil, nil
		}
		return out[0].Interface(), nil
	}, nil
}

// executeCluster runs the job as a cluster member until ctx ends.
func (e *Environment) executeCluster(ctx context.Context, name string) (*JobHandle, error) {
	var errs []error
	hc, ok := e.cfg.cluster.(hooks.Cluster)
	switch {
	case isNil(e.cfg.cluster):
		errs = append(errs, errors.New("WithCluster(nil)"))
	case !ok:
		errs = append(errs, fmt.Errorf("WithCluster: cluster %T does not come from a cluster package of this module (kafkacluster)", e.cfg.cluster))
	default:
		if err := e.cfg.cluster.Validate(); err != nil {
			errs = append(errs, fmt.Errorf("WithCluster: %w", err))
		}
	}
	if e.checkpoint == nil || e.checkpoint.storage == "" {
		errs = append(errs, errors.New("a cluster job needs checkpoints in storage every instance reaches: EnableCheckpointing(interval, CheckpointStorage(\"/shared/dir\" or \"s3://bucket/prefix\")), with WithStorage(s3.New(...)) for s3://"))
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
	h := &JobHandle{name: name, env: e, cancel: cancel, done: make(chan struct{}), cluster: &clusterjob.Owned{}}
	log := e.cfg.logger.With("job", name)
	e.mon.start(e.cfg.clock)
	stopREST, err := e.startREST(h, log)
	if err != nil {
		cancel()
		return nil, err
	}
	spec := clusterjob.Spec{
		Job: name, Nodes: e.nodes,
		Runtime: runtime.Config{MaxParallelism: e.cfg.maxParallelism, BatchSize: e.cfg.batchSize,
			Credits: e.cfg.credits, Chaining: e.cfg.chaining, Clock: e.cfg.clock},
		Interval: e.checkpoint.interval, Timeout: e.checkpoint.timeout,
		Store: st, Logger: e.cfg.logger, Owned: h.cluster,
	}
	go func() {
		defer stopREST() // its requests end with the job
		defer close(h.done)
		defer e.mon.end()
		defer cancel()
		err := hc.RunCluster(jctx, spec)
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
