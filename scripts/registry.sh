#!/usr/bin/env bash
# Apicurio Registry (in memory) on loopback, for the Schema Registry tests of
# connector/kafka/registry: it serves the Confluent-compatible API at
# /apis/ccompat/v7. Needs Java 17+ and Maven.
#
#   scripts/registry.sh start   # idempotent; last line: WEIR_SCHEMA_REGISTRY=http://127.0.0.1:PORT/apis/ccompat/v7
#   scripts/registry.sh stop
#   scripts/registry.sh status
#
# Maven Central has Apicurio only as the library jar of a Quarkus
# application, so the first start builds a runnable one from the small Maven
# project in scripts/registry (see its pom.xml) into .cache/registry
# (git-ignored; about 130 MB of jars, a minute or two); later starts reuse it
# and take some 15 s. Schemas live in memory: they do not survive a stop.
# Port: REGISTRY_PORT (default 39081).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
dir=$root/.cache/registry
port=${REGISTRY_PORT:-39081}
pidfile=$dir/registry.pid
url=http://127.0.0.1:$port/apis/ccompat/v7

running() {
  [ -f "$pidfile" ] && kill -0 "$(cat "$pidfile")" 2>/dev/null
}

listening() {
  (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null
}

build() {
  # The build is redone when the project in scripts/registry changes.
  local sum
  sum=$(cd scripts/registry && find . -type f | sort | xargs cat | cksum | cut -d' ' -f1)
  if [ -f "$dir/app/target/quarkus-app/quarkus-run.jar" ] && [ -f "$dir/app/.complete-$sum" ]; then
    return
  fi
  echo "registry.sh: building Apicurio Registry into $dir/app" >&2
  rm -rf "$dir/app" && mkdir -p "$dir"
  cp -r scripts/registry "$dir/app"
  (cd "$dir/app" && mvn -B -q -s settings.xml package -DskipTests >"$dir/build.out" 2>&1) ||
    { tail -50 "$dir/build.out" >&2; exit 1; }
  touch "$dir/app/.complete-$sum"
}

ready() {
  command -v curl >/dev/null && curl -sf -o /dev/null "$url/subjects"
}

start() {
  if running; then
    if ready; then
      echo "WEIR_SCHEMA_REGISTRY=$url"
      return
    fi
  elif listening; then
    echo "registry.sh: port $port is taken by another process; set REGISTRY_PORT" >&2
    exit 1
  fi
  command -v java >/dev/null || { echo "registry.sh: java (17+) is needed" >&2; exit 1; }
  command -v mvn >/dev/null || { echo "registry.sh: mvn is needed to build the registry" >&2; exit 1; }
  command -v curl >/dev/null || { echo "registry.sh: curl is needed" >&2; exit 1; }
  build
  if ! running; then
    : >"$dir/registry.out"
    HTTP_PORT=$port nohup java -Xms64m -Xmx384m -XX:+UseSerialGC -jar "$dir/app/target/quarkus-app/quarkus-run.jar" \
      >"$dir/registry.out" 2>&1 </dev/null &
    echo $! >"$pidfile"
  fi
  for _ in $(seq 1 240); do
    if ready; then
      echo "WEIR_SCHEMA_REGISTRY=$url"
      return
    fi
    if ! running; then
      echo "registry.sh: the registry exited; its log:" >&2
      tail -50 "$dir/registry.out" >&2
      exit 1
    fi
    sleep 0.5
  done
  echo "registry.sh: the registry did not start within 120 s; its log:" >&2
  tail -50 "$dir/registry.out" >&2
  exit 1
}

stop() {
  if ! running; then
    rm -f "$pidfile"
    return
  fi
  local pid
  pid=$(cat "$pidfile")
  kill -TERM "$pid" 2>/dev/null || true
  for _ in $(seq 1 60); do
    kill -0 "$pid" 2>/dev/null || { rm -f "$pidfile"; return; }
    sleep 0.5
  done
  kill -KILL "$pid" 2>/dev/null || true
  rm -f "$pidfile"
}

case "${1:-}" in
start) start ;;
stop) stop ;;
status)
  if running && ready; then echo "running: $url"; else echo "stopped"; exit 1; fi
  ;;
*)
  echo "usage: $0 start|stop|status" >&2
  exit 2
  ;;
esac
