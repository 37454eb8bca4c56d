package engine

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/gob"
	"errors"
	"fmt"
	"reflect"
	"sync"
	"sync/atomic"

	"github.com/weirstream/weir/internal/watermark"
)

// A remote exchange carries an edge between two cluster stages through a
// Kafka topic (the repartition topic): the producing stage's tasks write
// with a remote writer, each consuming task reads its partition with a
// remote reader. Records travel in batches, watermarks and idle statuses as
// control records tagged with the writing task's channel, so that the
// reader runs the same valve over its upstream tasks as an input gate runs
// over its channels.
//
// Wire format. Every record has the header "weir" whose value is a kind
// byte and the writer's channel as a uvarint:
//
//	'd' data: the value is a gob-encoded []Record[T], in order
//	'w' watermark: the header continues with the watermark (varint)
//	'i' idle, 'a' active: the writer's output status changed
//
// Record keys are empty; record timestamps are the writer's wall clock.

// RemoteHeader is the header key of records on repartition topics.
const RemoteHeader = "weir"

const (
	remoteData      = 'd'
	remoteWatermark = 'w'
	remoteIdle      = 'i'
	remoteActive    = 'a'
)

// remoteBatchRecords is how many records a writer puts into one Kafka
// record, and remoteBatchBytes the size above which an encoded batch is
// split (Kafka's default max.message.bytes is 1 MiB).
const (
	remoteBatchRecords = 512
	remoteBatchBytes   = 768 << 10
)

// RemoteWriterSpec describes a remote writer: the topic, its partition
// count and the channel of the writing task (ChannelBase plus the task's
// index).
type RemoteWriterSpec struct {
	Name, UID   string
	Topic       string
	Partitions  int
	ChannelBase int
}

// NewRemoteWriter returns a sink node that writes e's records to the
// spec's topic, routed as e routes them (by key group for a hash edge, by
// the user's partitioner for a custom one, everything to partition 0
// otherwise: a global edge); connect it with
// e.Reconnect(producer, node).
func (e *Edge) NewRemoteWriter(spec RemoteWriterSpec) *Node { return e.ops.newRemoteWriter(spec) }

func (typedEdge[T]) newRemoteWriter(spec RemoteWriterSpec) *Node {
	var n *Node
	n = &Node{
		ID: -1, Name: spec.Name, UID: spec.UID, Kind: KindOneInput, Parallelism: 1,
		NewOutput: func(bs int) OutputPort { return NewOutput[struct{}](bs) },
		Build: func(bc *BuildContext) (Built, error) {
			if bc.Cluster == nil || bc.Cluster.Producer == nil {
				return Built{}, errors.New("a remote writer runs only in a cluster task")
			}
			w := &remoteWriter[T]{
				name: spec.Name, topic: spec.Topic, parts: spec.Partitions,
				channel: spec.ChannelBase + bc.Cluster.Index,
				route:   n.Inputs[0].route(spec.Partitions, bc.MaxParallelism).(func(*T) int),
				w:       bc.Cluster.Producer.NewWriter(spec.Name),
				pending: make([][]Record[T], spec.Partitions),
			}
			return Built{Inputs: []any{Input[T](w)}, Life: w}, nil
		},
	}
	return n
}

// remoteWriter is the writing end of a remote exchange.
type remoteWriter[T any] struct {
	name    string
	topic   string
	parts   int
	channel int
	route   func(*T) int
	w       TxnWriter
	pending [][]Record[T] // per partition, not yet written
}

// Open announces the writer's channel as active on every partition: a
// task that restarts (here or on another instance) starts active, and its
// readers may hold it as idle from before.
func (w *remoteWriter[T]) Open() error { return w.control(remoteActive, 0) }

// Close implements Lifecycle.
func (w *remoteWriter[T]) Close() error { return nil }

func (w *remoteWriter[T]) ProcessBatch(recs []Record[T]) error {
	for i := range recs {
		p := w.route(&recs[i].Value)
		if p < 0 || p >= w.parts {
			return fmt.Errorf("remote writer %q: the partitioner sent record %v to partition %d of %d (topic %s)", w.name, recs[i].Value, p, w.parts, w.topic)
		}
		w.pending[p] = append(w.pending[p], recs[i])
		if len(w.pending[p]) >= remoteBatchRecords {
			if err := w.flushPartition(p); err != nil {
				return err
			}
		}
	}
	return nil
}

func (w *remoteWriter[T]) ProcessWatermark(wm int64) error { return w.control(remoteWatermark, wm) }

func (w *remoteWriter[T]) ProcessStatus(idle bool) error {
	if idle {
		return w.control(remoteIdle, 0)
	}
	return w.control(remoteActive, 0)
}

// EndInput writes what is pending; the watermark before it (the maximum)
// has gone out as a control record.
func (w *remoteWriter[T]) EndInput() error { return w.flushAll() }

// SnapshotState writes what is pending and pre-commits the writer's part
// of the task's transaction.
func (w *remoteWriter[T]) SnapshotState(id int64) (OperatorSnapshot, error) {
	if err := w.flushAll(); err != nil {
		return OperatorSnapshot{}, err
	}
	return OperatorSnapshot{}, w.w.PreCommit(id)
}

// control writes a control record to every partition, after the data
// written before it.
func (w *remoteWriter[T]) control(kind byte, wm int64) error {
	if err := w.flushAll(); err != nil {
		return err
	}
	h := remoteHeader(kind, w.channel)
	if kind == remoteWatermark {
		h = binary.AppendVarint(h, wm)
	}
	for p := 0; p < w.parts; p++ {
		if err := w.produce(p, h, nil); err != nil {
			return err
		}
	}
	return nil
}

func (w *remoteWriter[T]) flushAll() error {
	for p := range w.pending {
		if err := w.flushPartition(p); err != nil {
			return err
		}
	}
	return nil
}

func (w *remoteWriter[T]) flushPartition(p int) error {
	recs := w.pending[p]
	if len(recs) == 0 {
		return nil
	}
	if err := w.writeBatch(p, recs); err != nil {
		return err
	}
	clear(recs)
	w.pending[p] = recs[:0]
	return nil
}

// writeBatch encodes recs as one record, or as several when too large.
func (w *remoteWriter[T]) writeBatch(p int, recs []Record[T]) error {
	data, err := encodeRecords(recs)
	if err != nil {
		return fmt.Errorf("remote writer %q: encoding records for topic %s: %w", w.name, w.topic, err)
	}
	if len(data) > remoteBatchBytes && len(recs) > 1 {
		half := len(recs) / 2
		if err := w.writeBatch(p, recs[:half]); err != nil {
			return err
		}
		return w.writeBatch(p, recs[half:])
	}
	return w.produce(p, remoteHeader(remoteData, w.channel), data)
}

func (w *remoteWriter[T]) produce(p int, header, value []byte) error {
	return w.w.Produce(&KafkaRecord{Topic: w.topic, Partition: int32(p), Value: value,
		Headers: []KafkaHeader{{Key: RemoteHeader, Value: header}}})
}

func remoteHeader(kind byte, channel int) []byte {
	return binary.AppendUvarint([]byte{kind}, uint64(channel))
}

func encodeRecords[T any](recs []Record[T]) ([]byte, error) {
	var b bytes.Buffer
	if err := gob.NewEncoder(&b).Encode(recs); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// RemoteFetcher reads one partition of a repartition topic for a remote
// reader: Fetch blocks until records are there or ctx ends.
type RemoteFetcher interface {
	Fetch(ctx context.Context) ([]FetchedRecord, error)
	Close() error
}

// FetchedRecord is a record of a repartition topic as a reader gets it.
type FetchedRecord struct {
	Offset int64
	Value  []byte
	// Header is the value of the RemoteHeader header (nil if missing).
	Header []byte
}

// RemoteReaderSpec describes a remote reader: the topic, the number of
// upstream channels (the tasks that write to it), and how to open a
// fetcher of partition (the task's index) from offset from (-1: the
// earliest).
type RemoteReaderSpec struct {
	Name, UID  string
	Topic      string
	Channels   int
	NewFetcher func(partition int, from int64) (RemoteFetcher, error)
}

// NewRemoteReader returns a source node that reads e's records from the
// spec's topic; connect it with e.Reconnect(node, consumer).
func (e *Edge) NewRemoteReader(spec RemoteReaderSpec) *Node { return e.ops.newRemoteReader(spec) }

func (typedEdge[T]) newRemoteReader(spec RemoteReaderSpec) *Node {
	return &Node{
		ID: -1, Name: spec.Name, UID: spec.UID, Kind: KindSource, Parallelism: 1,
		NewOutput: func(bs int) OutputPort { return NewOutput[T](bs) },
		Build: func(bc *BuildContext) (Built, error) {
			if bc.Cluster == nil {
				return Built{}, errors.New("a remote reader runs only in a cluster task")
			}
			out, ok := bc.Main.(*Output[T])
			if !ok {
				return Built{}, fmt.Errorf("internal: remote reader output has type %T", bc.Main)
			}
			r := &remoteReader[T]{name: spec.Name, topic: spec.Topic, out: out, partition: bc.Cluster.Index,
				next: -1, credits: max(bc.Credits, 1), newFetcher: spec.NewFetcher,
				valve: watermark.NewValve(spec.Channels), ptrs: hasPointers(reflect.TypeFor[T]())}
			if rs := bc.Restored; rs != nil && len(rs.State) > 0 {
				if err := r.restore(rs.State); err != nil {
					return Built{}, err
				}
			}
			r.wm.Store(r.valve.Output())
			return Built{Life: r, Source: r, InputWatermarks: func() []int64 { return []int64{r.wm.Load()} }}, nil
		},
	}
}

// remoteReader is the reading end of a remote exchange: a source whose
// watermark is the valve over its upstream tasks.
type remoteReader[T any] struct {
	name       string
	topic      string
	partition  int
	out        *Output[T]
	valve      *watermark.Valve
	next       int64 // the offset of the next record to read; -1: from the earliest
	credits    int
	newFetcher func(partition int, from int64) (RemoteFetcher, error)
	fetcher    RemoteFetcher
	events     []watermark.Event
	ptrs       bool
	wm         atomic.Int64 // the valve's output, for metrics
	mu         sync.Mutex   // guards fetcher
}

// remoteReaderState is a remote reader's checkpointed state.
type remoteReaderState struct {
	Next  int64
	Valve watermark.ValveState
}

func (r *remoteReader[T]) restore(data []byte) error {
	var st remoteReaderState
	if err := decodeGob(data, &st); err != nil {
		return fmt.Errorf("remote reader %q: restoring: %w", r.name, err)
	}
	if n := len(st.Valve.Channels); n != r.valve.Channels() {
		return fmt.Errorf("remote reader %q: the checkpoint has %d upstream tasks for topic %s, the job has %d (did the upstream partition count change?)", r.name, n, r.topic, r.valve.Channels())
	}
	r.next, r.valve = st.Next, watermark.RestoreValve(st.Valve)
	return nil
}

// DecodeRemoteReaderOffset returns the offset of the next record to read
// from a remote reader's snapshot (-1: nothing read yet).
func DecodeRemoteReaderOffset(state []byte) (int64, error) {
	var st remoteReaderState
	if err := decodeGob(state, &st); err != nil {
		return 0, fmt.Errorf("decoding a remote reader snapshot: %w", err)
	}
	return st.Next, nil
}

// Open opens the fetcher at the restored offset.
func (r *remoteReader[T]) Open() error {
	f, err := r.newFetcher(r.partition, r.next)
	if err != nil {
		return fmt.Errorf("remote reader %q: %w", r.name, err)
	}
	r.mu.Lock()
	r.fetcher = f
	r.mu.Unlock()
	return nil
}

// Close implements Lifecycle.
func (r *remoteReader[T]) Close() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.fetcher == nil {
		return nil
	}
	err := r.fetcher.Close()
	r.fetcher = nil
	return err
}

// SnapshotState records the position and the valve.
func (r *remoteReader[T]) SnapshotState(int64) (OperatorSnapshot, error) {
	data, err := encodeGob(remoteReaderState{Next: r.next, Valve: r.valve.State()})
	return OperatorSnapshot{State: data}, err
}

// Done implements SourceRunner: a remote reader never ends.
func (r *remoteReader[T]) Done() bool { return false }

// InboxCapacity implements SourceRunner.
func (r *remoteReader[T]) InboxCapacity() int { return r.credits }

// Starter implements SourceRunner: one goroutine fetches.
func (r *remoteReader[T]) Starter(inbox chan message) func(ctx context.Context, wg *sync.WaitGroup) {
	return func(ctx context.Context, wg *sync.WaitGroup) {
		credit := make(chan struct{}, r.credits)
		f := r.fetcher
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				recs, err := f.Fetch(ctx)
				if ctx.Err() != nil {
					return
				}
				if len(recs) == 0 && err == nil {
					continue
				}
				select {
				case credit <- struct{}{}:
				case <-ctx.Done():
					return
				}
				if !send(ctx, inbox, &remoteMsg[T]{r: r, recs: recs, err: err, credit: credit}) || err != nil {
					return
				}
			}
		}()
	}
}

// remoteMsg carries one fetch to the task.
type remoteMsg[T any] struct {
	r      *remoteReader[T]
	recs   []FetchedRecord
	err    error
	credit chan struct{}
}

func (m *remoteMsg[T]) process() error {
	defer func() { <-m.credit }()
	r := m.r
	for _, fr := range m.recs {
		if err := r.apply(fr); err != nil {
			return err
		}
		r.next = fr.Offset + 1
	}
	if m.err != nil {
		return fmt.Errorf("remote reader %q: reading topic %s partition %d: %w", r.name, r.topic, r.partition, m.err)
	}
	return nil
}

// apply processes one record of the topic.
func (r *remoteReader[T]) apply(fr FetchedRecord) error {
	h := fr.Header
	if len(h) < 2 {
		return fmt.Errorf("remote reader %q: topic %s partition %d offset %d is not a Weir repartition record (no %q header)", r.name, r.topic, r.partition, fr.Offset, RemoteHeader)
	}
	ch, n := binary.Uvarint(h[1:])
	if n <= 0 || int(ch) >= r.valve.Channels() {
		return fmt.Errorf("remote reader %q: topic %s partition %d offset %d: bad channel in header %x (%d upstream tasks)", r.name, r.topic, r.partition, fr.Offset, h, r.valve.Channels())
	}
	r.events = r.events[:0]
	switch h[0] {
	case remoteData:
		var recs []Record[T]
		if err := gob.NewDecoder(bytes.NewReader(fr.Value)).Decode(&recs); err != nil {
			return fmt.Errorf("remote reader %q: topic %s partition %d offset %d: decoding records: %w", r.name, r.topic, r.partition, fr.Offset, err)
		}
		r.out.CollectBatch(recs)
		clearRecords(recs, r.ptrs)
		return r.out.Err()
	case remoteWatermark:
		wm, m := binary.Varint(h[1+n:])
		if m <= 0 {
			return fmt.Errorf("remote reader %q: topic %s partition %d offset %d: bad watermark in header %x", r.name, r.topic, r.partition, fr.Offset, h)
		}
		r.events = r.valve.Watermark(int(ch), wm, r.events)
	case remoteIdle:
		r.events = r.valve.Status(int(ch), true, r.events)
	case remoteActive:
		r.events = r.valve.Status(int(ch), false, r.events)
	default:
		return fmt.Errorf("remote reader %q: topic %s partition %d offset %d: unknown record kind %q", r.name, r.topic, r.partition, fr.Offset, h[0])
	}
	for _, e := range r.events {
		var err error
		if e.IsStatus {
			err = r.out.EmitStatus(e.Idle)
		} else {
			r.wm.Store(e.Watermark)
			err = r.out.EmitWatermark(e.Watermark)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// NewClusterSinkOp returns the operator of a sink that writes through its
// cluster task's transaction, for AddTwoPhaseCommitSink in a cluster.
// record makes the Kafka client's record for a value (nil: write nothing).
func NewClusterSinkOp[T any](bc *BuildContext, record func(v T, ts int64) (any, error)) Built {
	o := &clusterSinkOp[T]{name: bc.Name, record: record, w: bc.Cluster.Producer.NewWriter(bc.Name)}
	return Built{Inputs: []any{Input[T](o)}, Life: o}
}

// clusterSinkOp writes a sink's records into the cluster task's
// transaction.
type clusterSinkOp[T any] struct {
	name   string
	record func(v T, ts int64) (any, error)
	w      TxnWriter
}

func (o *clusterSinkOp[T]) Open() error  { return nil }
func (o *clusterSinkOp[T]) Close() error { return nil }

func (o *clusterSinkOp[T]) ProcessBatch(recs []Record[T]) error {
	for i := range recs {
		kr, err := o.record(recs[i].Value, recs[i].TS)
		if err != nil {
			return err
		}
		if kr == nil {
			continue
		}
		if err := o.w.ProduceClient(kr); err != nil {
			return err
		}
	}
	return nil
}

func (o *clusterSinkOp[T]) ProcessWatermark(int64) error { return nil }
func (o *clusterSinkOp[T]) ProcessStatus(bool) error     { return nil }
func (o *clusterSinkOp[T]) EndInput() error              { return nil }

// SnapshotState pre-commits the sink's part of the transaction.
func (o *clusterSinkOp[T]) SnapshotState(id int64) (OperatorSnapshot, error) {
	return OperatorSnapshot{}, o.w.PreCommit(id)
}
