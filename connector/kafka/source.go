package kafka

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/connector"
)

// Option configures a Source or a Sink; each option says which it applies
// to (WithBrokers and WithClientOptions apply to both).
type Option func(*config)

type config struct {
	brokers        []string
	topics         []string
	pattern        *regexp.Regexp
	group          string
	start          Offsets
	stop           *Offsets
	discovery      time.Duration
	discoverySet   bool
	readCommitted  bool
	deadTag        string
	requestTimeout time.Duration
	maxPoll        int
	opts           []kgo.Opt

	// the sink's (sink.go)
	guarantee    DeliveryGuarantee
	defaultTopic string
	txnPrefix    string
	txnTimeout   time.Duration
	partitioner  kgo.Partitioner
}

// WithBrokers sets the seed brokers ("host:port"); required.
func WithBrokers(addrs ...string) Option {
	return func(c *config) { c.brokers = append(c.brokers, addrs...) }
}

// WithTopics reads the given topics (Flink's setTopics).
func WithTopics(topics ...string) Option {
	return func(c *config) { c.topics = append(c.topics, topics...) }
}

// WithTopicPattern reads every topic whose name matches re (anchored as
// given: "^orders-.*$"), including topics created while the job runs,
// found by partition discovery. Internal topics never match.
func WithTopicPattern(re *regexp.Regexp) Option {
	return func(c *config) { c.pattern = re }
}

// WithGroupID sets the consumer group to which offsets are committed
// when a checkpoint completes (for monitoring: lag tools read them; the job
// restores from its checkpoints, never from these) and from which
// Committed starting offsets are read. The source does not join the
// group: partitions are assigned by the job.
func WithGroupID(id string) Option { return func(c *config) { c.group = id } }

// WithStartingOffsets sets where partitions found at the job's start are
// read from (default Earliest). Partitions discovered later are read from
// their earliest offset, as Flink does.
func WithStartingOffsets(o Offsets) Option { return func(c *config) { c.start = o } }

// WithBounded makes the source bounded: each partition is read up to the
// offset stop resolves when the partition is assigned (exclusive), then
// ends; when all have, the source ends, so the same job can backfill and
// finish. Latest() stops at the end of each partition at the job's start.
// A bounded source discovers its partitions once, at the start
// (WithPartitionDiscovery is ignored), as Flink's.
func WithBounded(stop Offsets) Option { return func(c *config) { c.stop = &stop } }

// WithPartitionDiscovery sets how often the source looks for new partitions
// and new topics matching the pattern (default 5 minutes, as Flink's
// partition.discovery.interval.ms; 0 disables it). It also notices a
// topic that was deleted while the job read it, which fails the job.
func WithPartitionDiscovery(interval time.Duration) Option {
	return func(c *config) { c.discovery, c.discoverySet = interval, true }
}

// WithReadCommitted reads only records of committed transactions
// (isolation.level=read_committed), as a consumer of an exactly-once
// producer should; Latest then means the last stable offset.
func WithReadCommitted() Option { return func(c *config) { c.readCommitted = true } }

// WithDeadLetters sends records that fail to deserialize to the side
// output tag, as DeadLetter values carrying the raw record and the error,
// instead of failing the job: read them with weir.SideOutput(stream, tag).
func WithDeadLetters(tag weir.OutputTag[DeadLetter]) Option {
	return func(c *config) { c.deadTag = tag.TagID() }
}

// WithRequestTimeout bounds each discovery, including the first at the
// job's start: brokers that cannot be reached within it fail the job with
// an error naming them (default 30 s).
func WithRequestTimeout(d time.Duration) Option {
	return func(c *config) { c.requestTimeout = d }
}

// WithClientOptions passes options to the franz-go client (TLS, SASL, a
// dialer, fetch sizes).
func WithClientOptions(opts ...kgo.Opt) Option {
	return func(c *config) { c.opts = append(c.opts, opts...) }
}

// Source reads Kafka topics; build it with NewSource and add it to a job
// with weir.FromDynamicSource (it is a connector.DynamicSource). Each partition is a split with its own watermark
// generator; records carry the Kafka record timestamp unless the
// watermark strategy's timestamp assigner says otherwise.
type Source[T any] struct {
	cfg   config
	deser Deserializer[T]
	err   error
}

// NewSource returns a source that decodes records with deser. Invalid
// settings are reported when the job is built (weir.Environment.Execute).
func NewSource[T any](deser Deserializer[T], opts ...Option) *Source[T] {
	c := config{start: Earliest(), discovery: 5 * time.Minute, requestTimeout: 30 * time.Second, maxPoll: 4096}
	for _, o := range opts {
		o(&c)
	}
	s := &Source[T]{cfg: c, deser: deser}
	var errs []error
	if deser == nil {
		errs = append(errs, errors.New("the deserializer is nil"))
	}
	if len(c.brokers) == 0 {
		errs = append(errs, errors.New("no brokers (WithBrokers)"))
	}
	if (len(c.topics) == 0) == (c.pattern == nil) {
		errs = append(errs, errors.New("give either topics (WithTopics) or a pattern (WithTopicPattern)"))
	}
	for _, t := range c.topics {
		if t == "" {
			errs = append(errs, errors.New("empty topic name"))
		}
	}
	if err := c.start.validate(c.group); err != nil {
		errs = append(errs, fmt.Errorf("starting offsets: %w", err))
	}
	if c.stop != nil {
		if err := c.stop.validate(c.group); err != nil {
			errs = append(errs, fmt.Errorf("stopping offsets: %w", err))
		}
		s.cfg.discovery = 0 // bounded: one discovery
	}
	if c.discovery < 0 || c.requestTimeout <= 0 {
		errs = append(errs, fmt.Errorf("partition discovery interval %v and request timeout %v must not be negative (nor the timeout zero)", c.discovery, c.requestTimeout))
	}
	if len(errs) > 0 {
		s.err = fmt.Errorf("kafka source: %w", errors.Join(errs...))
	}
	return s
}

// Validate implements connector.Validator: the job refuses invalid settings
// before anything runs.
func (s *Source[T]) Validate(context.Context) error { return s.err }

// SplitOwner implements connector.DynamicSource with Flink's assignment.
func (s *Source[T]) SplitOwner(sp connector.Split, parallelism int) int {
	return splitOwner(sp.(partitionSplit).tp(), parallelism)
}

// ClusterTopics returns the brokers and topics of the source, for the
// cluster engine (package kafkacluster), in which a task reads one
// partition of each of them; it fails for settings a cluster cannot run.
func (s *Source[T]) ClusterTopics() (brokers, topics []string, err error) {
	switch {
	case s.err != nil:
		return nil, nil, s.err
	case s.cfg.pattern != nil:
		return nil, nil, errors.New("kafka source: a topic pattern cannot run in a cluster, whose tasks are fixed partitions of fixed topics; list the topics (WithTopics)")
	case s.cfg.stop != nil:
		return nil, nil, errors.New("kafka source: a bounded source (WithBounded) cannot run in a cluster, which runs until stopped")
	}
	return s.cfg.brokers, s.cfg.topics, nil
}

// SplitPartition implements the cluster-source interface.
func (s *Source[T]) SplitPartition(sp connector.Split) int { return int(sp.(partitionSplit).Partition) }

// SplitOffsets returns, for the cluster engine, the offset of the next
// record to read per topic and partition of a snapshot's encoded splits
// and positions: the position of a split, or the resolved start of a
// partition not read yet.
func (s *Source[T]) SplitOffsets(splits, positions map[string][]byte) (map[string]map[int32]int64, error) {
	out := make(map[string]map[int32]int64)
	for id, data := range splits {
		sp, err := decodeSplit(data)
		if err != nil {
			return nil, err
		}
		next := sp.Start
		if pos, ok := positions[id]; ok {
			if next, err = decodePosition(pos); err != nil {
				return nil, err
			}
		}
		if out[sp.Topic] == nil {
			out[sp.Topic] = map[int32]int64{}
		}
		out[sp.Topic][sp.Partition] = next
	}
	return out, nil
}

// EncodeSplit implements connector.DynamicSource.
func (s *Source[T]) EncodeSplit(sp connector.Split) ([]byte, error) {
	return encodeSplit(sp.(partitionSplit))
}

// DecodeSplit implements connector.DynamicSource.
func (s *Source[T]) DecodeSplit(data []byte) (connector.Split, error) { return decodeSplit(data) }

// NewSubtaskReader implements connector.DynamicSource: one franz-go client per
// subtask reads all its partitions.
func (s *Source[T]) NewSubtaskReader(info connector.SubtaskInfo) (connector.SubtaskReader[T], error) {
	if s.err != nil {
		return nil, s.err
	}
	opts := []kgo.Opt{
		kgo.SeedBrokers(s.cfg.brokers...),
		kgo.KeepControlRecords(), // their offsets count: positions and stops are exact
		kgo.KeepRetryableFetchErrors(),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		// Added partitions are fetched once their leader is known: look
		// it up soon (the default minimum age is 5 s).
		kgo.MetadataMinAge(250 * time.Millisecond),
		// A long poll holds partitions added meanwhile back until it
		// returns: wait at most 500 ms, as the Java consumer's
		// fetch.max.wait.ms (franz-go's default is 5 s).
		kgo.FetchMaxWait(500 * time.Millisecond),
		// Reading a backlog, each fetch round trip costs a request on the
		// broker and a wake-up here: 16 MiB per partition (the Java
		// consumer's and franz-go's default is 1 MiB) takes the backlog in
		// fewer of them. The whole fetch stays within FetchMaxBytes (50 MiB
		// per broker). Nexmark q0 over 1,000,000 records: see BENCHMARKS.md.
		kgo.FetchMaxPartitionBytes(16 << 20),
		kgo.ClientID("weir-" + info.Name + "-" + strconv.Itoa(info.Subtask)),
	}
	if s.cfg.readCommitted {
		opts = append(opts, kgo.FetchIsolationLevel(kgo.ReadCommitted()))
	}
	opts = append(opts, s.cfg.opts...)
	cl, err := newClient(opts...)
	if err != nil {
		return nil, fmt.Errorf("kafka source: %w", err)
	}
	r := &subtaskReader[T]{
		src: s, info: info, cl: cl, adm: kadm.NewClient(cl),
		parts: map[string]*partState{}, topics: map[string]bool{},
		queue: map[string]*queued{}, paused: map[string]bool{},
	}
	r.res = resolver{adm: r.adm, group: s.cfg.group, readCommitted: s.cfg.readCommitted}
	if s.cfg.group != "" {
		r.commits = make(chan kadm.Offsets, 1)
		r.commitDone = make(chan struct{})
		ctx, cancel := context.WithCancel(context.Background())
		r.stopCommits = cancel
		go r.commitLoop(ctx)
	}
	return r, nil
}

// partState is a partition a subtask reads.
type partState struct {
	tp    TopicPartition
	id    string
	next  atomic.Int64 // offset of the next record (written by Fetch)
	stop  int64        // noStop or exclusive end
	ended atomic.Bool  // written by Fetch, read by PauseOrResumeSplits on the task goroutine
	lag   atomic.Int64 // -1: unknown
}

// subtaskReader reads the partitions of one source subtask.
type subtaskReader[T any] struct {
	src  *Source[T]
	info connector.SubtaskInfo
	cl   *kgo.Client
	adm  *kadm.Client
	res  resolver

	mu        sync.Mutex
	parts     map[string]*partState // by split id
	topics    map[string]bool       // topics with partitions here
	ends      []string              // splits that ended without a fetch
	wake      context.CancelFunc    // cuts a blocked poll short
	wakeAsked bool
	queue     map[string]*queued // fetched, not handed on yet, by split id (Fetch)
	order     []string           // the split ids of queue, sorted
	rr        int                // where Fetch's next round starts in order
	paused    map[string]bool    // split ids paused for watermark alignment

	commits     chan kadm.Offsets
	commitDone  chan struct{}
	stopCommits context.CancelFunc

	rec ConsumerRecord // decode's, reused (Fetch's goroutine only)
}

// DiscoveryInterval implements connector.SubtaskReader.
func (r *subtaskReader[T]) DiscoveryInterval() time.Duration { return r.src.cfg.discovery }

// Discover implements connector.SubtaskReader: it lists the topics, checks
// that none this subtask reads was deleted, and resolves the starting
// (and stopping) offsets of the partitions this subtask owns and does not
// know yet.
func (r *subtaskReader[T]) Discover(ctx context.Context, first bool, known func(string) bool) ([]connector.Split, error) {
	cfg := &r.src.cfg
	ctx, cancel := context.WithTimeout(ctx, cfg.requestTimeout)
	defer cancel()
	var (
		details kadm.TopicDetails
		err     error
		reason  error // the last error that is not the deadline's
	)
	// Brokers that refuse connections are retried until the timeout (a
	// broker restarting), then the job fails naming them and the last
	// reason they gave (an attempt cut by the deadline has none).
	for {
		if cfg.pattern != nil {
			details, err = r.adm.ListTopics(ctx)
		} else {
			details, err = r.adm.ListTopics(ctx, cfg.topics...)
		}
		if err == nil {
			break
		}
		if ctx.Err() == nil || reason == nil {
			reason = err
		}
		select {
		case <-ctx.Done():
			return nil, r.unreachable(ctx, reason)
		case <-time.After(200 * time.Millisecond):
		}
	}
	r.mu.Lock()
	mine := make([]string, 0, len(r.topics))
	for t := range r.topics {
		mine = append(mine, t)
	}
	r.mu.Unlock()
	sort.Strings(mine)
	for _, t := range mine {
		if d, ok := details[t]; !ok || errors.Is(d.Err, kerr.UnknownTopicOrPartition) {
			return nil, fmt.Errorf("kafka source: topic %q was deleted while the job read it", t)
		}
	}
	var candidates []TopicPartition
	for _, name := range details.Names() {
		d := details[name]
		if cfg.pattern != nil && (d.IsInternal || !cfg.pattern.MatchString(name)) {
			continue
		}
		if d.Err != nil {
			if errors.Is(d.Err, kerr.UnknownTopicOrPartition) {
				return nil, fmt.Errorf("kafka source: topic %q does not exist", name)
			}
			return nil, fmt.Errorf("kafka source: topic %q: %w", name, d.Err)
		}
		for _, p := range d.Partitions.Numbers() {
			tp := TopicPartition{name, p}
			if known(tp.String()) || !r.owns(tp) {
				continue
			}
			candidates = append(candidates, tp)
		}
	}
	if len(candidates) == 0 {
		return nil, nil
	}
	startAt := Earliest()
	if first {
		startAt = cfg.start
	}
	starts, err := r.res.resolve(ctx, startAt, candidates)
	if err != nil {
		return nil, fmt.Errorf("kafka source: starting offsets (%s): %w", startAt, r.unreachable(ctx, err))
	}
	var stops map[TopicPartition]int64
	if cfg.stop != nil {
		if stops, err = r.res.resolve(ctx, *cfg.stop, candidates); err != nil {
			return nil, fmt.Errorf("kafka source: stopping offsets (%s): %w", *cfg.stop, r.unreachable(ctx, err))
		}
	}
	out := make([]connector.Split, 0, len(candidates))
	for _, tp := range candidates {
		sp := partitionSplit{Topic: tp.Topic, Partition: tp.Partition, Start: starts[tp], Stop: noStop}
		if stops != nil {
			sp.Stop = stops[tp]
		}
		out = append(out, sp)
	}
	return out, nil
}

// owns reports whether the subtask reads partition tp: Flink's assignment,
// or in a cluster task the task's partition of every topic.
func (r *subtaskReader[T]) owns(tp TopicPartition) bool {
	if r.info.Partition >= 0 {
		return int(tp.Partition) == r.info.Partition
	}
	return splitOwner(tp, r.info.Parallelism) == r.info.Subtask
}

// unreachable words an error met when the deadline passed.
func (r *subtaskReader[T]) unreachable(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return fmt.Errorf("kafka source: no answer from the brokers %v within %v: %w", r.src.cfg.brokers, r.src.cfg.requestTimeout, err)
	}
	return err
}

// AddSplits implements connector.SubtaskReader.
func (r *subtaskReader[T]) AddSplits(splits []connector.Split, positions [][]byte) error {
	add := map[string]map[int32]kgo.Offset{}
	r.mu.Lock()
	defer r.mu.Unlock()
	for i, s := range splits {
		sp := s.(partitionSplit)
		st := &partState{tp: sp.tp(), id: sp.SplitID(), stop: sp.Stop}
		st.lag.Store(-1)
		st.next.Store(sp.Start)
		if positions[i] != nil {
			next, err := decodePosition(positions[i])
			if err != nil {
				return fmt.Errorf("kafka source: split %s: %w", st.id, err)
			}
			st.next.Store(next)
		}
		r.parts[st.id] = st
		r.topics[sp.Topic] = true
		if st.stop != noStop && st.next.Load() >= st.stop {
			st.ended.Store(true)
			r.ends = append(r.ends, st.id)
			continue
		}
		if add[sp.Topic] == nil {
			add[sp.Topic] = map[int32]kgo.Offset{}
		}
		add[sp.Topic][sp.Partition] = kgo.NewOffset().At(st.next.Load())
	}
	if len(add) > 0 {
		r.cl.AddConsumePartitions(add)
	}
	if len(r.ends) > 0 {
		r.wakeAsked = true
		if r.wake != nil {
			r.wake()
		}
	}
	return nil
}

// PauseOrResumeSplits implements connector.SplitPauser for watermark
// alignment: the client stops fetching the paused partitions (kgo's
// PauseFetchPartitions) until they are resumed, and the records Fetch has
// queued for them are held until then (nothing is lost or repeated: Fetch
// keeps the partition's position). A batch handed on before the pause
// took effect may still carry records of a paused partition.
func (r *subtaskReader[T]) PauseOrResumeSplits(pause, resume []string) error {
	r.mu.Lock()
	byTopic := func(ids []string) map[string][]int32 {
		var m map[string][]int32
		for _, id := range ids {
			if st := r.parts[id]; st != nil && !st.ended.Load() {
				if m == nil {
					m = map[string][]int32{}
				}
				m[st.tp.Topic] = append(m[st.tp.Topic], st.tp.Partition)
			}
		}
		return m
	}
	p, res := byTopic(pause), byTopic(resume)
	for _, id := range pause {
		r.paused[id] = true
	}
	wake := false
	for _, id := range resume {
		delete(r.paused, id)
		if q := r.queue[id]; q != nil && len(q.recs) > 0 {
			wake = true
		}
	}
	if wake {
		// Its queued records are ready: a poll waiting for records of
		// other partitions returns.
		r.wakeAsked = true
		if r.wake != nil {
			r.wake()
		}
	}
	r.mu.Unlock()
	if p != nil {
		r.cl.PauseFetchPartitions(p)
	}
	if res != nil {
		r.cl.ResumeFetchPartitions(res)
	}
	return nil
}

// queued is what the subtask fetched of a partition and has not handed
// on yet (Fetch).
type queued struct {
	st      *partState
	recs    []*kgo.Record
	end     int64 // the partition's end (high watermark, or last stable offset) in the last fetch; -1: unknown
	touched bool  // fetched since its last batch
}

// Fetch implements connector.SubtaskReader. Partitions are interleaved: a
// poll of the client takes every fetched record into per-partition queues,
// and each call hands on at most maxPoll records, an equal share of them
// per partition with queued records (the start rotating), so that a
// backlog of several partitions moves every partition's watermark on
// together instead of one partition after the other (kgo's PollRecords
// drains a fetch partition by partition). The client is polled again only
// when no partition that is not paused has queued records, so what is
// held is at most one fetch more than the client buffers.
func (r *subtaskReader[T]) Fetch(ctx context.Context, buf []connector.Record[T]) ([]connector.SplitBatch[T], []connector.Record[T], error) {
	var ferr error
	r.mu.Lock()
	ready := r.readyLocked()
	r.mu.Unlock()
	if !ready {
		var err error
		if ferr, err = r.poll(ctx); err != nil {
			return nil, buf, err
		}
	}
	r.mu.Lock()
	ends := r.ends
	r.ends = nil
	r.mu.Unlock()
	var batches []connector.SplitBatch[T]
	for _, id := range ends {
		batches = append(batches, connector.SplitBatch[T]{Split: id, End: true})
	}
	batches, buf, err := r.take(batches, buf)
	if err == nil {
		err = ferr
	}
	return batches, buf, err
}

// readyLocked reports whether a partition that is not paused has queued
// records. r.mu is held.
func (r *subtaskReader[T]) readyLocked() bool {
	for _, q := range r.queue {
		if len(q.recs) > 0 && !r.paused[q.st.id] {
			return true
		}
	}
	return false
}

// poll waits for fetched records (or a wake-up) and queues them; ferr is
// a fetch error to report after the records, err one that ends the call
// at once.
func (r *subtaskReader[T]) poll(ctx context.Context) (ferr, err error) {
	pctx, cancel := context.WithCancel(ctx)
	defer cancel()
	r.mu.Lock()
	r.wake = cancel
	if r.wakeAsked {
		cancel()
		r.wakeAsked = false
	}
	r.mu.Unlock()
	fs := r.cl.PollFetches(pctx)
	r.mu.Lock()
	r.wake = nil
	r.mu.Unlock()
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	if fs.IsClientClosed() {
		return nil, errors.New("kafka source: the client was closed")
	}
	fs.EachError(func(topic string, partition int32, err error) {
		if ferr != nil || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
			return
		}
		if errors.Is(err, kerr.UnknownTopicOrPartition) || errors.Is(err, kerr.UnknownTopicID) {
			if r.topicGone(ctx, topic) {
				ferr = fmt.Errorf("kafka source: topic %q was deleted while the job read it", topic)
			}
			return
		}
		if kerr.IsRetriable(err) {
			return // the client retries
		}
		ferr = fmt.Errorf("kafka source: fetching topic %q partition %d: %w", topic, partition, err)
	})
	r.mu.Lock()
	defer r.mu.Unlock()
	fs.EachPartition(func(p kgo.FetchTopicPartition) {
		if len(p.Records) == 0 && p.HighWatermark <= 0 {
			return
		}
		id := TopicPartition{p.Topic, p.Partition}.String()
		st := r.parts[id]
		if st == nil || st.ended.Load() {
			return
		}
		q := r.queue[id]
		if q == nil {
			q = &queued{st: st}
			r.queue[id] = q
			r.order = append(r.order, id)
		}
		q.recs = append(q.recs, p.Records...)
		q.end = p.HighWatermark
		if r.src.cfg.readCommitted {
			q.end = p.LastStableOffset
		}
		q.touched = true
	})
	return ferr, nil
}

// take hands on queued records: at most maxPoll, an equal share per
// partition with queued records that is not paused, and a batch for every
// partition fetched since its last one (its position and lag).
func (r *subtaskReader[T]) take(batches []connector.SplitBatch[T], buf []connector.Record[T]) ([]connector.SplitBatch[T], []connector.Record[T], error) {
	r.mu.Lock()
	n := 0
	for _, q := range r.queue {
		if len(q.recs) > 0 && !r.paused[q.st.id] {
			n++
		}
	}
	share := max(r.src.cfg.maxPoll/max(n, 1), 1)
	var todo []*queued
	var shares []int
	if len(r.order) > 0 {
		r.rr %= len(r.order)
		for i := range r.order {
			q := r.queue[r.order[(r.rr+i)%len(r.order)]]
			k := min(len(q.recs), share)
			if r.paused[q.st.id] {
				k = 0 // its records stay queued until it is resumed
			}
			if k == 0 && !q.touched {
				continue
			}
			todo = append(todo, q)
			shares = append(shares, k)
		}
		r.rr++
	}
	r.mu.Unlock()
	var err error
	var done []*queued
	for i, q := range todo {
		st := q.st
		start := len(buf)
		var side []connector.SideRecord
		next := st.next.Load()
		used, ended := 0, false
		for _, rec := range q.recs[:shares[i]] {
			used++
			if rec.Offset < next {
				continue // before the position (a compacted or re-sent batch)
			}
			if st.stop != noStop && rec.Offset >= st.stop {
				break
			}
			next = rec.Offset + 1
			if rec.Attrs.IsControl() {
				continue
			}
			var v T
			v, err = r.decode(rec, &side)
			if err == errDead || err == ErrSkip {
				err = nil
				continue
			}
			if err != nil {
				break
			}
			buf = append(buf, connector.Record[T]{Value: v, TS: rec.Timestamp.UnixMilli()})
		}
		if err != nil {
			break // the job fails: what this partition decoded is dropped
		}
		clear(q.recs[:used])
		q.recs = q.recs[used:]
		q.touched = false
		st.next.Store(next)
		if q.end >= 0 {
			st.lag.Store(max(q.end-next, 0))
		}
		if st.stop != noStop && next >= st.stop {
			st.ended.Store(true)
			ended = true
		}
		if ended || len(q.recs) == 0 {
			done = append(done, q)
		}
		batches = append(batches, connector.SplitBatch[T]{Split: st.id, Recs: buf[start:len(buf):len(buf)], Pos: encodePosition(next), End: ended, Side: side})
		if ended {
			r.cl.RemoveConsumePartitions(map[string][]int32{st.tp.Topic: {st.tp.Partition}})
		}
	}
	if len(done) > 0 {
		r.mu.Lock()
		for _, q := range done {
			if len(q.recs) == 0 || q.st.ended.Load() {
				delete(r.queue, q.st.id)
			}
		}
		r.order = r.order[:0]
		for id := range r.queue {
			r.order = append(r.order, id)
		}
		sort.Strings(r.order)
		r.mu.Unlock()
	}
	return batches, buf, err
}

var errDead = errors.New("dead letter")

// decode deserializes one record; a malformed one becomes a dead letter
// (errDead) or a MalformedError.
//
// The ConsumerRecord handed to the deserializer is the reader's own,
// reused for every record (one allocation less per record: the pointer
// escapes through the interface call), so it and its header slice are
// valid only during the call, as its documentation says.
func (r *subtaskReader[T]) decode(rec *kgo.Record, side *[]connector.SideRecord) (T, error) {
	hs := r.rec.Headers[:0]
	for _, h := range rec.Headers {
		hs = append(hs, Header{Key: h.Key, Value: h.Value})
	}
	r.rec = ConsumerRecord{Topic: rec.Topic, Partition: rec.Partition, Offset: rec.Offset,
		Timestamp: rec.Timestamp.UnixMilli(), Key: rec.Key, Value: rec.Value, Headers: hs}
	if len(hs) == 0 {
		r.rec.Headers = nil // the deserializer sees no headers as nil, as before
	}
	v, err := r.src.deser.Deserialize(&r.rec)
	r.rec.Headers = hs
	if err == nil || errors.Is(err, ErrSkip) {
		return v, err
	}
	if r.src.cfg.deadTag == "" {
		return v, &MalformedError{Topic: rec.Topic, Partition: rec.Partition, Offset: rec.Offset, Err: err}
	}
	cr := r.rec
	cr.Key = append([]byte(nil), cr.Key...)
	cr.Value = append([]byte(nil), cr.Value...)
	cr.Headers = nil
	for _, h := range hs {
		cr.Headers = append(cr.Headers, Header{Key: h.Key, Value: append([]byte(nil), h.Value...)})
	}
	*side = append(*side, connector.SideRecord{Tag: r.src.cfg.deadTag, Value: DeadLetter{Record: cr, Error: err.Error()}, TS: cr.Timestamp})
	return v, errDead
}

// topicGone asks the brokers whether topic still exists.
func (r *subtaskReader[T]) topicGone(ctx context.Context, topic string) bool {
	ctx, cancel := context.WithTimeout(ctx, r.src.cfg.requestTimeout)
	defer cancel()
	d, err := r.adm.ListTopics(ctx, topic)
	if err != nil {
		return false
	}
	t, ok := d[topic]
	return !ok || errors.Is(t.Err, kerr.UnknownTopicOrPartition)
}

// CommitPositions implements connector.PositionCommitter: the positions of a
// completed checkpoint go to the consumer group, asynchronously; a newer
// checkpoint's replace an older one's not sent yet.
func (r *subtaskReader[T]) CommitPositions(_ int64, positions map[string][]byte) {
	if r.commits == nil {
		return
	}
	offs := kadm.Offsets{}
	r.mu.Lock()
	for id, pos := range positions {
		st := r.parts[id]
		next, err := decodePosition(pos)
		if st == nil || err != nil {
			continue
		}
		offs.AddOffset(st.tp.Topic, st.tp.Partition, next, -1)
	}
	r.mu.Unlock()
	if len(offs) == 0 {
		return
	}
	for {
		select {
		case r.commits <- offs:
			return
		default:
		}
		select {
		case <-r.commits: // drop the older one
		default:
		}
	}
}

func (r *subtaskReader[T]) commitLoop(ctx context.Context) {
	defer close(r.commitDone)
	for {
		select {
		case <-ctx.Done():
			return
		case offs := <-r.commits:
			cctx, cancel := context.WithTimeout(ctx, r.src.cfg.requestTimeout)
			resp, err := r.adm.CommitOffsets(cctx, r.src.cfg.group, offs)
			cancel()
			if err == nil {
				err = resp.Error()
			}
			_ = err // monitoring only: the next checkpoint commits again
		}
	}
}

// Gauges implements connector.GaugeReporter: per partition, the position
// (kafka_current_offset: the offset of the next record to read) and, once
// a fetch has told the end, the consumer lag (kafka_consumer_lag: end
// offset, or last stable offset when reading committed records, minus the
// position).
func (r *subtaskReader[T]) Gauges() []connector.Gauge {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]connector.Gauge, 0, 2*len(r.parts))
	for _, st := range r.parts {
		labels := map[string]string{"topic": st.tp.Topic, "partition": strconv.Itoa(int(st.tp.Partition))}
		out = append(out, connector.Gauge{Name: "kafka_current_offset", Value: float64(st.next.Load()), Labels: labels})
		if lag := st.lag.Load(); lag >= 0 {
			out = append(out, connector.Gauge{Name: "kafka_consumer_lag", Value: float64(lag), Labels: labels})
		}
	}
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i].Labels, out[j].Labels
		if a["topic"] != b["topic"] {
			return a["topic"] < b["topic"]
		}
		return len(a["partition"]) < len(b["partition"]) || len(a["partition"]) == len(b["partition"]) && a["partition"] < b["partition"]
	})
	return out
}

// Close implements connector.SubtaskReader.
func (r *subtaskReader[T]) Close() error {
	if r.stopCommits != nil {
		r.stopCommits()
		<-r.commitDone
	}
	r.cl.Close()
	return nil
}

var _ connector.SplitPauser = (*subtaskReader[int])(nil)
