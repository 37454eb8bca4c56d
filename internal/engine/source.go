package engine

import (
	"context"
	"errors"
	"fmt"
	"github.com/weirstream/weir/connector"
	"io"
	"maps"
	"reflect"
	"runtime/debug"
	"slices"
	"sync"

	"github.com/weirstream/weir/internal/clock"
	"github.com/weirstream/weir/internal/watermark"
)

// The source interfaces are the public connector API's (package
// connector), so that a connector's source runs as it is.
type (
	// Split is connector.Split.
	Split = connector.Split
	// Source is connector.Source.
	Source[T any] = connector.Source[T]
	// SplitReader is connector.SplitReader.
	SplitReader[T any] = connector.SplitReader[T]
	// ViewReader is connector.ViewReader.
	ViewReader[T any] = connector.ViewReader[T]
	// PositionedReader is connector.PositionedReader.
	PositionedReader = connector.PositionedReader
	// RestorableSource is connector.RestorableSource.
	RestorableSource[T any] = connector.RestorableSource[T]
	// SplitRestorer is connector.SplitRestorer.
	SplitRestorer = connector.SplitRestorer
	// EndlessSource is connector.EndlessSource.
	EndlessSource = connector.EndlessSource
)

// SourceWatermarks configures event time at a source: a generator per
// split and an optional timestamp assigner.
type SourceWatermarks[T any] struct {
	// NewGenerator makes one generator per split; nil means no watermarks.
	// activity is the split's input-activity clock (FLIP-471): processing
	// time that stops while the split is paused by watermark alignment or
	// its task is blocked by backpressure; idleness detection measures on
	// it.
	NewGenerator func(activity clock.Relative) watermark.Generator[T]
	// Alignment aligns the source's watermarks with the other sources of
	// its group; nil means no alignment.
	Alignment *Alignment
	// Timestamp extracts the event timestamp; nil keeps the record's own.
	Timestamp func(v T, recordTS int64) int64
	// Interval is the periodic emission interval in ms; 0 disables it.
	Interval int64
}

// SourceOperator runs the splits of one source subtask: reader goroutines
// fetch batches, and the task goroutine assigns timestamps, runs the
// per-split watermark generators and emits records and watermarks.
type SourceOperator[T any] struct {
	name       string
	src        Source[T]
	wms        SourceWatermarks[T]
	out        *Output[T]
	pts        ProcessingTimeService
	clk        clock.Clock
	sides      map[string]OutputPort
	splits     []Split
	splitIndex map[string]int // split id -> index in splits
	gens       []watermark.Generator[T]
	batch      []bool                       // per split: its generator emits only periodically (emit hands batches on)
	maxOnly    []watermark.MaxTimestampOnly // per split: its generator as one, or nil
	outs       []watermark.Output
	defs       []watermark.Output
	mux        *watermark.Multiplexer
	emitter    *watermark.Emitter
	ended      []bool
	nEnded     int
	done       bool
	credits    int
	err        error
	ptrs       bool
	index      int
	// parallelism of the source
	parallelism int
	// dyn is set for a DynamicSource (source_dynamic.go)
	dyn *dynamicState[T]
	// cluster is set when the source runs in a cluster task: it reads
	// partition cluster.Index of its topics (ClusterSource).
	cluster *ClusterTask
	// splitClocks are the splits' input-activity clocks, over the task's.
	splitClocks []*clock.Pausable
	activity    *clock.Pausable
	// align is set when the source takes part in watermark alignment
	// (align.go).
	align *alignState

	positions   map[string][]byte // split -> position after the last emitted batch
	restoredPos map[string][]byte
	restoredEnd map[string]bool
	// restoredIDs are the ids of every split the old subtasks owned
	// (sourceState.Owned, and for checkpoints written before it was
	// recorded the splits with a position or ended), sorted.
	restoredIDs []string

	stats splitStatsList // per split, for metrics (source_metrics.go)
}

// sourceState is a source subtask's checkpointed state.
type sourceState struct {
	Positions map[string][]byte
	Ended     []string
	// Splits holds the encoded splits of a DynamicSource's subtask, by id;
	// Discovered tells that its first discovery had finished.
	Splits     map[string][]byte
	Discovered bool
	// Owned lists the ids of every split the subtask of a fixed-split
	// source owned, read or not (added compatibly: older checkpoints lack
	// it); a restore at another parallelism redistributes them
	// (SplitRestorer).
	Owned []string
}

// SnapshotState records the position of every split after the records
// emitted so far, and which splits have ended.
func (s *SourceOperator[T]) SnapshotState(id int64) (OperatorSnapshot, error) {
	st := sourceState{Positions: map[string][]byte{}}
	for id, p := range s.positions {
		st.Positions[id] = p
	}
	for i, sp := range s.splits {
		if s.dyn == nil {
			st.Owned = append(st.Owned, sp.SplitID())
		}
		if s.ended[i] {
			st.Ended = append(st.Ended, sp.SplitID())
		} else if _, ok := st.Positions[sp.SplitID()]; !ok {
			if p, ok := s.restoredPos[sp.SplitID()]; ok {
				st.Positions[sp.SplitID()] = p // restored, nothing read since
			}
		}
	}
	if s.dyn != nil {
		if err := s.snapshotDynamic(id, &st); err != nil {
			return OperatorSnapshot{}, err
		}
	}
	data, err := encodeGob(st)
	return OperatorSnapshot{State: data}, err
}

// restore takes the split positions of every old subtask, and the ids of
// every split they owned.
func (s *SourceOperator[T]) restore(r *Restored) error {
	s.restoredPos, s.restoredEnd = map[string][]byte{}, map[string]bool{}
	ids := map[string]bool{}
	err := s.eachRestored(r, func(st *sourceState) error {
		for id, p := range st.Positions {
			s.restoredPos[id] = p
			ids[id] = true
		}
		for _, id := range st.Ended {
			s.restoredEnd[id] = true
			ids[id] = true
		}
		for _, id := range st.Owned {
			ids[id] = true
		}
		return nil
	})
	s.restoredIDs = slices.Sorted(maps.Keys(ids))
	return err
}

// eachRestored decodes the state of every old subtask that had one.
func (s *SourceOperator[T]) eachRestored(r *Restored, f func(st *sourceState) error) error {
	for _, data := range r.All {
		if len(data) == 0 {
			continue
		}
		var st sourceState
		if err := decodeGob(data, &st); err != nil {
			return fmt.Errorf("source %q: restoring split positions: %w", s.name, err)
		}
		if err := f(&st); err != nil {
			return err
		}
	}
	return nil
}

// NewSourceOperator returns the operator of the subtask bc describes
// (bc.Name, Subtask, Parallelism, Time, Clock, Credits, Restored and Sides
// are used). src is a Source[T] or a DynamicSource[T].
func NewSourceOperator[T any](bc *BuildContext, src any, wms SourceWatermarks[T], out *Output[T]) (*SourceOperator[T], error) {
	name, index, parallelism, restored := bc.Name, bc.Subtask, bc.Parallelism, bc.Restored
	s := &SourceOperator[T]{name: name, wms: wms, out: out, pts: bc.Time, clk: bc.Clock, credits: max(bc.Credits, 1),
		ptrs: hasPointers(reflect.TypeFor[T]()), index: index, parallelism: parallelism, sides: bc.Sides, cluster: bc.Cluster}
	s.emitter = watermark.NewEmitter(func(e watermark.Event) {
		var err error
		if e.IsStatus {
			err = out.EmitStatus(e.Idle)
		} else {
			err = out.EmitWatermark(e.Watermark)
		}
		if err != nil && s.err == nil {
			s.err = err
		}
	})
	s.mux = watermark.NewMultiplexer(s.emitter)
	s.positions = map[string][]byte{}
	s.splitIndex = map[string]int{}
	s.activity = bc.Activity
	if s.activity == nil {
		s.activity = clock.NewPausable(bc.Clock)
	}
	var err error
	if s.align, err = newAlignState(wms.Alignment, bc.Alignment, alignMember(bc)); err != nil {
		return nil, fmt.Errorf("source %q: %w", name, err)
	}
	if ds, ok := src.(DynamicSource[T]); ok {
		if _, ok := src.(ClusterSource); bc.Cluster != nil && !ok {
			return nil, fmt.Errorf("source %q: %T cannot run in a cluster (only Kafka sources can)", name, src)
		}
		s.dyn = &dynamicState[T]{src: ds}
		if err := s.restoreDynamic(restored); err != nil {
			return nil, err
		}
		return s, nil
	}
	split, ok := src.(Source[T])
	if !ok {
		return nil, fmt.Errorf("source %q: %T is neither a Source nor a DynamicSource of %v", name, src, reflect.TypeFor[T]())
	}
	s.src = split
	if restored != nil {
		if err := s.restore(restored); err != nil {
			return nil, err
		}
	}
	var all []Split
	if sr, ok := src.(SplitRestorer); ok && len(s.restoredIDs) > 0 {
		// The checkpoint's splits, whatever the parallelism now.
		all, err = sr.RestoreSplits(s.restoredIDs)
		if err != nil {
			return nil, fmt.Errorf("source %q: restoring its splits: %w", name, err)
		}
	} else if all, err = split.Splits(parallelism); err != nil {
		return nil, fmt.Errorf("source %q: %w", name, err)
	}
	for i, sp := range all {
		if i%parallelism == index {
			s.splits = append(s.splits, sp)
		}
	}
	s.ended = make([]bool, len(s.splits))
	if restored != nil {
		known := map[string]bool{}
		for _, sp := range all {
			known[sp.SplitID()] = true
		}
		for _, id := range slices.Sorted(maps.Keys(s.restoredPos)) {
			if !known[id] {
				return nil, fmt.Errorf("source %q: the checkpoint has a position for split %s, which the source no longer has (did its parallelism change? this source's splits depend on it and it cannot restore them at another parallelism)", name, id)
			}
		}
		for i, sp := range s.splits {
			if s.restoredEnd[sp.SplitID()] {
				s.ended[i] = true
				s.nEnded++
			}
		}
	}
	for i, sp := range s.splits {
		s.splitIndex[sp.SplitID()] = i
		s.addGenerator(sp)
	}
	return s, nil
}

// addGenerator gives split sp (the last one added) its input-activity
// clock, its alignment state and its watermark generator.
func (s *SourceOperator[T]) addGenerator(sp Split) {
	c := clock.NewPausable(s.activity)
	s.splitClocks = append(s.splitClocks, c)
	if s.align != nil {
		s.align.addSplit()
	}
	if s.wms.NewGenerator == nil {
		return
	}
	g := s.wms.NewGenerator(c)
	s.gens = append(s.gens, g)
	s.batch = append(s.batch, watermark.IsPeriodicOnly(g))
	s.maxOnly = append(s.maxOnly, watermark.AsMaxTimestampOnly(g))
	s.outs = append(s.outs, s.mux.Register(sp.SplitID()))
	s.defs = append(s.defs, s.mux.Deferred(sp.SplitID()))
	if s.ended[len(s.outs)-1] {
		// A split restored as ended holds nothing back: Flink's reader
		// no longer has it (its state left the reader when it finished).
		s.mux.Unregister(sp.SplitID())
	}
}

// Open schedules periodic watermark emission.
func (s *SourceOperator[T]) Open() error {
	// The alignment update is scheduled first: when it falls on a
	// periodic emission it runs before it (it reports the watermark
	// emitted last, as Flink's report lags the emission), and the
	// emission's own check then applies the limit it learnt.
	if s.align != nil {
		s.pts.Schedule(s.pts.Now()+s.align.params.UpdateInterval, s.alignTick)
	}
	if s.wms.NewGenerator != nil && s.wms.Interval > 0 {
		s.pts.Schedule(s.pts.Now()+s.wms.Interval, s.periodic)
	}
	if s.dyn != nil {
		return s.openDynamic()
	}
	if s.nEnded == len(s.splits) {
		if e, ok := s.src.(EndlessSource); ok && len(s.splits) == 0 && e.Endless() {
			// Nothing to read, ever: idle, so that downstream
			// watermarks do not wait for this subtask.
			return s.out.EmitStatus(true)
		}
		return s.finish()
	}
	return nil
}

// Close implements Lifecycle.
func (s *SourceOperator[T]) Close() error {
	if s.dyn != nil {
		return s.closeDynamic()
	}
	return nil
}

// Done reports whether every split has ended and the end was emitted.
func (s *SourceOperator[T]) Done() bool { return s.done }

func (s *SourceOperator[T]) periodic(at int64) error {
	if s.done {
		return nil
	}
	for i, g := range s.gens {
		if !s.ended[i] {
			g.OnPeriodicEmit(s.defs[i])
		}
	}
	if s.gens != nil {
		s.mux.OnPeriodicEmit()
	}
	s.pts.Schedule(at+s.wms.Interval, s.periodic)
	if err := s.takeErr(); err != nil {
		return err
	}
	return s.checkAlignment()
}

func (s *SourceOperator[T]) takeErr() error {
	err := s.err
	s.err = nil
	return err
}

// emit processes one batch read from split i.
func (s *SourceOperator[T]) emit(i int, recs []Record[T]) error {
	ts := s.wms.Timestamp
	if s.gens == nil && ts == nil {
		s.out.CollectBatch(recs)
		return s.out.Err()
	}
	if s.gens == nil {
		for _, r := range recs {
			if ts != nil {
				r.TS = ts(r.Value, r.TS)
			}
			s.out.Collect(r.Value, r.TS)
		}
		return s.out.Err()
	}
	g, o := s.gens[i], s.outs[i]
	if s.batch[i] {
		// The generator cannot emit between two records: hand the batch
		// on as it is, then show the generator its events.
		if ts != nil {
			for j := range recs {
				recs[j].TS = ts(recs[j].Value, recs[j].TS)
			}
		}
		s.out.CollectBatch(recs)
		if err := s.out.Err(); err != nil {
			return err
		}
		if m := s.maxOnly[i]; m != nil {
			if len(recs) > 0 {
				mx := recs[0].TS
				for j := range recs {
					mx = max(mx, recs[j].TS)
				}
				m.OnMaxTimestamp(mx)
			}
			return s.takeErr()
		}
		for j := range recs {
			g.OnEvent(recs[j].Value, recs[j].TS, o)
		}
		return s.takeErr()
	}
	for _, r := range recs {
		if ts != nil {
			r.TS = ts(r.Value, r.TS)
		}
		s.out.Collect(r.Value, r.TS)
		g.OnEvent(r.Value, r.TS, o)
	}
	if err := s.out.Err(); err != nil {
		return err
	}
	return s.takeErr()
}

func (s *SourceOperator[T]) endSplit(i int) error {
	if s.ended[i] {
		return nil
	}
	if s.gens != nil {
		// As Flink's SourceReaderBase releases a finished split's output:
		// its watermark leaves the combination, with no last periodic
		// emission; the next update (an event of another split or the
		// next periodic emission) combines the others.
		s.mux.Unregister(s.splits[i].SplitID())
	}
	s.ended[i] = true
	s.nEnded++
	if s.nEnded == len(s.splits) && (s.dyn == nil || s.dyn.final) {
		return s.finish()
	}
	if err := s.takeErr(); err != nil {
		return err
	}
	return s.checkAlignment()
}

// finish ends the source: the maximum watermark, then the end of input.
func (s *SourceOperator[T]) finish() error {
	if err := s.takeErr(); err != nil {
		return err
	}
	if err := s.out.EmitStatus(false); err != nil {
		return err
	}
	if err := s.out.EmitWatermark(MaxWatermark); err != nil {
		return err
	}
	s.done = true
	if a := s.align; a != nil {
		// A finished source holds nobody back (Flink reports the maximum
		// watermark at the end of data).
		a.groups.Report(a.params.Group, a.member, MaxWatermark, true)
		for _, g := range a.gates {
			g.set(false)
		}
	}
	return s.out.End()
}

// Starter returns the function that starts one reader goroutine per split,
// sending batches to inbox.
func (s *SourceOperator[T]) Starter(inbox chan message) func(ctx context.Context, wg *sync.WaitGroup) {
	if s.dyn != nil {
		return s.dynamicStarter(inbox)
	}
	return func(ctx context.Context, wg *sync.WaitGroup) {
		for i, sp := range s.splits {
			if s.ended[i] {
				continue
			}
			credit := make(chan struct{}, s.credits)
			wg.Add(1)
			go func() {
				defer wg.Done()
				s.read(ctx, i, sp, inbox, credit)
			}()
		}
	}
}

// InboxCapacity is the inbox room the source's readers need.
func (s *SourceOperator[T]) InboxCapacity() int {
	if s.dyn != nil {
		return s.credits + 1 // the fetcher's batches and one discovery
	}
	return len(s.splits) * s.credits
}

type srcMsg[T any] struct {
	s      *SourceOperator[T]
	split  int
	recs   []Record[T]
	pos    []byte // the reader's position after recs
	end    bool
	err    error
	credit chan struct{}
	free   chan []Record[T]
	// view tells that recs is a ViewReader's view: handed on as it is,
	// never cleared nor reused.
	view bool
	// ack, for an aligned source, tells the reader the batch was
	// processed (alignment decided on it).
	ack chan struct{}
}

func (m *srcMsg[T]) process() error {
	defer func() {
		// The buffer goes back before the credit, so that the reader,
		// which may be waiting for the credit, finds it instead of
		// allocating another.
		if m.recs != nil && !m.view {
			clearRecords(m.recs, m.s.ptrs)
			select {
			case m.free <- m.recs[:0]:
			default:
			}
		}
		<-m.credit
		if m.ack != nil {
			m.ack <- struct{}{}
		}
	}()
	if m.err != nil {
		var oe *OperatorError
		if errors.As(m.err, &oe) {
			return m.err
		}
		return fmt.Errorf("source %q, split %s: read error: %w", m.s.name, m.s.splits[m.split].SplitID(), m.err)
	}
	m.s.stats.at(m.split).records.Add(int64(len(m.recs)))
	if err := m.s.emit(m.split, m.recs); err != nil {
		return err
	}
	if m.pos != nil {
		m.s.positions[m.s.splits[m.split].SplitID()] = m.pos
	}
	if m.end {
		return m.s.endSplit(m.split)
	}
	return m.s.checkAlignment()
}

func (s *SourceOperator[T]) read(ctx context.Context, i int, sp Split, inbox chan message, credit chan struct{}) {
	send := func(m *srcMsg[T]) bool {
		select {
		case credit <- struct{}{}:
		case <-ctx.Done():
			return false
		}
		select {
		case inbox <- m:
			return true
		case <-ctx.Done():
			return false
		}
	}
	free := make(chan []Record[T], s.credits+1)
	defer func() {
		// A panic in a connector's reader fails the job, never the process.
		if p := recover(); p != nil {
			e, ok := p.(error)
			if !ok {
				e = fmt.Errorf("%v", p)
			}
			send(&srcMsg[T]{s: s, split: i, credit: credit, err: &OperatorError{
				Operator: s.name, Subtask: s.index, Err: fmt.Errorf("split %s reader panicked: %w", sp.SplitID(), e), Stack: string(debug.Stack())}})
		}
	}()
	var r SplitReader[T]
	var err error
	if pos, ok := s.restoredPos[sp.SplitID()]; ok {
		rs, can := s.src.(RestorableSource[T])
		if !can {
			err = fmt.Errorf("source cannot resume split %s from a checkpoint", sp.SplitID())
		} else {
			r, err = rs.ReaderAt(sp, pos)
		}
	} else {
		r, err = s.src.Reader(sp)
	}
	if err != nil {
		send(&srcMsg[T]{s: s, split: i, err: err, credit: credit})
		return
	}
	defer r.Close()
	pr, positioned := r.(PositionedReader)
	vr, view := r.(ViewReader[T])
	view = view && s.wms.Timestamp == nil
	// An aligned split's reader fetches again only once the task has
	// processed its last batch (and so applied every pause due by then):
	// a pause reaches the split at its next fetch, and at most the fetch
	// under way when the pause came is read after it (Flink's fetcher
	// too hands on what it fetched before the pause).
	var ack chan struct{}
	if s.align != nil {
		ack = make(chan struct{}, 1)
	}
	for {
		if s.align != nil && !s.align.gates[i].wait(ctx) {
			return
		}
		var recs []Record[T]
		var err error
		if view {
			recs, err = vr.ReadView(ctx, 1024)
			recs = recs[:len(recs):len(recs)] // an append never reaches the memory behind
		} else {
			var buf []Record[T]
			select {
			case buf = <-free:
			default:
				buf = make([]Record[T], 0, 1024)
			}
			recs, err = r.Read(ctx, buf)
		}
		if ctx.Err() != nil {
			return
		}
		m := &srcMsg[T]{s: s, split: i, recs: recs, credit: credit, free: free, view: view, ack: ack}
		if positioned && (err == nil || errors.Is(err, io.EOF)) {
			p, perr := pr.Position()
			if perr != nil {
				m.err = perr
				send(m)
				return
			}
			m.pos = p
		}
		if errors.Is(err, io.EOF) {
			m.end = true
			send(m)
			return
		}
		if err != nil {
			m.err = err
			send(m)
			return
		}
		if !send(m) {
			return
		}
		if ack != nil {
			select {
			case <-ack:
			case <-ctx.Done():
				return
			}
		}
	}
}
