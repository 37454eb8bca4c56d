package weir

import (
	"context"
	"time"
	"unsafe"

	"github.com/weirstream/weir/internal/runtime"
)

// Split is one independently readable part of a source: a file, a
// partition, a range of a generator.
type Split interface {
	// SplitID names the split; it identifies the split's position in
	// checkpoints, so it must be stable across runs.
	SplitID() string
}

// Source is what connectors implement: it divides itself into splits and
// reads each split (Flink's Source with its SplitEnumerator and
// SourceReader in one). Split i goes to source subtask i mod parallelism;
// each subtask reads its splits on goroutines of their own, runs a
// watermark generator per split and combines them (minimum over non-idle
// splits). A source takes part in checkpoints when its readers implement
// PositionedReader and the source RestorableSource.
type Source[T any] interface {
	// Splits divides the source for a source operator of the given
	// parallelism.
	Splits(parallelism int) ([]Split, error)
	// Reader opens a split from its start.
	Reader(split Split) (SplitReader[T], error)
}

// SplitReader reads one split.
type SplitReader[T any] interface {
	// Read appends records to buf and returns it, blocking until at least
	// one record is available, ctx is done, or the split ends (io.EOF,
	// possibly with the last records). A record's TS is its timestamp if
	// the split has one (NoTimestamp otherwise); the watermark strategy's
	// timestamp assigner sees it.
	Read(ctx context.Context, buf []Record[T]) ([]Record[T], error)
	// Close releases the reader.
	Close() error
}

// ViewReader is implemented by split readers whose records already sit in
// memory that is never written again and outlives the job, such as a
// replay of records generated in advance. ReadView returns up to max of
// the next records as a view of that memory (a subslice, not a copy),
// blocking and ending (io.EOF, possibly with the last records) as Read
// does. Weir hands the view downstream as the batch without copying it and
// never writes, clears or reuses it, so the reader must not change the
// records afterwards either. User functions still receive copies of the
// values. A source with a timestamp assigner (WithTimestampAssigner)
// reads with Read, since it writes the timestamps into the batch.
type ViewReader[T any] interface {
	ReadView(ctx context.Context, max int) ([]Record[T], error)
}

// PositionedReader is implemented by split readers that can tell their
// position: where they would resume after the records returned so far. A
// checkpoint stores the position of every split.
type PositionedReader interface {
	// Position returns the reader's position, opaque to Weir.
	Position() ([]byte, error)
}

// RestorableSource is implemented by sources that reopen a split at a
// position its reader reported (PositionedReader); a job restored from a
// checkpoint or savepoint resumes every split there.
type RestorableSource[T any] interface {
	// ReaderAt opens split at pos.
	ReaderAt(split Split, pos []byte) (SplitReader[T], error)
}

// runtimeSource runs a Source as the runtime's: the same methods over the
// runtime's record type, and the optional interfaces kept.
func runtimeSource[T any](src Source[T]) runtime.Source[T] {
	if r, ok := src.(runtimeSourcer[T]); ok {
		return r.RuntimeSource()
	}
	a := sourceAdapter[T]{src}
	if d, ok := src.(DynamicSource[T]); ok {
		da := dynamicAdapter[T]{a, d}
		if c, ok := src.(clusterSource); ok {
			return clusterAdapter[T]{da, c}
		}
		return da
	}
	if r, ok := src.(RestorableSource[T]); ok {
		if sr, ok := src.(splitRestorer); ok {
			return rescalableAdapter[T]{restorableAdapter[T]{a, r}, sr}
		}
		return restorableAdapter[T]{a, r}
	}
	return a
}

// splitRestorer is implemented by this package's sources whose splits do
// not depend on the parallelism once made (runtime.SplitRestorer):
// restoreSplits rebuilds the splits a checkpoint names from their sorted
// ids, in an order that depends only on them.
type splitRestorer interface {
	restoreSplits(ids []string) ([]Split, error)
	// endless reports whether the source's splits never end
	// (runtime.EndlessSource).
	endless() bool
}

// rescalableAdapter runs a restorable source whose splits a restore
// redistributes over any parallelism.
type rescalableAdapter[T any] struct {
	restorableAdapter[T]
	sr splitRestorer
}

func (a rescalableAdapter[T]) Endless() bool { return a.sr.endless() }

func (a rescalableAdapter[T]) RestoreSplits(ids []string) ([]runtime.Split, error) {
	ss, err := a.sr.restoreSplits(ids)
	return runtimeSplits(ss), err
}

type sourceAdapter[T any] struct{ s Source[T] }

// userSource returns the Source the adapter runs, whose type names the
// source operator's kind (sourceKind).
func (a sourceAdapter[T]) userSource() any { return a.s }

func (a sourceAdapter[T]) Splits(p int) ([]runtime.Split, error) {
	ss, err := a.s.Splits(p)
	return runtimeSplits(ss), err
}

func (a sourceAdapter[T]) Reader(s runtime.Split) (runtime.SplitReader[T], error) {
	return readerOf(a.s.Reader(s))
}

type restorableAdapter[T any] struct {
	sourceAdapter[T]
	r RestorableSource[T]
}

func (a restorableAdapter[T]) ReaderAt(s runtime.Split, pos []byte) (runtime.SplitReader[T], error) {
	return readerOf(a.r.ReaderAt(s, pos))
}

func readerOf[T any](r SplitReader[T], err error) (runtime.SplitReader[T], error) {
	if err != nil || r == nil {
		return nil, err
	}
	p, positioned := r.(PositionedReader)
	v, view := r.(ViewReader[T])
	switch {
	case positioned && view:
		return positionedViewAdapter[T]{positionedAdapter[T]{readerAdapter[T]{r}, p}, v}, nil
	case positioned:
		return positionedAdapter[T]{readerAdapter[T]{r}, p}, nil
	case view:
		return viewAdapter[T]{readerAdapter[T]{r}, v}, nil
	}
	return readerAdapter[T]{r}, nil
}

type viewAdapter[T any] struct {
	readerAdapter[T]
	v ViewReader[T]
}

func (a viewAdapter[T]) ReadView(ctx context.Context, max int) ([]runtime.Record[T], error) {
	out, err := a.v.ReadView(ctx, max)
	return runtimeRecords(out), err
}

type positionedViewAdapter[T any] struct {
	positionedAdapter[T]
	v ViewReader[T]
}

func (a positionedViewAdapter[T]) ReadView(ctx context.Context, max int) ([]runtime.Record[T], error) {
	out, err := a.v.ReadView(ctx, max)
	return runtimeRecords(out), err
}

type readerAdapter[T any] struct{ r SplitReader[T] }

// Read hands the runtime's buffer to the reader as it is: Record and
// runtime.Record have identical underlying types, hence one layout, so the
// slices are reinterpreted, not copied (TestRecordLayout).
func (a readerAdapter[T]) Read(ctx context.Context, buf []runtime.Record[T]) ([]runtime.Record[T], error) {
	out, err := a.r.Read(ctx, publicRecords(buf))
	return runtimeRecords(out), err
}

func (a readerAdapter[T]) Close() error { return a.r.Close() }

type positionedAdapter[T any] struct {
	readerAdapter[T]
	p PositionedReader
}

func (a positionedAdapter[T]) Position() ([]byte, error) { return a.p.Position() }

// publicRecords reinterprets runtime records as Records (same layout).
func publicRecords[T any](rs []runtime.Record[T]) []Record[T] {
	if rs == nil {
		return nil
	}
	return unsafe.Slice((*Record[T])(unsafe.Pointer(unsafe.SliceData(rs))), cap(rs))[:len(rs)]
}

// runtimeRecords reinterprets Records as runtime records (same layout).
func runtimeRecords[T any](rs []Record[T]) []runtime.Record[T] {
	if rs == nil {
		return nil
	}
	return unsafe.Slice((*runtime.Record[T])(unsafe.Pointer(unsafe.SliceData(rs))), cap(rs))[:len(rs)]
}

// DynamicSource is a Source whose subtasks find their splits while they
// run instead of receiving a fixed list when the job is built: Flink's
// split enumerator with periodic discovery (Kafka's partitions, new topics
// that match a pattern). Each subtask discovers the splits it owns itself,
// so SplitOwner must depend only on the split and the parallelism; no
// coordination is needed. Weir never calls Splits or Reader of a
// DynamicSource.
//
// A subtask reads all its splits through one SubtaskReader (Flink's
// SourceReader with a single split fetcher). Its checkpointed state is
// every split it owns (EncodeSplit), the position of each after the
// records emitted so far, the splits that ended, and whether its first
// discovery had finished; a restore, at any parallelism, gives each split
// to its new owner.
type DynamicSource[T any] interface {
	Source[T]
	// NewSubtaskReader returns the reader of one subtask; it is called
	// when the subtask opens and must not block.
	NewSubtaskReader(info SubtaskInfo) (SubtaskReader[T], error)
	// SplitOwner returns the subtask, in [0, parallelism), that reads split.
	SplitOwner(split Split, parallelism int) int
	// EncodeSplit turns a split, including its starting position, into
	// bytes (checkpoints keep them).
	EncodeSplit(split Split) ([]byte, error)
	// DecodeSplit turns EncodeSplit's bytes back into the split.
	DecodeSplit(data []byte) (Split, error)
}

// SubtaskInfo tells a SubtaskReader where it runs.
type SubtaskInfo struct {
	// Name is the source operator's name.
	Name string
	// Subtask is the subtask's index, in [0, Parallelism).
	Subtask int
	// Parallelism is the source operator's parallelism.
	Parallelism int
	// Partition, when not -1, makes the subtask a task of a job run with
	// WithKafkaCluster: it reads exactly that partition of every topic,
	// whatever the source's own split assignment says.
	Partition int
}

// SubtaskReader reads the splits of one subtask of a DynamicSource.
// Discover runs on a discovery goroutine and Fetch on a fetch goroutine,
// concurrently; AddSplits and the optional interfaces (PositionCommitter,
// GaugeReporter) run on the task goroutine. Close runs once both
// goroutines have stopped.
type SubtaskReader[T any] interface {
	// Discover returns the splits this subtask owns that known does not
	// report, each with its starting position resolved (so that a restore
	// reads it from the same place). first is set on the first call of a
	// subtask that did not restore a finished discovery: the source's
	// starting positions apply then; otherwise the splits are new ones.
	// An error fails the job.
	Discover(ctx context.Context, first bool, known func(id string) bool) ([]Split, error)
	// DiscoveryInterval is the pause between two discoveries; 0 means
	// the first discovery is the only one, and the subtask ends when the
	// splits it found have ended (a bounded source).
	DiscoveryInterval() time.Duration
	// AddSplits starts reading splits, each from its position (nil: from
	// the split's starting position). It must not block for long; it may
	// be called while Fetch is blocked, and Fetch then returns their
	// records too.
	AddSplits(splits []Split, positions [][]byte) error
	// Fetch blocks until there are records or ended splits, or ctx is
	// done. It appends the records to buf and returns them as batches,
	// each holding records of one split (sub-slices of the returned buf)
	// and that split's position after them.
	Fetch(ctx context.Context, buf []Record[T]) ([]SplitBatch[T], []Record[T], error)
	// Close releases the reader's connections.
	Close() error
}

// SplitBatch is the part of a SubtaskReader's fetch that belongs to one
// split.
type SplitBatch[T any] struct {
	// Split is the split's id.
	Split string
	// Recs are the split's records, a sub-slice of the fetch's buffer.
	Recs []Record[T]
	// Pos is the split's position after Recs (nil: unchanged).
	Pos []byte
	// End tells that the split has ended after Recs.
	End bool
	// Side holds records for side outputs (dead letters), emitted before
	// Recs; a tag nobody consumes drops them.
	Side []SideRecord
}

// SideRecord is a record a source emits to a side output.
type SideRecord struct {
	// Tag is the side output's tag id (OutputTag.ID).
	Tag string
	// Value is the record; its type must be the tag's.
	Value any
	// TS is its timestamp (ms), or NoTimestamp.
	TS int64
}

// PositionCommitter is implemented by SubtaskReaders that publish the
// positions of a completed checkpoint outside the job (Kafka commits them
// to the consumer group, for monitoring). It runs on the task goroutine
// and must not block.
type PositionCommitter interface {
	// CommitPositions reports the position of every split of the
	// subtask at completed checkpoint.
	CommitPositions(checkpoint int64, positions map[string][]byte)
}

// SplitPauser is implemented by SubtaskReaders that can stop fetching
// some of their splits, as Flink's SourceReader.pauseOrResumeSplits
// (Kafka pauses partitions); a source with watermark alignment
// (WatermarkStrategy.WithWatermarkAlignment) needs it, and the job fails
// at start without it. It runs on the task goroutine and must not block.
// Records of a paused split that the reader had already fetched may
// still be returned; none may be lost or repeated.
type SplitPauser interface {
	// PauseOrResumeSplits stops reading the splits of pause and reads
	// those of resume again (split ids).
	PauseOrResumeSplits(pause, resume []string) error
}

// GaugeReporter is implemented by SubtaskReaders that publish gauges.
// Gauges may be called from any goroutine.
type GaugeReporter interface {
	// Gauges returns the current values.
	Gauges() []Gauge
}

// runtimeSourcer is implemented by the sources of this module's
// connectors that are written against the runtime's own types
// (internal/runsrc); they run as they are.
type runtimeSourcer[T any] interface {
	RuntimeSource() runtime.Source[T]
}

// dynamicAdapter runs a DynamicSource as the runtime's.
type dynamicAdapter[T any] struct {
	sourceAdapter[T]
	d DynamicSource[T]
}

func (a dynamicAdapter[T]) NewSubtaskReader(info runtime.SubtaskInfo) (runtime.SubtaskReader[T], error) {
	r, err := a.d.NewSubtaskReader(SubtaskInfo(info))
	if err != nil || r == nil {
		return nil, err
	}
	sa := subtaskAdapter[T]{r: r}
	if p, ok := r.(SplitPauser); ok {
		sa.p = p
	}
	pc, isPC := r.(PositionCommitter)
	gr, isGR := r.(GaugeReporter)
	switch {
	case isPC && isGR:
		return struct {
			subtaskAdapter[T]
			committerAdapter
			gaugeAdapter
		}{sa, committerAdapter{pc}, gaugeAdapter{gr}}, nil
	case isPC:
		return struct {
			subtaskAdapter[T]
			committerAdapter
		}{sa, committerAdapter{pc}}, nil
	case isGR:
		return struct {
			subtaskAdapter[T]
			gaugeAdapter
		}{sa, gaugeAdapter{gr}}, nil
	}
	return sa, nil
}

func (a dynamicAdapter[T]) SplitOwner(s runtime.Split, parallelism int) int {
	return a.d.SplitOwner(s, parallelism)
}

func (a dynamicAdapter[T]) EncodeSplit(s runtime.Split) ([]byte, error) { return a.d.EncodeSplit(s) }

func (a dynamicAdapter[T]) DecodeSplit(data []byte) (runtime.Split, error) {
	return a.d.DecodeSplit(data)
}

type subtaskAdapter[T any] struct {
	r SubtaskReader[T]
	p SplitPauser // nil if r cannot pause splits
}

// SplitPauser hands the runtime the reader's SplitPauser, nil if it has
// none (runtime.splitPauser).
func (a subtaskAdapter[T]) SplitPauser() runtime.SplitPauser {
	if a.p == nil {
		return nil
	}
	return a.p
}

func (a subtaskAdapter[T]) Discover(ctx context.Context, first bool, known func(string) bool) ([]runtime.Split, error) {
	ss, err := a.r.Discover(ctx, first, known)
	return runtimeSplits(ss), err
}

func (a subtaskAdapter[T]) DiscoveryInterval() time.Duration { return a.r.DiscoveryInterval() }

func (a subtaskAdapter[T]) AddSplits(splits []runtime.Split, positions [][]byte) error {
	ss := make([]Split, len(splits))
	for i, s := range splits {
		ss[i] = s
	}
	return a.r.AddSplits(ss, positions)
}

// Fetch converts the batch headers; the records are reinterpreted, not
// copied.
func (a subtaskAdapter[T]) Fetch(ctx context.Context, buf []runtime.Record[T]) ([]runtime.SplitBatch[T], []runtime.Record[T], error) {
	bs, recs, err := a.r.Fetch(ctx, publicRecords(buf))
	var out []runtime.SplitBatch[T]
	if bs != nil {
		out = make([]runtime.SplitBatch[T], len(bs))
	}
	for i, b := range bs {
		out[i] = runtime.SplitBatch[T]{Split: b.Split, Recs: runtimeRecords(b.Recs), Pos: b.Pos, End: b.End}
		if b.Side != nil {
			side := make([]runtime.SideRecord, len(b.Side))
			for j, r := range b.Side {
				side[j] = runtime.SideRecord(r)
			}
			out[i].Side = side
		}
	}
	return out, runtimeRecords(recs), err
}

func (a subtaskAdapter[T]) Close() error { return a.r.Close() }

type committerAdapter struct{ pc PositionCommitter }

func (a committerAdapter) CommitPositions(checkpoint int64, positions map[string][]byte) {
	a.pc.CommitPositions(checkpoint, positions)
}

type gaugeAdapter struct{ gr GaugeReporter }

func (a gaugeAdapter) Gauges() []runtime.Gauge {
	gs := a.gr.Gauges()
	out := make([]runtime.Gauge, len(gs))
	for i, g := range gs {
		out[i] = runtime.Gauge(g)
	}
	return out
}

func runtimeSplits(ss []Split) []runtime.Split {
	if ss == nil {
		return nil
	}
	out := make([]runtime.Split, len(ss))
	for i, s := range ss {
		out[i] = s
	}
	return out
}

// clusterSource is implemented by the Kafka connector's source, which a
// job run with WithKafkaCluster reads one partition per task.
type clusterSource interface {
	ClusterTopics() (brokers, topics []string, err error)
	SplitPartition(split Split) int
	SplitOffsets(splits, positions map[string][]byte) (map[string]map[int32]int64, error)
}

// clusterAdapter runs a DynamicSource that a cluster can read as the
// runtime's ClusterSource.
type clusterAdapter[T any] struct {
	dynamicAdapter[T]
	c clusterSource
}

func (a clusterAdapter[T]) ClusterInput() (runtime.ClusterInput, error) {
	brokers, topics, err := a.c.ClusterTopics()
	return runtime.ClusterInput{Brokers: brokers, Topics: topics}, err
}

func (a clusterAdapter[T]) SplitPartition(s runtime.Split) int { return a.c.SplitPartition(s) }

func (a clusterAdapter[T]) SplitOffsets(splits, positions map[string][]byte) ([]runtime.PartitionOffset, error) {
	m, err := a.c.SplitOffsets(splits, positions)
	if err != nil {
		return nil, err
	}
	var out []runtime.PartitionOffset
	for topic, parts := range m {
		for p, off := range parts {
			out = append(out, runtime.PartitionOffset{Topic: topic, Partition: p, Offset: off})
		}
	}
	return out, nil
}
