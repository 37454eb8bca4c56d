// Package streamgraph builds the job graph behind the root package's
// streams: operator nodes with typed outputs and the edges between them.
package streamgraph

import (
	"fmt"

	"github.com/weirstream/weir/internal/engine"
)

// Part is how an edge leaving one upstream of a stream partitions its
// records; the zero Part is the default (forward where it can).
type Part[T any] struct {
	Kind engine.Partitioning
	// Hash is the key's hash code of a record passed by pointer
	// (PartitionHash).
	Hash func(*T) int32
	// KeyStr renders the key of a record for the key sketch
	// (PartitionHash).
	KeyStr func(*T) string
	// Key is the keyBy's name, for errors (PartitionHash).
	Key string
	// Custom is the consumer index of a record among n consumers
	// (PartitionCustom).
	Custom func(v *T, n int) int
	// Prepart marks a keyBy declared Prepartitioned.
	Prepart bool
}

// Connect adds the edge from output tag of node from to input of node to,
// partitioned by p.
func Connect[T any](from *engine.Node, tag string, to *engine.Node, input int, p Part[T]) {
	if p.Kind == engine.PartitionCustom {
		engine.NewCustomEdge[T](from, tag, to, input, p.Custom)
		return
	}
	e := engine.NewEdge[T](from, tag, to, input, p.Kind, p.Hash)
	e.KeyName = p.Key
	e.Prepartitioned = p.Prepart
	if p.KeyStr != nil {
		engine.SetKeyString(e, p.KeyStr)
	}
}

// NewNode returns operator node id producing OUT. Its name is also its
// kind (engine.Node.Operator), which a later rename does not change.
func NewNode[OUT any](id int, name string, kind engine.NodeKind, parallelism int,
	build func(bc *engine.BuildContext, out *engine.Output[OUT]) (engine.Built, error)) *engine.Node {
	n := &engine.Node{
		ID:          id,
		Name:        name,
		Operator:    name,
		Kind:        kind,
		Parallelism: parallelism,
		NewOutput:   func(bs int) engine.OutputPort { return engine.NewOutput[OUT](bs) },
	}
	n.Build = func(bc *engine.BuildContext) (engine.Built, error) {
		out, ok := bc.Main.(*engine.Output[OUT])
		if !ok {
			return engine.Built{}, fmt.Errorf("internal: main output has type %T", bc.Main)
		}
		return build(bc, out)
	}
	return n
}
