package kafka_test

import (
	"testing"

	"go.uber.org/goleak"
)

// Every client a job or a test opens must be closed when it ends.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
