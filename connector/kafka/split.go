package kafka

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/weirstream/weir/connector"
)

// TopicPartition names one partition of a topic.
type TopicPartition struct {
	Topic     string
	Partition int32
}

// String returns "topic-partition", the form Kafka tools print.
func (tp TopicPartition) String() string {
	return tp.Topic + "-" + strconv.Itoa(int(tp.Partition))
}

// partitionSplit is a source split: one partition, read from Start
// (resolved when the partition was discovered) up to Stop (exclusive;
// noStop for an unbounded source).
type partitionSplit struct {
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
	Start     int64  `json:"start"`
	Stop      int64  `json:"stop"`
}

const noStop = -1

func (s partitionSplit) SplitID() string { return s.tp().String() }

func (s partitionSplit) tp() TopicPartition { return TopicPartition{s.Topic, s.Partition} }

// splitOwner is Flink's KafkaSourceEnumerator.getSplitOwner: partition 0
// of a topic goes to the subtask ((topic.hashCode() * 31) & 0x7FFFFFFF) %
// numReaders, and the topic's next partitions to the following subtasks
// round robin, so a job reading a partition in Flink reads it in the
// same subtask here.
func splitOwner(tp TopicPartition, numReaders int) int {
	start := int((connector.StringHashCode(tp.Topic)*31)&0x7FFFFFFF) % numReaders
	return (start + int(tp.Partition)) % numReaders
}

func encodeSplit(s partitionSplit) ([]byte, error) { return json.Marshal(s) }

func decodeSplit(data []byte) (partitionSplit, error) {
	var s partitionSplit
	if err := json.Unmarshal(data, &s); err != nil {
		return s, fmt.Errorf("kafka: bad split %q: %w", data, err)
	}
	return s, nil
}

// A position is the offset of the next record to read, as a varint.
func encodePosition(next int64) []byte { return binary.AppendVarint(nil, next) }

func decodePosition(pos []byte) (int64, error) {
	v, n := binary.Varint(pos)
	if n <= 0 {
		return 0, fmt.Errorf("kafka: bad position %x", pos)
	}
	return v, nil
}
