// Package kafka reads and writes Apache Kafka topics with Flink's
// guarantees, through github.com/twmb/franz-go.
//
// The source (NewSource, used with weir.FromDynamicSource) treats partitions as
// splits, spread over the source subtasks as Flink's KafkaSourceEnumerator
// does, discovers new partitions and topics while the job runs, keeps one
// watermark generator per partition, and keeps its offsets in Weir's
// checkpoints (exactly-once restore, at any parallelism). On checkpoint
// completion it also commits them to the consumer group, for monitoring
// only.
//
// The sink (NewSink) writes with no guarantee, at least once (flushing at
// every checkpoint barrier) or exactly once (Kafka transactions
// pre-committed at the barrier and committed when the checkpoint
// completes, with lingering transactions of earlier attempts aborted on
// restore).
package kafka
