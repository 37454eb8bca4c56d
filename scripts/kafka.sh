#!/usr/bin/env bash
# A single-node Apache Kafka broker (KRaft, broker and controller in one
# process) from Maven Central jars, on loopback, for tests, examples and
# benchmarks. Needs Java 17+ and Maven.
#
#   scripts/kafka.sh start   # idempotent; last line: WEIR_KAFKA_BOOTSTRAP=127.0.0.1:PORT
#   scripts/kafka.sh stop
#   scripts/kafka.sh status
#
# Jars, configuration, data and log live in .cache/kafka (git-ignored); the
# first start downloads the jars (about 50 MB), later ones start in seconds.
# Each start formats a fresh data directory: topics do not survive a stop.
# Ports: KAFKA_PORT (default 39092) for clients, KAFKA_CONTROLLER_PORT
# (default KAFKA_PORT+1) for the controller, KAFKA_SASL_SSL_PORT (default
# KAFKA_PORT+2) for clients over TLS with SASL (SCRAM-SHA-256,
# SCRAM-SHA-512 or PLAIN; user weir, password weir-secret), whose
# certificate a test CA signs (.cache/kafka/tls/ca.pem, made by openssl on
# the first start). KAFKA_VERSION (default 4.1.1).
# Before its last line, start prints WEIR_KAFKA_SASL_SSL=127.0.0.1:PORT and
# WEIR_KAFKA_CA=PATH, which the TLS and SASL tests read.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
dir=$root/.cache/kafka
version=${KAFKA_VERSION:-4.1.1}
port=${KAFKA_PORT:-39092}
cport=${KAFKA_CONTROLLER_PORT:-$((port + 1))}
sport=${KAFKA_SASL_SSL_PORT:-$((port + 2))}
bootstrap=127.0.0.1:$port
tlsdir=$dir/tls
pidfile=$dir/kafka.pid
log4j="-Dlog4j2.configurationFile=$dir/log4j2.properties"

running() {
  [ -f "$pidfile" ] && kill -0 "$(cat "$pidfile")" 2>/dev/null
}

listening() {
  # bash's /dev/tcp: succeeds when something accepts on the port.
  (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null
}

fetch_jars() {
  if [ -f "$dir/lib/.complete-$version" ]; then
    return
  fi
  mkdir -p "$dir"
  cat >"$dir/pom.xml" <<POM
<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>local.weir</groupId>
  <artifactId>kafka-broker-classpath</artifactId>
  <version>1</version>
  <packaging>pom</packaging>
  <dependencies>
    <dependency>
      <groupId>org.apache.kafka</groupId>
      <artifactId>kafka_2.13</artifactId>
      <version>$version</version>
    </dependency>
    <dependency>
      <groupId>org.apache.logging.log4j</groupId>
      <artifactId>log4j-slf4j-impl</artifactId>
      <version>2.24.3</version>
    </dependency>
  </dependencies>
</project>
POM
  echo "kafka.sh: fetching Kafka $version jars into $dir/lib" >&2
  rm -rf "$dir/lib"
  (cd "$dir" && mvn -B -q org.apache.maven.plugins:maven-dependency-plugin:3.8.1:copy-dependencies \
    -DoutputDirectory=lib -DincludeScope=runtime >&2)
  touch "$dir/lib/.complete-$version"
}

# make_tls writes a test CA and the broker's certificate, signed by it, for
# 127.0.0.1 and localhost, into $tlsdir (once; kept across starts).
make_tls() {
  if [ -f "$tlsdir/.complete" ]; then
    return
  fi
  command -v openssl >/dev/null || { echo "kafka.sh: openssl is needed for the TLS listener" >&2; exit 1; }
  rm -rf "$tlsdir" && mkdir -p "$tlsdir"
  (
    cd "$tlsdir"
    openssl req -x509 -newkey rsa:2048 -nodes -days 3650 -subj "/CN=Weir test CA" \
      -keyout ca.key -out ca.pem -addext basicConstraints=critical,CA:TRUE -addext keyUsage=critical,keyCertSign,cRLSign
    openssl req -newkey rsa:2048 -nodes -subj "/CN=localhost" -keyout broker.key -out broker.csr
    printf 'subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth\n' >broker.ext
    openssl x509 -req -in broker.csr -CA ca.pem -CAkey ca.key -CAcreateserial -days 3650 -extfile broker.ext -out broker.pem
    openssl pkcs12 -export -in broker.pem -inkey broker.key -certfile ca.pem -name broker \
      -passout pass:weir-test -out broker.p12
  ) >"$dir/tls.out" 2>&1 || { cat "$dir/tls.out" >&2; exit 1; }
  touch "$tlsdir/.complete"
}

write_config() {
  cat >"$dir/log4j2.properties" <<'PROPS'
status = warn
appender.err.type = Console
appender.err.name = ERR
appender.err.target = SYSTEM_ERR
appender.err.layout.type = PatternLayout
appender.err.layout.pattern = [%d] %p %m (%c)%n
rootLogger.level = INFO
rootLogger.appenderRef.err.ref = ERR
logger.raft.name = org.apache.kafka.raft
logger.raft.level = WARN
logger.controller.name = org.apache.kafka.controller
logger.controller.level = WARN
logger.kafka.name = kafka
logger.kafka.level = WARN
logger.server.name = kafka.server.KafkaRaftServer
logger.server.level = INFO
PROPS
  cat >"$dir/server.properties" <<PROPS
process.roles=broker,controller
node.id=1
controller.quorum.voters=1@127.0.0.1:$cport
listeners=PLAINTEXT://127.0.0.1:$port,CONTROLLER://127.0.0.1:$cport,SASL_SSL://127.0.0.1:$sport
advertised.listeners=PLAINTEXT://127.0.0.1:$port,SASL_SSL://127.0.0.1:$sport
controller.listener.names=CONTROLLER
inter.broker.listener.name=PLAINTEXT
listener.security.protocol.map=CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT,SASL_SSL:SASL_SSL
# TLS with SASL for the security tests (TestKafkaTLSSCRAM): the test CA's
# certificate, and the users of SCRAM (made when the data is formatted)
# and PLAIN (below).
ssl.keystore.type=PKCS12
ssl.keystore.location=$tlsdir/broker.p12
ssl.keystore.password=weir-test
ssl.key.password=weir-test
sasl.enabled.mechanisms=SCRAM-SHA-256,SCRAM-SHA-512,PLAIN
listener.name.sasl_ssl.scram-sha-256.sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required;
listener.name.sasl_ssl.scram-sha-512.sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required;
listener.name.sasl_ssl.plain.sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required user_weir="weir-secret";
log.dirs=$dir/data
num.partitions=1
auto.create.topics.enable=false
delete.topic.enable=true
offsets.topic.replication.factor=1
transaction.state.log.replication.factor=1
transaction.state.log.min.isr=1
share.coordinator.state.topic.replication.factor=1
share.coordinator.state.topic.min.isr=1
offsets.topic.num.partitions=1
transaction.state.log.num.partitions=1
group.initial.rebalance.delay.ms=0
transaction.max.timeout.ms=900000
# Aborted transactions of a crashed producer are cleaned up quickly.
transaction.abort.timed.out.transaction.cleanup.interval.ms=5000
PROPS
}

# announce prints the broker's addresses, the plain one last.
announce() {
  echo "WEIR_KAFKA_SASL_SSL=127.0.0.1:$sport"
  echo "WEIR_KAFKA_CA=$tlsdir/ca.pem"
  echo "WEIR_KAFKA_BOOTSTRAP=$bootstrap"
}

start() {
  if running; then
    if listening; then
      announce
      return
    fi
  elif listening; then
    echo "kafka.sh: port $port is taken by another process; set KAFKA_PORT" >&2
    exit 1
  fi
  command -v java >/dev/null || { echo "kafka.sh: java (17+) is needed" >&2; exit 1; }
  command -v mvn >/dev/null || { echo "kafka.sh: mvn is needed to fetch the broker's jars" >&2; exit 1; }
  fetch_jars
  make_tls
  write_config
  if ! running; then
    rm -rf "$dir/data"
    local cid
    cid=$(java $log4j -cp "$dir/lib/*" kafka.tools.StorageTool random-uuid 2>/dev/null | tail -n1)
    java $log4j -cp "$dir/lib/*" kafka.tools.StorageTool format -t "$cid" -c "$dir/server.properties" \
      --add-scram 'SCRAM-SHA-256=[name=weir,password=weir-secret]' \
      --add-scram 'SCRAM-SHA-512=[name=weir,password=weir-secret]' >"$dir/format.out" 2>&1 ||
      { cat "$dir/format.out" >&2; exit 1; }
    : >"$dir/kafka.out"
    nohup java -Xms256m -Xmx512m -XX:+UseG1GC -XX:MaxGCPauseMillis=20 \
      -XX:InitiatingHeapOccupancyPercent=35 -XX:+ExplicitGCInvokesConcurrent -Djava.awt.headless=true \
      $log4j -cp "$dir/lib/*" kafka.Kafka "$dir/server.properties" >"$dir/kafka.out" 2>&1 </dev/null &
    echo $! >"$pidfile"
  fi
  # Wait for the broker: at most 120 s (a loaded 2-core machine).
  for _ in $(seq 1 240); do
    if grep -q 'Kafka Server started' "$dir/kafka.out" 2>/dev/null && listening; then
      announce
      return
    fi
    if ! running; then
      echo "kafka.sh: the broker exited; its log:" >&2
      tail -50 "$dir/kafka.out" >&2
      exit 1
    fi
    sleep 0.5
  done
  echo "kafka.sh: the broker did not start within 120 s; its log:" >&2
  tail -50 "$dir/kafka.out" >&2
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
status) if running && listening; then announce; else echo "kafka.sh: not running" >&2; exit 1; fi ;;
*) echo "usage: $0 start|stop|status" >&2; exit 2 ;;
esac
