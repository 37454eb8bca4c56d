package engine

import (
	"context"
	"fmt"

	"github.com/weirstream/weir/internal/keygroup"
)

// This file holds what a plan needs to run one task of a cluster stage
// (internal/cluster, weir.WithCluster(kafkacluster.New(...))): the task's identity, its
// transactional producer, the interfaces the Kafka connector implements,
// and the graph surgery that cuts a job into stages. The Kafka client
// itself lives in internal/cluster; the runtime moves bytes.

// ClusterTask makes a plan the task Index of Count of a cluster stage: the
// plan holds every node of the stage once (parallelism 1), operators see
// Index as their subtask and Count as their parallelism, keyed operators
// own every key group (the task's keys are those of its partitions, which
// need not follow key-group ranges), and Kafka sources read partition Index
// of their topics.
type ClusterTask struct {
	// ID names the task ("s1-3": stage 1, partition 3).
	ID           string
	Index, Count int
	// Producer writes the task's output inside its Kafka transaction.
	Producer TaskProducer
}

// KafkaRecord is a record for Kafka, as the runtime hands it to a task's
// producer.
type KafkaRecord struct {
	Topic string
	// Partition is the partition to write to, or -1 for Kafka's default
	// partitioner (murmur2 of the key).
	Partition int32
	Key       []byte
	Value     []byte
	Headers   []KafkaHeader
	// Timestamp in milliseconds; 0 lets the producer use the current time.
	Timestamp int64
}

// KafkaHeader is one record header.
type KafkaHeader struct {
	Key   string
	Value []byte
}

// TaskProducer is a cluster task's transactional producer. Each operator
// that writes gets its own TxnWriter, since operators reach a checkpoint
// barrier at different moments.
type TaskProducer interface {
	NewWriter(operator string) TxnWriter
}

// TxnWriter writes one operator's records into its task's Kafka
// transaction. PreCommit runs at the operator's checkpoint barrier: it
// sends what was written so far and waits until the brokers have it; the
// records written after it are held back (buffered, or the call blocks
// when too much is held) until the transaction of that checkpoint has
// committed (then they open the next one) or the checkpoint was abandoned
// (then they join the still open transaction), so that a transaction holds
// exactly the output before its checkpoint's barrier.
type TxnWriter interface {
	Produce(rec *KafkaRecord) error
	// ProduceClient writes a record in the form of the cluster engine's
	// Kafka client (a *kgo.Record), as a sink's ClusterRecord makes it.
	ProduceClient(rec any) error
	PreCommit(checkpoint int64) error
}

// ClusterSource is implemented by sources that a cluster can read (the
// Kafka source): each task reads partition Index of every topic.
type ClusterSource interface {
	// ClusterTopics returns the source's brokers and topics; it fails for
	// settings a cluster cannot run (a topic pattern, a bounded source).
	ClusterTopics() (brokers, topics []string, err error)
	// SplitPartition returns the partition number of one of its splits.
	SplitPartition(split Split) int
	// SplitOffsets turns a snapshot's encoded splits and positions (see
	// DecodeSourceState) into the offset of the next record to read, by
	// topic and partition.
	SplitOffsets(splits, positions map[string][]byte) (map[string]map[int32]int64, error)
}

// ClusterInput is what a cluster needs to know of a source.
type ClusterInput struct {
	Brokers []string
	Topics  []string
}

// PartitionOffset is a position in a Kafka partition.
type PartitionOffset struct {
	Topic     string
	Partition int32
	Offset    int64
}

// ClusterSink is implemented by sinks whose output a cluster task writes
// through its own transaction (the Kafka sink in exactly-once mode). They
// also have a method ClusterRecord(v T, ts int64) (*kgo.Record, error)
// that makes the record for v (nil: write nothing), which the root
// package finds by reflection, since neither it nor this package links the
// Kafka client.
type ClusterSink interface {
	// ClusterBrokers returns the brokers the sink writes to, or nil if
	// the sink does not write through the task's transaction (a sink
	// that is not exactly-once keeps its own producer).
	ClusterBrokers() []string
}

// ClusterValidator is implemented by sinks whose settings are checked
// differently when the job runs in a cluster: the engine calls
// ValidateCluster there instead of Validate (an exactly-once Kafka sink
// writes through its task's transaction and needs no transactional id
// prefix of its own).
type ClusterValidator interface {
	ValidateCluster(ctx context.Context) error
}

// DecodeSourceState returns the encoded splits and the positions of a
// source subtask's snapshot (OperatorSnapshot.State).
func DecodeSourceState(state []byte) (splits, positions map[string][]byte, err error) {
	var st sourceState
	if err := decodeGob(state, &st); err != nil {
		return nil, nil, fmt.Errorf("decoding a source snapshot: %w", err)
	}
	return st.Splits, st.Positions, nil
}

// CloneNode returns a copy of n without edges, in the same position of the
// graph (its ID and UID), running at parallelism 1: the node of one
// cluster task.
func CloneNode(n *Node) *Node {
	c := *n
	c.Inputs, c.outs = nil, nil
	c.Parallelism = 1
	return &c
}

// Reconnect adds to to a copy of e from from, with e's tag, input,
// partitioning and record type; a partitioning other than forward becomes
// forward, since both ends run once in a cluster task.
func (e *Edge) Reconnect(from, to *Node) *Edge {
	c := &Edge{From: from, Tag: e.Tag, To: to, Input: e.Input, Partition: PartitionForward, ops: e.ops}
	to.Inputs = append(to.Inputs, c)
	return c
}

// Route returns how the edge routes a record to one of partitions
// consumers: by key group for a hash edge (the same key groups as a hash
// exchange with that many consumers), by the user's partitioner for a
// custom one, else everything to 0. It is typed func(*T) int for the
// edge's record type T.
func (e *Edge) route(partitions, maxP int) any { return e.ops.route(partitions, maxP) }

func (e typedEdge[T]) route(partitions, maxP int) any {
	if c := e.custom; c != nil {
		return func(v *T) int { return c(v, partitions) }
	}
	if e.hash == nil || partitions <= 1 {
		return func(*T) int { return 0 }
	}
	h := e.hash
	return func(v *T) int { return keygroup.OperatorIndex(keygroup.Of(h(v), maxP), partitions, maxP) }
}

// CheckEncodable reports whether the edge's records can cross between
// cluster tasks (they are encoded with encoding/gob).
func (e *Edge) CheckEncodable() error { return e.ops.checkEncodable() }

func (typedEdge[T]) checkEncodable() error {
	_, err := encodeRecords([]Record[T]{{}})
	return err
}
