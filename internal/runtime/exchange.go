package runtime

import (
	"cmp"
	"context"
	"fmt"
	"reflect"
	"runtime/debug"
	"time"

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
	route     func(*T) int // hash routing: the consumer index of a record
	producers int
	consumers []exReader[T]
	free      chan *batchMsg[T]
	ptrs      bool
	size      int64           // bytes per record
	keyString func(*T) string // hash exchanges with a key sketch
	keyFn     func(*T) string // the key of a keyBy's record, for input capture
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
// For PartitionHash, route maps a record to its consumer index.
func NewExchange[T any](kind Partitioning, route func(*T) int, producers, consumers int, cfg ExchangeConfig) (*Exchange[T], error) {
	if kind == PartitionForward && producers != consumers {
		return nil, fmt.Errorf("forward partitioning needs equal parallelism, have %d and %d", producers, consumers)
	}
	if kind == PartitionHash && route == nil {
		return nil, fmt.Errorf("hash partitioning needs a key")
	}
	if cfg.BatchSize < 1 {
		cfg.BatchSize = 1
	}
	if cfg.Credits < 1 {
		cfg.Credits = 1
	}
	return &Exchange[T]{
		cfg: cfg, kind: kind, route: route, producers: producers,
		consumers: make([]exReader[T], consumers),
		free:      make(chan *batchMsg[T], producers*consumers*cfg.Credits),
		ptrs:      hasPointers(reflect.TypeFor[T]()),
		size:      recordSize[T](),
		keyString: keyStringOf[T](kind, cfg),
		keyFn:     keyFnOf[T](cfg),
	}, nil
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

// ChannelsPerConsumer returns how many input channels the exchange gives
// each consumer: one for a forward exchange (subtask i reads only producer
// i, as Flink's forward partitioner), else one per producer.
func (x *Exchange[T]) ChannelsPerConsumer() int {
	if x.kind == PartitionForward {
		return 1
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
}

func (w *Writer[T]) buf(c int) *batchMsg[T] {
	m := w.pending[c]
	if m == nil {
		m = w.x.get()
		m.ch = w.p
		if w.x.kind == PartitionForward {
			m.ch = 0
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
	for i := range w.x.consumers {
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
		if w.metrics != nil {
			w.metrics.live.bpSince.Store(w.metrics.live.at(start))
		}
		select {
		case m.credit <- struct{}{}:
		case <-w.ctx.Done():
			return w.ctx.Err()
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
