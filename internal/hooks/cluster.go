package hooks

// The cluster hook: what the root package needs of a cluster plugin
// (weir.Cluster, as package kafkacluster gives one) beyond its public
// interface.

import (
	"context"

	"github.com/weirstream/weir/internal/clusterjob"
)

// Cluster is implemented by the values cluster plugins of this module
// return besides weir.Cluster: it runs the job as a member of the
// cluster until ctx ends or the job fails.
type Cluster interface {
	RunCluster(ctx context.Context, spec clusterjob.Spec) error
}
