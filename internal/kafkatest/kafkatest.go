// Package kafkatest helps tests that need the real Kafka broker of the
// test command (scripts/kafka.sh).
package kafkatest

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
)

// Broker returns the address of the test broker (WEIR_KAFKA_BOOTSTRAP,
// which scripts/test.sh sets after starting scripts/kafka.sh). Without it
// the test skips, unless WEIR_REQUIRE_SERVICES=1 (the test command), where
// it fails.
func Broker(t testing.TB) string {
	t.Helper()
	addr := os.Getenv("WEIR_KAFKA_BOOTSTRAP")
	if addr == "" {
		if os.Getenv("WEIR_REQUIRE_SERVICES") == "1" {
			t.Fatal("WEIR_KAFKA_BOOTSTRAP is not set but WEIR_REQUIRE_SERVICES=1: the test command must start the broker (scripts/kafka.sh start)")
		}
		t.Skip("no Kafka broker: run scripts/kafka.sh start and set WEIR_KAFKA_BOOTSTRAP (scripts/test.sh does)")
	}
	return addr
}

// SecureBroker returns the test broker's TLS and SASL listener
// (WEIR_KAFKA_SASL_SSL) and the file of the test CA that signed its
// certificate (WEIR_KAFKA_CA), both printed by scripts/kafka.sh start; its
// users: weir / weir-secret, by SCRAM-SHA-256, SCRAM-SHA-512 or PLAIN.
// Without them the test skips, unless WEIR_REQUIRE_SERVICES=1, where it
// fails.
func SecureBroker(t testing.TB) (addr, caFile string) {
	t.Helper()
	addr, caFile = os.Getenv("WEIR_KAFKA_SASL_SSL"), os.Getenv("WEIR_KAFKA_CA")
	if addr == "" || caFile == "" {
		if os.Getenv("WEIR_REQUIRE_SERVICES") == "1" {
			t.Fatal("WEIR_KAFKA_SASL_SSL or WEIR_KAFKA_CA is not set but WEIR_REQUIRE_SERVICES=1: the test command must start the broker (scripts/kafka.sh start prints both)")
		}
		t.Skip("no TLS and SASL listener: run scripts/kafka.sh start and set WEIR_KAFKA_SASL_SSL and WEIR_KAFKA_CA (scripts/test.sh does)")
	}
	return addr, caFile
}

// Decided waits until every transaction on topic is decided (the last
// stable offsets have reached the end offsets: a commit's markers are
// written after EndTxn returns) and returns the end offsets. A transaction
// left open makes it fail when ctx ends.
func Decided(ctx context.Context, adm *kadm.Client, topic string) (kadm.ListedOffsets, error) {
	for {
		ends, err := adm.ListEndOffsets(ctx, topic)
		if err != nil {
			return nil, err
		}
		stable, err := adm.ListCommittedOffsets(ctx, topic)
		if err != nil {
			return nil, err
		}
		same := true
		ends.Each(func(o kadm.ListedOffset) {
			if s, _ := stable.Lookup(o.Topic, o.Partition); s.Offset != o.Offset {
				same = false
			}
		})
		if same {
			return ends, nil
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("topic %s: a transaction stays open (last stable offsets %v, ends %v): %w", topic, stable, ends, ctx.Err())
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// KeepRecords is the configuration of a test topic: its records are kept
// whatever their timestamps. Tests write records with event times long
// past (1970, or 2026-01-01), which the broker's time-based retention
// (retention.ms, 7 days by default) deletes at its next check, whenever
// that comes: the records would vanish between a test's writing and its
// reading them, at random.
func KeepRecords() map[string]*string {
	return map[string]*string{"retention.ms": kadm.StringPtr("-1")}
}
