// Package kafkatest helps tests that need the real Kafka broker of the
// test command (scripts/kafka.sh).
package kafkatest

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
)

// Broker returns the address of the test broker (WEIR_KAFKA_BOOTSTRAP,
// which scripts/test.sh sets after starting scripts/kafka.sh). Without it
// the test skips, unless WEIR_REQUIRE_SERVICES=1 (the test command), where
// it fails.
func Broker(t testing.TB) string {
	t.Helper()
	return Service(t, "the Kafka broker", "scripts/kafka.sh start", "WEIR_KAFKA_BOOTSTRAP")[0]
}

// SecureBroker returns the test broker's TLS and SASL listener
// (WEIR_KAFKA_SASL_SSL) and the file of the test CA that signed its
// certificate (WEIR_KAFKA_CA), both printed by scripts/kafka.sh start; its
// users: weir / weir-secret, by SCRAM-SHA-256, SCRAM-SHA-512 or PLAIN.
// Without them the test skips, unless WEIR_REQUIRE_SERVICES=1, where it
// fails.
func SecureBroker(t testing.TB) (addr, caFile string) {
	t.Helper()
	v := Service(t, "the broker's TLS and SASL listener", "scripts/kafka.sh start", "WEIR_KAFKA_SASL_SSL", "WEIR_KAFKA_CA")
	return v[0], v[1]
}

// Service returns the values of the environment variables that tell a
// test where a service of the test command is (what, started by start,
// which scripts/test.sh runs). When one is unset the test skips, unless
// WEIR_REQUIRE_SERVICES=1 (the test command), where it fails.
func Service(t testing.TB, what, start string, vars ...string) []string {
	t.Helper()
	vals := make([]string, len(vars))
	for i, v := range vars {
		if vals[i] = os.Getenv(v); vals[i] == "" {
			if os.Getenv("WEIR_REQUIRE_SERVICES") == "1" {
				t.Fatalf("%s is not set but WEIR_REQUIRE_SERVICES=1: the test command must start %s (%s)", v, what, start)
			}
			t.Skipf("no %s: run %s and set %s (scripts/test.sh does)", what, start, strings.Join(vars, " and "))
		}
	}
	return vals
}

// Decided waits until every transaction on topic is decided (the last
// stable offsets have reached the end offsets: a commit's markers are
// written after EndTxn returns) and returns the end offsets. A transaction
// left open makes it fail when ctx ends.
func Decided(ctx context.Context, adm *kadm.Client, topic string) (kadm.ListedOffsets, error) {
	for {
		ends, err := adm.ListEndOffsets(ctx, topic)
		if err != nil {
			return nil, err
		}
		stable, err := adm.ListCommittedOffsets(ctx, topic)
		if err != nil {
			return nil, err
		}
		same := true
		ends.Each(func(o kadm.ListedOffset) {
			if s, _ := stable.Lookup(o.Topic, o.Partition); s.Offset != o.Offset {
				same = false
			}
		})
		if same {
			return ends, nil
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("topic %s: a transaction stays open (last stable offsets %v, ends %v): %w", topic, stable, ends, ctx.Err())
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// KeepRecords is the configuration of a test topic: its records are kept
// whatever their timestamps. Tests write records with event times long
// past (1970, or 2026-01-01), which the broker's time-based retention
// (retention.ms, 7 days by default) deletes at its next check, whenever
// that comes: the records would vanish between a test's writing and its
// reading them, at random.
func KeepRecords() map[string]*string {
	return map[string]*string{"retention.ms": kadm.StringPtr("-1")}
}

// OwnBroker is a single-node Kafka broker (KRaft) of a test's own, run
// from the jars scripts/kafka.sh fetches (.cache/kafka/lib of the module),
// on free loopback ports, with its data in a temporary directory of the
// test: unlike the shared broker it can be stopped and started again
// with its topics and transactions kept (TestKafkaBrokerRestart).
type OwnBroker struct {
	t          testing.TB
	lib, props string
	log4j      string
	Addr       string // "127.0.0.1:port"
	cmd        *exec.Cmd
	done       chan struct{}
	out        *os.File
}

// StartOwnBroker formats and starts an OwnBroker, stopped when the test
// ends. Without the jars or java the test skips, or fails when
// WEIR_REQUIRE_SERVICES=1.
func StartOwnBroker(t testing.TB) *OwnBroker {
	t.Helper()
	missing := func(why string) {
		t.Helper()
		if os.Getenv("WEIR_REQUIRE_SERVICES") == "1" {
			t.Fatalf("a broker of the test's own cannot start (WEIR_REQUIRE_SERVICES=1): %s", why)
		}
		t.Skip("a broker of the test's own cannot start: " + why)
	}
	if _, err := exec.LookPath("java"); err != nil {
		missing("no java")
	}
	root, err := moduleRoot()
	if err != nil {
		missing(err.Error())
	}
	lib := filepath.Join(root, ".cache", "kafka", "lib")
	if _, err := os.Stat(lib); err != nil {
		missing("no broker jars in " + lib + " (scripts/kafka.sh start fetches them)")
	}
	port, cport := freePort(t), freePort(t)
	dir := t.TempDir()
	props := filepath.Join(dir, "server.properties")
	conf := fmt.Sprintf(`process.roles=broker,controller
node.id=1
controller.quorum.voters=1@127.0.0.1:%[2]d
listeners=PLAINTEXT://127.0.0.1:%[1]d,CONTROLLER://127.0.0.1:%[2]d
advertised.listeners=PLAINTEXT://127.0.0.1:%[1]d
controller.listener.names=CONTROLLER
inter.broker.listener.name=PLAINTEXT
listener.security.protocol.map=CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT
log.dirs=%[3]s
num.partitions=1
auto.create.topics.enable=false
offsets.topic.replication.factor=1
transaction.state.log.replication.factor=1
transaction.state.log.min.isr=1
share.coordinator.state.topic.replication.factor=1
share.coordinator.state.topic.min.isr=1
offsets.topic.num.partitions=1
transaction.state.log.num.partitions=1
group.initial.rebalance.delay.ms=0
transaction.max.timeout.ms=900000
transaction.abort.timed.out.transaction.cleanup.interval.ms=5000
`, port, cport, filepath.Join(dir, "data"))
	if err := os.WriteFile(props, []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	// Warnings and the line that says the broker serves.
	log4j := filepath.Join(dir, "log4j2.properties")
	if err := os.WriteFile(log4j, []byte(`status = warn
appender.err.type = Console
appender.err.name = ERR
appender.err.target = SYSTEM_ERR
appender.err.layout.type = PatternLayout
appender.err.layout.pattern = [%d] %p %m (%c)%n
rootLogger.level = WARN
rootLogger.appenderRef.err.ref = ERR
logger.server.name = kafka.server.KafkaRaftServer
logger.server.level = INFO
`), 0o644); err != nil {
		t.Fatal(err)
	}
	b := &OwnBroker{t: t, lib: lib, props: props, log4j: log4j, Addr: fmt.Sprintf("127.0.0.1:%d", port)}
	var id [16]byte
	_, _ = rand.Read(id[:])
	format := exec.Command("java", "-Dlog4j2.configurationFile="+log4j, "-cp", filepath.Join(lib, "*"), "kafka.tools.StorageTool", "format",
		"-t", base64.RawURLEncoding.EncodeToString(id[:]), "-c", props)
	if out, err := format.CombinedOutput(); err != nil {
		t.Fatalf("formatting the broker's storage: %v\n%s", err, out)
	}
	t.Cleanup(b.Stop)
	b.Start()
	return b
}

// Start starts the broker (stopped, or never started) and waits until it
// serves, at most 2 minutes.
func (b *OwnBroker) Start() {
	t := b.t
	t.Helper()
	out, err := os.CreateTemp(filepath.Dir(b.props), "kafka-*.out")
	if err != nil {
		t.Fatal(err)
	}
	b.out = out
	b.cmd = exec.Command("java", "-Xms128m", "-Xmx384m", "-XX:+UseG1GC", "-Djava.awt.headless=true", "-Dlog4j2.configurationFile="+b.log4j,
		"-cp", filepath.Join(b.lib, "*"), "kafka.Kafka", b.props)
	b.cmd.Stdout, b.cmd.Stderr = out, out
	if err := b.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	b.done = make(chan struct{})
	go func(cmd *exec.Cmd, done chan struct{}) {
		_ = cmd.Wait()
		close(done)
	}(b.cmd, b.done)
	deadline := time.Now().Add(2 * time.Minute)
	for {
		log, _ := os.ReadFile(out.Name())
		if strings.Contains(string(log), "Kafka Server started") {
			if c, err := net.DialTimeout("tcp", b.Addr, time.Second); err == nil {
				c.Close()
				return
			}
		}
		select {
		case <-b.done:
			t.Fatalf("the broker exited at its start:\n%s", log)
		case <-time.After(200 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("the broker did not start within 2 minutes:\n%s", log)
		}
	}
}

// Stop stops the broker (SIGTERM: a controlled shutdown, its data kept)
// and waits for it to exit; after a minute it is killed.
func (b *OwnBroker) Stop() {
	if b.cmd == nil {
		return
	}
	_ = b.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-b.done:
	case <-time.After(time.Minute):
		_ = b.cmd.Process.Kill()
		<-b.done
	}
	b.cmd = nil
	b.out.Close()
}

func freePort(t testing.TB) int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// moduleRoot is the directory of the go.mod above the working directory.
func moduleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("no go.mod above the working directory")
		}
		dir = parent
	}
}
