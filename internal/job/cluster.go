package job

import (
	"context"
	"errors"
	"fmt"
	"path"
	"reflect"
	"strings"
	"sync"

	"github.com/weirstream/weir/internal/checkpoint/durable"
	"github.com/weirstream/weir/internal/checkpoint/store"
	"github.com/weirstream/weir/internal/clusterjob"
	"github.com/weirstream/weir/internal/engine"
	"github.com/weirstream/weir/internal/hooks"
)

// ClusterRecordFunc returns the function that makes the Kafka client's
// record for a value of a sink that writes through its cluster task's
// transaction: the sink's method ClusterRecord(v T, ts int64) (R, error),
// R being the client's record pointer, found by reflection so that the
// root package does not link the client.
func ClusterRecordFunc[T any](sink any) (func(v T, ts int64) (any, error), error) {
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

// CheckCluster reports why the job named name, with settings cfg, cannot
// run as a member of cluster c (isNil: c is a nil weir.Cluster), and
// returns c as the cluster that runs it.
func CheckCluster(c interface{ Validate() error }, isNil bool, cfg Config, name string) (hooks.Cluster, error) {
	var errs []error
	hc, ok := c.(hooks.Cluster)
	switch {
	case isNil:
		errs = append(errs, errors.New("WithCluster(nil)"))
	case !ok:
		errs = append(errs, fmt.Errorf("WithCluster: cluster %T does not come from a cluster package of this module (kafkacluster)", c))
	default:
		if err := c.Validate(); err != nil {
			errs = append(errs, fmt.Errorf("WithCluster: %w", err))
		}
	}
	if cp := cfg.Checkpoint; cp == nil || cp.Storage == "" {
		errs = append(errs, errors.New("a cluster job needs checkpoints in storage every instance reaches: EnableCheckpointing(interval, CheckpointStorage(\"/shared/dir\" or \"s3://bucket/prefix\")), with WithStorage(s3.New(...)) for s3://"))
	} else if !cp.ExactlyOnce || cp.Unaligned {
		errs = append(errs, errors.New("a cluster job runs aligned exactly-once checkpoints (no AtLeastOnce, no unaligned checkpoints)"))
	}
	if name == "" {
		errs = append(errs, errors.New("a cluster job needs a name (Execute's), which names its group and topics"))
	}
	if cfg.Savepoint != nil {
		errs = append(errs, errors.New("a cluster job restores from its own committed checkpoints, not from a savepoint"))
	}
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("weir: invalid job: %w", err)
	}
	return hc, nil
}

// ClusterSpec returns the description of the job a cluster member named
// job runs, its tasks' checkpoints kept under the checkpoint storage's
// location; owned is kept up to date with the tasks it owns.
func (r *Runner) ClusterSpec(job string, owned *clusterjob.Owned) clusterjob.Spec {
	c := r.Cfg
	return clusterjob.Spec{
		Job: job, Nodes: r.Nodes,
		Runtime: engine.Config{MaxParallelism: c.MaxParallelism, BatchSize: c.BatchSize,
			Credits: c.Credits, Chaining: c.Chaining, Clock: c.Clock},
		Interval: c.Checkpoint.Interval, Timeout: c.Checkpoint.Timeout,
		Store: r.ClusterStore(job), Logger: c.Logger, Owned: owned,
	}
}

// ClusterStore returns the store of the cluster job's tasks' checkpoints.
func (r *Runner) ClusterStore(job string) clusterjob.Store {
	return &clusterStore{location: r.Cfg.Checkpoint.Storage, job: job, r: r, stores: map[string]*durable.Store{}}
}

// clusterStore keeps each task's checkpoints under <location>/<job>/<task>.
type clusterStore struct {
	location, job string
	r             *Runner
	mu            sync.Mutex
	stores        map[string]*durable.Store
}

func (c *clusterStore) store(task string) (*durable.Store, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if s, ok := c.stores[task]; ok {
		return s, nil
	}
	loc := strings.TrimRight(c.location, "/") + "/" + path.Join(c.job, task)
	rm, err := c.r.Cfg.Remotes()
	if err != nil {
		return nil, err
	}
	d, err := durable.New(loc, rm, "weir.WithStorage")
	if err != nil {
		return nil, err
	}
	d.UseLogger(c.r.Cfg.Logger)
	c.stores[task] = d
	return d, nil
}

func (c *clusterStore) Save(ctx context.Context, task string, id int64, acks []engine.TaskAck) error {
	d, err := c.store(task)
	if err != nil {
		return err
	}
	// Nothing is deleted here: until its commit the checkpoint is not the
	// task's, and the committed one must stay however many stored ones
	// fail to commit after it (Committed deletes).
	return d.Save(ctx, c.r.Assemble(id, acks))
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
	es, err := d.Inner().List(ctx)
	if err != nil {
		return err
	}
	keep := max(c.r.Cfg.Checkpoint.Retain, 1) - 1 // older than id
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

func (c *clusterStore) Load(ctx context.Context, task string, id int64) (map[string][]engine.OperatorSnapshot, error) {
	d, err := c.store(task)
	if err != nil {
		return nil, err
	}
	m, err := d.Inner().Open(ctx, id)
	if err != nil {
		return nil, err
	}
	cp, err := d.Load(ctx, m)
	if err != nil {
		return nil, err
	}
	maxPar := c.r.Cfg.MaxParallelism
	if cp.MaxParallelism != 0 && cp.MaxParallelism != maxPar {
		return nil, fmt.Errorf("checkpoint %d was taken with max parallelism %d, the job has %d", id, cp.MaxParallelism, maxPar)
	}
	return copyOps(cp.Operators), nil
}

func (c *clusterStore) LastID(ctx context.Context, task string) (int64, error) {
	d, err := c.store(task)
	if err != nil {
		return 0, err
	}
	return d.LastID(ctx)
}
