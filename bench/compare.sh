#!/usr/bin/env bash
# bench/compare.sh: Nexmark on Weir and on Apache Flink, side by side, on this machine.
#
# Builds both engines (go build ./cmd/weir; mvn -f bench/flink package, which fetches
# Flink from Maven Central into ~/.m2 the first time), checks that the two generators
# produce the same events, then runs each query on Weir and on Flink alternately,
# RUNS times each, with the same events, rate, parallelism and seed, and writes the
# medians (events/s, Weir/Flink ratio, result counts, CPU, peak RSS) to the
# "Weir vs Flink" section of BENCHMARKS.md, one block per source mode: it replaces only
# the text between the "compare.sh:begin mode=<SOURCE>" and "compare.sh:end mode=<SOURCE>"
# markers (appending the block when missing), then rebuilds the summary table between
# the compare.sh:summary markers from every mode's block (one ratio column per mode), so
# notes around them, the other modes' blocks and other sections stay.
#
# Modes (SOURCE):
#   generator  each source subtask runs its Nexmark generator: the generators' cost is part
#              of the measurement (time from job start, or the first event emitted, to end)
#   memory     engine only: each source subtask's events are generated into memory before
#              the clock starts, then replayed as fast as the engine takes them; time runs
#              from the first event read to the end (both engines report a checksum of every
#              event they hold, which must agree)
#   kafka      the events are written once to a topic of the broker WEIR_KAFKA_BOOTSTRAP
#              (`source /work/wt/services.env`, or scripts/kafka.sh start), one partition per
#              generator, by `weir nexmark --source kafka` (kept and reused while it holds the
#              same events); then each engine reads the topic with its own Kafka source
#              (connector/kafka; Flink's KafkaSource) and writes the results as JSON to a fresh
#              topic of the same broker with its own Kafka sink (connector/kafka's Sink; Flink's
#              KafkaSink), at-least-once, timed from the first record decoded to the last result
#              acknowledged; each run counts its results at the sink and in its topic (they must
#              agree) and deletes the topic
#
# Environment (defaults in brackets):
#   SOURCE         generator, memory or kafka, see above [generator]
#   TOPIC          the topic of SOURCE=kafka [weir-nexmark-e<EVENTS>-p<P>-r<RATE>-s<SEED>]
#   EVENTS         events per run [5000000]
#   RUNS           runs per engine and query, alternating [3]
#   QUERIES        space- or comma-separated queries [gen q0 q1 ... q23, all 24];
#                  gen (each engine's source alone into the sink) is the baseline, not in
#                  the mean
#   PARALLELISM    parallelism, = number of generators, on both engines [2]
#   RATE           event rate in events/s of event time (spaces the timestamps) [10000]
#   SEED           generator seed [0]
#   WARMUP_EVENTS  events of each engine's warm-up run of the query, once per query in the
#                  process that then serves its RUNS runs [min(EVENTS, 2000000)]
#   WEIR_SERVE     1: one Weir process per query (`weir nexmark --serve`), which runs the
#                  warm-up, then serves its RUNS runs, as Flink's JVM does; 0: a new Weir process
#                  per run, without warm-up (the harness before 2026-12-05) [1]
#   FLINK_JAVA_OPTS extra JVM flags for the Flink runs [-Xms2g -Xmx4g]
#   OUT            the markdown file to update [BENCHMARKS.md at the repo root]
#   GENCHECK       1: diff the first events of both generators first [1]
#   RUN_TIMEOUT    seconds to wait for a Flink warm-up or run before counting it failed [1800]
#   NOTE           a sentence the block prints under its settings (what was unusual about the run) []
#   SETTLE         at most this many seconds to wait, before each run of either engine, for the
#                  machine to be quiet (a 200 ms window with the CPUs at most 10% busy, from
#                  /proc/stat): the other engine's process may still be working after its run
#                  (a JVM's compiler and collector threads, a job's tear-down) [5]
#   GOGC, GOMEMLIMIT  Go's collector settings, passed on to Weir's processes as to any Go program
#                  and recorded in the table [unset: Go's defaults]
#   ALLOW_MISSING  1: run the Flink side alone for queries `weir nexmark` does not know [1]
#
# Exit status: 0 when every compared query's result counts match, 1 on a mismatch or a
# failed run (the table is still written), 2 on bad settings.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
SOURCE=${SOURCE:-generator}
EVENTS=${EVENTS:-5000000}
RUNS=${RUNS:-3}
QUERIES=${QUERIES:-"gen q0 q1 q2 q3 q4 q5 q6 q7 q8 q9 q10 q11 q12 q13 q14 q15 q16 q17 q18 q19 q20 q21 q22 q23"}
QUERIES=${QUERIES//,/ }
PARALLELISM=${PARALLELISM:-2}
RATE=${RATE:-10000}
SEED=${SEED:-0}
WARMUP_EVENTS=${WARMUP_EVENTS:-$((EVENTS < 2000000 ? EVENTS : 2000000))}
FLINK_JAVA_OPTS=${FLINK_JAVA_OPTS:-"-Xms2g -Xmx4g"}
OUT=${OUT:-$ROOT/BENCHMARKS.md}
GENCHECK=${GENCHECK:-1}
RUN_TIMEOUT=${RUN_TIMEOUT:-1800}
ALLOW_MISSING=${ALLOW_MISSING:-1}
WEIR_SERVE=${WEIR_SERVE:-1}
SETTLE=${SETTLE:-5}

die() { echo "compare.sh: $*" >&2; exit 2; }
for v in EVENTS RUNS PARALLELISM WARMUP_EVENTS RUN_TIMEOUT WEIR_SERVE SETTLE; do
  [[ ${!v} =~ ^[0-9]+$ ]] || die "$v must be a whole number, got '${!v}'"
done
((EVENTS > 0)) || die "EVENTS must be > 0"
case $SOURCE in
  generator | memory) ;;
  kafka) [[ -n ${WEIR_KAFKA_BOOTSTRAP:-} ]] || die "SOURCE=kafka needs WEIR_KAFKA_BOOTSTRAP (scripts/kafka.sh start prints it)" ;;
  *) die "SOURCE must be generator, memory or kafka, got '$SOURCE'" ;;
esac
((RUNS > 0)) || die "RUNS must be > 0"
((WEIR_SERVE <= 1)) || die "WEIR_SERVE must be 0 or 1"
((PARALLELISM > 0)) || die "PARALLELISM must be > 0"
command -v go >/dev/null || die "go not found"
command -v mvn >/dev/null || die "mvn not found"
command -v java >/dev/null || die "java not found"
command -v python3 >/dev/null || die "python3 not found"
command -v awk >/dev/null || die "awk not found"

STAMP=$(date -u +%Y%m%dT%H%M%SZ)
WORK=$ROOT/bench/out/$STAMP
mkdir -p "$WORK"
RESULTS=$WORK/results.jsonl
: >"$RESULTS"
log() { echo "[$(date -u +%H:%M:%S)] $*" >&2; }

# ---- build ---------------------------------------------------------------------------
# The commit the binaries are built from (later commits during a long run do not count).
COMMIT=$(cd "$ROOT" && git rev-parse --short HEAD 2>/dev/null || echo unknown)
DIRTY=$(cd "$ROOT" && [[ -n $(git status --porcelain 2>/dev/null) ]] && echo " (with uncommitted changes)" || true)
log "building weir (go build ./cmd/weir)"
(cd "$ROOT" && go build -o "$WORK/weir" ./cmd/weir)
WEIR=$WORK/weir
log "building the Flink module (mvn -q -f bench/flink package)"
mvn -q -B -f "$ROOT/bench/flink/pom.xml" package -DskipTests
# A copy, so that a rebuild while the comparison runs does not change the jar under it.
cp "$ROOT/bench/flink/target/weir-nexmark-flink.jar" "$WORK/weir-nexmark-flink.jar"
FLINK_JAR=$WORK/weir-nexmark-flink.jar
read -r -a JVM_OPTS <"$ROOT/bench/flink/target/jvm.opts"
read -r -a EXTRA_OPTS <<<"$FLINK_JAVA_OPTS"
flink() { java "${JVM_OPTS[@]}" "${EXTRA_OPTS[@]}" -jar "$FLINK_JAR" "$@"; }

# Which queries does `weir nexmark` know?
WEIR_HELP=$("$WEIR" nexmark --help 2>&1 || true)
weir_has() {
  grep -qE "(^|[^a-z0-9])$1([^0-9]|$)" <<<"$WEIR_HELP" &&
    ! grep -qiE "unknown command" <<<"$WEIR_HELP"
}

# ---- generator cross-check -----------------------------------------------------------
GEN_STATUS="not run"
if [[ $GENCHECK == 1 ]]; then
  log "generator check: first 100000 events, $PARALLELISM generators, rate $RATE, seed $SEED"
  # A throwaway module outside the repository that imports weir/nexmark.
  GENDIR=$(mktemp -d "${TMPDIR:-/tmp}/weir-gencheck.XXXXXX")
  trap 'rm -rf "$GENDIR"' EXIT
  GO_LINE=$(grep -m1 -E '^go [0-9]' "$ROOT/go.mod" || echo "go 1.24")
  cat >"$GENDIR/go.mod" <<EOF
module gencheck

$GO_LINE

require github.com/weirstream/weir v0.0.0

replace github.com/weirstream/weir => $ROOT
EOF
  cp "$ROOT/go.sum" "$GENDIR/go.sum"
  # Prints every event of the Go generator in weirbench.EventFormat's line format.
  cat >"$GENDIR/main.go" <<'GOEOF'
package main

import (
	"bufio"
	"flag"
	"fmt"
	"os"

	"github.com/weirstream/weir/nexmark"
)

func main() {
	events := flag.Int64("events", 1000, "")
	gens := flag.Int("generators", 2, "")
	rate := flag.Float64("rate", 0, "")
	seed := flag.Uint64("seed", 0, "")
	flag.Parse()
	w := bufio.NewWriter(os.Stdout)
	defer w.Flush()
	for _, g := range nexmark.NewGenerators(nexmark.Config{Events: *events, Rate: *rate, Seed: *seed}, *gens) {
		var e nexmark.Event
		for g.HasNext() {
			g.Next(&e)
			switch e.Type {
			case nexmark.PersonEvent:
				p := e.Person
				fmt.Fprintf(w, "P|%d|%s|%s|%s|%s|%s|%d|%s\n", p.ID, p.Name, p.EmailAddress, p.CreditCard, p.City, p.State, p.DateTime, p.Extra)
			case nexmark.AuctionEvent:
				a := e.Auction
				fmt.Fprintf(w, "A|%d|%s|%s|%d|%d|%d|%d|%d|%d|%s\n", a.ID, a.ItemName, a.Description, a.InitialBid, a.Reserve, a.DateTime, a.Expires, a.Seller, a.Category, a.Extra)
			default:
				b := e.Bid
				fmt.Fprintf(w, "B|%d|%d|%d|%s|%s|%d|%s\n", b.Auction, b.Bidder, b.Price, b.Channel, b.URL, b.DateTime, b.Extra)
			}
		}
	}
}
GOEOF
  if (cd "$GENDIR" && GOFLAGS=-mod=mod go build -o gencheck . 2>"$GENDIR/build.log"); then
    "$GENDIR/gencheck" -events 100000 -generators "$PARALLELISM" -rate "$RATE" -seed "$SEED" >"$WORK/events.go.txt"
    java -cp "$FLINK_JAR" weirbench.GenDump 100000 "$PARALLELISM" "$RATE" "$SEED" >"$WORK/events.java.txt"
    if cmp -s "$WORK/events.go.txt" "$WORK/events.java.txt"; then
      GEN_STATUS="identical (first 100,000 events, every field)"
      log "generator check: identical"
    else
      GEN_STATUS="DIFFERENT (see events.go.txt and events.java.txt in bench/out/$STAMP)"
      log "!!! generator check: the Go and Java generators DIFFER; first difference:"
      cmp "$WORK/events.go.txt" "$WORK/events.java.txt" | head -1 >&2 || true
    fi
  else
    cp "$GENDIR/build.log" "$WORK/gencheck-build.log"
    GEN_STATUS="not run (the Go check program did not build, see bench/out/$STAMP/gencheck-build.log)"
    log "!!! generator check: build failed, see $WORK/gencheck-build.log"
  fi
fi

# ---- runs ----------------------------------------------------------------------------
# q13's side input, Nexmark's side_input_gen.sh: 10,000 lines "i,i", read by both engines.
SIDE_INPUT=$WORK/side_input.txt
awk 'BEGIN { for (i = 0; i < 10000; i++) print i "," i }' >"$SIDE_INPUT"
FAILED=0
SOURCE_ARGS=()
if [[ $SOURCE == kafka ]]; then
  TOPIC=${TOPIC:-weir-nexmark-e$EVENTS-p$PARALLELISM-r$RATE-s$SEED}
  SOURCE_ARGS=(--kafka-bootstrap "$WEIR_KAFKA_BOOTSTRAP" --topic "$TOPIC")
  log "kafka: the events into topic $TOPIC (written once; kept)"
  "$WEIR" nexmark --query gen --events "$EVENTS" --parallelism "$PARALLELISM" --rate "$RATE" --seed "$SEED" \
    --source kafka "${SOURCE_ARGS[@]}" --json >"$WORK/produce.json" 2>"$WORK/produce.log" ||
    { log "!!! writing the events to $TOPIC failed; see $WORK/produce.log"; exit 1; }
fi
# Flink: one JVM per query (`--serve`), which runs the warm-up once, then one measured run per
# "run" line on its stdin. Weir (WEIR_SERVE=1, the default): the same, one process per query
# (`weir nexmark --serve`). The two engines' runs alternate; JVM or process start-up, class
# loading, the MiniCluster's start, the warm-up and (memory source) the events' generation are
# paid once per query, not once per run, and each engine's memory stays as its warm-up and
# earlier runs left it. WEIR_SERVE=0: a new Weir process per run, without warm-up.
record() { # engine query run out-file: checks the run's JSON line and appends it to RESULTS
  local engine=$1 q=$2 r=$3 out=$4 line
  line=$(grep -E '^\{' "$out" | tail -1 || true)
  if [[ -z $line || $line == *'"error"'* ]]; then
    log "!!! $engine $q run $r failed${line:+: $line}; see ${out%.json}.log"
    FAILED=1
    return
  fi
  python3 - "$engine" "$q" "$r" "$line" >>"$RESULTS" <<'PY'
import json, sys
engine, q, r, line = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
d = json.loads(line)
d.update(engine=engine, query_name=q, run=r, load1=float(open("/proc/loadavg").read().split()[0]))
print(json.dumps(d))
PY
  log "$engine $q run $r: $(python3 -c 'import json,sys; d=json.loads(sys.argv[1]); print("%.0f events/s, %d results, %.2f s, %.2f CPU s" % (d["events_per_second"], d["results"], d["seconds"], d["cpu_seconds"]))' "$line")"
}
settle() { # waits up to SETTLE s for a 200 ms window with the CPUs at most 10% busy
  local deadline=$((SECONDS + SETTLE)) a b
  while ((SECONDS < deadline)); do
    a=$(awk '/^cpu / {print $2+$3+$4+$7+$8, $2+$3+$4+$5+$6+$7+$8}' /proc/stat)
    sleep 0.2
    b=$(awk '/^cpu / {print $2+$3+$4+$7+$8, $2+$3+$4+$5+$6+$7+$8}' /proc/stat)
    awk -v a="$a" -v b="$b" 'BEGIN { split(a, x, " "); split(b, y, " "); t = y[2] - x[2]; exit !(t > 0 && (y[1] - x[1]) <= 0.1 * t) }' && return 0
  done
  return 0
}
WEIR_UP=0
WEIR_WARMUP=$((WARMUP_EVENTS < EVENTS ? WARMUP_EVENTS : EVENTS))
weir_line() { # out-var: the next line of the serving Weir process into out-var; 1 when it ended or RUN_TIMEOUT passed
  local -n into=$1
  local waited=0 l=
  while ((waited < RUN_TIMEOUT)); do
    if IFS= read -r -t 5 l <&"$WEIR_OUT"; then
      into=$l
      return 0
    fi
    kill -0 "$WEIR_PID" 2>/dev/null || return 1
    waited=$((waited + 5))
  done
  return 1
}
weir_start() { # query: starts its Weir process (--serve) and waits until the warm-up is done
  local q=$1 line=
  rm -f "$WORK/weir.in" "$WORK/weir.out"
  mkfifo "$WORK/weir.in" "$WORK/weir.out"
  # Opened read-write, so that neither open waits for the other side.
  exec {WEIR_IN}<>"$WORK/weir.in" {WEIR_OUT}<>"$WORK/weir.out"
  "$WEIR" nexmark --query "$q" --events "$EVENTS" --parallelism "$PARALLELISM" --rate "$RATE" --seed "$SEED" \
    --source "$SOURCE" "${SOURCE_ARGS[@]}" --side-input "$SIDE_INPUT" --json --serve --warmup-events "$WEIR_WARMUP" \
    <"$WORK/weir.in" >"$WORK/weir.out" 2>"$WORK/$q.weir.log" &
  WEIR_PID=$!
  WEIR_UP=1
  while weir_line line; do
    [[ $line == '{"ready":true}' ]] && return 0
  done
  log "!!! weir $q: no warm-up (the process ended or $RUN_TIMEOUT s passed); see $WORK/$q.weir.log"
  weir_stop
  return 1
}
weir_stop() {
  ((WEIR_UP)) || return 0
  WEIR_UP=0
  { echo quit >&"$WEIR_IN"; } 2>/dev/null || true
  for _ in $(seq 1 100); do kill -0 "$WEIR_PID" 2>/dev/null || break; sleep 0.1; done
  kill "$WEIR_PID" 2>/dev/null || true
  wait "$WEIR_PID" 2>/dev/null || true
  exec {WEIR_IN}>&- {WEIR_OUT}<&-
  rm -f "$WORK/weir.in" "$WORK/weir.out"
}
run_weir() { # query run
  local q=$1 r=$2 out=$WORK/$1.weir.$2.json rc=0 line=
  settle
  if ((WEIR_SERVE)); then
    : >"$out"
    if ((WEIR_UP)) && echo run >&"$WEIR_IN" 2>/dev/null && weir_line line && [[ $line == '{'* ]]; then
      echo "$line" >>"$out"
    else
      echo '{"error":"the Weir process ended or did not answer within RUN_TIMEOUT"}' >"$out"
      weir_stop
    fi
    record weir "$q" "$r" "$out"
    return
  fi
  "$WEIR" nexmark --query "$q" --events "$EVENTS" --parallelism "$PARALLELISM" --rate "$RATE" --seed "$SEED" \
    --source "$SOURCE" "${SOURCE_ARGS[@]}" --side-input "$SIDE_INPUT" --json >"$out" 2>"${out%.json}.log" || rc=$?
  ((rc == 0)) || echo "{\"error\":\"exit status $rc\"}" >>"$out"
  record weir "$q" "$r" "$out"
}
FLINK_UP=0
flink_start() { # query: starts its Flink JVM and waits until the warm-up is done
  local q=$1 line=
  coproc FLINKP { flink --query "$q" --events "$EVENTS" --parallelism "$PARALLELISM" --rate "$RATE" --seed "$SEED" \
    --source "$SOURCE" "${SOURCE_ARGS[@]}" --side-input "$SIDE_INPUT" --warmup-events "$WARMUP_EVENTS" --serve \
    2>"$WORK/$q.flink.log"; }
  FLINK_UP=1
  while IFS= read -r -t "$RUN_TIMEOUT" line <&"${FLINKP[0]}"; do
    [[ $line == '{"ready":true}' ]] && return 0
  done
  log "!!! flink $q: no warm-up (JVM ended or $RUN_TIMEOUT s passed); see $WORK/$q.flink.log"
  flink_stop
  return 1
}
run_flink() { # query run
  local q=$1 r=$2 out=$WORK/$1.flink.$2.json line=
  settle
  : >"$out"
  if ((FLINK_UP)) && echo run >&"${FLINKP[1]}" 2>/dev/null; then
    while IFS= read -r -t "$RUN_TIMEOUT" line <&"${FLINKP[0]}"; do
      if [[ $line == '{'* ]]; then
        echo "$line" >>"$out"
        break
      fi
    done
  fi
  [[ -s $out ]] || { echo '{"error":"the Flink JVM ended or did not answer within RUN_TIMEOUT"}' >"$out"; flink_stop; }
  record flink "$q" "$r" "$out"
}
flink_stop() {
  ((FLINK_UP)) || return 0
  FLINK_UP=0
  local pid=${FLINKP_PID:-}
  { echo quit >&"${FLINKP[1]}"; } 2>/dev/null || true
  if [[ -n $pid ]]; then
    for _ in $(seq 1 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
  fi
}
trap 'flink_stop; weir_stop; rm -rf "${GENDIR:-/nonexistent}"' EXIT

T0=$(date +%s)
LOAD_BEFORE=$(cut -d' ' -f1-3 /proc/loadavg)
for q in $QUERIES; do
  have_weir=1
  if ! weir_has "$q"; then
    have_weir=0
    if [[ $ALLOW_MISSING != 1 ]]; then
      log "!!! weir nexmark does not know $q"
      FAILED=1
      continue
    fi
    log "weir nexmark does not know $q (yet): Flink side alone"
  fi
  log "flink $q: JVM start and warm-up ($WARMUP_EVENTS events)"
  flink_start "$q" || FAILED=1
  if ((have_weir && WEIR_SERVE)); then
    log "weir $q: process start and warm-up ($WEIR_WARMUP events)"
    weir_start "$q" || FAILED=1
  fi
  for ((r = 1; r <= RUNS; r++)); do
    ((have_weir)) && run_weir "$q" "$r"
    run_flink "$q" "$r"
  done
  weir_stop
  flink_stop
done
T1=$(date +%s)
LOAD_AFTER=$(cut -d' ' -f1-3 /proc/loadavg)

# ---- table ---------------------------------------------------------------------------
GO_VERSION=$(go version)
JAVA_VERSION=$(java -version 2>&1 | head -1)
CPU_MODEL=$(grep -m1 'model name' /proc/cpuinfo 2>/dev/null | cut -d: -f2- | sed 's/^ *//' || echo unknown)
CORES=$(nproc)
MEM=$(awk '/MemTotal/ {printf "%.0f GiB", $2/1048576}' /proc/meminfo 2>/dev/null || echo unknown)

set +e
export WEIR_SERVE WEIR_WARMUP QUERIES RUNS EVENTS RATE PARALLELISM SEED SOURCE WARMUP_EVENTS FLINK_JAVA_OPTS GEN_STATUS STAMP T0 T1 LOAD_BEFORE \
  LOAD_AFTER GO_VERSION JAVA_VERSION CPU_MODEL CORES MEM COMMIT DIRTY
python3 "$ROOT/bench/table.py" "$RESULTS" "$OUT"
TABLE_RC=$?
set -e
log "wrote the Weir vs Flink section of $OUT (raw results: $WORK)"
if ((TABLE_RC != 0)) || ((FAILED != 0)) || [[ $GEN_STATUS == DIFFERENT* ]]; then
  log "!!! comparison NOT clean: see the messages above"
  exit 1
fi
