package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/weirstream/weir/internal/cluster"
)

const clusterUsage = `usage: weir cluster status --bootstrap BROKERS --job NAME

Lists the tasks of a job running on Kafka (weir.WithKafkaCluster): each
task's owner (consumer group member and host) and its last committed
checkpoint. BROKERS is a comma-separated list.
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
	w := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "TASK\tCHECKPOINT\tHOST\tMEMBER")
	for _, t := range tasks {
		owner, host := t.Member, t.Host
		if owner == "" {
			owner, host = "(none)", "-"
		}
		fmt.Fprintf(w, "%s\t%d\t%s\t%s\n", t.Task, t.Checkpoint, host, owner)
	}
	w.Flush()
	return 0
}
