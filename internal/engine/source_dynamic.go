package engine

import (
	"context"
	"errors"
	"fmt"
	"github.com/weirstream/weir/connector"
	"runtime/debug"
	"sort"
	"sync"
	"sync/atomic"

	"github.com/weirstream/weir/internal/clock"
)

// The dynamic source interfaces are the public connector API's.
type (
	// DynamicSource is connector.DynamicSource: it stands alone (the
	// runtime never asks it for fixed splits).
	DynamicSource[T any] = connector.DynamicSource[T]
	// SubtaskInfo is connector.SubtaskInfo.
	SubtaskInfo = connector.SubtaskInfo
	// SubtaskReader is connector.SubtaskReader.
	SubtaskReader[T any] = connector.SubtaskReader[T]
	// SplitBatch is connector.SplitBatch.
	SplitBatch[T any] = connector.SplitBatch[T]
	// SideRecord is connector.SideRecord.
	SideRecord = connector.SideRecord
	// PositionCommitter is connector.PositionCommitter.
	PositionCommitter = connector.PositionCommitter
	// Gauge is connector.Gauge: a named value an operator publishes with
	// the job's metrics, with labels.
	Gauge = connector.Gauge
	// GaugeReporter is connector.GaugeReporter, implemented by operators
	// too.
	GaugeReporter = connector.GaugeReporter
)

// dynamicState is the DynamicSource part of a SourceOperator.
type dynamicState[T any] struct {
	src DynamicSource[T]
	// reader is set in Open; readerPtr lets Gauges read it from any
	// goroutine.
	reader    SubtaskReader[T]
	readerPtr atomic.Pointer[SubtaskReader[T]]
	// restoredSplits are the restored splits this subtask owns, added to
	// the reader when it opens.
	restored   []Split
	discovered bool // the first discovery has finished (or was restored)
	final      bool // no split will be added any more
	// snapshots holds the positions recorded by snapshots not yet
	// complete, by checkpoint id.
	snapshots map[int64]map[string][]byte
	// sentFirst is set by the discovery goroutine once it has reported
	// its first discovery.
	sentFirst atomic.Bool
}

// restoreDynamic takes, from every old subtask's state, the splits this
// subtask owns now, with their positions.
func (s *SourceOperator[T]) restoreDynamic(r *Restored) error {
	d := s.dyn
	d.snapshots = map[int64]map[string][]byte{}
	s.restoredPos, s.restoredEnd = map[string][]byte{}, map[string]bool{}
	if r == nil {
		return nil
	}
	discovered, any := true, false
	seen := map[string]bool{}
	err := s.eachRestored(r, func(st *sourceState) error {
		any = true
		discovered = discovered && st.Discovered
		ended := map[string]bool{}
		for _, id := range st.Ended {
			ended[id] = true
		}
		ids := make([]string, 0, len(st.Splits))
		for id := range st.Splits {
			ids = append(ids, id)
		}
		sort.Strings(ids)
		for _, id := range ids {
			sp, err := d.src.DecodeSplit(st.Splits[id])
			if err != nil {
				return fmt.Errorf("source %q: restoring split %s: %w", s.name, id, err)
			}
			if sp.SplitID() != id {
				return fmt.Errorf("source %q: restored split %s decodes as %s", s.name, id, sp.SplitID())
			}
			if !s.owns(sp) || seen[id] {
				continue
			}
			seen[id] = true
			if p, ok := st.Positions[id]; ok {
				s.restoredPos[id] = p
			}
			if ended[id] {
				s.restoredEnd[id] = true
			}
			s.register(sp, ended[id])
			d.restored = append(d.restored, sp)
		}
		return nil
	})
	if err != nil {
		return err
	}
	d.discovered = any && discovered
	return nil
}

// owns reports whether split sp belongs to this subtask: SplitOwner's
// choice, or in a cluster task the split of the task's partition.
func (s *SourceOperator[T]) owns(sp Split) bool {
	if s.cluster != nil {
		return s.dyn.src.(ClusterSource).SplitPartition(sp) == s.cluster.Index
	}
	return s.dyn.src.SplitOwner(sp, s.parallelism) == s.index
}

// register adds split sp to the operator.
func (s *SourceOperator[T]) register(sp Split, ended bool) {
	s.splitIndex[sp.SplitID()] = len(s.splits)
	s.splits = append(s.splits, sp)
	s.ended = append(s.ended, ended)
	if ended {
		s.nEnded++
	}
	s.addGenerator(sp)
}

// snapshotDynamic adds the subtask's splits to its state and keeps the
// positions for the checkpoint's completion.
func (s *SourceOperator[T]) snapshotDynamic(id int64, st *sourceState) error {
	d := s.dyn
	st.Splits = make(map[string][]byte, len(s.splits))
	st.Discovered = d.discovered
	for _, sp := range s.splits {
		data, err := d.src.EncodeSplit(sp)
		if err != nil {
			return fmt.Errorf("source %q: encoding split %s: %w", s.name, sp.SplitID(), err)
		}
		st.Splits[sp.SplitID()] = data
	}
	pos := make(map[string][]byte, len(st.Positions))
	for k, v := range st.Positions {
		pos[k] = v
	}
	d.snapshots[id] = pos
	return nil
}

// NotifyCheckpointComplete hands the positions of checkpoint id to a
// PositionCommitter reader.
func (s *SourceOperator[T]) NotifyCheckpointComplete(id int64) error {
	if s.dyn == nil {
		return nil
	}
	d := s.dyn
	pos, ok := d.snapshots[id]
	for k := range d.snapshots {
		if k <= id {
			delete(d.snapshots, k)
		}
	}
	if pc, can := d.reader.(PositionCommitter); ok && can {
		pc.CommitPositions(id, pos)
	}
	return nil
}

// Gauges implements GaugeReporter: the watermark alignment gauges of an
// aligned source (align.go) and a dynamic source's reader's gauges.
func (s *SourceOperator[T]) Gauges() []Gauge {
	var out []Gauge
	if s.align != nil {
		out = s.align.gauges()
	}
	if s.dyn == nil {
		return out
	}
	if r := s.dyn.readerPtr.Load(); r != nil {
		if g, ok := (*r).(GaugeReporter); ok {
			out = append(out, g.Gauges()...)
		}
	}
	return out
}

// openDynamic opens the subtask's reader and gives it the restored splits.
func (s *SourceOperator[T]) openDynamic() error {
	d := s.dyn
	info := SubtaskInfo{Name: s.name, Subtask: s.index, Parallelism: s.parallelism, Partition: -1}
	if s.cluster != nil {
		info.Partition = s.cluster.Index
	}
	r, err := d.src.NewSubtaskReader(info)
	if err != nil {
		return fmt.Errorf("source %q: %w", s.name, err)
	}
	d.reader = r
	d.readerPtr.Store(&r)
	if s.align != nil && splitPauser(r) == nil {
		return fmt.Errorf("source %q: watermark alignment needs a source whose reader can pause splits (SplitPauser)", s.name)
	}
	var add []Split
	var pos [][]byte
	for _, sp := range d.restored {
		if !s.restoredEnd[sp.SplitID()] {
			add = append(add, sp)
			pos = append(pos, s.restoredPos[sp.SplitID()])
		}
	}
	if len(add) > 0 {
		if err := r.AddSplits(add, pos); err != nil {
			return fmt.Errorf("source %q: %w", s.name, err)
		}
	}
	if d.discovered && r.DiscoveryInterval() <= 0 {
		d.final = true
	}
	return s.checkIdleOrDone()
}

// checkIdleOrDone ends the subtask when no split will be added and every
// split has ended, and marks it idle when discovery found it no split.
func (s *SourceOperator[T]) checkIdleOrDone() error {
	d := s.dyn
	if d.final && s.nEnded == len(s.splits) {
		return s.finish()
	}
	if d.discovered && len(s.splits) == 0 {
		s.emitter.MarkIdle()
	}
	return s.takeErr()
}

func (s *SourceOperator[T]) closeDynamic() error {
	if s.dyn.reader == nil {
		return nil
	}
	return s.dyn.reader.Close()
}

// dynamicStarter starts the fetch and discovery goroutines.
func (s *SourceOperator[T]) dynamicStarter(inbox chan message) func(ctx context.Context, wg *sync.WaitGroup) {
	return func(ctx context.Context, wg *sync.WaitGroup) {
		if s.done {
			return
		}
		credit := make(chan struct{}, s.credits)
		wg.Add(2)
		go func() {
			defer wg.Done()
			s.fetch(ctx, inbox, credit)
		}()
		known := map[string]bool{}
		for _, sp := range s.splits {
			known[sp.SplitID()] = true
		}
		first := !s.dyn.discovered
		skip := s.dyn.final // restored: discovery finished and will not run again
		go func() {
			defer wg.Done()
			if !skip {
				s.discover(ctx, inbox, first, known)
			}
		}()
	}
}

// send delivers m to the task unless ctx ends first.
func send(ctx context.Context, inbox chan message, m message) bool {
	select {
	case inbox <- m:
		return true
	case <-ctx.Done():
		return false
	}
}

// recoverReader turns a panic in a connector's goroutine into a message
// that fails the job.
func (s *SourceOperator[T]) recoverReader(ctx context.Context, inbox chan message, what string) {
	if p := recover(); p != nil {
		e, ok := p.(error)
		if !ok {
			e = fmt.Errorf("%v", p)
		}
		send(ctx, inbox, &discoveryMsg[T]{s: s, err: &OperatorError{
			Operator: s.name, Subtask: s.index, Err: fmt.Errorf("%s panicked: %w", what, e), Stack: string(debug.Stack())}})
	}
}

func (s *SourceOperator[T]) fetch(ctx context.Context, inbox chan message, credit chan struct{}) {
	defer s.recoverReader(ctx, inbox, "fetcher")
	r := s.dyn.reader
	free := make(chan []Record[T], s.credits+1)
	for {
		var buf []Record[T]
		select {
		case buf = <-free:
		default:
			buf = make([]Record[T], 0, 1024)
		}
		batches, buf, err := r.Fetch(ctx, buf)
		if ctx.Err() != nil {
			return
		}
		if len(batches) == 0 && err == nil {
			select {
			case free <- buf[:0]:
			default:
			}
			continue
		}
		select {
		case credit <- struct{}{}:
		case <-ctx.Done():
			return
		}
		if !send(ctx, inbox, &fetchMsg[T]{s: s, batches: batches, buf: buf, err: err, credit: credit, free: free}) || err != nil {
			return
		}
	}
}

func (s *SourceOperator[T]) discover(ctx context.Context, inbox chan message, first bool, known map[string]bool) {
	defer s.recoverReader(ctx, inbox, "split discovery")
	r := s.dyn.reader
	interval := r.DiscoveryInterval()
	for {
		splits, err := r.Discover(ctx, first, func(id string) bool { return known[id] })
		if ctx.Err() != nil {
			return
		}
		if err != nil {
			send(ctx, inbox, &discoveryMsg[T]{s: s, err: err})
			return
		}
		var fresh []Split
		for _, sp := range splits {
			id := sp.SplitID()
			if known[id] || !s.owns(sp) {
				continue
			}
			known[id] = true
			fresh = append(fresh, sp)
		}
		first = false
		final := interval <= 0
		if (len(fresh) > 0 || final || !s.discoveredOnce()) && !send(ctx, inbox, &discoveryMsg[T]{s: s, splits: fresh, final: final}) {
			return
		}
		s.markDiscoveredOnce()
		if final {
			return
		}
		if err := clock.Sleep(ctx, s.clk, s.clk.NowMillis()+interval.Milliseconds()); err != nil {
			return
		}
	}
}

// discoveredOnce and markDiscoveredOnce track, on the discovery
// goroutine, whether the first discovery's message was sent.
func (s *SourceOperator[T]) discoveredOnce() bool { return s.dyn.sentFirst.Load() }
func (s *SourceOperator[T]) markDiscoveredOnce()  { s.dyn.sentFirst.Store(true) }

// discoveryMsg carries discovered splits (or a failure) to the task.
type discoveryMsg[T any] struct {
	s      *SourceOperator[T]
	splits []Split
	final  bool
	err    error
}

func (m *discoveryMsg[T]) process() error {
	s := m.s
	if m.err != nil {
		var oe *OperatorError
		if errors.As(m.err, &oe) {
			return m.err
		}
		return fmt.Errorf("source %q: split discovery: %w", s.name, m.err)
	}
	if s.done {
		return nil
	}
	d := s.dyn
	var add []Split
	for _, sp := range m.splits {
		if _, ok := s.splitIndex[sp.SplitID()]; ok {
			continue
		}
		s.register(sp, false)
		add = append(add, sp)
	}
	if len(add) > 0 {
		if err := d.reader.AddSplits(add, make([][]byte, len(add))); err != nil {
			return fmt.Errorf("source %q: %w", s.name, err)
		}
		if err := s.checkAlignment(); err != nil {
			return err
		}
	}
	d.discovered = true
	if m.final {
		d.final = true
	}
	return s.checkIdleOrDone()
}

// fetchMsg carries one Fetch to the task.
type fetchMsg[T any] struct {
	s       *SourceOperator[T]
	batches []SplitBatch[T]
	buf     []Record[T]
	err     error
	credit  chan struct{}
	free    chan []Record[T]
}

func (m *fetchMsg[T]) process() error {
	s := m.s
	defer func() {
		<-m.credit
		if m.buf != nil {
			clearRecords(m.buf, s.ptrs)
			select {
			case m.free <- m.buf[:0]:
			default:
			}
		}
	}()
	for _, b := range m.batches {
		i, ok := s.splitIndex[b.Split]
		if !ok {
			return fmt.Errorf("source %q: the reader returned records of split %s, which the subtask does not have", s.name, b.Split)
		}
		if s.ended[i] || s.done {
			continue
		}
		for _, sr := range b.Side {
			if p := s.sides[sr.Tag]; p != nil {
				if err := p.EmitAny(sr.Value, sr.TS); err != nil {
					return fmt.Errorf("source %q, split %s: side output %q: %w", s.name, b.Split, sr.Tag, err)
				}
			}
		}
		if len(b.Recs) > 0 {
			s.stats.at(i).records.Add(int64(len(b.Recs)))
			if err := s.emit(i, b.Recs); err != nil {
				return err
			}
		}
		if b.Pos != nil {
			s.positions[b.Split] = b.Pos
		}
		if b.End {
			if err := s.endSplit(i); err != nil {
				return err
			}
		}
	}
	if m.err != nil {
		var oe *OperatorError
		if errors.As(m.err, &oe) {
			return m.err
		}
		return fmt.Errorf("source %q: read error: %w", s.name, m.err)
	}
	return s.checkAlignment()
}
