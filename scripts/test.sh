#!/usr/bin/env bash
# The whole test suite: vet, build, the conformance scenarios (with
# WEIR_FLINK_ORACLE=1 also recomputed by Apache Flink), every Go
# test with the invariants build tag (internal/invariants) and then with
# the race detector (goleak checks for leaked goroutines).
# It needs Go 1.26, and Java 17 with Maven for the services the tests
# use, which it starts here and stops at the end.
set -euo pipefail
cd "$(dirname "$0")/.."

# at_exit adds a command to the EXIT trap, after those already there.
at_exit() {
  local prev
  prev=$(trap -p EXIT | sed -E "s/^trap -- '(.*)' EXIT$/\1/")
  trap "${prev:+$prev; }$1" EXIT
}

# --- Kafka (connector/kafka) -------------------------------------------------
# A single-node broker (scripts/kafka.sh, jars cached in .cache/kafka),
# started in the background while vet and build run; the Kafka tests find
# it through WEIR_KAFKA_BOOTSTRAP and, with WEIR_REQUIRE_SERVICES=1, fail
# instead of skipping when it is missing.
mkdir -p .cache
# The broker's ports (clients, controller, TLS with SASL): a free triple below Linux's ephemeral range
# (32768-60999), so that no outgoing connection or 127.0.0.1:0 listener of
# a concurrent process can take them while the broker starts (a run on a
# busy machine once failed to bind 39192 that way). KAFKA_PORT overrides.
if [ -z "${KAFKA_PORT:-}" ]; then
  for _ in $(seq 1 50); do
    KAFKA_PORT=$((20000 + RANDOM % 12000))
    if ! (exec 3<>"/dev/tcp/127.0.0.1/$KAFKA_PORT") 2>/dev/null &&
      ! (exec 3<>"/dev/tcp/127.0.0.1/$((KAFKA_PORT + 1))") 2>/dev/null &&
      ! (exec 3<>"/dev/tcp/127.0.0.1/$((KAFKA_PORT + 2))") 2>/dev/null; then
      break
    fi
  done
  export KAFKA_PORT
fi
scripts/kafka.sh start >.cache/kafka-start.out 2>.cache/kafka-start.err &
kafka_start=$!
at_exit 'scripts/kafka.sh stop'
export WEIR_REQUIRE_SERVICES=1
# --- end Kafka ---------------------------------------------------------------

# --- Schema Registry (connector/kafka/registry) ------------------------------
# Apicurio Registry in memory (scripts/registry.sh, built once into
# .cache/registry), started in the background beside the broker; the
# registry tests find its Confluent-compatible API through
# WEIR_SCHEMA_REGISTRY. REGISTRY_PORT overrides the free port picked here.
if [ -z "${REGISTRY_PORT:-}" ]; then
  for _ in $(seq 1 50); do
    REGISTRY_PORT=$((20000 + RANDOM % 12000))
    if [ "$REGISTRY_PORT" -lt "$KAFKA_PORT" ] || [ "$REGISTRY_PORT" -gt $((KAFKA_PORT + 2)) ]; then
      (exec 3<>"/dev/tcp/127.0.0.1/$REGISTRY_PORT") 2>/dev/null || break
    fi
  done
  export REGISTRY_PORT
fi
scripts/registry.sh start >.cache/registry-start.out 2>.cache/registry-start.err &
registry_start=$!
at_exit 'scripts/registry.sh stop'
# --- end Schema Registry -----------------------------------------------------

# --- Chromium (TestDashboardInBrowser, the REST server's dashboard) ---------
# The browser test drives Debian's chromium through chromedp; install it
# if it is missing. With WEIR_REQUIRE_SERVICES=1 the test fails instead of
# skipping when there is no browser.
if ! command -v chromium >/dev/null 2>&1; then
  echo "== installing chromium (apt-get)"
  if ! (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium) >.cache/chromium-install.out 2>&1; then
    cat .cache/chromium-install.out >&2
    echo "could not install chromium" >&2
    exit 1
  fi
fi
# --- end Chromium ------------------------------------------------------------

# --- Flink's web UI (TestFlinkWebUIInBrowser in rest/) -----------------------
# The static files of org.apache.flink:flink-runtime-web from Maven Central,
# downloaded once and cached in .cache/flink-web; the browser test serves
# them from a Weir job (rest.WithFlinkUI) and finds them through
# WEIR_FLINK_WEB. With WEIR_REQUIRE_SERVICES=1 it fails without them.
echo "== Flink's web UI (scripts/flink-web.sh)"
flink_web=$(scripts/flink-web.sh | tail -n1)
case "$flink_web" in
  WEIR_FLINK_WEB=/*) export "$flink_web" ;;
  *)
    echo "scripts/flink-web.sh printed no folder: $flink_web" >&2
    exit 1
    ;;
esac
# --- end Flink's web UI ------------------------------------------------------

# --- Disk: Go's build cache grows with every flag set (invariants, race,
# cover) and is trimmed only of entries unused for days; on a long-lived
# machine it once filled the disk and a run failed with "no space left on
# device" while compiling. Below 8 GiB free, empty it first.
gocache=$(go env GOCACHE)
mkdir -p "$gocache"
free_kib=$(df -Pk "$gocache" | awk 'NR==2 {print $4}')
if [ "${free_kib:-0}" -lt $((8 * 1024 * 1024)) ]; then
  echo "== only $((free_kib / 1024)) MiB free: emptying Go's build cache ($gocache)"
  go clean -cache
fi
# --- end Disk ---

echo "== go vet"
go vet ./...
echo "== go build"
go build ./...
# The Kubernetes manifests of deploy/k8s, decoded strictly into the
# k8s.io/api types (a module of its own: the types weigh on no user).
echo "== deploy/k8s: the Kubernetes manifests validate"
(cd deploy/k8s && go vet ./... && go test -count=1 ./...)
echo "== conformance scenarios"
shared=../shared/conformance
files=(testdata/scenarios/*/*.scn)
if [ -d "$shared" ]; then
  # Every scenario there, in whatever folder: a new one cannot be missed.
  while IFS= read -r f; do files+=("$f"); done < <(find "$shared" -name '*.scn' | sort)
fi
go run ./cmd/weir scenario --check "${files[@]}"
# With WEIR_FLINK_ORACLE=1, Flink itself (bench/flink-oracle) recomputes the
# expected outputs of every file of testdata/scenarios and the run fails on
# any difference with the committed ones (about a minute; Java 17, Maven).
if [ "${WEIR_FLINK_ORACLE:-}" = 1 ]; then
  echo "== the scenario files against Apache Flink (scripts/flink-oracle.sh)"
  go test -count=1 -run TestScenariosAgainstFlink ./internal/conformance/
fi
# Only once: the go test runs below would repeat it.
unset WEIR_FLINK_ORACLE
if command -v mvn >/dev/null 2>&1; then
  echo "== the Flink benchmark module compiles (Maven)"
  mvn -q -B -f bench/flink -DskipTests compile
  echo "== the Flink oracle module compiles (Maven)"
  mvn -q -B -f bench/flink-oracle compile
fi
# The whole-program tester (internal/progdiff) compares generated programs
# on Weir and on Flink in TestProgramsAgainstFlink, which runs in both go
# test runs below; with WEIR_REQUIRE_SERVICES=1 it fails without Java or
# Maven. Its Flink module is built here once (.cache/flink-programs).
echo "== the whole-program tester's Flink module (scripts/flink-programs.sh --build)"
scripts/flink-programs.sh --build
# --- Kafka: wait for the broker ---------------------------------------------
if ! wait "$kafka_start"; then
  cat .cache/kafka-start.err .cache/kafka-start.out >&2
  echo "the Kafka broker did not start" >&2
  exit 1
fi
# Only the variable: Maven's output (on stderr) may carry terminal codes.
bootstrap=$(grep -o 'WEIR_KAFKA_BOOTSTRAP=[0-9A-Za-z.:-]*' .cache/kafka-start.out | tail -n1)
if [ -z "$bootstrap" ]; then
  cat .cache/kafka-start.err .cache/kafka-start.out >&2
  echo "the Kafka broker script printed no address" >&2
  exit 1
fi
export "$bootstrap"
# Its TLS and SASL listener and the test CA (TestKafkaTLSSCRAM).
for var in WEIR_KAFKA_SASL_SSL WEIR_KAFKA_CA; do
  line=$(grep -o "$var=[0-9A-Za-z./_:-]*" .cache/kafka-start.out | tail -n1)
  [ -n "$line" ] || { echo "the Kafka broker script printed no $var" >&2; exit 1; }
  export "$line"
done
echo "== Kafka broker at $WEIR_KAFKA_BOOTSTRAP (TLS and SASL at $WEIR_KAFKA_SASL_SSL)"
# --- end Kafka ---------------------------------------------------------------
# --- S3: an S3-compatible server (versitygw, scripts/s3.sh) for the
# checkpoint-store, savepoint and restore tests; WEIR_S3_* tell them where.
echo "== S3 server (scripts/s3.sh)"
at_exit 'scripts/s3.sh stop'
s3_env=$(scripts/s3.sh start | tail -1)
eval "$s3_env"
# --- end S3 ---
# --- Schema Registry: wait for it --------------------------------------------
if ! wait "$registry_start"; then
  cat .cache/registry-start.err .cache/registry-start.out >&2
  echo "the Schema Registry did not start" >&2
  exit 1
fi
registry=$(grep -o 'WEIR_SCHEMA_REGISTRY=[0-9A-Za-z./:-]*' .cache/registry-start.out | tail -n1)
[ -n "$registry" ] || { cat .cache/registry-start.err .cache/registry-start.out >&2; echo "the Schema Registry script printed no address" >&2; exit 1; }
export "$registry"
echo "== Schema Registry at $WEIR_SCHEMA_REGISTRY"
# --- end Schema Registry -----------------------------------------------------

echo "== go test -tags invariants (the engine's costly self-checks on)"
go test -tags invariants -count=1 -timeout 10m ./...
echo "== go test -race"
go test -race -count=1 -timeout 18m ./...
