#!/usr/bin/env bash
# The whole test suite: vet, build, the conformance scenarios, every Go
# test with the invariants build tag (internal/invariants) and then with
# the race detector (goleak checks for leaked goroutines).
# It needs Go 1.26 and nothing else; later suites that need a Kafka broker
# or Flink install and start them from here.
set -euo pipefail
cd "$(dirname "$0")/.."

echo "== go vet"
go vet ./...
echo "== go build"
go build ./...
echo "== conformance scenarios"
shared=../shared/conformance
files=(testdata/scenarios/*/*.scn)
for dir in watermarks window interval-join two-input-window; do
  if [ -d "$shared/$dir" ]; then files+=("$shared/$dir"/*.scn); fi
done
go run ./cmd/weir scenario --check "${files[@]}"
if command -v mvn >/dev/null 2>&1; then
  echo "== the Flink benchmark module compiles (Maven)"
  mvn -q -B -f bench/flink -DskipTests compile
fi
echo "== go test -tags invariants (the engine's costly self-checks on)"
go test -tags invariants -count=1 -timeout 10m ./...
echo "== go test -race"
go test -race -count=1 -timeout 18m ./...
