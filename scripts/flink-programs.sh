#!/usr/bin/env bash
# The Flink side of the whole-program differential tester
# (internal/progdiff): runs every SPEC_DIR/*.json program on one Apache
# Flink 2.2.1 MiniCluster (a harness-mode spec on Flink's keyed operator
# test harness) and writes OUT_DIR/NAME.out (the sink lines) or
# OUT_DIR/NAME.err (why the job failed). Needs Java 17 and Maven.
#
#   scripts/flink-programs.sh SPEC_DIR OUT_DIR
#   scripts/flink-programs.sh --build    # only build (the test calls it first)
#
# The module bench/flink-programs is compiled once (again when a file of it
# changes); its classpath is cached in .cache/flink-programs (git-ignored).
set -euo pipefail
cd "$(dirname "$0")/.."
mod=bench/flink-programs
cache=.cache/flink-programs
mkdir -p "$cache"
stamp=$cache/built
if [ ! -f "$stamp" ] || [ -n "$(find "$mod/pom.xml" "$mod/src" -newer "$stamp" -print -quit)" ]; then
  mvn -q -B -f "$mod" compile dependency:build-classpath -Dmdep.outputFile="$PWD/$cache/classpath" >"$cache/build.log" 2>&1 || {
    cat "$cache/build.log" >&2
    echo "flink-programs: the Maven build failed" >&2
    exit 1
  }
  touch "$stamp"
fi
if [ "${1:-}" = "--build" ]; then
  exit 0
fi
if [ $# -ne 2 ]; then
  echo "usage: scripts/flink-programs.sh SPEC_DIR OUT_DIR" >&2
  exit 2
fi
# Flink's env.java.opts.all for Java 17 (as bench/flink/pom.xml).
opens=(--add-opens=java.base/java.lang=ALL-UNNAMED --add-opens=java.base/java.net=ALL-UNNAMED
  --add-opens=java.base/java.io=ALL-UNNAMED --add-opens=java.base/java.nio=ALL-UNNAMED
  --add-opens=java.base/sun.nio.ch=ALL-UNNAMED --add-opens=java.base/java.lang.reflect=ALL-UNNAMED
  --add-opens=java.base/java.text=ALL-UNNAMED --add-opens=java.base/java.time=ALL-UNNAMED
  --add-opens=java.base/java.util=ALL-UNNAMED --add-opens=java.base/java.util.concurrent=ALL-UNNAMED
  --add-opens=java.base/java.util.concurrent.atomic=ALL-UNNAMED --add-opens=java.base/java.util.concurrent.locks=ALL-UNNAMED)
exec java "${opens[@]}" -Xmx1g -XX:+UseSerialGC -XX:TieredStopAtLevel=1 \
  -cp "$mod/target/classes:$(cat "$cache/classpath")" weirprograms.Main "$1" "$2"
