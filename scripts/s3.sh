#!/usr/bin/env bash
# An S3-compatible server for the tests: the Versity S3 gateway
# (github.com/versity/versitygw, Apache-2.0) over a directory, on loopback.
#
#   scripts/s3.sh start   install it if needed (go install into .cache/s3/bin),
#                         start it unless it runs; the last line printed is
#                         the settings the tests read:
#                           eval "$(scripts/s3.sh start | tail -1)"
#   scripts/s3.sh stop    stop the server this script started
#   scripts/s3.sh env     print the settings of the running server
#
# The server keeps its objects in .cache/s3/data (emptied at each start) and
# listens on a free port of 127.0.0.1 (WEIR_S3_PORT to choose one).
set -euo pipefail
cd "$(dirname "$0")/.."

version=v1.8.0
cache=$PWD/.cache/s3
bin=$cache/bin/versitygw
run=$cache/run
access=weir-test
secret=weir-test-secret # loopback only
bucket=weir-test

settings() {
  echo "export WEIR_S3_ENDPOINT=http://127.0.0.1:$(cat "$run/port") WEIR_S3_ACCESS_KEY=$access WEIR_S3_SECRET_KEY=$secret WEIR_S3_BUCKET=$bucket"
}

running() {
  [ -f "$run/pid" ] && kill -0 "$(cat "$run/pid")" 2>/dev/null
}

answers() { # is something listening on port $1?
  (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null
}

install() {
  if [ -x "$bin" ] && [ "$(cat "$cache/bin/version" 2>/dev/null)" = "$version" ]; then
    return
  fi
  echo "s3.sh: installing versitygw $version into $cache/bin (go install)" >&2
  mkdir -p "$cache/bin"
  local t0=$SECONDS
  GOBIN=$cache/bin GOFLAGS=-buildvcs=false go install "github.com/versity/versitygw/cmd/versitygw@$version"
  echo "$version" >"$cache/bin/version"
  echo "s3.sh: installed in $((SECONDS - t0)) s" >&2
}

start() {
  if running; then
    settings
    return
  fi
  install
  mkdir -p "$run"
  rm -rf "$cache/data"
  mkdir -p "$cache/data"
  local port=${WEIR_S3_PORT:-}
  if [ -z "$port" ]; then
    for _ in $(seq 50); do
      port=$((20000 + RANDOM % 12000)) # below the ephemeral range (32768-60999)
      answers "$port" || break
    done
  fi
  echo "$port" >"$run/port"
  ROOT_ACCESS_KEY_ID=$access ROOT_SECRET_ACCESS_KEY=$secret \
    nohup "$bin" --port "127.0.0.1:$port" --quiet posix "$cache/data" >"$run/log" 2>&1 </dev/null &
  echo $! >"$run/pid"
  for _ in $(seq 100); do
    if answers "$port"; then
      echo "s3.sh: versitygw $version listening on 127.0.0.1:$port (pid $(cat "$run/pid"), log $run/log)" >&2
      settings
      return
    fi
    if ! running; then
      break
    fi
    sleep 0.1
  done
  echo "s3.sh: versitygw did not start on 127.0.0.1:$port:" >&2
  cat "$run/log" >&2
  stop
  return 1
}

stop() {
  if [ -f "$run/pid" ]; then
    local pid
    pid=$(cat "$run/pid")
    if kill -0 "$pid" 2>/dev/null; then
      kill "$pid"
      for _ in $(seq 50); do
        kill -0 "$pid" 2>/dev/null || break
        sleep 0.1
      done
    fi
    rm -f "$run/pid"
  fi
}

case "${1:-}" in
start) start ;;
stop) stop ;;
env)
  running || { echo "s3.sh: not running" >&2; exit 1; }
  settings
  ;;
*)
  echo "usage: $0 start|stop|env" >&2
  exit 2
  ;;
esac
