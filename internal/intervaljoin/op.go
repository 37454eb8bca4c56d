// Package intervaljoin is the engine of Weir's interval join: per subtask,
// both inputs' timestamp-ordered buffers by key, the cleanups that fire as
// Flink's cleanup timers would, and their checkpoints. It knows nothing of
// the user's function: the root package gives it a function to call with
// each pair (or unmatched record).
package intervaljoin

import (
	"context"
	"fmt"
	"math"
	"reflect"
	"sync/atomic"
	"time"

	"github.com/weirstream/weir/internal/engine"
	istate "github.com/weirstream/weir/internal/state"
)

// NoTimestamp marks the absent side of an unmatched record.
const NoTimestamp = math.MinInt64

// Kind chooses which unmatched records an interval join emits.
type Kind int

// The join kinds.
const (
	Inner Kind = iota
	LeftOuter
	RightOuter
	FullOuter
)

// EmitFunc is called with each matching pair in (left, right) order with
// their timestamps, and with each unmatched record of a tracked side at its
// cleanup, with a nil partner whose timestamp is NoTimestamp. The pointers
// are valid during the call only.
type EmitFunc[L, R any] func(l *L, r *R, lts, rts int64) error

// Config is what an interval join of one subtask needs.
type Config[K comparable, L, R any] struct {
	// Lower and Upper are the normalised, inclusive bounds in milliseconds:
	// a pair matches when right.ts - left.ts is in [Lower, Upper].
	Lower, Upper int64
	Kind         Kind
	KeyL         func(L) K
	KeyR         func(R) K
	Hash         func(K) int32
	// MaxParallelism and KeyGroups are the subtask's key-group range.
	MaxParallelism int
	KeyGroups      struct{ Start, End int }
	// LateL and LateR receive late records of each side; nil drops them.
	LateL, LateR engine.OutputPort
	// FullScan probes like Flink: every bucket (benchmarks only).
	FullScan bool
	// Emit is called with what the join produces.
	Emit EmitFunc[L, R]
}

// Op is the interval join of one subtask. Its keyed state is its own
// (buffer.go, index.go): an index from key to a slot holding both sides'
// timestamp-ordered buffers, and per side a queue of pending cleanups that
// fire exactly as Flink's cleanup timers would (same times, same order:
// timestamp, then registration), without a timer per record. Checkpoints:
// snapshot.go.
type Op[K comparable, L, R any] struct {
	lower, upper   int64 // normalised, inclusive
	kind           Kind
	hash           func(K) int32
	maxP           int
	kgFirst        int
	kgLast         int
	keys           ijIndex[K] // key -> slot
	slots          ijSlab[ijKey[K, L, R]]
	flags          [][]ijFlags // joined flags by slot, in pages like slots (outer joins only)
	idle           []int32     // slots whose buffers became empty since the last watermark
	chunk          []int32     // the slots of the records of a chunk (processChunk)
	touched        int64       // what processChunk read to bring buffers into cache
	qL, qR         ijQueue     // pending cleanups of left and right buckets
	seq            uint64      // registration number of the last queued cleanup
	delayL, delayR int64       // cleanup time minus bucket timestamp
	trackL, trackR bool        // whether a side's unmatched records are emitted
	wm             int64
	emit           EmitFunc[L, R]
	lateL, lateR   engine.OutputPort
	fullScan       bool
	leftSide       joinSide[K, L, R, L, R]
	rightSide      joinSide[K, L, R, R, L]
	sample         ijSample // probes sampled for `weir doctor`
	// buffered counts the records in both sides' buffers; bufferedG and
	// peakG publish it and its highest value to the gauges after each
	// batch and watermark (read from any goroutine).
	buffered         int64
	bufferedG, peakG atomic.Int64
}

// New returns the interval join of one subtask.
func New[K comparable, L, R any](cfg Config[K, L, R]) *Op[K, L, R] {
	lower, upper, kind := cfg.Lower, cfg.Upper, cfg.Kind
	o := &Op[K, L, R]{
		lower: lower, upper: upper, kind: kind,
		hash: cfg.Hash, maxP: cfg.MaxParallelism, kgFirst: cfg.KeyGroups.Start, kgLast: cfg.KeyGroups.End,
		keys:   newIJIndex(cfg.Hash),
		delayL: max(upper, 0), delayR: max(-lower, 0),
		trackL: kind == LeftOuter || kind == FullOuter, trackR: kind == RightOuter || kind == FullOuter,
		wm: math.MinInt64, emit: cfg.Emit,
		lateL: cfg.LateL, lateR: cfg.LateR, fullScan: cfg.FullScan,
	}
	o.leftSide = joinSide[K, L, R, L, R]{name: "left", key: cfg.KeyL, late: o.lateL,
		own:   func(k *ijKey[K, L, R]) *ijBuf[L] { return &k.left },
		other: func(k *ijKey[K, L, R]) *ijBuf[R] { return &k.right },
		ownJF: o.jfL, otherJF: o.jfR,
		track: o.trackL, otherTrack: o.trackR, queue: &o.qL,
		lo: o.lower, hi: o.upper, delay: o.delayL, emit: o.emit}
	o.rightSide = joinSide[K, L, R, R, L]{name: "right", key: cfg.KeyR, late: o.lateR,
		own:   func(k *ijKey[K, L, R]) *ijBuf[R] { return &k.right },
		other: func(k *ijKey[K, L, R]) *ijBuf[L] { return &k.left },
		ownJF: o.jfR, otherJF: o.jfL,
		track: o.trackR, otherTrack: o.trackL, queue: &o.qR,
		lo: -o.upper, hi: -o.lower, delay: o.delayR,
		emit: func(r *R, l *L, rts, lts int64) error { return o.emit(l, r, lts, rts) }}
	return o
}

// Restore restores the buffers and pending cleanups from the key groups of
// a checkpoint.
func (o *Op[K, L, R]) Restore(kgs map[int][]byte) error {
	if err := o.restore(kgs); err != nil {
		return err
	}
	o.publishBuffered()
	return nil
}

// Snapshot snapshots both sides' buffers and the pending cleanups, one
// blob per key group.
func (o *Op[K, L, R]) Snapshot() (map[int][]byte, error) { return o.snapshot() }

// SnapshotAsync takes the synchronous part of the snapshot: when the
// key and record types cannot change in place (no pointers, slices or
// maps; strings are fine), a copy of every key's live buffers, joined
// flags and cleanup numbers (memory copies, no encoding), encoded on the
// snapshot goroutine; otherwise the whole snapshot, encoded at once.
func (o *Op[K, L, R]) SnapshotAsync() (engine.AsyncSnapshot, error) {
	if !istate.IsPlain(reflect.TypeFor[K]()) || !istate.IsPlain(reflect.TypeFor[L]()) || !istate.IsPlain(reflect.TypeFor[R]()) {
		kgs, err := o.snapshot()
		if err != nil {
			return nil, err
		}
		snap := engine.OperatorSnapshot{KeyGroups: kgs}
		return func(ctx context.Context) (engine.OperatorSnapshot, error) { return snap, ctx.Err() }, nil
	}
	v, err := o.view(true)
	if err != nil {
		return nil, err
	}
	return func(ctx context.Context) (engine.OperatorSnapshot, error) {
		if err := ctx.Err(); err != nil {
			return engine.OperatorSnapshot{}, err
		}
		kgs, err := v.encode()
		return engine.OperatorSnapshot{KeyGroups: kgs}, err
	}, nil
}

// slotOf returns the slot of key k, taking a new one if k has none.
func (o *Op[K, L, R]) slotOf(k K) (int32, *ijKey[K, L, R]) {
	i := o.keys.getOrPut(k, o.newSlot)
	return i, o.slots.at(i)
}

// newSlot takes a slot for key k.
func (o *Op[K, L, R]) newSlot(k K) int32 {
	i := o.slots.alloc()
	o.slots.at(i).key = k
	return i
}

// flagsOf returns the joined flags of slot si.
func (o *Op[K, L, R]) flagsOf(si int32) *ijFlags {
	p := int(si >> ijPageBits)
	for p >= len(o.flags) {
		o.flags = append(o.flags, make([]ijFlags, 1<<ijPageBits))
	}
	return &o.flags[p][si&(1<<ijPageBits-1)]
}

// jfL returns the joined flags of slot si's left buffer, nil if the left
// side is not tracked; jfR those of the right buffer.
func (o *Op[K, L, R]) jfL(si int32) *[]bool {
	if !o.trackL {
		return nil
	}
	return &o.flagsOf(si).l
}

func (o *Op[K, L, R]) jfR(si int32) *[]bool {
	if !o.trackR {
		return nil
	}
	return &o.flagsOf(si).r
}

// joinSide is one input of the interval join: its records X probe the
// other side's buffer of Y for timestamps in [ts+lo, ts+hi], then wait in
// their own buffer until their cleanup time ts + delay is reached.
type joinSide[K comparable, L, R, X, Y any] struct {
	name              string
	key               func(X) K
	own               func(*ijKey[K, L, R]) *ijBuf[X]
	other             func(*ijKey[K, L, R]) *ijBuf[Y]
	ownJF, otherJF    func(si int32) *[]bool
	track, otherTrack bool // keep joined flags of own / other records
	queue             *ijQueue
	late              engine.OutputPort
	lo, hi            int64
	delay             int64
	// emit calls the join function with the pair in (left, right) order.
	emit func(x *X, y *Y, xts, yts int64) error
	cur  X // the record being processed (its address goes to emit)
}

// ijChunk is the number of records processSide looks up before it joins
// them.
const ijChunk = 256

// processSide runs Flink's processElement for one side: the late check,
// the probe of the other side's buffer, buffering, the cleanup (queued
// when the record opens a new bucket, as Flink's timer de-duplicates).
//
// It works in chunks: first it finds (or makes) the slots of a chunk's
// keys and touches their buffers, independent loads the processor overlaps,
// then it joins and buffers the records, whose state is now in cache.
func processSide[K comparable, L, R, X, Y any](o *Op[K, L, R], s *joinSide[K, L, R, X, Y], recs []engine.Record[X]) error {
	for len(recs) > 0 {
		n := min(len(recs), ijChunk)
		if err := processChunk(o, s, recs[:n]); err != nil {
			return err
		}
		recs = recs[n:]
	}
	return nil
}

func processChunk[K comparable, L, R, X, Y any](o *Op[K, L, R], s *joinSide[K, L, R, X, Y], recs []engine.Record[X]) error {
	slots := o.chunk[:0]
	var touch int64
	for i := range recs {
		ts := recs[i].TS
		if ts == NoTimestamp {
			break
		}
		if ts < o.wm {
			slots = append(slots, -1)
			continue
		}
		si := o.keys.getOrPut(s.key(recs[i].Value), o.newSlot)
		slots = append(slots, si)
		ks := o.slots.at(si)
		if b := s.other(ks); len(b.es) > 0 {
			touch += b.es[len(b.es)-1].ts
		}
		if b := s.own(ks); len(b.es) > 0 {
			touch += b.es[len(b.es)-1].ts
		}
	}
	o.chunk, o.touched = slots, touch
	for i := range recs {
		ts := recs[i].TS
		if i == len(slots) {
			return fmt.Errorf("interval join needs event timestamps: a %s record has none (assign timestamps and watermarks first)", s.name)
		}
		si := slots[i]
		if si < 0 {
			if s.late != nil {
				if err := s.late.EmitAny(recs[i].Value, ts); err != nil {
					return err
				}
			}
			continue
		}
		ks := o.slots.at(si)
		s.cur = recs[i].Value
		if o.sample.skip--; o.sample.skip < 0 {
			sampleProbe(&o.sample, ts, s.lo, s.hi, s.other(ks))
		}
		matched := false
		if other := s.other(ks); !other.empty() {
			lo, hi := ts+s.lo, ts+s.hi
			var jf []bool
			if s.otherTrack {
				jf = *s.otherJF(si)
			}
			j := int(other.head)
			if !o.fullScan {
				j = other.search(lo)
			}
			for es := other.es; j < len(es); j++ {
				e := &es[j]
				if e.ts > hi {
					if o.fullScan {
						continue
					}
					break
				}
				if e.ts < lo {
					continue
				}
				matched = true
				if jf != nil {
					jf[j] = true
				}
				if err := s.emit(&s.cur, &e.v, ts, e.ts); err != nil {
					return err
				}
			}
		}
		var jf *[]bool
		if s.track {
			jf = s.ownJF(si)
		}
		o.buffered++
		if s.own(ks).add(ts, &s.cur, matched, jf) {
			o.seq++
			s.queue.push(ts+s.delay, si, o.seq)
		}
	}
	return nil
}

// ProcessBatch1 joins and buffers records of the left input.
func (o *Op[K, L, R]) ProcessBatch1(recs []engine.Record[L]) error {
	defer o.publishBuffered()
	return processSide(o, &o.leftSide, recs)
}

// ProcessBatch2 joins and buffers records of the right input.
func (o *Op[K, L, R]) ProcessBatch2(recs []engine.Record[R]) error {
	defer o.publishBuffered()
	return processSide(o, &o.rightSide, recs)
}

// publishBuffered publishes the number of buffered records to the gauges.
func (o *Op[K, L, R]) publishBuffered() {
	o.bufferedG.Store(o.buffered)
	if o.buffered > o.peakG.Load() {
		o.peakG.Store(o.buffered)
	}
}

// Gauges implements engine.GaugeReporter: the records both sides hold in
// their buffers (interval_join_buffered_records) and the most they held at
// once since the subtask started (interval_join_buffered_records_peak),
// the state that watermark alignment keeps bounded when one input runs
// ahead of the other.
func (o *Op[K, L, R]) Gauges() []engine.Gauge {
	return []engine.Gauge{
		{Name: "interval_join_buffered_records", Value: float64(o.bufferedG.Load())},
		{Name: "interval_join_buffered_records_peak", Value: float64(o.peakG.Load())},
	}
}

// cleanup removes the bucket ts of one side of slot si, emitting its
// unmatched records first if the side is tracked.
func cleanup[K comparable, L, R, X any](o *Op[K, L, R], si int32, b *ijBuf[X], ts int64, jf *[]bool,
	emit func(x *X, ts int64) error) error {
	i, j := b.bucket(ts)
	var err error
	if jf != nil {
		for e := i; e < j; e++ {
			if !(*jf)[e] {
				if err = emit(&b.es[e].v, ts); err != nil {
					break
				}
			}
		}
	}
	b.removeRange(i, j, jf)
	o.buffered -= int64(j - i)
	ks := o.slots.at(si)
	if !ks.left.idle && ks.left.empty() && ks.right.empty() {
		ks.left.idle = true
		o.idle = append(o.idle, si)
	}
	return err
}

func (o *Op[K, L, R]) emitLeft(l *L, ts int64) error {
	return o.emit(l, nil, ts, NoTimestamp)
}
func (o *Op[K, L, R]) emitRight(r *R, ts int64) error {
	return o.emit(nil, r, NoTimestamp, ts)
}

// drain runs every pending cleanup with time <= wm, in the order the
// cleanup timers would fire: by time, then registration. It stops at the
// first error; that cleanup is done, the others stay queued.
func (o *Op[K, L, R]) drain(wm int64) error {
	for {
		lt, ls, lok := o.qL.peek()
		rt, rs, rok := o.qR.peek()
		left := lok && (!rok || lt < rt || (lt == rt && ls < rs))
		if left {
			if lt > wm {
				return nil
			}
			ts, si := o.qL.pop()
			if err := cleanup(o, si, &o.slots.at(si).left, ts-o.delayL, o.jfL(si), o.emitLeft); err != nil {
				return err
			}
			continue
		}
		if !rok || rt > wm {
			return nil
		}
		ts, si := o.qR.pop()
		if err := cleanup(o, si, &o.slots.at(si).right, ts-o.delayR, o.jfR(si), o.emitRight); err != nil {
			return err
		}
	}
}

// sweep frees the slots of keys whose buffers became empty before the last
// watermark and stayed empty.
func (o *Op[K, L, R]) sweep() {
	for _, si := range o.idle {
		ks := o.slots.at(si)
		ks.left.idle = false
		if ks.left.empty() && ks.right.empty() {
			o.keys.delete(ks.key)
			var zero K
			ks.key = zero
			ks.left.reset(o.jfL(si))
			ks.right.reset(o.jfR(si))
			o.slots.release(si)
		}
	}
	o.idle = o.idle[:0]
}

// Advance sets the watermark to wm: it frees the keys that stayed empty
// and runs the cleanups due, emitting unmatched records of tracked sides.
// The caller forwards the watermark.
func (o *Op[K, L, R]) Advance(wm int64) error {
	o.wm = wm
	o.sweep()
	defer o.publishBuffered()
	return o.drain(wm)
}

// Bounds checks an interval join's bounds, lower and upper in ms (from
// the durations lo and hi), and returns them inclusive.
func Bounds(lower, upper int64, lo, hi time.Duration, lowerExclusive, upperExclusive bool) (int64, int64, error) {
	var err error
	if lower > upper {
		err = fmt.Errorf("lower bound %v is above upper bound %v; the rule is right.ts - left.ts in [lower, upper]", lo, hi)
	}
	if lowerExclusive {
		lower++
	}
	if upperExclusive {
		upper--
	}
	return lower, upper, err
}
