package kafka_test

import (
	"os"
	"testing"

	"go.uber.org/goleak"
)

// Every client a job or a test opens must be closed when it ends. A test
// binary started with WEIR_KAFKA_JOB set is instead a job process of
// TestKafkaRestartAfterKill (jobProcessMain) until it ends or is killed.
func TestMain(m *testing.M) {
	if os.Getenv("WEIR_KAFKA_JOB") != "" {
		os.Exit(jobProcessMain())
	}
	goleak.VerifyTestMain(m)
}
