#!/usr/bin/env bash
# Runs scenario files through Apache Flink's own operators (bench/flink-oracle)
# and prints each file back with what Flink emitted as its `> ` lines.
#
#   scripts/flink-oracle.sh FILE...            # printouts to stdout
#   scripts/flink-oracle.sh -o OUTDIR FILE...  # one printout per file: OUTDIR/<parent dir>/<file>
#
# It builds the module once into .cache/flink-oracle (Java 17 and Maven;
# Maven fetches Flink 2.2.1 from Maven Central the first time) and rebuilds
# when a source is newer. One JVM runs all files. FLINK_ORACLE_JAVA_OPTS adds
# JVM flags: -Doracle.lineTimeoutMs=N (default 20000) and
# -Doracle.maxOutputsPerLine=N (default 100000) cut a line that never returns
# (Flink's endless timer loops) and report it as `# error:`;
# -Doracle.debug=true prints stack traces.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
MODULE="$ROOT/bench/flink-oracle"
BUILD="$ROOT/.cache/flink-oracle"
OUT=""
if [[ "${1:-}" == "-o" ]]; then
  OUT="$2"
  shift 2
fi
if [[ $# -eq 0 ]]; then
  echo "usage: $0 [-o OUTDIR] FILE..." >&2
  exit 2
fi
if [[ ! -f "$BUILD/classpath.txt" || -n "$(find "$MODULE/src" "$MODULE/pom.xml" -newer "$BUILD/classpath.txt" -print -quit)" ]]; then
  echo "flink-oracle: building bench/flink-oracle into .cache/flink-oracle" >&2
  mvn -q -B -Dstyle.color=never -f "$MODULE/pom.xml" -Doracle.buildDir="$BUILD" package >&2
  touch "$BUILD/classpath.txt"
fi
ARGS=()
if [[ -n "$OUT" ]]; then
  mkdir -p "$OUT"
  ARGS=(--out "$OUT")
fi
# many files per JVM: the names go through a file (command lines get long)
LIST="$(mktemp "${TMPDIR:-/tmp}/flink-oracle-files.XXXXXX")"
trap 'rm -f "$LIST"' EXIT
printf '%s\n' "$@" >"$LIST"
java ${FLINK_ORACLE_JAVA_OPTS:-} -Xshare:off -Xmx2g -Dlog4j2.level=OFF \
  -cp "$BUILD/classes:$(cat "$BUILD/classpath.txt")" weiroracle.Main "${ARGS[@]}" --files "$LIST"
