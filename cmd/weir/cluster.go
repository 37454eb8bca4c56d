package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/weirstream/weir/connector/kafka"
	"github.com/weirstream/weir/internal/cluster"
)

const clusterUsage = `usage: weir cluster status --bootstrap BROKERS --job NAME [--json] [--properties FILE]

Lists the instances of a job running on Kafka (weir.WithCluster(kafkacluster.New(...)))
with the tasks each owns (consumer group member and host), then every
task with its last committed checkpoint and its lag: per input partition
(source topics and repartition topics), the records after the position
of that checkpoint (Kafka's consumer lag, against the last stable
offset). BROKERS is a comma-separated list. --json prints the tasks as
JSON. --properties reads a Kafka client's properties file for brokers
that require TLS or SASL (security.protocol, sasl.mechanism,
sasl.jaas.config, ssl.truststore.location...: kafka.SecurityFromProperties).
`

func clusterMain(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] != "status" {
		fmt.Fprint(stderr, clusterUsage)
		return 2
	}
	fs := flag.NewFlagSet("cluster status", flag.ContinueOnError)
	fs.SetOutput(stderr)
	bootstrap := fs.String("bootstrap", "", "Kafka brokers, comma-separated")
	job := fs.String("job", "", "the job's name (Execute's)")
	asJSON := fs.Bool("json", false, "print the tasks as JSON")
	timeout := fs.Duration("timeout", 30*time.Second, "how long to wait for the brokers")
	props := fs.String("properties", "", "a Kafka client properties file (TLS, SASL)")
	if err := fs.Parse(args[1:]); err != nil {
		return 2
	}
	if *bootstrap == "" || *job == "" {
		fmt.Fprint(stderr, clusterUsage)
		return 2
	}
	var sec kafka.Security
	if *props != "" {
		var err error
		if sec, err = readSecurity(*props); err != nil {
			fmt.Fprintln(stderr, "weir cluster status:", err)
			return 2
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()
	tasks, err := cluster.Status(ctx, strings.Split(*bootstrap, ","), *job, sec.ClientOptions()...)
	if err != nil {
		fmt.Fprintln(stderr, "weir cluster status:", err)
		return 1
	}
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(tasks); err != nil {
			fmt.Fprintln(stderr, "weir cluster status:", err)
			return 1
		}
		return 0
	}
	writeClusterStatus(stdout, tasks)
	return 0
}

// readSecurity reads the TLS and SASL settings of a Kafka client
// properties file.
func readSecurity(path string) (kafka.Security, error) {
	f, err := os.Open(path)
	if err != nil {
		return kafka.Security{}, err
	}
	defer f.Close()
	props, err := kafka.ReadProperties(f)
	if err != nil {
		return kafka.Security{}, fmt.Errorf("%s: %w", path, err)
	}
	sec, err := kafka.SecurityFromProperties(props)
	if err != nil {
		return kafka.Security{}, fmt.Errorf("%s: %w", path, err)
	}
	return sec, nil
}

// writeClusterStatus prints the instances and the tasks as two tables.
func writeClusterStatus(out io.Writer, tasks []cluster.TaskStatus) {
	w := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "INSTANCE\tHOST\tTASKS")
	for _, in := range cluster.Instances(tasks) {
		member, host := in.Member, in.Host
		if member == "" {
			member, host = "(none)", "-"
		}
		fmt.Fprintf(w, "%s\t%s\t%s\n", member, host, strings.Join(in.Tasks, ","))
	}
	w.Flush()
	fmt.Fprintln(out)
	w = tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "TASK\tCHECKPOINT\tLAG\tINPUTS (topic:partition committed/end)\tINSTANCE")
	for _, t := range tasks {
		owner := t.Member
		if owner == "" {
			owner = "(none)"
		}
		lag := "-"
		if t.Lag >= 0 {
			lag = strconv.FormatInt(t.Lag, 10)
		}
		var ins []string
		for _, in := range t.Inputs {
			ins = append(ins, fmt.Sprintf("%s:%d %d/%d", in.Topic, in.Partition, in.Committed, in.End))
		}
		if len(ins) == 0 {
			ins = []string{"-"}
		}
		fmt.Fprintf(w, "%s\t%d\t%s\t%s\t%s\n", t.Task, t.Checkpoint, lag, strings.Join(ins, " "), owner)
	}
	w.Flush()
}
