#!/usr/bin/env bash
# The whole test suite: vet, build, the conformance scenarios, every Go
# test with the invariants build tag (internal/invariants) and then with
# the race detector (goleak checks for leaked goroutines).
# It needs Go 1.26; the services the tests need are installed (cached in
# .cache/) and started from here, and stopped at the end.
set -euo pipefail
cd "$(dirname "$0")/.."

# Commands that stop the services started below, run at exit.
stops=()
trap 'for c in "${stops[@]}"; do $c || true; done' EXIT

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
# --- S3: an S3-compatible server (versitygw, scripts/s3.sh) for the
# checkpoint-store, savepoint and restore tests; WEIR_S3_* tell them where.
echo "== S3 server (scripts/s3.sh)"
stops+=("scripts/s3.sh stop")
s3_env=$(scripts/s3.sh start | tail -1)
eval "$s3_env"
# --- end S3 ---

# Every test that needs a service must run (fail, never skip).
export WEIR_REQUIRE_SERVICES=1

echo "== go test -tags invariants (the engine's costly self-checks on)"
go test -tags invariants -count=1 -timeout 10m ./...
echo "== go test -race"
go test -race -count=1 -timeout 18m ./...
