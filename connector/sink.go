package connector

// Sink is a sink whose subtasks each write through a SinkWriter, at least
// once: weir.ToSink adds it to a stream. Exactly-once sinks implement
// TwoPhaseCommitSink instead.
type Sink[T any] interface {
	// NewWriter returns the writer of one subtask (info.Partition is -1);
	// it is called when the subtask opens.
	NewWriter(info SubtaskInfo) (SinkWriter[T], error)
}

// SinkWriter writes the records of one sink subtask. Its calls are
// serial.
type SinkWriter[T any] interface {
	// Write writes one record with its timestamp (ms, or NoTimestamp);
	// an error fails the job.
	Write(v T, ts int64) error
	// Close releases the writer once its input has ended or the job
	// stops; an error fails the job.
	Close() error
}

// TwoPhaseCommitSink writes records in transactions that become visible
// only when the checkpoint covering them completes: exactly-once output.
// TXN must be encodable with encoding/gob (exported fields): pre-committed
// transactions are part of the checkpoint. weir.AddTwoPhaseCommitSink adds
// one to a stream.
type TwoPhaseCommitSink[T, TXN any] interface {
	// BeginTransaction starts a transaction of subtask.
	BeginTransaction(subtask int) (TXN, error)
	// Write adds a record to the transaction.
	Write(txn TXN, v T, ts int64) error
	// PreCommit makes the transaction durable; it runs at the checkpoint barrier.
	PreCommit(txn TXN) error
	// Commit makes a pre-committed transaction visible. It must be
	// idempotent: after a restore, transactions of the restored checkpoint
	// are committed again.
	Commit(txn TXN) error
	// Abort discards a transaction.
	Abort(txn TXN) error
}

// TwoPhaseCommitSubtasks is implemented by two-phase-commit sinks that
// hold resources per subtask (a connection, a transactional producer).
// OpenSubtask runs when a subtask opens, after the transactions of the
// restored checkpoint were committed and before its first
// BeginTransaction: a Kafka sink aborts the lingering transactions of
// earlier attempts there. CloseSubtask runs when the subtask closes;
// transactions still pending are committed later, after the job has
// finished, so Commit must work without the subtask's resources.
type TwoPhaseCommitSubtasks interface {
	// OpenSubtask acquires the resources of subtask.
	OpenSubtask(subtask, parallelism int) error
	// CloseSubtask releases them.
	CloseSubtask(subtask int) error
}
