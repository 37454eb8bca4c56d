package engine

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"

	"github.com/weirstream/weir/internal/clock"
	"github.com/weirstream/weir/internal/keygroup"
	"github.com/weirstream/weir/metrics"
)

// NodeKind tells how many inputs a node has.
type NodeKind int

const (
	// KindSource nodes have no inputs.
	KindSource NodeKind = iota
	// KindOneInput nodes have one input (possibly fed by several edges: a union).
	KindOneInput
	// KindTwoInput nodes have two inputs.
	KindTwoInput
	// KindExternal nodes stand for inputs fed from outside the plan (a test
	// harness); they have no operator and no task.
	KindExternal
)

// Node is one operator of the logical graph, type-erased; typed closures
// build its operator per subtask.
type Node struct {
	ID   int
	Name string
	// UID is the id the user gave the operator (.UID); "" for an
	// automatic one (AssignIDs).
	UID string
	// Operator is the operator's kind (e.g. "KeyedProcess", "source
	// weir.generatorSource"), saved with its state: a restore gives state
	// only to an operator of the same id and kind.
	Operator string
	// Sink marks an operator that ends a stream (a job needs one).
	Sink        bool
	Kind        NodeKind
	Parallelism int
	Inputs      []*Edge
	// NoChain starts a new chain at this node.
	NoChain bool
	// Channels is the number of channels of an external node.
	Channels int
	// NewOutput makes the node's main output.
	NewOutput func(batchSize int) OutputPort
	// Build makes the node's operator in one subtask.
	Build func(c *BuildContext) (Built, error)
	// Connector is the source or sink behind the node, if any (a cluster
	// asks it whether it implements ClusterSource or ClusterSink).
	Connector any
	// Watermarks is the watermark strategy a source or a timestamp
	// assigner declares (for the monitor); nil if none.
	Watermarks *WatermarkDecl

	outs   []*Edge
	autoID string // AssignIDs
}

// Built is what a node's Build returns.
type Built struct {
	// Inputs holds an Input[T] per logical input (none for sources).
	Inputs []any
	// Life is opened and closed with the task; may be nil.
	Life Lifecycle
	// Source is set for source nodes.
	Source SourceRunner
	// Metrics optionally reads input watermarks.
	InputWatermarks func() []int64
}

// SourceRunner is the part of a source operator the task needs.
type SourceRunner interface {
	Starter(inbox chan message) func(ctx context.Context, wg *sync.WaitGroup)
	InboxCapacity() int
	Done() bool
}

// BuildContext is what a node's Build gets for one subtask.
type BuildContext struct {
	Name           string
	Subtask        int
	Parallelism    int
	MaxParallelism int
	KeyGroups      keygroup.Range
	Main           OutputPort
	Sides          map[string]OutputPort
	Time           ProcessingTimeService
	Clock          clock.Clock
	BatchSize      int
	Credits        int
	// UID identifies the operator's state across runs.
	UID string
	// Activity is the task's input-activity clock (FLIP-471): it stops
	// while the task is blocked on backpressure.
	Activity *clock.Pausable
	// Alignment holds the job's watermark alignment groups.
	Alignment *AlignmentGroups
	// Restored is the state to restore from, or nil.
	Restored *Restored
	// Mailbox is the task's mailbox, for operators that wait on other
	// goroutines (mailbox.go).
	Mailbox *Mailbox
	// Fail fails the operator's task from any goroutine (Task.Fail), with
	// err wrapped in an OperatorError naming the operator: for failures
	// outside the task's steps, such as a state backend's database failing
	// on a goroutine of its own. It never blocks. Nil outside a plan.
	Fail func(err error)
	// UserMetrics holds the metrics the operator's user functions
	// register (metrics.Group); nil outside a plan.
	UserMetrics *metrics.Group
	// Cluster is set when the plan runs one task of a cluster stage
	// (Subtask and Parallelism are then the task's index and count).
	Cluster *ClusterTask
}

// Side returns the side output for tag, or nil if nobody consumes it.
func (c *BuildContext) Side(tag string) OutputPort { return c.Sides[tag] }

// Edge connects a node's main or side output to an input of another node.
type Edge struct {
	From      *Node
	Tag       string // "" for the main output
	To        *Node
	Input     int // 0 or 1
	Partition Partitioning
	// KeyName names the keyBy of a hash edge, in errors of its key selector.
	KeyName string
	// Prepartitioned marks a hash edge whose records are already
	// partitioned by its key where they come from (KeyedStream.Prepartitioned):
	// in a cluster it stays inside a stage instead of going through a
	// repartition topic.
	Prepartitioned bool
	ops            edgeOps
}

type edgeOps interface {
	newOutput(batchSize int) OutputPort
	newExchange(kind Partitioning, producers, consumers, maxP int, cfg ExchangeConfig) (exchange, error)
	newGate(channels int, sink any) (gate, error)
	// route and checkEncodable serve cluster stages (cluster.go).
	route(partitions, maxP int) any
	checkEncodable() error
	newRemoteWriter(spec RemoteWriterSpec) *Node
	newRemoteReader(spec RemoteReaderSpec) *Node
}

type exchange interface {
	writer(ctx context.Context, p int, m *TaskMetrics) (barrierWriter, any)
	attach(i int, g gate, offset int, inbox chan message)
	producers() int
	// channels returns the number of input channels of consumer c.
	channels(c int) int
	// routeFunc returns a hash or custom exchange's routing, func(*T)
	// int, else nil.
	routeFunc() any
	// keyFunc returns a keyBy exchange's key renderer, func(*T) string, else nil.
	keyFunc() any
}

type gate interface {
	channelStateGate
	SetAligner(a *Aligner, index int)
	Ended() bool
	Watermark() int64
	RecordsIn() int64
	Idle() bool
	countInto(io *IOCounters)
	capturable
}

// NewEdge connects from (its main output, or the side output tag) to input
// of to, for records of type T. For PartitionHash, hash gives the Java-style
// hash code of a record's key (the record is passed by pointer, not to be
// kept).
func NewEdge[T any](from *Node, tag string, to *Node, input int, p Partitioning, hash func(*T) int32) *Edge {
	e := &Edge{From: from, Tag: tag, To: to, Input: input, Partition: p, ops: typedEdge[T]{hash: hash}}
	to.Inputs = append(to.Inputs, e)
	return e
}

// NewCustomEdge connects from to input of to with PartitionCustom:
// partition returns the consumer index of a record (passed by pointer, not
// to be kept) among n consumers.
func NewCustomEdge[T any](from *Node, tag string, to *Node, input int, partition func(v *T, n int) int) *Edge {
	e := &Edge{From: from, Tag: tag, To: to, Input: input, Partition: PartitionCustom, ops: typedEdge[T]{custom: partition}}
	to.Inputs = append(to.Inputs, e)
	return e
}

type typedEdge[T any] struct {
	hash      func(*T) int32
	keyString func(*T) string
	custom    func(*T, int) int
}

// SetKeyString gives a hash edge the function that renders a record's
// key, for the key sketch of its exchange (metrics.go). e must carry
// records of type T.
func SetKeyString[T any](e *Edge, f func(*T) string) {
	if te, ok := e.ops.(typedEdge[T]); ok {
		te.keyString = f
		e.ops = te
	}
}

func (typedEdge[T]) newOutput(batchSize int) OutputPort { return NewOutput[T](batchSize) }

func (e typedEdge[T]) newExchange(kind Partitioning, producers, consumers, maxP int, cfg ExchangeConfig) (exchange, error) {
	var route func(*T) int
	if e.keyString != nil {
		cfg.KeyString = e.keyString
	}
	switch kind {
	case PartitionHash:
		h := e.hash
		route = func(v *T) int { return keygroup.OperatorIndex(keygroup.Of(h(v), maxP), consumers, maxP) }
	case PartitionCustom:
		if c := e.custom; c != nil {
			route = func(v *T) int { return c(v, consumers) }
		}
	}
	x, err := NewExchange[T](kind, route, producers, consumers, cfg)
	if err != nil {
		return nil, err
	}
	return typedExchange[T]{x}, nil
}

func (typedEdge[T]) newGate(channels int, sink any) (gate, error) {
	in, ok := sink.(Input[T])
	if !ok {
		var zero T
		return nil, fmt.Errorf("input of %T cannot take records of %T", sink, zero)
	}
	return NewGate[T](channels, in), nil
}

type typedExchange[T any] struct{ x *Exchange[T] }

func (t typedExchange[T]) writer(ctx context.Context, p int, m *TaskMetrics) (barrierWriter, any) {
	w := t.x.Writer(ctx, p, m)
	return w, Input[T](w)
}
func (t typedExchange[T]) attach(i int, g gate, offset int, inbox chan message) {
	t.x.Attach(i, g.(*Gate[T]), offset, inbox)
}
func (t typedExchange[T]) producers() int     { return t.x.Producers() }
func (t typedExchange[T]) channels(c int) int { return t.x.Channels(c) }
func (t typedExchange[T]) keyFunc() any {
	if t.x.keyFn == nil {
		return nil
	}
	return t.x.keyFn
}
func (t typedExchange[T]) routeFunc() any {
	if t.x.route == nil {
		return nil
	}
	return t.x.route
}

// Config holds the job-wide settings a plan needs.
type Config struct {
	MaxParallelism int
	BatchSize      int
	Credits        int
	Chaining       bool
	Clock          clock.Clock
	// Checkpoint enables checkpoints; nil disables them.
	Checkpoint *CheckpointConfig
	// Restore holds the state to start from: per operator UID, the
	// snapshots of its old subtasks by index.
	Restore map[string][]OperatorSnapshot
	// KeySample is the key-sketch sampling stride at keyBy exchanges (one
	// record in KeySample; 0 disables the sketches).
	KeySample int
	// Task, if set, makes the plan one task of a cluster stage (every node
	// must have parallelism 1); see ClusterTask.
	Task *ClusterTask
}

// UIDOf returns a node's state id: its UID, or the automatic id AssignIDs
// derived from the graph (BuildPlan assigns them).
func UIDOf(n *Node) string {
	if n.UID != "" {
		return n.UID
	}
	return n.autoID
}

func restoredFor(old []OperatorSnapshot, sub int, r keygroup.Range) *Restored {
	if len(old) == 0 {
		return nil
	}
	rs := &Restored{KeyGroups: map[int][]byte{}, State: old[sub%len(old)].State}
	for _, o := range old {
		rs.All = append(rs.All, o.State)
		if o.KeyedFiles != nil {
			rs.KeyedFiles = append(rs.KeyedFiles, o.KeyedFiles)
		}
		for kg, data := range o.KeyGroups {
			if r.Contains(kg) {
				rs.KeyGroups[kg] = data
			}
		}
	}
	return rs
}

// ExternalInput is an input gate fed from outside the plan (test harness).
type ExternalInput struct {
	Node  *Node
	Gate  any // *Gate[T]
	Input int
	Task  *Task
}

// Plan is the physical plan of a job: its tasks, ready to run.
type Plan struct {
	Tasks    []*Task
	External []ExternalInput
	// Vertices describes the tasks' chains (vertices.go).
	Vertices []Vertex
	cfg      Config
	acks     chan TaskAck
	// alignment holds the watermark alignment groups of this run.
	alignment *AlignmentGroups
	// onOpen, if set, learns once per Run whether every task opened.
	onOpen func(error)
}

// OnOpen sets f to be called once per Run when every task has opened its
// operators and restored their state (err nil), or with the first error
// of a task that could not, before any task starts processing: with f
// set, Run holds every task back until all have opened (without, each
// task starts once it has opened).
func (p *Plan) OnOpen(f func(err error)) { p.onOpen = f }

// BuildPlan chains nodes into tasks, creates the exchanges and builds every
// operator of every subtask. Nodes must be in topological order.
func BuildPlan(ctx context.Context, nodes []*Node, cfg Config) (*Plan, error) {
	if err := AssignIDs(nodes, cfg.Chaining); err != nil {
		return nil, err
	}
	for _, n := range nodes {
		n.outs = nil
	}
	if cc := cfg.Checkpoint; cc != nil {
		switch {
		case cc.Unaligned && !cc.ExactlyOnce:
			return nil, fmt.Errorf("unaligned checkpoints need exactly-once mode, not at-least-once (as Flink)")
		case cc.AlignedTimeout < 0:
			return nil, fmt.Errorf("the aligned-checkpoint timeout must not be negative, got %v", cc.AlignedTimeout)
		case cc.AlignedTimeout > 0 && !cc.Unaligned:
			return nil, fmt.Errorf("an aligned-checkpoint timeout (%v) needs unaligned checkpoints", cc.AlignedTimeout)
		}
	}
	for _, n := range nodes {
		if cfg.Task != nil && n.Parallelism != 1 {
			return nil, fmt.Errorf("operator %q: a cluster task runs every operator once, got parallelism %d", n.Name, n.Parallelism)
		}
		if n.Kind != KindExternal && (n.Parallelism < 1 || n.Parallelism > cfg.MaxParallelism) {
			return nil, fmt.Errorf("operator %q: parallelism %d is outside [1, %d]", n.Name, n.Parallelism, cfg.MaxParallelism)
		}
		for _, e := range n.Inputs {
			e.From.outs = append(e.From.outs, e)
			pf := e.From.Parallelism
			if e.From.Kind == KindExternal {
				pf = n.Parallelism
			}
			if e.Partition == PartitionDefault {
				if pf == n.Parallelism {
					e.Partition = PartitionForward
				} else {
					e.Partition = PartitionRebalance
				}
			}
			if e.Partition == PartitionForward && pf != n.Parallelism {
				return nil, fmt.Errorf("operator %q: forward partitioning from %q needs equal parallelism (%d vs %d)", n.Name, e.From.Name, pf, n.Parallelism)
			}
		}
	}
	head := map[*Node]*Node{}
	chained := func(e *Edge) bool { return chainable(e, cfg.Chaining) }
	var heads []*Node
	members := map[*Node][]*Node{}
	for _, n := range nodes {
		if n.Kind == KindExternal {
			continue
		}
		h := n
		if len(n.Inputs) == 1 && chained(n.Inputs[0]) {
			h = head[n.Inputs[0].From]
		} else {
			heads = append(heads, n)
		}
		head[n] = h
		members[h] = append(members[h], n)
	}
	// One exchange per network edge.
	exchanges := map[*Edge]exchange{}
	for _, n := range nodes {
		for _, e := range n.Inputs {
			if chained(e) || e.From.Kind == KindExternal {
				continue
			}
			x, err := e.ops.newExchange(e.Partition, e.From.Parallelism, n.Parallelism, cfg.MaxParallelism,
				ExchangeConfig{BatchSize: cfg.BatchSize, Credits: cfg.Credits, Target: n.Name, KeySample: cfg.KeySample, KeyName: e.KeyName})
			if err != nil {
				return nil, fmt.Errorf("operator %q: %w", n.Name, err)
			}
			exchanges[e] = x
		}
	}
	plan := &Plan{cfg: cfg, alignment: NewAlignmentGroups()}
	plan.Vertices = describeVertices(heads, members, head, chained)
	for _, h := range heads {
		for sub := 0; sub < h.Parallelism; sub++ {
			t, err := buildTask(ctx, h, members[h], sub, cfg, exchanges, chained, plan)
			if err != nil {
				return nil, err
			}
			plan.Tasks = append(plan.Tasks, t)
		}
	}
	if cfg.Checkpoint != nil {
		plan.acks = make(chan TaskAck, 2*len(plan.Tasks)+2)
		for _, t := range plan.Tasks {
			t.SetAcks(plan.acks)
		}
	}
	return plan, nil
}

func buildTask(ctx context.Context, h *Node, chain []*Node, sub int, cfg Config, exchanges map[*Edge]exchange, chained func(*Edge) bool, plan *Plan) (*Task, error) {
	name := h.Name
	for _, n := range chain[1:] {
		name += " -> " + n.Name
	}
	t := NewTask(name, sub, cfg.Clock)
	t.Vertex = UIDOf(h)
	ports := map[*Node]map[string]OutputPort{}
	built := map[*Node]Built{}
	var source SourceRunner
	for _, n := range chain {
		main := n.NewOutput(cfg.BatchSize)
		sides := map[string]OutputPort{}
		for _, e := range n.outs {
			if e.Tag != "" && sides[e.Tag] == nil {
				sides[e.Tag] = e.ops.newOutput(cfg.BatchSize)
			}
		}
		kgs := keygroup.RangeFor(cfg.MaxParallelism, n.Parallelism, sub)
		index, par := sub, n.Parallelism
		if ct := cfg.Task; ct != nil {
			kgs = keygroup.RangeFor(cfg.MaxParallelism, 1, 0)
			index, par = ct.Index, ct.Count
		}
		bc := &BuildContext{
			Name: n.Name, Subtask: index, Parallelism: par, MaxParallelism: cfg.MaxParallelism,
			KeyGroups: kgs,
			Main:      main, Sides: sides, Time: t, Clock: cfg.Clock,
			BatchSize: cfg.BatchSize, Credits: cfg.Credits,
			UID: UIDOf(n), Restored: restoredFor(cfg.Restore[UIDOf(n)], sub, kgs),
			Mailbox:  t.Mailbox(),
			Fail:     func(err error) { t.Fail(&OperatorError{Operator: n.Name, Subtask: sub, Err: err}) },
			Cluster:  cfg.Task,
			Activity: t.Activity(), Alignment: plan.alignment,
			UserMetrics: metrics.NewGroup(n.Name),
		}
		b, err := n.Build(bc)
		if err != nil {
			return nil, fmt.Errorf("operator %q: %w", n.Name, err)
		}
		built[n] = b
		p := map[string]OutputPort{"": main}
		for k, v := range sides {
			p[k] = v
		}
		ports[n] = p
		t.AddOutput(main)
		for _, s := range sides {
			t.AddOutput(s)
			main.AddSibling(s)
		}
		if b.Life != nil {
			t.AddLifecycle(n.Name, b.Life)
			if s, ok := b.Life.(Snapshotter); ok {
				t.AddSnapshotter(UIDOf(n), s)
			}
			if l, ok := b.Life.(CheckpointListener); ok {
				t.AddListener(l)
			}
		}
		if b.Source != nil {
			source = b.Source
		}
		om := &OperatorMetrics{Name: n.Name, RecordsOut: main.Counted, InputWatermarks: b.InputWatermarks,
			OutputWatermark: main.OutputWatermark, OutputIdle: main.OutputIdle}
		if c, ok := b.Life.(LateDropCounter); ok {
			om.LateDropped = c.LateRecordsDropped
		}
		if g, ok := b.Life.(GaugeReporter); ok {
			om.Gauges = g.Gauges
		}
		om.User = bc.UserMetrics
		t.watchOperator(om, n, b)
		t.Metrics.Operators = append(t.Metrics.Operators, om)
		// Chained inputs.
		for _, e := range n.Inputs {
			if chained(e) {
				up := ports[e.From][e.Tag]
				if err := up.AddTarget(b.Inputs[e.Input]); err != nil {
					return nil, fmt.Errorf("operator %q: %w", n.Name, err)
				}
				om.RecordsIn = up.Counted
				if om.InputWatermarks == nil {
					om.InputWatermarks = func() []int64 { return []int64{up.OutputWatermark()} }
				}
				om.InputIdle = func() []bool { return []bool{up.OutputIdle()} }
			}
		}
		// Network outputs.
		for _, e := range n.outs {
			x, ok := exchanges[e]
			if !ok {
				continue
			}
			flusher, in := x.writer(ctx, sub, t.Metrics)
			if err := ports[n][e.Tag].AddTarget(in); err != nil {
				return nil, fmt.Errorf("operator %q: %w", n.Name, err)
			}
			t.AddWriter(flusher)
		}
	}
	// The head's input gates.
	var gates []gate
	capacity := 0
	hb := built[h]
	type attachment struct {
		x      exchange
		g      gate
		offset int
	}
	var atts []attachment
	for input := 0; input < len(hb.Inputs); input++ {
		var edges []*Edge
		channels := 0
		for _, e := range h.Inputs {
			if e.Input != input {
				continue
			}
			edges = append(edges, e)
			if e.From.Kind == KindExternal {
				channels += max(e.From.Channels, 1)
			} else {
				channels += exchanges[e].channels(sub)
			}
		}
		if len(edges) == 0 {
			return nil, fmt.Errorf("operator %q: input %d is not connected", h.Name, input+1)
		}
		g, err := edges[0].ops.newGate(channels, hb.Inputs[input])
		if err != nil {
			return nil, fmt.Errorf("operator %q: %w", h.Name, err)
		}
		gates = append(gates, g)
		offset := 0
		for _, e := range edges {
			if e.From.Kind == KindExternal {
				plan.External = append(plan.External, ExternalInput{Node: e.From, Gate: g, Input: input, Task: t})
				g.addEdge(EdgeChannels{Partition: PartitionDefault, Channels: max(e.From.Channels, 1)}, nil)
				offset += max(e.From.Channels, 1)
				continue
			}
			x := exchanges[e]
			layout := EdgeChannels{Partition: e.Partition, Channels: x.channels(sub)}
			if e.Partition == PartitionRescale {
				// A rescale edge's channels depend on both parallelisms.
				layout.Producers = x.producers()
			}
			g.addEdge(layout, x.routeFunc())
			g.setKey(x.keyFunc())
			atts = append(atts, attachment{x, g, offset})
			offset += x.channels(sub)
			capacity += x.producers() * max(cfg.Credits, 1)
		}
	}
	if source != nil {
		capacity += source.InboxCapacity()
		t.source = true
	}
	t.parallelism = h.Parallelism
	t.gates = gates
	for _, n := range chain[1:] {
		for _, o := range cfg.Restore[UIDOf(n)] {
			if len(o.ChannelState) > 0 {
				return nil, fmt.Errorf("operator %q: the checkpoint holds in-flight data of an unaligned checkpoint for it, but it is now chained behind %q and has no input channels of its own; restore with the old chaining", n.Name, h.Name)
			}
		}
	}
	if len(gates) > 0 {
		t.headUID = UIDOf(h)
		csg := make([]channelStateGate, len(gates))
		for i, g := range gates {
			csg[i] = g
		}
		replay, err := restoreChannelState(cfg.Restore[t.headUID], h.Name, sub, h.Parallelism, csg)
		if err != nil {
			return nil, err
		}
		t.replay = replay
	}
	if cfg.Checkpoint != nil && len(gates) > 0 {
		cc := cfg.Checkpoint
		if cc.Unaligned {
			for i, g := range gates {
				if err := g.probeChannelState(); err != nil {
					return nil, fmt.Errorf("operator %q: input %d: %w", h.Name, i+1, err)
				}
			}
		}
		t.aligner = t.newAligner(cc)
		for i, g := range gates {
			g.SetAligner(t.aligner, i)
		}
	}
	inbox := make(chan message, capacity+8) // room for control messages
	t.SetInbox(inbox)
	for _, a := range atts {
		a.x.attach(sub, a.g, a.offset, inbox)
	}
	if source != nil {
		t.AddStarter(source.Starter(inbox))
		t.SetDone(source.Done)
	} else {
		t.SetDone(func() bool {
			for _, g := range gates {
				if !g.Ended() {
					return false
				}
			}
			return true
		})
	}
	if len(gates) > 0 {
		om := t.Metrics.Operators[0]
		watchGates(om, gates, &t.Metrics.IO)
		om.RecordsIn = func() int64 {
			var n int64
			for _, g := range gates {
				n += g.RecordsIn()
			}
			return n
		}
		if om.InputWatermarks == nil {
			om.InputWatermarks = func() []int64 {
				w := make([]int64, len(gates))
				for i, g := range gates {
					w[i] = g.Watermark()
				}
				return w
			}
		}
	}
	return t, nil
}

// Run runs every task of the plan on its own goroutine until all finish,
// one fails (the others are then cancelled), or ctx is cancelled.
func (p *Plan) Run(ctx context.Context) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	errs := make(chan error, len(p.Tasks))
	if p.cfg.Checkpoint != nil {
		log := p.cfg.Checkpoint.Logger
		if log == nil {
			log = slog.Default()
		}
		c := &coordinator{cfg: *p.cfg.Checkpoint, clk: p.cfg.Clock, tasks: p.Tasks, acks: p.acks, log: log}
		c.init() // before the tasks run: it gives them their signal
		cctx, stop := context.WithCancel(ctx)
		var cwg sync.WaitGroup
		cwg.Add(1)
		go func() { defer cwg.Done(); c.run(cctx) }()
		defer func() { stop(); cwg.Wait() }()
	}
	if p.onOpen != nil {
		p.gateStart(ctx)
	}
	for _, t := range p.Tasks {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := t.Run(ctx); err != nil {
				errs <- err
				cancel()
			}
		}()
	}
	wg.Wait()
	close(errs)
	var first error
	for err := range errs {
		if first == nil || (errors.Is(first, context.Canceled) && !errors.Is(err, context.Canceled)) {
			first = err
		}
	}
	if first == nil && ctx.Err() != nil {
		// Cancelled from outside before the tasks noticed anything else.
		return nil
	}
	return first
}

// gateStart makes every task wait, once opened, until all tasks have
// opened, and tells onOpen the outcome. A task that fails to open passes
// its error on; the others then stop waiting when Run cancels ctx.
func (p *Plan) gateStart(ctx context.Context) {
	var (
		mu      sync.Mutex
		pending = len(p.Tasks)
		first   error
		start   = make(chan struct{})
	)
	for _, t := range p.Tasks {
		t.startGate = func(err error) error {
			mu.Lock()
			if err != nil && first == nil {
				first = err
			}
			pending--
			last, failed := pending == 0, first
			mu.Unlock()
			if last {
				if p.onOpen != nil {
					p.onOpen(failed)
				}
				if failed == nil {
					close(start)
				}
			}
			if err != nil {
				return err
			}
			select {
			case <-start:
				return nil
			case <-ctx.Done():
				return ctx.Err()
			}
		}
	}
}
