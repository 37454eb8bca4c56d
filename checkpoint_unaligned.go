package weir

import "time"

// UnalignedCheckpoints makes checkpoints unaligned, as Flink's
// execution.checkpointing.unaligned.enabled: a task with several input
// channels does not wait for a barrier on every channel. On the first
// barrier of a checkpoint it snapshots its operators and forwards the
// barrier at once; the records and watermarks that then arrive on channels
// whose barrier has not come yet are processed as usual and also stored
// with the checkpoint as channel state. A restore replays that in-flight
// data, channel by channel in order, before any new input, so the output is
// still exactly once. Under backpressure checkpoints then complete without
// waiting for the buffered data to drain.
//
// Records must be gob-encodable to be stored (the job fails to start if a
// record type cannot be encoded at all, and a value that cannot, e.g. an
// unregistered type in an interface field, declines that checkpoint).
// Savepoints stay aligned. Exactly-once only: combined with AtLeastOnce,
// Execute fails. A checkpoint with channel state also restores at another
// parallelism (of an operator or of its upstream), as in Flink: in-flight
// records of keyed inputs go to the subtask that now owns their key group,
// broadcast inputs follow the broadcast state, other inputs go round robin,
// and watermarks recorded on rescaled inputs are dropped (see DESIGN.md,
// "Checkpoints").
func UnalignedCheckpoints() CheckpointOption {
	return func(c *checkpointConfig) { c.Unaligned = true }
}

// AlignedCheckpointTimeout lets checkpoints start aligned and switch to
// unaligned when alignment has lasted d, as Flink's
// execution.checkpointing.aligned-checkpoint-timeout: d is measured on the
// environment's processing-time clock from the checkpoint's start at the
// sources, so a barrier that arrives later than d starts unaligned at
// once. At the switch the task snapshots, forwards the barrier and stores
// the data still arriving on channels without the barrier; the data
// already held behind a barrier is processed (it belongs after the
// checkpoint). d = 0 (the default) means unaligned from the start. It
// needs UnalignedCheckpoints; d must not be negative.
func AlignedCheckpointTimeout(d time.Duration) CheckpointOption {
	return func(c *checkpointConfig) { c.AlignedTimeout = d }
}
