// Package kafkacluster runs a Weir job on several processes, coordinated
// through Kafka. It is a plugin of the root package:
//
//	env := weir.NewEnvironment(weir.WithCluster(kafkacluster.New("127.0.0.1:9092",
//		kafkacluster.SessionTimeout(10*time.Second))))
//
// Every instance started with the same program and job name (Execute's
// name) joins the job's consumer group, which gives each instance a share
// of the job's tasks (stage x partition: a stage is the part of the job
// between Kafka topics, cut at every keyBy, which writes through a
// repartition topic named after the job and the keyed operator). A task
// that moves (its instance died or a new one joined) restores from its
// last committed checkpoint in the checkpoint storage all instances share
// (checkpointing must be enabled with CheckpointStorage: a directory on a
// shared file system, or s3:// with weir.WithStorage). Each task commits
// its output (repartition topics and exactly-once Kafka sinks) and its
// checkpoint in one Kafka transaction, so a read_committed reader sees
// every result once. The Kafka client (franz-go) is linked only by
// programs that import this package.
package kafkacluster

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/connector/kafka"
	icluster "github.com/weirstream/weir/internal/cluster"
	"github.com/weirstream/weir/internal/clusterjob"
)

// Option configures New.
type Option func(*cluster)

// New returns the cluster on the Kafka brokers of bootstrap (a
// comma-separated list of host:port), for weir.WithCluster.
func New(bootstrap string, opts ...Option) weir.Cluster {
	c := &cluster{sessionTimeout: 10 * time.Second}
	for _, b := range strings.Split(bootstrap, ",") {
		if b = strings.TrimSpace(b); b != "" {
			c.brokers = append(c.brokers, b)
		}
	}
	for _, o := range opts {
		if o != nil {
			o(c)
		}
	}
	return c
}

// SessionTimeout sets the consumer group's session timeout: how long the
// tasks of an instance that died wait before they move (default 10s; the
// broker bounds it by group.min.session.timeout.ms, 6s by default).
func SessionTimeout(d time.Duration) Option { return func(c *cluster) { c.sessionTimeout = d } }

// Repartitions sets the partition count of the repartition topics, the
// task count of the stages after a keyBy (default: that of the stage
// before).
func Repartitions(n int) Option { return func(c *cluster) { c.repartitions = n } }

// Security connects every client of the cluster (its group membership,
// its reads, the tasks' transactions, which carry the output of the
// job's Kafka sinks too) with TLS and SASL; give the job's sources and
// sinks the same (kafka.WithSecurity).
func Security(s kafka.Security) Option {
	return func(c *cluster) { c.clientOpts = append(c.clientOpts, s.ClientOptions()...) }
}

// ClientOptions passes options to every franz-go client of the cluster.
func ClientOptions(opts ...kgo.Opt) Option {
	return func(c *cluster) { c.clientOpts = append(c.clientOpts, opts...) }
}

// OnTasks calls f with the ids of the tasks the instance owns whenever
// they change (for logs and tests).
func OnTasks(f func(tasks []string)) Option { return func(c *cluster) { c.onTasks = f } }

// cluster implements weir.Cluster and hooks.Cluster.
type cluster struct {
	brokers        []string
	sessionTimeout time.Duration
	repartitions   int
	onTasks        func([]string)
	clientOpts     []kgo.Opt
}

// Validate implements weir.Cluster.
func (c *cluster) Validate() error {
	var errs []error
	if len(c.brokers) == 0 {
		errs = append(errs, errors.New("kafkacluster: no brokers"))
	}
	if c.sessionTimeout <= 0 || c.repartitions < 0 {
		errs = append(errs, fmt.Errorf("kafkacluster: session timeout %v and repartitions %d must be positive", c.sessionTimeout, c.repartitions))
	}
	return errors.Join(errs...)
}

// RunCluster implements hooks.Cluster.
func (c *cluster) RunCluster(ctx context.Context, spec clusterjob.Spec) error {
	return icluster.Run(ctx, icluster.Config{
		Spec: spec, Brokers: c.brokers, SessionTimeout: c.sessionTimeout,
		Repartitions: c.repartitions, OnTasks: c.onTasks, ClientOpts: c.clientOpts,
	})
}
