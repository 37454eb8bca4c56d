package weir

import (
	"fmt"
	"github.com/weirstream/weir/connector"

	"github.com/weirstream/weir/internal/engine"
	"github.com/weirstream/weir/internal/keygroup"
	"github.com/weirstream/weir/internal/streamgraph"
)

// Record is a stream element with its event timestamp in ms (NoTimestamp
// if it has none): what sources read, FromRecords takes, and Collect and
// the test harness return. It is connector.Record, the one record type of
// sources, the engine and the API.
type Record[T any] = connector.Record[T]

// NoTimestamp marks a record without an event timestamp.
const NoTimestamp = connector.NoTimestamp

// origin is one upstream of a stream: an operator's main or side output,
// with the partitioning the next edge uses.
type origin[T any] struct {
	node *engine.Node
	tag  string
	part streamgraph.Part[T]
}

// DataStream is a stream of T. Type-changing operations are package
// functions (Map, Process, KeyBy, ...); settings are methods.
type DataStream[T any] struct {
	env     *Environment
	origins []origin[T]
}

// Env returns the stream's environment.
func (ds DataStream[T]) Env() *Environment { return ds.env }

func (ds DataStream[T]) single(what string) *engine.Node {
	if len(ds.origins) != 1 || ds.origins[0].tag != "" {
		ds.env.fail(fmt.Errorf("%s: applies to an operator's output, not to a union or side output", what))
		return nil
	}
	return ds.origins[0].node
}

// Name sets the operator's name (in errors, logs and metrics).
func (ds DataStream[T]) Name(name string) DataStream[T] {
	if n := ds.single("Name"); n != nil {
		n.Name = name
	}
	return ds
}

// UID sets the operator's stable id (kept across job changes for state).
func (ds DataStream[T]) UID(uid string) DataStream[T] {
	if n := ds.single("UID"); n != nil {
		n.UID = uid
	}
	return ds
}

// SetParallelism sets the operator's parallelism.
func (ds DataStream[T]) SetParallelism(p int) DataStream[T] {
	if n := ds.single("SetParallelism"); n != nil {
		n.Parallelism = p
		if p < 1 {
			ds.env.fail(fmt.Errorf("operator %q: parallelism must be at least 1, got %d", n.Name, p))
		}
	}
	return ds
}

// DisableChaining starts a new task at this operator.
func (ds DataStream[T]) DisableChaining() DataStream[T] {
	if n := ds.single("DisableChaining"); n != nil {
		n.NoChain = true
	}
	return ds
}

// Parallelism returns the operator's parallelism.
func (ds DataStream[T]) Parallelism() int {
	if len(ds.origins) == 0 {
		return 0
	}
	return ds.origins[0].node.Parallelism
}

func (ds DataStream[T]) withPartition(p engine.Partitioning, hash func(*T) int32) DataStream[T] {
	out := DataStream[T]{env: ds.env, origins: make([]origin[T], len(ds.origins))}
	for i, o := range ds.origins {
		o.part = streamgraph.Part[T]{Kind: p, Hash: hash}
		out.origins[i] = o
	}
	return out
}

// connect adds edges from every origin of ds to input of n. Streams of two
// environments cannot meet: n's environment refuses the job (checkShape),
// and so does ds's, told here.
func (ds DataStream[T]) connect(n *engine.Node, input int) {
	if !ds.env.owns(n) {
		ds.env.fail(fmt.Errorf("operator %q of another environment reads this environment's stream; streams of two environments cannot be combined (build the whole job on one Environment)", n.Name))
	}
	for _, o := range ds.origins {
		streamgraph.Connect(o.node, o.tag, n, input, o.part)
	}
}

// Rebalance distributes records round-robin to the next operator.
func Rebalance[T any](ds DataStream[T]) DataStream[T] {
	return ds.withPartition(engine.PartitionRebalance, nil)
}

// Forward sends each subtask's records to the same subtask of the next
// operator (which must have the same parallelism).
func Forward[T any](ds DataStream[T]) DataStream[T] {
	return ds.withPartition(engine.PartitionForward, nil)
}

// BroadcastPartition sends every record to every subtask of the next operator.
func BroadcastPartition[T any](ds DataStream[T]) DataStream[T] {
	return ds.withPartition(engine.PartitionBroadcast, nil)
}

// Global sends every record to the first subtask of the next operator.
func Global[T any](ds DataStream[T]) DataStream[T] {
	return ds.withPartition(engine.PartitionGlobal, nil)
}

// Shuffle sends each record to a subtask of the next operator chosen
// uniformly at random (Flink's DataStream.shuffle).
func Shuffle[T any](ds DataStream[T]) DataStream[T] {
	return ds.withPartition(engine.PartitionShuffle, nil)
}

// Rescale distributes records round robin to a subset of the next
// operator's subtasks, as Flink's DataStream.rescale: the edge is
// pointwise, so each subtask exchanges records with few others instead of
// all. With p upstream and n downstream subtasks, as Flink's POINTWISE
// pattern: for p = n, subtask i sends to subtask i; for p > n, downstream
// subtask j reads upstream subtasks [j*p/n, (j+1)*p/n); for p < n,
// upstream subtask i sends round robin to [ceil(i*n/p), ceil((i+1)*n/p)),
// starting with the first. When p and n are not multiples of each other,
// subtasks get unequal shares. Unlike Forward the parallelisms may differ,
// and unlike Rebalance watermarks only flow along the pointwise channels.
func Rescale[T any](ds DataStream[T]) DataStream[T] {
	return ds.withPartition(engine.PartitionRescale, nil)
}

// PartitionCustom sends each record to the subtask of the next operator
// that partition chooses for the record's key: partition(key,
// numPartitions) must return an index in [0, numPartitions), where
// numPartitions is the next operator's parallelism (Flink's
// DataStream.partitionCustom(partitioner, keySelector)). An index out of
// range fails the job with a message naming it and the record. Unlike
// KeyBy the result is not a keyed stream: it has no keyed state.
//
// partition must be deterministic (a function of its arguments): a restore
// of an unaligned checkpoint at another parallelism replays in-flight
// records to the subtask partition picks then, as for KeyBy (Flink refuses
// unaligned checkpoints on such edges instead).
func PartitionCustom[K, T any](ds DataStream[T], partition func(key K, numPartitions int) int, key func(T) K) DataStream[T] {
	if partition == nil || key == nil {
		ds.env.fail(fmt.Errorf("PartitionCustom: %w", nilFnError("partitioner or key function")))
		return ds
	}
	out := ds.withPartition(engine.PartitionCustom, nil)
	route := func(v *T, n int) int { return partition(key(*v), n) }
	for i := range out.origins {
		out.origins[i].part.Custom = route
	}
	return out
}

// Union merges streams of one type; the next operator reads them as one
// input (one watermark valve over all their channels).
func Union[T any](first DataStream[T], more ...DataStream[T]) DataStream[T] {
	out := DataStream[T]{env: first.env, origins: append([]origin[T](nil), first.origins...)}
	for _, ds := range more {
		if ds.env != first.env {
			err := fmt.Errorf("union: streams belong to different environments")
			first.env.fail(err)
			ds.env.fail(err)
			continue
		}
		out.origins = append(out.origins, ds.origins...)
	}
	return out
}

// KeyedStream is a stream partitioned by key: records with equal keys go to
// the same subtask, by key group, and keyed operators see state per key.
type KeyedStream[K comparable, T any] struct {
	ds    DataStream[T]
	key   func(T) K
	hashK func(K) int32
}

// Stream returns the underlying stream, partitioned by key.
func (ks KeyedStream[K, T]) Stream() DataStream[T] { return ks.ds }

// KeySelector returns the key function.
func (ks KeyedStream[K, T]) KeySelector() func(T) K { return ks.key }

// Name names the keyBy (default "KeyBy") in errors: the key selector runs
// where records are routed to the keyed operator's subtasks, and a panic
// in it fails the job naming the keyBy and the operator it feeds.
func (ks KeyedStream[K, T]) Name(name string) KeyedStream[K, T] {
	ds := DataStream[T]{env: ks.ds.env, origins: append([]origin[T](nil), ks.ds.origins...)}
	for i := range ds.origins {
		ds.origins[i].part.Key = name
	}
	ks.ds = ds
	return ks
}

// Prepartitioned declares that the stream is already partitioned by this
// key where it comes from: records with equal keys are in the same
// partition of the Kafka topic the stream reads (the producer wrote them
// with this key as the record key and one partitioner, as Kafka Streams
// and keyed Kafka producers do), and nothing between the source and the
// keyBy moved them. It matters in a cluster (WithKafkaCluster), where
// the keyBy then stays inside the task that reads the partition instead
// of writing through a repartition topic; the keyed operator's state for
// a key lives in the task of the key's partition. Two such streams that
// feed one operator (a join, ConnectKeyed) are co-partitioned: their
// topics must have the same partition count (checked at start) and be
// partitioned by the same key with the same partitioner (which Weir
// cannot check: a key found in partition 1 of one topic and partition 2
// of the other never meets itself). As Kafka Streams, Weir takes the
// user's word for the partitioning. In one process the keyBy exchanges
// records as always, so a job gives the same results either way. It is
// Flink's DataStreamUtils.reinterpretAsKeyedStream for topics partitioned
// by Kafka rather than by key group.
func (ks KeyedStream[K, T]) Prepartitioned() KeyedStream[K, T] {
	ds := DataStream[T]{env: ks.ds.env, origins: append([]origin[T](nil), ks.ds.origins...)}
	for i := range ds.origins {
		ds.origins[i].part.Prepart = true
	}
	ks.ds = ds
	return ks
}

// Hashable lets a key type supply its own Java-style hash code (for
// example the hashCode of the Java class the key mirrors), which KeyBy
// then uses instead of its built-in rules. HashCode must be declared on
// the value type (a value receiver), be deterministic, and return equal
// codes for equal keys.
type Hashable interface {
	// HashCode returns the key's Java-style hash code.
	HashCode() int32
}

// KeyBy partitions ds by key. Key types: strings, integers, floats, bools,
// arrays and structs of those, or types implementing Hashable; they hash
// as Java's hashCode does, so keys map to the same key groups as in
// Flink.
func KeyBy[K comparable, T any](ds DataStream[T], key func(T) K) KeyedStream[K, T] {
	if key == nil {
		ds.env.fail(fmt.Errorf("KeyBy: key function is nil"))
		key = func(T) K { var k K; return k }
	}
	h, err := keygroup.HasherFor[K]()
	if err != nil {
		ds.env.fail(fmt.Errorf("KeyBy: %w", err))
		h = func(K) int32 { return 0 }
	}
	keyed := ds.withPartition(engine.PartitionHash, func(v *T) int32 { return h(key(*v)) })
	for i := range keyed.origins {
		keyed.origins[i].part.KeyStr = func(v *T) string { return fmt.Sprint(key(*v)) }
	}
	return KeyedStream[K, T]{
		ds:    keyed,
		key:   key,
		hashK: h,
	}.Name("KeyBy")
}

// newNode adds an operator node producing OUT. Its default name is also
// its kind (engine.Node.Operator), which a later .Name does not change.
func newNode[OUT any](env *Environment, name string, kind engine.NodeKind, parallelism int,
	build func(bc *engine.BuildContext, out *engine.Output[OUT]) (engine.Built, error)) *engine.Node {
	n := streamgraph.NewNode(len(env.nodes)+1, name, kind, parallelism, build)
	env.nodes = append(env.nodes, n)
	return n
}

func streamOf[T any](env *Environment, n *engine.Node) DataStream[T] {
	return DataStream[T]{env: env, origins: []origin[T]{{node: n}}}
}

// OutputTag names a side output carrying T. Tags are equal when their ids are.
type OutputTag[T any] struct {
	id string
}

// NewOutputTag returns a tag; the id must be non-empty.
func NewOutputTag[T any](id string) OutputTag[T] { return OutputTag[T]{id: id} }

// TagID returns the tag's id.
func (t OutputTag[T]) TagID() string { return t.id }

// SideOutput returns the stream of records that ds's operator emitted to tag.
func SideOutput[T, X any](ds DataStream[X], tag OutputTag[T]) DataStream[T] {
	n := ds.single("SideOutput")
	if n == nil {
		return DataStream[T]{env: ds.env}
	}
	if tag.id == "" {
		ds.env.fail(fmt.Errorf("operator %q: side output tag id must not be empty", n.Name))
	}
	registerSideType(ds, tag.id, fmt.Sprintf("%T", *new(T)))
	return DataStream[T]{env: ds.env, origins: []origin[T]{{node: n, tag: tag.id}}}
}

// registerSideType records that ds's operator emits values of type typ to
// the side output id, so that SideOutput with another type fails the build.
func registerSideType[T any](ds DataStream[T], id, typ string) {
	if id == "" {
		return
	}
	n := ds.single("side output")
	if n == nil {
		return
	}
	key := fmt.Sprintf("%d/%s", n.ID, id)
	if prev, ok := ds.env.tagTypes[key]; ok && prev != typ {
		ds.env.fail(fmt.Errorf("operator %q: side output %q used with types %s and %s", n.Name, id, prev, typ))
	}
	ds.env.tagTypes[key] = typ
}
