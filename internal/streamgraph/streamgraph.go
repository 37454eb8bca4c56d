// Package streamgraph builds the job graph behind the root package's
// streams: operator nodes with typed outputs and the edges between them.
package streamgraph

import (
	"fmt"

	"github.com/weirstream/weir/internal/runtime"
)

// Part is how an edge leaving one upstream of a stream partitions its
// records; the zero Part is the default (forward where it can).
type Part[T any] struct {
	Kind runtime.Partitioning
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
func Connect[T any](from *runtime.Node, tag string, to *runtime.Node, input int, p Part[T]) {
	if p.Kind == runtime.PartitionCustom {
		runtime.NewCustomEdge[T](from, tag, to, input, p.Custom)
		return
	}
	e := runtime.NewEdge[T](from, tag, to, input, p.Kind, p.Hash)
	e.KeyName = p.Key
	e.Prepartitioned = p.Prepart
	if p.KeyStr != nil {
		runtime.SetKeyString(e, p.KeyStr)
	}
}

// NewNode returns operator node id producing OUT. Its name is also its
// kind (runtime.Node.Operator), which a later rename does not change.
func NewNode[OUT any](id int, name string, kind runtime.NodeKind, parallelism int,
	build func(bc *runtime.BuildContext, out *runtime.Output[OUT]) (runtime.Built, error)) *runtime.Node {
	n := &runtime.Node{
		ID:          id,
		Name:        name,
		Operator:    name,
		Kind:        kind,
		Parallelism: parallelism,
		NewOutput:   func(bs int) runtime.OutputPort { return runtime.NewOutput[OUT](bs) },
	}
	n.Build = func(bc *runtime.BuildContext) (runtime.Built, error) {
		out, ok := bc.Main.(*runtime.Output[OUT])
		if !ok {
			return runtime.Built{}, fmt.Errorf("internal: main output has type %T", bc.Main)
		}
		return build(bc, out)
	}
	return n
}
