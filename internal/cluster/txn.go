package cluster

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/weirstream/weir/internal/engine"
)

// taskProducer is a task's transactional producer (engine.TaskProducer).
// Between an operator's barrier (PreCommit) and the commit of that
// checkpoint's transaction, the operator's records are held back, so that
// a transaction holds exactly the output before its checkpoint. What is
// held is bounded (maxHeld bytes of keys and values over the task's
// writers): a Produce past the bound waits until the checkpoint commits
// or is abandoned, which back-pressures the operator. That cannot
// deadlock: a writer holds only after its operator's barrier, which it
// has passed on, so the checkpoint it waits for needs nothing more from
// its task.
type taskProducer struct {
	cl       *kgo.Client
	txnID    string
	group    string // the pointer group
	tasks    string // the tasks topic
	cpTopic  string // the checkpoints topic
	glob     int32
	task     string
	mu       sync.Mutex // guards writers, the held records and the transaction
	writers  []*txnWriter
	errMu    sync.Mutex
	err      error // the first failed send
	promise  func(*kgo.Record, error)
	finished bool
	maxHeld  int        // bytes; 0: defaultMaxHeld
	held     int        // bytes held, guarded by mu
	released *sync.Cond // on mu: held records were released or the producer closed
	closed   bool
	waiting  int // Produce calls waiting for room (tests)
}

// defaultMaxHeld bounds the bytes a task holds between a barrier and its
// checkpoint's commit.
const defaultMaxHeld = 64 << 20

func newTaskProducer(cl *kgo.Client, txnID, group, tasks, cpTopic string, glob int32, task string) *taskProducer {
	p := &taskProducer{cl: cl, txnID: txnID, group: group, tasks: tasks, cpTopic: cpTopic, glob: glob, task: task, maxHeld: defaultMaxHeld}
	p.released = sync.NewCond(&p.mu)
	p.promise = func(_ *kgo.Record, err error) {
		if err != nil {
			p.errMu.Lock()
			if p.err == nil {
				p.err = err
			}
			p.errMu.Unlock()
		}
	}
	return p
}

func (p *taskProducer) sendErr() error {
	p.errMu.Lock()
	defer p.errMu.Unlock()
	return p.err
}

// NewWriter implements engine.TaskProducer.
func (p *taskProducer) NewWriter(operator string) engine.TxnWriter {
	p.mu.Lock()
	defer p.mu.Unlock()
	w := &txnWriter{p: p, name: operator}
	p.writers = append(p.writers, w)
	return w
}

type txnWriter struct {
	p       *taskProducer
	name    string
	holding bool
	held    []*kgo.Record
}

func toKgo(r *engine.KafkaRecord) *kgo.Record {
	kr := &kgo.Record{Topic: r.Topic, Partition: r.Partition, Key: r.Key, Value: r.Value}
	if r.Timestamp != 0 {
		kr.Timestamp = time.UnixMilli(r.Timestamp)
	}
	for _, h := range r.Headers {
		kr.Headers = append(kr.Headers, kgo.RecordHeader{Key: h.Key, Value: h.Value})
	}
	return kr
}

// Produce implements engine.TxnWriter.
func (w *txnWriter) Produce(r *engine.KafkaRecord) error { return w.produce(toKgo(r)) }

// ProduceClient implements engine.TxnWriter: rec is a *kgo.Record.
func (w *txnWriter) ProduceClient(rec any) error {
	kr, ok := rec.(*kgo.Record)
	if !ok {
		return fmt.Errorf("task %s: writing to Kafka: a sink made a %T, not a *kgo.Record", w.p.task, rec)
	}
	return w.produce(kr)
}

func (w *txnWriter) produce(kr *kgo.Record) error {
	p := w.p
	if err := p.sendErr(); err != nil {
		return fmt.Errorf("task %s: writing to Kafka: %w", p.task, err)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	for w.holding && p.held > 0 && p.held+recordBytes(kr) > p.maxHeld && !p.closed {
		p.waiting++
		p.released.Wait()
		p.waiting--
	}
	if p.closed {
		return fmt.Errorf("task %s: writing to Kafka: the task's producer is closed", p.task)
	}
	if w.holding {
		w.held = append(w.held, kr)
		p.held += recordBytes(kr)
		return nil
	}
	p.cl.Produce(context.Background(), kr, p.promise)
	return nil
}

// PreCommit implements engine.TxnWriter: the records written from now on
// wait for the checkpoint's commit (commit) or abandonment (abandon).
func (w *txnWriter) PreCommit(int64) error {
	p := w.p
	p.mu.Lock()
	defer p.mu.Unlock()
	w.holding = true
	return p.sendErr()
}

// release sends the held records of every writer into the open
// transaction.
func (p *taskProducer) release() {
	for _, w := range p.writers {
		for _, r := range w.held {
			p.cl.Produce(context.Background(), r, p.promise)
		}
		clear(w.held)
		w.held, w.holding = w.held[:0], false
	}
	p.held = 0
	p.released.Broadcast()
}

func recordBytes(r *kgo.Record) int { return len(r.Key) + len(r.Value) + 64 }

// commit commits the transaction of checkpoint id (whose snapshot is
// stored) with the pointer to it, and opens the next one with the records
// held since the barrier.
func (p *taskProducer) commit(ctx context.Context, id int64, in []engine.PartitionOffset) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cl.Produce(ctx, &kgo.Record{Topic: p.cpTopic, Partition: p.glob, Key: []byte(p.task), Value: []byte(strconv.FormatInt(id, 10))}, p.promise)
	if err := p.cl.Flush(ctx); err != nil {
		return err
	}
	if err := p.sendErr(); err != nil {
		return fmt.Errorf("task %s: a record of checkpoint %d was not written: %w", p.task, id, err)
	}
	if err := p.commitPointer(ctx, id, in); err != nil {
		return err
	}
	if err := p.cl.EndTransaction(ctx, kgo.TryCommit); err != nil {
		return fmt.Errorf("task %s: committing the transaction of checkpoint %d: %w", p.task, id, err)
	}
	if err := p.cl.BeginTransaction(); err != nil {
		return err
	}
	p.release()
	return nil
}

// commitPointer adds the pointer group's offset to the transaction: the
// offset of the task's partition of the tasks topic is the checkpoint id,
// its metadata names the task and the positions of its inputs in.
func (p *taskProducer) commitPointer(ctx context.Context, id int64, in []engine.PartitionOffset) error {
	pid, epoch, err := p.cl.ProducerID(ctx)
	if err != nil {
		return err
	}
	add := kmsg.NewPtrAddOffsetsToTxnRequest()
	add.TransactionalID, add.ProducerID, add.ProducerEpoch, add.Group = p.txnID, pid, epoch, p.group
	err = retryTxn(ctx, func(ctx context.Context) error {
		ar, err := add.RequestWith(ctx, p.cl)
		if err == nil {
			err = kerr.ErrorForCode(ar.ErrorCode)
		}
		return err
	})
	if err != nil {
		return fmt.Errorf("task %s: adding the checkpoint pointer to the transaction: %w", p.task, err)
	}
	tc := kmsg.NewPtrTxnOffsetCommitRequest()
	tc.TransactionalID, tc.Group, tc.ProducerID, tc.ProducerEpoch = p.txnID, p.group, pid, epoch
	tc.Generation, tc.MemberID = -1, ""
	meta := pointerMetadata(id, p.task, in)
	tp := kmsg.NewTxnOffsetCommitRequestTopicPartition()
	tp.Partition, tp.Offset, tp.Metadata, tp.LeaderEpoch = p.glob, id, &meta, -1
	tt := kmsg.NewTxnOffsetCommitRequestTopic()
	tt.Topic, tt.Partitions = p.tasks, []kmsg.TxnOffsetCommitRequestTopicPartition{tp}
	tc.Topics = []kmsg.TxnOffsetCommitRequestTopic{tt}
	err = retryTxn(ctx, func(ctx context.Context) error {
		tr, err := tc.RequestWith(ctx, p.cl)
		if err == nil {
			for _, t := range tr.Topics {
				for _, pp := range t.Partitions {
					err = errors.Join(err, kerr.ErrorForCode(pp.ErrorCode))
				}
			}
		}
		return err
	})
	if err != nil {
		return fmt.Errorf("task %s: committing the checkpoint pointer: %w", p.task, err)
	}
	return nil
}

// abandon implements the coordinator's OnAbort: the held records join the
// still open transaction.
func (p *taskProducer) abandon(int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.release()
}

// shut wakes the writers waiting for room (the task is stopping); they
// fail.
func (p *taskProducer) shut() {
	p.mu.Lock()
	p.closed = true
	p.released.Broadcast()
	p.mu.Unlock()
}

// close aborts the open transaction (its records were never visible).
func (p *taskProducer) close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.closed = true
	p.released.Broadcast()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := p.cl.AbortBufferedRecords(ctx); err == nil {
		_ = p.cl.EndTransaction(ctx, kgo.TryAbort) // a fenced producer cannot; the next owner's init aborts it
	}
}

// fetcher reads one partition of a repartition topic (read_committed).
type fetcher struct {
	cl    *kgo.Client
	topic string
}

func (m *member) newFetcher(topic string, partition int, from int64) (engine.RemoteFetcher, error) {
	off := kgo.NewOffset().AtStart()
	if from >= 0 {
		off = kgo.NewOffset().At(from)
	}
	cl, err := m.client(kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {int32(partition): off}}),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()), kgo.FetchMaxWait(200*time.Millisecond))
	if err != nil {
		return nil, err
	}
	return &fetcher{cl: cl, topic: topic}, nil
}

// Fetch implements engine.RemoteFetcher.
func (f *fetcher) Fetch(ctx context.Context) ([]engine.FetchedRecord, error) {
	fs := f.cl.PollFetches(ctx)
	if ctx.Err() != nil {
		return nil, nil
	}
	var err error
	fs.EachError(func(_ string, _ int32, e error) {
		if !errors.Is(e, context.Canceled) && !kerr.IsRetriable(e) && err == nil {
			err = e
		}
	})
	var out []engine.FetchedRecord
	fs.EachRecord(func(r *kgo.Record) {
		fr := engine.FetchedRecord{Offset: r.Offset, Value: r.Value}
		for _, h := range r.Headers {
			if h.Key == engine.RemoteHeader {
				fr.Header = h.Value
			}
		}
		out = append(out, fr)
	})
	return out, err
}

// Close implements engine.RemoteFetcher.
func (f *fetcher) Close() error {
	f.cl.Close()
	return nil
}

// retryTxn runs req, a raw request of the task's transaction (the commit
// pointer's AddOffsetsToTxn and TxnOffsetCommit), until it succeeds, fails
// with an error that is not retriable, or ctx (bounded by the caller, below
// the transaction timeout) ends; on the end of ctx the last error is
// returned. Retriable are franz-go's classification (kerr.IsRetriable: a
// coordinator loading or moving) and CONCURRENT_TRANSACTIONS, the
// coordinator's "try again" while it completes an earlier state change of
// the transaction, which the Java client retries too. A joined error (one
// per partition) is retried only when every part of it is retriable.
func retryTxn(ctx context.Context, req func(context.Context) error) error {
	wait := 20 * time.Millisecond
	for {
		err := req(ctx)
		if err == nil || !retriableTxnErr(err) || ctx.Err() != nil {
			return err
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return err
		case <-t.C:
		}
		wait = min(2*wait, time.Second)
	}
}

func retriableTxnErr(err error) bool {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		for _, e := range j.Unwrap() {
			if !retriableTxnErr(e) {
				return false
			}
		}
		return true
	}
	return kerr.IsRetriable(err) || errors.Is(err, kerr.ConcurrentTransactions)
}
