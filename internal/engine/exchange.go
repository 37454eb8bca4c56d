package engine

import (
	"cmp"
	"context"
	"fmt"
	"math/rand/v2"
	"reflect"
	"runtime/debug"
	"time"

	"github.com/weirstream/weir/internal/clock"
	"github.com/weirstream/weir/internal/sketch"
)

// Partitioning says how an edge routes records to consumer subtasks.
type Partitioning int

const (
	// PartitionDefault is forward when the parallelisms match, else rebalance.
	PartitionDefault Partitioning = iota
	// PartitionForward sends subtask i's records to subtask i.
	PartitionForward
	// PartitionRebalance sends records round-robin.
	PartitionRebalance
	// PartitionHash routes by key group.
	PartitionHash
	// PartitionBroadcast sends every record to every consumer.
	PartitionBroadcast
	// PartitionGlobal sends everything to subtask 0.
	PartitionGlobal
	// PartitionCustom routes each record with a user partitioner
	// (Flink's CustomPartitionerWrapper).
	PartitionCustom
	// PartitionShuffle sends each record to a consumer chosen at random
	// (Flink's ShufflePartitioner).
	PartitionShuffle
	// PartitionRescale is pointwise round robin (Flink's
	// RescalePartitioner): each producer feeds a fixed subset of the
	// consumers, or each consumer reads a fixed subset of the producers,
	// as Flink's POINTWISE distribution pattern (see RescaleProducers).
	PartitionRescale
)

func (p Partitioning) String() string {
	switch p {
	case PartitionForward:
		return "FORWARD"
	case PartitionRebalance:
		return "REBALANCE"
	case PartitionHash:
		return "HASH"
	case PartitionBroadcast:
		return "BROADCAST"
	case PartitionGlobal:
		return "GLOBAL"
	case PartitionCustom:
		return "CUSTOM"
	case PartitionShuffle:
		return "SHUFFLE"
	case PartitionRescale:
		return "RESCALE"
	}
	return "DEFAULT"
}

// message is one unit of work in a task's inbox.
type message interface {
	process() error
}

// ExchangeConfig sizes an exchange.
type ExchangeConfig struct {
	BatchSize int // records per batch
	Credits   int // batches in flight per producer-consumer channel
	// Target names the consumer (its head operator), for metrics.
	Target string
	// KeySample is the key-sketch sampling stride of a hash exchange: one
	// record in KeySample has its key counted (0: no sketch).
	KeySample int
	// KeyString renders a record's key for the sketch (func(*T) string;
	// nil: no sketch).
	KeyString any
	// KeyName names a hash exchange's keyBy in the error of a panicking
	// key selector (with Target, the operator it feeds).
	KeyName string
}

// Exchange is a network edge between the subtasks of two tasks, carrying
// batches of records and control elements. Each producer-consumer channel
// has a fixed number of credits: a producer that has used them all blocks
// (backpressure) until the consumer has processed a batch.
type Exchange[T any] struct {
	cfg       ExchangeConfig
	kind      Partitioning
	route     func(*T) int // hash and custom routing: the consumer index of a record
	producers int
	consumers []exReader[T]
	free      chan *batchMsg[T]
	ptrs      bool
	size      int64           // bytes per record
	keyString func(*T) string // hash exchanges with a key sketch
	keyFn     func(*T) string // the key of a keyBy's record, for input capture
	// For a rescale exchange: the producers feeding each consumer and the
	// consumers each producer feeds, as [first, end) ranges.
	fedBy, feeds [][2]int
}

type exReader[T any] struct {
	gate   *Gate[T]
	offset int
	inbox  chan message
}

type batchMsg[T any] struct {
	recs   []Record[T]
	ctrls  []ctrl
	ch     int
	ex     *Exchange[T]
	reader *exReader[T]
	credit chan struct{}
	r, c   int // resume position after a blocking barrier
}

// process delivers the batch, or what is left of it. A batch of a channel
// blocked by checkpoint alignment is held by the aligner, keeping its
// credit, and processed again when the alignment ends.
func (m *batchMsg[T]) process() error {
	g := m.reader.gate
	ch := m.reader.offset + m.ch
	if g.align != nil && g.align.blocked(g.index, ch) {
		g.align.hold(g.index, ch, m)
		return nil
	}
	r, c, paused, err := g.deliverFrom(ch, m.recs, m.ctrls, m.r, m.c)
	if paused && err == nil && (r < len(m.recs) || c < len(m.ctrls)) {
		m.r, m.c = r, c
		g.align.hold(g.index, ch, m)
		return nil
	}
	m.r, m.c = 0, 0
	<-m.credit
	m.ex.recycle(m)
	return err
}

// NewExchange returns an exchange between producers and consumers subtasks.
// For PartitionHash and PartitionCustom, route maps a record to its
// consumer index (a custom route may return any int: one outside
// [0, consumers) fails the producer).
func NewExchange[T any](kind Partitioning, route func(*T) int, producers, consumers int, cfg ExchangeConfig) (*Exchange[T], error) {
	if kind == PartitionForward && producers != consumers {
		return nil, fmt.Errorf("forward partitioning needs equal parallelism, have %d and %d", producers, consumers)
	}
	if (kind == PartitionHash || kind == PartitionCustom) && route == nil {
		return nil, fmt.Errorf("%v partitioning needs a key", kind)
	}
	if cfg.BatchSize < 1 {
		cfg.BatchSize = 1
	}
	if cfg.Credits < 1 {
		cfg.Credits = 1
	}
	x := &Exchange[T]{
		cfg: cfg, kind: kind, route: route, producers: producers,
		consumers: make([]exReader[T], consumers),
		free:      make(chan *batchMsg[T], producers*consumers*cfg.Credits),
		ptrs:      hasPointers(reflect.TypeFor[T]()),
		size:      recordSize[T](),
		keyString: keyStringOf[T](kind, cfg),
		keyFn:     keyFnOf[T](cfg),
	}
	if kind == PartitionRescale {
		x.feeds, x.fedBy = make([][2]int, producers), make([][2]int, consumers)
		for c := range consumers {
			x.fedBy[c] = RescaleProducers(c, producers, consumers)
			for p := x.fedBy[c][0]; p < x.fedBy[c][1]; p++ {
				if x.feeds[p][1] == 0 {
					x.feeds[p][0] = c
				}
				x.feeds[p][1] = c + 1
			}
		}
	}
	return x, nil
}

// RescaleProducers returns the producers [first, end) that feed consumer
// c of a rescale (pointwise) edge from producers to consumers subtasks, as
// Flink's POINTWISE distribution pattern connects them
// (EdgeManagerBuildUtil.connectPointwise): with equal parallelism producer
// i feeds consumer i; with more producers than consumers, consumer c reads
// producers [c*P/C, (c+1)*P/C); with fewer, producer i feeds consumers
// [ceil(i*C/P), ceil((i+1)*C/P)), so each consumer reads one producer.
// Every consumer reads at least one producer and every producer feeds at
// least one consumer.
func RescaleProducers(c, producers, consumers int) [2]int {
	p, n := producers, consumers
	switch {
	case p == n:
		return [2]int{c, c + 1}
	case p > n:
		return [2]int{c * p / n, (c + 1) * p / n}
	}
	// The producer i whose consumer range [ceil(i*n/p), ceil((i+1)*n/p))
	// holds c: the largest i with ceil(i*n/p) <= c.
	i := (c*p + p - 1) / n
	for i > 0 && (i*n+p-1)/p > c {
		i--
	}
	for i+1 < p && ((i+1)*n+p-1)/p <= c {
		i++
	}
	return [2]int{i, i + 1}
}

func keyFnOf[T any](cfg ExchangeConfig) func(*T) string {
	f, _ := cfg.KeyString.(func(*T) string)
	return f
}

func keyStringOf[T any](kind Partitioning, cfg ExchangeConfig) func(*T) string {
	f, _ := cfg.KeyString.(func(*T) string)
	if kind != PartitionHash || cfg.KeySample <= 0 {
		return nil
	}
	return f
}

// Consumers returns the number of consumer subtasks.
func (x *Exchange[T]) Consumers() int { return len(x.consumers) }

// Producers returns the number of producer subtasks.
func (x *Exchange[T]) Producers() int { return x.producers }

// Channels returns how many input channels the exchange gives consumer c:
// one for a forward exchange (subtask i reads only producer i, as Flink's
// forward partitioner), the producers that feed it for a rescale exchange,
// else one per producer.
func (x *Exchange[T]) Channels(c int) int {
	switch x.kind {
	case PartitionForward:
		return 1
	case PartitionRescale:
		return x.fedBy[c][1] - x.fedBy[c][0]
	}
	return x.producers
}

// Attach connects consumer subtask i: its batches go to inbox and feed the
// gate's channels offset..offset+producers-1.
func (x *Exchange[T]) Attach(i int, gate *Gate[T], offset int, inbox chan message) {
	x.consumers[i] = exReader[T]{gate: gate, offset: offset, inbox: inbox}
}

func (x *Exchange[T]) recycle(m *batchMsg[T]) {
	clearRecords(m.recs, x.ptrs)
	m.recs = m.recs[:0]
	m.ctrls = m.ctrls[:0]
	select {
	case x.free <- m:
	default:
	}
}

func (x *Exchange[T]) get() *batchMsg[T] {
	select {
	case m := <-x.free:
		return m
	default:
		return &batchMsg[T]{recs: make([]Record[T], 0, x.cfg.BatchSize), ex: x}
	}
}

// Writer returns the producing side of subtask p. It is an Input, so an
// Output can target it; the task flushes it after each step.
func (x *Exchange[T]) Writer(ctx context.Context, p int, m *TaskMetrics) *Writer[T] {
	w := &Writer[T]{x: x, ctx: ctx, p: p, next: p, metrics: m,
		pending: make([]*batchMsg[T], len(x.consumers)),
		credits: make([]chan struct{}, len(x.consumers)),
	}
	switch x.kind {
	case PartitionRescale:
		// Flink's RescalePartitioner starts at the first channel of the
		// subset it feeds.
		w.next = x.feeds[p][0]
	case PartitionShuffle:
		w.rand = rand.New(rand.NewPCG(rand.Uint64(), uint64(p)))
	}
	for c := range x.consumers {
		w.credits[c] = make(chan struct{}, x.cfg.Credits)
	}
	if x.keyString != nil && m != nil {
		w.sketch = &KeySketch{Target: x.cfg.Target, Every: x.cfg.KeySample, Sketch: sketch.NewSpaceSaving(keySketchCapacity)}
		w.skip = x.cfg.KeySample / 2
		m.KeySketches = append(m.KeySketches, w.sketch)
	}
	return w
}

// Writer is the producing end of an exchange for one producer subtask.
type Writer[T any] struct {
	x       *Exchange[T]
	ctx     context.Context
	p       int
	next    int
	pending []*batchMsg[T]
	credits []chan struct{}
	metrics *TaskMetrics
	sketch  *KeySketch // hash exchanges: sampled keys
	skip    int        // records until the next sampled one
	rand    *rand.Rand // shuffle
	// activity stops while a send waits for credit (FLIP-471: time the
	// task is blocked by backpressure is not time without input).
	activity *clock.Pausable
}

func (w *Writer[T]) buf(c int) *batchMsg[T] {
	m := w.pending[c]
	if m == nil {
		m = w.x.get()
		switch w.x.kind {
		case PartitionForward:
			m.ch = 0
		case PartitionRescale:
			m.ch = w.p - w.x.fedBy[c][0]
		default:
			m.ch = w.p
		}
		m.reader = &w.x.consumers[c]
		m.credit = w.credits[c]
		w.pending[c] = m
	}
	return m
}

// add appends *r to consumer c's pending batch (the one copy of the
// record) and sends the batch when it is full.
func (w *Writer[T]) add(c int, r *Record[T]) error {
	m := w.buf(c)
	m.recs = append(m.recs, *r)
	if len(m.recs) >= w.x.cfg.BatchSize {
		return w.send(c)
	}
	return nil
}

// ProcessBatch routes records to the consumers' pending batches.
func (w *Writer[T]) ProcessBatch(recs []Record[T]) error {
	n := len(w.x.consumers)
	if w.metrics != nil {
		w.metrics.IO.RecordsOut.Add(int64(len(recs)))
	}
	switch w.x.kind {
	case PartitionForward:
		c := w.p
		for i := 0; i < len(recs); {
			m := w.buf(c)
			k := min(len(recs)-i, w.x.cfg.BatchSize-len(m.recs))
			m.recs = append(m.recs, recs[i:i+k]...)
			i += k
			if len(m.recs) >= w.x.cfg.BatchSize {
				if err := w.send(c); err != nil {
					return err
				}
			}
		}
	case PartitionGlobal:
		for i := range recs {
			if err := w.add(0, &recs[i]); err != nil {
				return err
			}
		}
	case PartitionHash:
		return w.routeByKey(recs)
	case PartitionCustom:
		route := w.x.route
		for i := range recs {
			c := route(&recs[i].Value)
			if c < 0 || c >= n {
				return fmt.Errorf("custom partitioner returned partition %d for %d partitions (record %v)", c, n, recs[i].Value)
			}
			if err := w.add(c, &recs[i]); err != nil {
				return err
			}
		}
	case PartitionShuffle:
		for i := range recs {
			if err := w.add(w.rand.IntN(n), &recs[i]); err != nil {
				return err
			}
		}
	case PartitionRescale:
		first, end := w.x.feeds[w.p][0], w.x.feeds[w.p][1]
		for i := range recs {
			c := w.next
			if w.next++; w.next == end {
				w.next = first
			}
			if err := w.add(c, &recs[i]); err != nil {
				return err
			}
		}
	case PartitionBroadcast:
		for i := range recs {
			for c := 0; c < n; c++ {
				if err := w.add(c, &recs[i]); err != nil {
					return err
				}
			}
		}
	default: // rebalance
		for i := range recs {
			c := w.next
			w.next++
			if w.next == n {
				w.next = 0
			}
			if err := w.add(c%n, &recs[i]); err != nil {
				return err
			}
		}
	}
	return nil
}

// routeByKey sends each record to the consumer that owns its key group. The
// key selector runs here, in the producing task: a panic in it fails the
// job naming the keyBy and the operator it feeds, not the producer.
func (w *Writer[T]) routeByKey(recs []Record[T]) (err error) {
	defer func() {
		if r := recover(); r != nil {
			e, ok := r.(error)
			if !ok {
				e = fmt.Errorf("%v", r)
			}
			name := cmp.Or(w.x.cfg.KeyName, "KeyBy")
			err = &OperatorError{Operator: name, Subtask: w.p, Stack: string(debug.Stack()),
				Err: fmt.Errorf("key selector (keying the input of %q): %w", w.x.cfg.Target, e)}
		}
	}()
	if w.sketch != nil {
		w.sample(recs)
	}
	route := w.x.route
	for i := range recs {
		if err := w.add(route(&recs[i].Value), &recs[i]); err != nil {
			return err
		}
	}
	return nil
}

func (w *Writer[T]) broadcastCtrl(c ctrl) error {
	if w.x.kind == PartitionForward {
		// A forward channel is the only link between the two subtasks.
		m := w.buf(w.p)
		c.pos = len(m.recs)
		m.ctrls = append(m.ctrls, c)
		return w.Flush()
	}
	first, end := 0, len(w.x.consumers)
	if w.x.kind == PartitionRescale {
		// A producer is a channel of the consumers it feeds only.
		first, end = w.x.feeds[w.p][0], w.x.feeds[w.p][1]
	}
	for i := first; i < end; i++ {
		m := w.buf(i)
		c.pos = len(m.recs)
		m.ctrls = append(m.ctrls, c)
	}
	return w.Flush()
}

// ProcessWatermark sends a watermark to every consumer.
func (w *Writer[T]) ProcessWatermark(wm int64) error {
	return w.broadcastCtrl(ctrl{kind: ctrlWatermark, wm: wm})
}

// ProcessStatus sends a status change to every consumer.
func (w *Writer[T]) ProcessStatus(idle bool) error {
	return w.broadcastCtrl(ctrl{kind: ctrlStatus, idle: idle})
}

// Barrier sends a checkpoint barrier to every consumer.
func (w *Writer[T]) Barrier(b Barrier) error {
	return w.broadcastCtrl(ctrl{kind: ctrlBarrier, wm: b.ID, ts: b.Timestamp, unalignable: b.Unalignable})
}

// EndInput sends the end of this producer's stream to every consumer.
func (w *Writer[T]) EndInput() error { return w.broadcastCtrl(ctrl{kind: ctrlEnd}) }

// SetContext sets the context whose cancellation releases a send blocked
// on credits: the running task's.
func (w *Writer[T]) SetContext(ctx context.Context) { w.ctx = ctx }

// SetActivity sets the clock that stands still while a send waits for
// credit.
func (w *Writer[T]) SetActivity(c *clock.Pausable) { w.activity = c }

// Flush sends every non-empty pending batch.
func (w *Writer[T]) Flush() error {
	for c, m := range w.pending {
		if m != nil && (len(m.recs) > 0 || len(m.ctrls) > 0) {
			if err := w.send(c); err != nil {
				return err
			}
		}
	}
	return nil
}

// sample offers the key of one record in KeySample to the sketch, with
// the consumer subtask it goes to: a countdown over the batch, one lock
// per batch that has a sampled record.
func (w *Writer[T]) sample(recs []Record[T]) {
	if w.skip >= len(recs) {
		w.skip -= len(recs)
		return
	}
	s := w.sketch.Sketch
	s.Lock()
	defer s.Unlock() // the key selector may panic (routeByKey recovers)
	for i := w.skip; i < len(recs); i += w.sketch.Every {
		v := &recs[i].Value
		s.OfferLocked(w.x.keyString(v), w.x.route(v))
		w.skip = i + w.sketch.Every - len(recs)
	}
}

func (w *Writer[T]) send(c int) error {
	m := w.pending[c]
	w.pending[c] = nil
	select {
	case m.credit <- struct{}{}:
	default:
		start := time.Now()
		// The activity clock stops before the blocked send is published,
		// so that whoever sees the back-pressure also sees the clock
		// stopped.
		if w.activity != nil {
			w.activity.Pause()
		}
		if w.metrics != nil {
			w.metrics.live.bpSince.Store(w.metrics.live.at(start))
		}
		select {
		case m.credit <- struct{}{}:
		case <-w.ctx.Done():
			return w.ctx.Err()
		}
		if w.activity != nil {
			w.activity.Resume()
		}
		if w.metrics != nil {
			w.metrics.BackPressuredNanos.Add(int64(time.Since(start)))
			w.metrics.live.bpSince.Store(0)
		}
	}
	if w.metrics != nil {
		w.metrics.IO.BytesOut.Add(int64(len(m.recs)) * w.x.size)
	}
	select {
	case m.reader.inbox <- m:
		return nil
	case <-w.ctx.Done():
		return w.ctx.Err()
	}
}
