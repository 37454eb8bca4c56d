package kafka

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/weirstream/weir"
)

// ProducerRecord is what a Serializer makes of a value: the record to
// write. An empty Topic means the sink's WithDefaultTopic.
type ProducerRecord struct {
	Topic   string
	Key     []byte
	Value   []byte
	Headers []Header
	// Timestamp in milliseconds; 0 lets the sink use the record's event
	// timestamp (or the broker's time when it has none).
	Timestamp int64
	// Partition, when not nil, is the partition of the topic to write
	// to (Flink's ProducerRecord partition); nil lets Kafka's default
	// partitioner choose (murmur2 of the key). A partition the topic does
	// not have fails the write. A kgo.RecordPartitioner given with
	// WithClientOptions replaces the sink's partitioner and decides alone.
	Partition *int32
}

// Serializer turns a value into a Kafka record (Flink's
// KafkaRecordSerializationSchema); ts is the value's event timestamp
// (weir.NoTimestamp if none). The partition is the record's Partition,
// or if it has none, Kafka's default partitioner's choice: murmur2 of the
// key, or spread for records without a key.
type Serializer[T any] interface {
	Serialize(v T, ts int64) (*ProducerRecord, error)
}

// SerializerFunc adapts a function to Serializer.
type SerializerFunc[T any] func(v T, ts int64) (*ProducerRecord, error)

// Serialize implements Serializer.
func (f SerializerFunc[T]) Serialize(v T, ts int64) (*ProducerRecord, error) { return f(v, ts) }

// StringValues writes each string as the value of a record without a key
// to the sink's default topic.
func StringValues() Serializer[string] { return stringValues{} }

// stringValues is StringValues' serializer (a valueSerializer).
type stringValues struct{}

// Serialize implements Serializer.
func (stringValues) Serialize(v string, _ int64) (*ProducerRecord, error) {
	return &ProducerRecord{Value: []byte(v)}, nil
}

func (stringValues) appendValue(b []byte, v string) ([]byte, error) { return append(b, v...), nil }

func (stringValues) key(string) []byte { return nil }

// JSONValues writes each value as JSON to the sink's default topic, keyed
// by key(v) (nil key: no key). A value that implements JSONAppender is
// encoded by its AppendJSON method, any other by encoding/json
// (json.Marshal).
func JSONValues[T any](key func(T) []byte) Serializer[T] {
	return jsonValues[T]{keyOf: key}
}

// JSONAppender is implemented by a type that writes its own JSON, without
// reflection: AppendJSON appends the encoding of the value to b and
// returns the extended buffer (as encoding.TextAppender). JSONValues uses
// it before json.Marshaler and encoding/json's reflection, and does not
// check what it appends: it must be one valid JSON value, and should be
// what json.Marshal gives, so that readers see the same records either way.
type JSONAppender interface {
	AppendJSON(b []byte) ([]byte, error)
}

// jsonValues is JSONValues' serializer; the sink writes its records
// without a ProducerRecord (valueSerializer).
type jsonValues[T any] struct{ keyOf func(T) []byte }

// Serialize implements Serializer.
func (j jsonValues[T]) Serialize(v T, _ int64) (*ProducerRecord, error) {
	data, err := j.appendValue(nil, v)
	if err != nil {
		return nil, err
	}
	return &ProducerRecord{Value: data, Key: j.key(v)}, nil
}

func (j jsonValues[T]) appendValue(b []byte, v T) ([]byte, error) {
	x := any(v)
	if a, ok := x.(JSONAppender); ok {
		return a.AppendJSON(b)
	}
	data, err := jsonMarshal(x)
	if err != nil {
		return b, err
	}
	return append(b, data...), nil
}

func (j jsonValues[T]) key(v T) []byte {
	if j.keyOf == nil {
		return nil
	}
	return j.keyOf(v)
}

// valueSerializer is a Serializer whose records are a key and a value for
// the default topic, no headers, no timestamp of their own: the sink asks
// it for the value appended to a buffer of its own (the records' values
// are then carved out of larger blocks) and builds the kgo.Record itself,
// which saves a ProducerRecord and a value allocation per record.
type valueSerializer[T any] interface {
	Serializer[T]
	appendValue(b []byte, v T) ([]byte, error)
	key(v T) []byte
}

// DeliveryGuarantee is what the sink promises, as Flink's KafkaSink.
type DeliveryGuarantee int

const (
	// None: records are sent asynchronously; a failure may lose or
	// repeat them (Flink's NONE, the default).
	None DeliveryGuarantee = iota
	// AtLeastOnce: at every checkpoint barrier the sink waits until
	// every record sent so far is acknowledged, so a restore repeats
	// records but loses none.
	AtLeastOnce
	// ExactlyOnce: each sink subtask writes in Kafka transactions,
	// pre-committed (flushed) at the barrier and committed when the
	// checkpoint completes; read_committed consumers see every record
	// once. Needs checkpointing and WithTransactionalIDPrefix.
	ExactlyOnce
)

func (g DeliveryGuarantee) String() string {
	switch g {
	case AtLeastOnce:
		return "at-least-once"
	case ExactlyOnce:
		return "exactly-once"
	default:
		return "none"
	}
}

// WithDeliveryGuarantee sets the sink's guarantee (default None). Sink only.
func WithDeliveryGuarantee(g DeliveryGuarantee) Option {
	return func(c *config) { c.guarantee = g }
}

// WithDefaultTopic sets the topic of records whose serializer leaves it
// empty. Sink only.
func WithDefaultTopic(topic string) Option { return func(c *config) { c.defaultTopic = topic } }

// WithTransactionalIDPrefix sets the prefix of the exactly-once sink's
// transactional ids, "<prefix>-<subtask>-<n>". It must be the same across
// restarts of the job (so a restore finds and aborts the transactions an
// earlier attempt left open) and differ between jobs writing to one
// cluster. Sink only; required for ExactlyOnce in one process; in a
// cluster (weir.WithCluster(kafkacluster.New(...))) the sink writes through its task's
// transaction, whose id the cluster derives from the job and the task,
// and the prefix is not used.
func WithTransactionalIDPrefix(prefix string) Option {
	return func(c *config) { c.txnPrefix = prefix }
}

// WithTransactionTimeout sets the exactly-once sink's transaction timeout
// (default 10 minutes): the broker aborts a transaction open longer, so it
// must exceed the longest time from a checkpoint's barrier to its
// completion, plus a restart. It is checked against the broker's
// transaction.max.timeout.ms when the job is built. Sink only.
func WithTransactionTimeout(d time.Duration) Option {
	return func(c *config) { c.txnTimeout = d }
}

// WithPartitioner sets how the sink picks the partition of a record whose
// serializer names none (default: Kafka's, murmur2 of the key, or spread
// for records without a key), as Flink's KafkaSink setPartitioner; a
// record's ProducerRecord.Partition still wins. franz-go's partitioners
// fit (kgo.StickyKeyPartitioner, kgo.RoundRobinPartitioner,
// kgo.ManualPartitioner...), or one of your own. Sink only; a job in a
// cluster refuses it (there the serializer names the partition).
func WithPartitioner(p kgo.Partitioner) Option {
	return func(c *config) { c.partitioner = p }
}

// Sink writes a stream to Kafka; build it with NewSink and add it to a
// job with To. It implements weir.TwoPhaseCommitSink, which the job
// drives; do not call those methods yourself.
type Sink[T any] struct {
	cfg  config
	ser  Serializer[T]
	fast valueSerializer[T] // ser, when it is one
	err  error
	// clusterErr is err but for what a cluster does not need (a
	// transactional id prefix).
	clusterErr error

	mu   sync.Mutex
	subs map[int]*sinkSubtask
}

// NewSink returns a sink that turns values into records with ser.
// Invalid settings are reported when the job is built.
func NewSink[T any](ser Serializer[T], opts ...Option) *Sink[T] {
	c := config{requestTimeout: 30 * time.Second, txnTimeout: 10 * time.Minute}
	for _, o := range opts {
		o(&c)
	}
	s := &Sink[T]{cfg: c, ser: ser, subs: map[int]*sinkSubtask{}}
	s.fast, _ = ser.(valueSerializer[T])
	var errs []error
	if ser == nil {
		errs = append(errs, errors.New("the serializer is nil"))
	}
	if len(c.brokers) == 0 {
		errs = append(errs, errors.New("no brokers (WithBrokers)"))
	}
	if c.guarantee < None || c.guarantee > ExactlyOnce {
		errs = append(errs, fmt.Errorf("unknown delivery guarantee %d", c.guarantee))
	}
	if c.guarantee == ExactlyOnce && c.txnTimeout < time.Second {
		errs = append(errs, fmt.Errorf("transaction timeout %v is below 1s", c.txnTimeout))
	}
	if c.partitioner != nil {
		// Only for the cluster: one process uses it.
		s.clusterErr = errors.New("a partitioner (WithPartitioner) cannot run in a cluster, whose tasks' producers partition records for every sink; name the partition in the serializer (ProducerRecord.Partition)")
	}
	if len(errs) > 0 {
		s.clusterErr = fmt.Errorf("kafka sink: %w", errors.Join(append(errs, s.clusterErr)...))
	} else if s.clusterErr != nil {
		s.clusterErr = fmt.Errorf("kafka sink: %w", s.clusterErr)
	}
	if c.guarantee == ExactlyOnce && c.txnPrefix == "" {
		// In a cluster the task's transaction, named after the job and the
		// task, carries the sink's records: no prefix is needed there.
		errs = append(errs, errors.New("exactly-once needs a transactional id prefix (WithTransactionalIDPrefix) when the job runs in one process; in a cluster (weir.WithCluster(kafkacluster.New(...))) each task's transactional id is derived from the job's name and the task"))
	}
	if len(errs) > 0 {
		s.err = fmt.Errorf("kafka sink: %w", errors.Join(errs...))
	}
	return s
}

// ValidateCluster implements the engine's cluster validator: in a cluster
// (weir.WithCluster(kafkacluster.New(...))) an exactly-once sink writes through the
// transaction of its task, "<job>-<task>", stable across instances and
// restarts, so it needs no transactional id prefix, and the task's
// producer sets the transaction timeout.
func (s *Sink[T]) ValidateCluster(context.Context) error { return s.clusterErr }

// To adds the sink to the end of ds; it returns the weir.Sink to name
// it, set its parallelism and give it a UID (do, for ExactlyOnce: its
// pending transactions are state).
func (s *Sink[T]) To(ds weir.DataStream[T]) weir.Sink {
	return weir.AddTwoPhaseCommitSink[T, *Txn](ds, s).Name("KafkaSink")
}

// Validate implements connector.Validator: the settings, and for ExactlyOnce
// the transaction timeout against every broker's
// transaction.max.timeout.ms (which the broker would refuse at the first
// transaction).
func (s *Sink[T]) Validate(ctx context.Context) error {
	if s.err != nil || s.cfg.guarantee != ExactlyOnce {
		return s.err
	}
	cl, err := newClient(append([]kgo.Opt{kgo.SeedBrokers(s.cfg.brokers...)}, s.cfg.opts...)...)
	if err != nil {
		return fmt.Errorf("kafka sink: %w", err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(ctx, s.cfg.requestTimeout)
	defer cancel()
	adm := kadm.NewClient(cl)
	brokers, err := adm.ListBrokers(ctx)
	var rcs kadm.ResourceConfigs
	if err == nil {
		rcs, err = adm.DescribeBrokerConfigs(ctx, brokers.NodeIDs()...)
	}
	if err != nil {
		return fmt.Errorf("kafka sink: reading the brokers' transaction.max.timeout.ms from %v: %w", s.cfg.brokers, err)
	}
	for _, rc := range rcs {
		if rc.Err != nil {
			return fmt.Errorf("kafka sink: reading the configuration of broker %s: %w", rc.Name, rc.Err)
		}
		for _, c := range rc.Configs {
			if c.Key != "transaction.max.timeout.ms" || c.Value == nil {
				continue
			}
			maxMs, err := strconv.ParseInt(*c.Value, 10, 64)
			if err == nil && s.cfg.txnTimeout.Milliseconds() > maxMs {
				return fmt.Errorf("kafka sink: the transaction timeout %v is above broker %s's transaction.max.timeout.ms (%d ms); lower it with WithTransactionTimeout or raise the broker's", s.cfg.txnTimeout, rc.Name, maxMs)
			}
		}
	}
	return nil
}

// Txn is one transaction (or, without ExactlyOnce, one stretch between
// checkpoints) of a sink subtask; the fields identify a pre-committed
// Kafka transaction in checkpoints.
type Txn struct {
	TransactionalID string
	ProducerID      int64
	Epoch           int16
	// Empty is set when the transaction wrote nothing.
	Empty bool

	subtask int
	slot    int
	prod    *producer // nil once the subtask closed or after a restore
}

// producer is a franz-go client of a sink subtask; for ExactlyOnce one per
// transactional id.
type producer struct {
	cl      *kgo.Client
	id      string
	promise func(*kgo.Record, error) // the one promise of every record
	mu      sync.Mutex
	err     error       // the first failed send since the last check
	hasErr  atomic.Bool // err != nil, read without mu by every Write
	wrote   bool
	closed  bool

	// Used by the subtask's goroutine only (Write): records and values
	// are carved out of blocks, one allocation for many records. A block
	// lives until the last record carved from it is acknowledged and
	// dropped by the client; a carved slice is never written again.
	recs    []kgo.Record
	values  []byte
	scratch []byte // a value being serialized
}

// Block sizes of producer.recs and producer.values.
const (
	recordBlock = 64
	valueBlock  = 32 << 10
)

func newProducer(cl *kgo.Client, id string) *producer {
	p := &producer{cl: cl, id: id}
	p.promise = func(r *kgo.Record, err error) {
		if err != nil {
			p.failed(fmt.Errorf("kafka sink: writing to topic %q: %w", r.Topic, err))
		}
	}
	return p
}

func (p *producer) failed(err error) {
	p.mu.Lock()
	if p.err == nil {
		p.err = err
		p.hasErr.Store(true)
	}
	p.mu.Unlock()
}

func (p *producer) takeErr() error {
	if !p.hasErr.Load() {
		return nil
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	err := p.err
	p.err = nil
	p.hasErr.Store(false)
	return err
}

// record returns a zero record from the current block.
func (p *producer) record() *kgo.Record {
	if len(p.recs) == 0 {
		p.recs = make([]kgo.Record, recordBlock)
	}
	r := &p.recs[0]
	p.recs = p.recs[1:]
	return r
}

// carve returns a copy of b from the current value block.
func (p *producer) carve(b []byte) []byte {
	if len(b) > cap(p.values)-len(p.values) {
		if len(b) > valueBlock/4 {
			return append([]byte(nil), b...)
		}
		p.values = make([]byte, 0, valueBlock)
	}
	n := len(p.values)
	p.values = append(p.values, b...)
	return p.values[n:len(p.values):len(p.values)]
}

// sinkSubtask is the state of one sink subtask.
type sinkSubtask struct {
	plain *producer         // None and AtLeastOnce
	slots map[int]*producer // ExactlyOnce: by slot
	inUse map[int]bool
}

func (s *Sink[T]) newClient(extra ...kgo.Opt) (*kgo.Client, error) {
	def := s.cfg.partitioner
	if def == nil {
		def = defaultPartitioner()
	}
	opts := []kgo.Opt{kgo.SeedBrokers(s.cfg.brokers...), kgo.RequestTimeoutOverhead(s.cfg.requestTimeout),
		kgo.RecordPartitioner(newExplicitPartitioner(def))}
	opts = append(opts, extra...)
	opts = append(opts, s.cfg.opts...)
	return newClient(opts...)
}

// newClientMu serializes the creation of clients: kgo.NewClient writes
// into slices held by options (kgo.ProducerBatchCompression's codecs are
// deduplicated in place by kgo.DefaultCompressor), and the options a user
// gives WithClientOptions are shared by every subtask's client, so two
// subtasks opening at once raced on them (found by the race detector).
var newClientMu sync.Mutex

// newClient is kgo.NewClient, one call at a time.
func newClient(opts ...kgo.Opt) (*kgo.Client, error) {
	newClientMu.Lock()
	defer newClientMu.Unlock()
	return kgo.NewClient(opts...)
}

func (s *Sink[T]) txnID(subtask, slot int) string {
	return s.cfg.txnPrefix + "-" + strconv.Itoa(subtask) + "-" + strconv.Itoa(slot)
}

// OpenSubtask implements weir.TwoPhaseCommitSubtasks. For ExactlyOnce it
// aborts the transactions earlier attempts left open, as Flink's KafkaSink:
// it probes the transactional ids of this subtask and of the old subtasks
// that now map to it (subtask + k*parallelism), slot 0, 1, ... each until
// an id never used before; initializing an id fences its earlier producer
// and aborts its open transaction.
func (s *Sink[T]) OpenSubtask(subtask, parallelism int) error {
	if s.err != nil {
		return s.err
	}
	st := &sinkSubtask{slots: map[int]*producer{}, inUse: map[int]bool{}}
	if s.cfg.guarantee != ExactlyOnce {
		cl, err := s.newClient(kgo.RecordRetries(10), kgo.ProducerLinger(5*time.Millisecond))
		if err != nil {
			return fmt.Errorf("kafka sink: %w", err)
		}
		st.plain = newProducer(cl, "")
	} else if err := s.abortLingering(subtask, parallelism); err != nil {
		return err
	}
	s.mu.Lock()
	s.subs[subtask] = st
	s.mu.Unlock()
	return nil
}

// withClient runs f with a new plain client (raw transaction requests),
// closed afterwards, and a deadline of the transaction timeout (which
// bounds the retries of retryTxn) plus two request timeouts.
func (s *Sink[T]) withClient(f func(ctx context.Context, cl *kgo.Client) error) error {
	cl, err := s.newClient()
	if err != nil {
		return fmt.Errorf("kafka sink: %w", err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), s.cfg.txnTimeout+2*s.cfg.requestTimeout)
	defer cancel()
	return f(ctx, cl)
}

func (s *Sink[T]) abortLingering(subtask, parallelism int) error {
	return s.withClient(func(ctx context.Context, cl *kgo.Client) error { return s.probe(ctx, cl, subtask, parallelism) })
}

func (s *Sink[T]) probe(ctx context.Context, cl *kgo.Client, subtask, parallelism int) error {
	for old := subtask; ; old += parallelism {
		for slot := 0; ; slot++ {
			id := s.txnID(old, slot)
			req := kmsg.NewPtrInitProducerIDRequest()
			req.TransactionalID = &id
			req.TransactionTimeoutMillis = int32(s.cfg.txnTimeout.Milliseconds())
			var resp *kmsg.InitProducerIDResponse
			// Right after a crash the id's transaction is still open: this
			// request aborts it, and the coordinator answers
			// CONCURRENT_TRANSACTIONS until the abort is written.
			err := retryTxn(ctx, s.cfg.txnTimeout, func(ctx context.Context) error {
				var err error
				if resp, err = req.RequestWith(ctx, cl); err == nil {
					err = kerr.ErrorForCode(resp.ErrorCode)
				}
				return err
			})
			if err != nil {
				return fmt.Errorf("kafka sink: aborting the lingering transactions of %s: %w", id, err)
			}
			if resp.ProducerEpoch == 0 { // never used: neither are the next slots
				if slot == 0 && old != subtask {
					return nil
				}
				break
			}
		}
	}
}

// CloseSubtask implements weir.TwoPhaseCommitSubtasks.
func (s *Sink[T]) CloseSubtask(subtask int) error {
	s.mu.Lock()
	st := s.subs[subtask]
	delete(s.subs, subtask)
	s.mu.Unlock()
	if st == nil {
		return nil
	}
	var err error
	if st.plain != nil {
		// Send what is buffered (None sends at close, as Flink's
		// KafkaWriter; at least once the pre-commit already waited).
		err = s.flush(st.plain)
		st.plain.mu.Lock()
		st.plain.closed = true
		st.plain.mu.Unlock()
		st.plain.cl.Close()
	}
	for _, p := range st.slots {
		p.mu.Lock()
		p.closed = true
		p.mu.Unlock()
		p.cl.Close()
	}
	return err
}

func (s *Sink[T]) subtask(i int) (*sinkSubtask, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.subs[i]
	if st == nil {
		return nil, fmt.Errorf("kafka sink: subtask %d is not open", i)
	}
	return st, nil
}

// BeginTransaction implements weir.TwoPhaseCommitSink.
func (s *Sink[T]) BeginTransaction(subtask int) (*Txn, error) {
	st, err := s.subtask(subtask)
	if err != nil {
		return nil, err
	}
	if s.cfg.guarantee != ExactlyOnce {
		return &Txn{subtask: subtask, prod: st.plain}, nil
	}
	s.mu.Lock()
	slot := 0
	for st.inUse[slot] {
		slot++
	}
	st.inUse[slot] = true
	p := st.slots[slot]
	s.mu.Unlock()
	if p == nil {
		id := s.txnID(subtask, slot)
		cl, err := s.newClient(kgo.TransactionalID(id), kgo.TransactionTimeout(s.cfg.txnTimeout), kgo.ProducerLinger(5*time.Millisecond))
		if err != nil {
			return nil, fmt.Errorf("kafka sink: %w", err)
		}
		p = newProducer(cl, id)
		s.mu.Lock()
		st.slots[slot] = p
		s.mu.Unlock()
	}
	if err := p.cl.BeginTransaction(); err != nil {
		return nil, fmt.Errorf("kafka sink: beginning a transaction of %s: %w", p.id, err)
	}
	p.wrote = false
	return &Txn{TransactionalID: p.id, subtask: subtask, slot: slot, prod: p}, nil
}

// ClusterRecord makes the record for v with event timestamp ts (nil:
// write nothing), for the cluster engine (package kafkacluster): in a
// cluster an exactly-once sink writes through the transaction of its
// task, which commits the task's input offsets with it. The record's
// Partition is its ProducerRecord's, or -1: the partition Kafka's default
// partitioner picks for its key (the cluster's producer sends a record
// with a partition there).
func (s *Sink[T]) ClusterRecord(v T, ts int64) (*kgo.Record, error) {
	pr, err := s.record(v, ts)
	if err != nil || pr == nil {
		return nil, err
	}
	kr := &kgo.Record{Topic: pr.Topic, Partition: -1, Key: pr.Key, Value: pr.Value}
	if pr.Partition != nil {
		if *pr.Partition < 0 {
			return nil, s.partitionErr(v, *pr.Partition)
		}
		kr.Partition = *pr.Partition
	}
	switch {
	case pr.Timestamp != 0:
		kr.Timestamp = time.UnixMilli(pr.Timestamp)
	case ts != weir.NoTimestamp:
		kr.Timestamp = time.UnixMilli(ts)
	}
	for _, h := range pr.Headers {
		kr.Headers = append(kr.Headers, kgo.RecordHeader{Key: h.Key, Value: h.Value})
	}
	return kr, nil
}

// ClusterBrokers implements the cluster-sink interface: an exactly-once
// sink writes through its cluster task's transaction, the others keep
// their own producers.
func (s *Sink[T]) ClusterBrokers() []string {
	if s.cfg.guarantee != ExactlyOnce {
		return nil
	}
	return s.cfg.brokers
}

// record serializes v and fills in the default topic.
func (s *Sink[T]) record(v T, ts int64) (*ProducerRecord, error) {
	pr, topic, err := s.serialize(v, ts)
	if err != nil || pr == nil || pr.Topic != "" {
		return pr, err
	}
	cp := *pr
	cp.Topic = topic
	return &cp, nil
}

// serialize serializes v; topic is its record's topic (the default one
// when the serializer leaves it empty).
func (s *Sink[T]) serialize(v T, ts int64) (pr *ProducerRecord, topic string, err error) {
	pr, err = s.ser.Serialize(v, ts)
	if err != nil {
		return nil, "", s.serializeErr(v, err)
	}
	if pr == nil {
		return nil, "", nil
	}
	if topic = pr.Topic; topic == "" {
		if topic, err = s.defaultTopic(); err != nil {
			return nil, "", err
		}
	}
	return pr, topic, nil
}

func (s *Sink[T]) serializeErr(v T, err error) error {
	return fmt.Errorf("kafka sink: serializing %v: %w", v, err)
}

func (s *Sink[T]) partitionErr(v T, p int32) error {
	return fmt.Errorf("kafka sink: serializing %v: partition %d is negative", v, p)
}

// newExplicitPartitioner returns a kgo.Partitioner that sends a record whose
// Partition is set (>= 0) to that partition, and the others where def
// sends them. The sink's clients partition with it around kgo's default
// partitioner (kgo.UniformBytesPartitioner(64<<10, true, true, nil):
// murmur2 of the key, as Kafka's), and records without a ProducerRecord
// partition have Partition -1 (a cluster task's producer, package
// kafkacluster, partitions the sink's records the same way).
func newExplicitPartitioner(def kgo.Partitioner) kgo.Partitioner { return explicitPartitioner{def} }

type explicitPartitioner struct{ def kgo.Partitioner }

func (p explicitPartitioner) ForTopic(t string) kgo.TopicPartitioner {
	return &explicitTopicPartitioner{def: p.def.ForTopic(t)}
}

type explicitTopicPartitioner struct{ def kgo.TopicPartitioner }

// RequiresConsistency: an explicit partition is the partition's number
// among all of the topic's partitions, written or failing, never another.
func (p *explicitTopicPartitioner) RequiresConsistency(r *kgo.Record) bool {
	return r.Partition >= 0 || p.def.RequiresConsistency(r)
}

func (p *explicitTopicPartitioner) Partition(r *kgo.Record, n int) int {
	if r.Partition >= 0 {
		return int(r.Partition)
	}
	return p.def.Partition(r, n)
}

// PartitionByBackup implements kgo.TopicBackupPartitioner, for a default
// that partitions by what is buffered (kgo's own default does).
func (p *explicitTopicPartitioner) PartitionByBackup(r *kgo.Record, n int, backup kgo.TopicBackupIter) int {
	if r.Partition >= 0 {
		return int(r.Partition)
	}
	if b, ok := p.def.(kgo.TopicBackupPartitioner); ok {
		return b.PartitionByBackup(r, n, backup)
	}
	return p.def.Partition(r, n)
}

// defaultPartitioner is kgo's default partitioner (kgo.Client's).
func defaultPartitioner() kgo.Partitioner {
	return kgo.UniformBytesPartitioner(64<<10, true, true, nil)
}

// OnNewBatch passes the call on to a sticky default.
func (p *explicitTopicPartitioner) OnNewBatch() {
	if o, ok := p.def.(kgo.TopicPartitionerOnNewBatch); ok {
		o.OnNewBatch()
	}
}

func (s *Sink[T]) defaultTopic() (string, error) {
	if s.cfg.defaultTopic == "" {
		return "", fmt.Errorf("kafka sink: the serializer gave no topic and the sink has no default topic (WithDefaultTopic)")
	}
	return s.cfg.defaultTopic, nil
}

// Write implements weir.TwoPhaseCommitSink: the record is sent
// asynchronously; a failed send fails the next Write or the pre-commit.
func (s *Sink[T]) Write(t *Txn, v T, ts int64) error {
	p := t.prod
	if err := p.takeErr(); err != nil {
		return err
	}
	var r *kgo.Record
	if s.fast != nil {
		topic, err := s.defaultTopic()
		if err != nil {
			return err
		}
		b, err := s.fast.appendValue(p.scratch[:0], v)
		p.scratch = b[:0]
		if err != nil {
			return s.serializeErr(v, err)
		}
		r = p.record()
		r.Topic, r.Key, r.Value, r.Partition = topic, s.fast.key(v), p.carve(b), -1
	} else {
		pr, topic, err := s.serialize(v, ts)
		if err != nil || pr == nil {
			return err
		}
		if pr.Partition != nil && *pr.Partition < 0 {
			return s.partitionErr(v, *pr.Partition)
		}
		r = p.record()
		r.Topic, r.Key, r.Value, r.Partition = topic, pr.Key, pr.Value, -1
		if pr.Partition != nil {
			r.Partition = *pr.Partition
		}
		if pr.Timestamp != 0 {
			r.Timestamp = time.UnixMilli(pr.Timestamp)
		}
		for _, h := range pr.Headers {
			r.Headers = append(r.Headers, kgo.RecordHeader{Key: h.Key, Value: h.Value})
		}
	}
	if r.Timestamp.IsZero() && ts != weir.NoTimestamp {
		r.Timestamp = time.UnixMilli(ts)
	}
	p.wrote = true
	p.cl.Produce(context.Background(), r, p.promise)
	return nil
}

// PreCommit implements weir.TwoPhaseCommitSink: it waits until every
// record of the transaction is acknowledged (None: it does not wait) and,
// for ExactlyOnce, records the transaction's producer id and epoch.
func (s *Sink[T]) PreCommit(t *Txn) error {
	if s.cfg.guarantee == None {
		return t.prod.takeErr()
	}
	if err := s.flush(t.prod); err != nil {
		return err
	}
	if s.cfg.guarantee != ExactlyOnce {
		return nil
	}
	t.Empty = !t.prod.wrote
	if t.Empty {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), s.cfg.requestTimeout)
	defer cancel()
	id, epoch, err := t.prod.cl.ProducerID(ctx)
	if err != nil {
		return fmt.Errorf("kafka sink: the producer id of %s: %w", t.TransactionalID, err)
	}
	t.ProducerID, t.Epoch = id, epoch
	return nil
}

func (s *Sink[T]) flush(p *producer) error {
	ctx, cancel := context.WithTimeout(context.Background(), s.cfg.txnTimeout)
	defer cancel()
	if err := p.cl.Flush(ctx); err != nil {
		return fmt.Errorf("kafka sink: flushing: %w", err)
	}
	return p.takeErr()
}

// Commit implements weir.TwoPhaseCommitSink. A transaction of this
// attempt commits through its producer; a restored one (or one whose
// subtask has closed) through an EndTxn request with the recorded
// producer id and epoch, as Flink's KafkaCommitter resumes it. A
// transaction the broker no longer knows under that epoch was committed
// before (a restore commits the restored checkpoint's transactions
// again).
func (s *Sink[T]) Commit(t *Txn) error {
	switch s.cfg.guarantee {
	case None:
		if t.prod != nil && !t.prod.isClosed() {
			return s.flush(t.prod)
		}
		return nil
	case AtLeastOnce:
		return nil
	}
	p := t.prod
	if p != nil && !p.isClosed() {
		ctx, cancel := context.WithTimeout(context.Background(), s.cfg.requestTimeout)
		defer cancel()
		err := p.cl.EndTransaction(ctx, kgo.TryCommit)
		s.release(t)
		if err != nil {
			return fmt.Errorf("kafka sink: committing the transaction of %s: %w", t.TransactionalID, err)
		}
		return nil
	}
	if t.Empty || t.TransactionalID == "" {
		return nil
	}
	return s.withClient(func(ctx context.Context, cl *kgo.Client) error {
		req := kmsg.NewPtrEndTxnRequest()
		req.TransactionalID, req.ProducerID, req.ProducerEpoch, req.Commit = t.TransactionalID, t.ProducerID, t.Epoch, true
		err := retryTxn(ctx, s.cfg.txnTimeout, func(ctx context.Context) error {
			resp, err := req.RequestWith(ctx, cl)
			if err == nil {
				err = kerr.ErrorForCode(resp.ErrorCode)
			}
			return err
		})
		switch {
		case err == nil:
			return nil
		case errors.Is(err, kerr.InvalidProducerEpoch), errors.Is(err, kerr.ProducerFenced), errors.Is(err, kerr.InvalidTxnState):
			return nil // committed before, and the id went on
		default:
			return fmt.Errorf("kafka sink: committing the restored transaction of %s (producer %d, epoch %d): %w", t.TransactionalID, t.ProducerID, t.Epoch, err)
		}
	})
}

func (p *producer) isClosed() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.closed
}

// release frees the slot of a finished transaction.
func (s *Sink[T]) release(t *Txn) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if st := s.subs[t.subtask]; st != nil && st.slots[t.slot] == t.prod {
		delete(st.inUse, t.slot)
	}
}

// Abort implements weir.TwoPhaseCommitSink.
func (s *Sink[T]) Abort(t *Txn) error {
	p := t.prod
	if s.cfg.guarantee != ExactlyOnce || p == nil || p.isClosed() {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), s.cfg.requestTimeout)
	defer cancel()
	err := p.cl.AbortBufferedRecords(ctx)
	if err == nil {
		err = p.cl.EndTransaction(ctx, kgo.TryAbort)
	}
	s.release(t)
	// An abort that fails is not an error: the broker times the
	// transaction out, or the next attempt's OpenSubtask aborts it.
	_ = err
	return nil
}
