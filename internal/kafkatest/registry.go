package kafkatest

import (
	"os"
	"testing"
)

// SchemaRegistry returns the test Schema Registry's Confluent-compatible
// API (WEIR_SCHEMA_REGISTRY, printed by scripts/registry.sh start). Without
// it the test skips, unless WEIR_REQUIRE_SERVICES=1, where it fails.
func SchemaRegistry(t testing.TB) string {
	t.Helper()
	url := os.Getenv("WEIR_SCHEMA_REGISTRY")
	if url == "" {
		if os.Getenv("WEIR_REQUIRE_SERVICES") == "1" {
			t.Fatal("WEIR_SCHEMA_REGISTRY is not set but WEIR_REQUIRE_SERVICES=1: the test command must start the registry (scripts/registry.sh start)")
		}
		t.Skip("no Schema Registry: run scripts/registry.sh start and set WEIR_SCHEMA_REGISTRY (scripts/test.sh does)")
	}
	return url
}
