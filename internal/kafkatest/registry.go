package kafkatest

import "testing"

// SchemaRegistry returns the test Schema Registry's Confluent-compatible
// API (WEIR_SCHEMA_REGISTRY, printed by scripts/registry.sh start). Without
// it the test skips, unless WEIR_REQUIRE_SERVICES=1, where it fails.
func SchemaRegistry(t testing.TB) string {
	t.Helper()
	return Service(t, "the Schema Registry", "scripts/registry.sh start", "WEIR_SCHEMA_REGISTRY")[0]
}
