package kafka

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
)

// Header is a Kafka record header.
type Header struct {
	Key   string
	Value []byte
}

// ConsumerRecord is a record as read from Kafka, given to a Deserializer.
// The source reuses it for the next record: neither it, its header slice
// nor its byte slices may be kept after Deserialize returns unless
// copied.
type ConsumerRecord struct {
	Topic     string
	Partition int32
	Offset    int64
	// Timestamp is the record's timestamp in milliseconds (create or log
	// append time, as the topic says).
	Timestamp int64
	Key       []byte
	Value     []byte
	Headers   []Header
}

// Deserializer turns a Kafka record into a value (Flink's
// KafkaRecordDeserializationSchema). A returned error makes the record
// malformed: the source fails the job naming it, or sends it to the
// dead-letter side output (WithDeadLetters). Return ErrSkip to drop a
// record on purpose (a tombstone, say).
type Deserializer[T any] interface {
	Deserialize(rec *ConsumerRecord) (T, error)
}

// ErrSkip, returned by a Deserializer, drops the record without failing.
var ErrSkip = errors.New("kafka: skip record")

// DeserializerFunc adapts a function to Deserializer.
type DeserializerFunc[T any] func(rec *ConsumerRecord) (T, error)

// Deserialize implements Deserializer.
func (f DeserializerFunc[T]) Deserialize(rec *ConsumerRecord) (T, error) { return f(rec) }

// Bytes reads a record's value as it is (a copy).
func Bytes() Deserializer[[]byte] {
	return DeserializerFunc[[]byte](func(rec *ConsumerRecord) ([]byte, error) {
		return append([]byte(nil), rec.Value...), nil
	})
}

// String reads a record's value as a string.
func String() Deserializer[string] {
	return DeserializerFunc[string](func(rec *ConsumerRecord) (string, error) { return string(rec.Value), nil })
}

// JSON decodes a record's value as JSON into a T; a value that does not
// decode is malformed.
func JSON[T any]() Deserializer[T] {
	return DeserializerFunc[T](func(rec *ConsumerRecord) (T, error) {
		var v T
		if err := json.Unmarshal(rec.Value, &v); err != nil {
			// encoding/json's messages start with "json: ", but for
			// syntax errors ("invalid character ..."): those get it here,
			// the others keep theirs, not a second one.
			if !strings.HasPrefix(err.Error(), "json: ") {
				err = fmt.Errorf("json: %w", err)
			}
			return v, err
		}
		return v, nil
	})
}

// DeadLetter is a record that failed to deserialize, with the error, as
// the dead-letter side output carries it (WithDeadLetters).
type DeadLetter struct {
	Record ConsumerRecord
	// Error is the deserializer's error message.
	Error string
}

// MalformedError is the error that fails a job reading a malformed record
// (the default, without WithDeadLetters).
type MalformedError struct {
	Topic     string
	Partition int32
	Offset    int64
	Err       error
}

func (e *MalformedError) Error() string {
	return fmt.Sprintf("kafka: malformed record at topic %q partition %d offset %d: %v", e.Topic, e.Partition, e.Offset, e.Err)
}

func (e *MalformedError) Unwrap() error { return e.Err }

func jsonMarshal(v any) ([]byte, error) { return json.Marshal(v) }
