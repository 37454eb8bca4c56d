#!/usr/bin/env bash
# Apache Flink's web UI (the static files of org.apache.flink:flink-runtime-web
# on Maven Central) for serving on a Weir job: downloads the jar once into
# .cache/flink-web (git-ignored), checks it against Maven Central's SHA-1
# and extracts its web/ folder. The last line printed is the folder to give
# rest.WithFlinkUI (or to serve with any static server pointed at Weir's
# REST address), also exported to the tests as WEIR_FLINK_WEB:
#
#   scripts/flink-web.sh          # -> WEIR_FLINK_WEB=/abs/path/.cache/flink-web/2.2.1/web
#
# FLINK_WEB_VERSION (default 2.2.1) picks another release. The files are
# Apache Flink's (Apache License 2.0); never commit them.
set -euo pipefail
cd "$(dirname "$0")/.."
version=${FLINK_WEB_VERSION:-2.2.1}
dir=$PWD/.cache/flink-web/$version
jar=$dir/flink-runtime-web-$version.jar
url=https://repo1.maven.org/maven2/org/apache/flink/flink-runtime-web/$version/flink-runtime-web-$version.jar

if [ ! -f "$dir/.complete" ]; then
  mkdir -p "$dir"
  if [ ! -f "$jar" ]; then
    echo "downloading $url" >&2
    curl -fsSL --retry 3 -o "$jar.part" "$url"
    want=$(curl -fsSL --retry 3 "$url.sha1" | awk '{print $1}')
    got=$(sha1sum "$jar.part" | awk '{print $1}')
    if [ "$want" != "$got" ]; then
      rm -f "$jar.part"
      echo "flink-web: SHA-1 mismatch for $url (want $want, got $got)" >&2
      exit 1
    fi
    mv "$jar.part" "$jar"
  fi
  rm -rf "$dir/web"
  unzip -q -o "$jar" 'web/*' -d "$dir"
  if [ ! -f "$dir/web/index.html" ]; then
    echo "flink-web: $jar has no web/index.html" >&2
    exit 1
  fi
  touch "$dir/.complete"
fi
echo "WEIR_FLINK_WEB=$dir/web"
