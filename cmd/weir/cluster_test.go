package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/weirstream/weir/internal/cluster"
	"github.com/weirstream/weir/internal/kafkatest"
)

// TestWriteClusterStatus: the instances with their tasks, then each task
// with its checkpoint, lag and input positions.
func TestWriteClusterStatus(t *testing.T) {
	var b bytes.Buffer
	writeClusterStatus(&b, []cluster.TaskStatus{
		{Index: 0, Task: "s1-0", Member: "kgo m1", Host: "/10.0.0.1", Checkpoint: 12, Lag: 5,
			Inputs: []cluster.InputLag{{Topic: "events", Partition: 0, Committed: 95, End: 100, Lag: 5}}},
		{Index: 1, Task: "s3-0", Member: "kgo m2", Host: "/10.0.0.2", Checkpoint: 11, Lag: 1,
			Inputs: []cluster.InputLag{{Topic: "j-sum-0-repartition", Partition: 0, Committed: 40, End: 41, Lag: 1}}},
		{Index: 2, Task: "#2", Lag: -1},
	})
	got := b.String()
	for _, want := range []string{
		"kgo m1    /10.0.0.1  s1-0", "kgo m2    /10.0.0.2  s3-0", "(none)    -          #2",
		"s1-0  12          5    events:0 95/100", "s3-0  11          1    j-sum-0-repartition:0 40/41", "#2    0           -    -",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("cluster status lacks %q:\n%s", want, got)
		}
	}
}

// TestClusterStatusProperties: --properties reaches brokers that require
// TLS and SASL (the test broker's SASL_SSL listener): the status gets an
// answer from the brokers (here: the job has not started), where without
// the file it cannot speak to the listener at all.
func TestClusterStatusProperties(t *testing.T) {
	addr, caFile := kafkatest.SecureBroker(t)
	props := filepath.Join(t.TempDir(), "client.properties")
	if err := os.WriteFile(props, []byte("security.protocol=SASL_SSL\nsasl.mechanism=SCRAM-SHA-256\n"+
		"sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required username=\"weir\" password=\"weir-secret\";\n"+
		"ssl.truststore.location="+caFile+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--properties", props}, "no tasks topic absent-job-tasks"},
		{nil, "tls"},
	} {
		var out, errb bytes.Buffer
		args := append([]string{"status", "--bootstrap", addr, "--job", "absent-job", "--timeout", "20s"}, c.args...)
		if code := clusterMain(args, &out, &errb); code != 1 || !strings.Contains(errb.String(), c.want) {
			t.Errorf("weir cluster %v: exit %d, stderr %q, want 1 and %q", args, code, errb.String(), c.want)
		}
	}
}
