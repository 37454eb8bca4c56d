package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/weirstream/weir/internal/cluster"
)

const clusterUsage = `usage: weir cluster status --bootstrap BROKERS --job NAME [--json]

Lists the instances of a job running on Kafka (weir.WithCluster(kafkacluster.New(...)))
with the tasks each owns (consumer group member and host), then every
task with its last committed checkpoint and its lag: per input partition
(source topics and repartition topics), the records after the position
of that checkpoint (Kafka's consumer lag, against the last stable
offset). BROKERS is a comma-separated list. --json prints the tasks as
JSON.
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
	if err := fs.Parse(args[1:]); err != nil {
		return 2
	}
	if *bootstrap == "" || *job == "" {
		fmt.Fprint(stderr, clusterUsage)
		return 2
	}
	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()
	tasks, err := cluster.Status(ctx, strings.Split(*bootstrap, ","), *job)
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
