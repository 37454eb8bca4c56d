package weir

import (
	"fmt"

	"github.com/weirstream/weir/connector"
	"github.com/weirstream/weir/internal/builtinsrc"
	"github.com/weirstream/weir/internal/engine"
	"github.com/weirstream/weir/internal/twophase"
)

// TwoPhaseCommitSink is connector.TwoPhaseCommitSink: a sink that writes
// records in transactions that become visible only when the checkpoint
// covering them completes.
type TwoPhaseCommitSink[T, TXN any] = connector.TwoPhaseCommitSink[T, TXN]

// TwoPhaseCommitSubtasks is connector.TwoPhaseCommitSubtasks: a
// two-phase-commit sink that holds resources per subtask.
type TwoPhaseCommitSubtasks = connector.TwoPhaseCommitSubtasks

// AddTwoPhaseCommitSink writes ds exactly once through sink: with
// checkpointing, output becomes visible when the checkpoint covering it
// completes; at the end of a bounded job's input every task waits for a
// final checkpoint, whose completion commits the last transactions
// (Flink's checkpoints after tasks finish), so a restore from the job's
// latest checkpoint writes nothing again. Without checkpointing, a bounded
// job's output is committed when the whole job has finished (Execute
// returns after committing it).
func AddTwoPhaseCommitSink[T, TXN any](ds DataStream[T], sink TwoPhaseCommitSink[T, TXN]) Sink {
	if isNil(sink) {
		ds.env.fail(fmt.Errorf("sink %q: %w", "TwoPhaseCommitSink", nilFnError("sink")))
	}
	env := ds.env
	if v := twophase.Validator(sink, func() bool { return env.cfg.cluster != nil }); v != nil {
		env.validators = append(env.validators, v)
	}
	finals := &twophase.Finals[T, TXN]{}
	env.onFinished = append(env.onFinished, finals.Commit)
	n := newNode[struct{}](env, "TwoPhaseCommitSink", engine.KindOneInput, env.cfg.parallelism,
		func(bc *engine.BuildContext, _ *engine.Output[struct{}]) (engine.Built, error) {
			b := base(bc)
			return twophase.Build[T, TXN](bc, sink, b.catch, env.checkpoint != nil, finals)
		})
	n.Sink = true
	n.Operator = "sink " + builtinsrc.TypeName(sink) // as a source's kind (source_api.go)
	n.Connector = sink
	ds.connect(n, 0)
	return Sink{node: n, env: ds.env}
}
