#!/usr/bin/env bash
# bench/monitoring.sh: the cost of monitoring a job, on Nexmark (default q5).
#
# Runs `weir nexmark` alternately without monitoring and with the REST
# server on (--rest 127.0.0.1:0, with key sketches at their default) and a
# monitor reading /metrics and the job's snapshot every SCRAPE (default 1s,
# a dashboard's pace; Prometheus scrapes every 15 s by default), RUNS times
# each, and prints the median CPU seconds and events/s of each mode and the
# CPU overhead in percent. Alternating runs cancel most of this machine's
# speed drift; compare medians only.
#
#   QUERY=q5 EVENTS=10000000 RUNS=7 SCRAPE=1s bench/monitoring.sh
set -euo pipefail
cd "$(dirname "$0")/.."
QUERY=${QUERY:-q5} EVENTS=${EVENTS:-10000000} RUNS=${RUNS:-7} SCRAPE=${SCRAPE:-1s}
bin=$(mktemp -d)/weir
trap 'rm -rf "$(dirname "$bin")"' EXIT
go build -o "$bin" ./cmd/weir
off=() on=()
for i in $(seq 1 "$RUNS"); do
  off+=("$("$bin" nexmark --query "$QUERY" --events "$EVENTS" --json)")
  on+=("$("$bin" nexmark --query "$QUERY" --events "$EVENTS" --json --rest 127.0.0.1:0 --scrape "$SCRAPE")")
  echo "run $i done" >&2
done
python3 - "$QUERY" "$EVENTS" "$SCRAPE" "${#off[@]}" "${off[@]}" "${on[@]}" <<'PY'
import json, statistics, sys
query, events, scrape, n = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
runs = [json.loads(a) for a in sys.argv[5:]]
off, on = runs[:n], runs[n:]
def med(rs, k): return statistics.median(r[k] for r in rs)
for name, rs in (("off", off), ("on", on)):
    print(f"{name:3}  cpu_s {med(rs,'cpu_seconds'):.3f}  events/s {med(rs,'events_per_second'):,.0f}  results {sorted({r['results'] for r in rs})}")
print(f"{query} {events} events, {n} alternating runs each, scrape {scrape}: "
      f"CPU overhead {100*(med(on,'cpu_seconds')/med(off,'cpu_seconds')-1):+.1f}%, "
      f"throughput {100*(med(on,'events_per_second')/med(off,'events_per_second')-1):+.1f}%")
PY
