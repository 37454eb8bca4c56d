// Package connector is the API that connector authors implement: the
// source and sink interfaces Weir's own connectors (connector/kafka,
// connector/file, connector/socket) are written against, with no other
// way in. A job author hands a source to weir.FromSource or
// weir.FromDynamicSource and a sink to weir.ToSink or
// weir.AddTwoPhaseCommitSink.
//
// There are two kinds of source. A Source divides itself into splits
// when the job is built (Flink's Source with a static enumerator): split i
// goes to subtask i mod parallelism, and each split is read by its own
// SplitReader. A DynamicSource lets each subtask discover the splits it
// owns while the job runs and read all of them through one SubtaskReader
// (Flink's split enumerator with periodic discovery and a SourceReader
// with one fetcher: Kafka). Optional interfaces add checkpointing
// (PositionedReader, RestorableSource), rescaling (SplitRestorer),
// watermark alignment (SplitPauser), commits outside the job
// (PositionCommitter) and metrics (GaugeReporter).
//
// The package imports only the standard library, so that the engine can
// run these interfaces as they are: a reader's batch is the engine's
// batch, without an adapter or a copy.
package connector

import (
	"context"
	"math"
	"time"
)

// Record is a stream element with its event timestamp in ms (NoTimestamp
// if it has none). weir.Record is the same type.
type Record[T any] struct {
	// Value is the element.
	Value T
	// TS is its event timestamp in ms, or NoTimestamp.
	TS int64
}

// NoTimestamp marks a record without an event timestamp.
const NoTimestamp int64 = math.MinInt64

// Split is one independently readable part of a source: a file, a
// partition, a range of a generator.
type Split interface {
	// SplitID names the split; it identifies the split's position in
	// checkpoints, so it must be stable across runs.
	SplitID() string
}

// Source is a source whose splits are made when the job is built: it
// divides itself into splits and reads each split. Split i goes to source
// subtask i mod parallelism; each subtask reads its splits on goroutines
// of their own, runs a watermark generator per split and combines them
// (minimum over non-idle splits). A source takes part in checkpoints when
// its readers implement PositionedReader and the source RestorableSource.
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
	// possibly with the last records). A reader should fill buf up to its
	// capacity when records are at hand: the batch it returns is the batch
	// the engine sends on. A record's TS is its timestamp if the split has
	// one (NoTimestamp otherwise); the watermark strategy's timestamp
	// assigner sees it.
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
// values. A source with a timestamp assigner reads with Read, since it
// writes the timestamps into the batch.
type ViewReader[T any] interface {
	// ReadView returns up to max of the next records as a view.
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

// SplitRestorer is implemented by sources whose splits, once made, do not
// depend on the parallelism (as Flink's enumerator keeps them in its
// checkpointed state): a restore, at any parallelism, reads the splits the
// checkpoint names, not those Splits would make now.
type SplitRestorer interface {
	// RestoreSplits rebuilds the splits from their ids (the union over
	// every old subtask, sorted) and returns them in an order that
	// depends only on ids; split i of the result goes to subtask i mod
	// the new parallelism, and each resumes at its checkpointed position
	// wherever it lands.
	RestoreSplits(ids []string) ([]Split, error)
}

// EndlessSource is implemented by sources whose splits never end (an
// unbounded generator). A subtask of it that has no split, as after a
// restore at a parallelism above its number of splits, stays open and
// idle instead of finishing, so that the job's checkpoints go on.
type EndlessSource interface {
	// Endless reports whether the source's splits never end.
	Endless() bool
}

// DynamicSource is a source whose subtasks find their splits while they
// run instead of receiving a fixed list when the job is built: Flink's
// split enumerator with periodic discovery (Kafka's partitions, new topics
// that match a pattern). Each subtask discovers the splits it owns itself,
// so SplitOwner must depend only on the split and the parallelism; no
// coordination is needed.
//
// A subtask reads all its splits through one SubtaskReader (Flink's
// SourceReader with a single split fetcher). Its checkpointed state is
// every split it owns (EncodeSplit), the position of each after the
// records emitted so far, the splits that ended, and whether its first
// discovery had finished; a restore, at any parallelism, gives each split
// to its new owner.
type DynamicSource[T any] interface {
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
	// Partition, when not -1, makes the subtask a task of a job run on a
	// Kafka cluster: it reads exactly that partition of every topic,
	// whatever the source's own split assignment says.
	Partition int
}

// SubtaskReader reads the splits of one subtask of a DynamicSource.
// Discover runs on a discovery goroutine and Fetch on a fetch goroutine,
// concurrently; AddSplits and the optional interfaces (PositionCommitter,
// SplitPauser, GaugeReporter) run on the task goroutine. Close runs once
// both goroutines have stopped.
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
	// Tag is the side output's tag id (weir.OutputTag's ID).
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
// (Kafka pauses partitions); a source with watermark alignment needs it,
// and the job fails at start without it. It runs on the task goroutine
// and must not block. Records of a paused split that the reader had
// already fetched may still be returned; none may be lost or repeated.
type SplitPauser interface {
	// PauseOrResumeSplits stops reading the splits of pause and reads
	// those of resume again (split ids).
	PauseOrResumeSplits(pause, resume []string) error
}

// Gauge is a named value a reader publishes with the job's metrics, with
// labels (Kafka's lag per partition: topic and partition).
type Gauge struct {
	// Name is the gauge's name.
	Name string
	// Labels qualify the value.
	Labels map[string]string
	// Value is the current value.
	Value float64
}

// GaugeReporter is implemented by SubtaskReaders that publish gauges.
// Gauges may be called from any goroutine.
type GaugeReporter interface {
	// Gauges returns the current values.
	Gauges() []Gauge
}

// Validator is implemented by sources and sinks that check their settings
// (and the services they use) when the job is built: the job's Execute
// returns its error before anything runs.
type Validator interface {
	// Validate returns the first problem found, nil if none.
	Validate(ctx context.Context) error
}
