package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/signal"
	"strings"
	"time"
)

const statusUsage = `usage: weir status --address HOST:PORT [--timeout D] JOB

Prints the status of JOB (its name or id) as the job's REST server reports
it (GET /jobs/JOB): RUNNING, FINISHED (its input ended),
STOPPED_WITH_SAVEPOINT followed by the savepoint's path, CANCELED or
FAILED, the names of weir.JobStatus. Flink's state (FINISHED for a job
stopped with a savepoint too) follows in parentheses when it says more,
as "RUNNING (RESTARTING)". A job's REST server shows an ended job until
it is closed or its process exits (unless rest.StopWithLastJob), and
` + "`weir history`" + ` serves the jobs archived with rest.WithArchiveDir.

Exit status: 0 the status was printed, 1 the server could not be reached,
2 bad arguments or no such job.
`

func statusMain(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("status", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	addr := fs.String("address", "", "")
	timeout := fs.Duration("timeout", 10*time.Second, "")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprint(stdout, statusUsage)
			return 0
		}
		fmt.Fprintf(stderr, "weir status: %v\n%s", err, statusUsage)
		return 2
	}
	var problem string
	switch {
	case *addr == "":
		problem = "--address is required"
	case fs.NArg() != 1:
		problem = "give exactly one job name or id"
	case *timeout <= 0:
		problem = "--timeout must be positive"
	}
	if problem != "" {
		fmt.Fprintf(stderr, "weir status: %s\n%s", problem, statusUsage)
		return 2
	}
	ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt)
	defer cancel()
	ctx, c := context.WithTimeout(ctx, *timeout)
	defer c()
	base := *addr
	if !strings.Contains(base, "://") {
		base = "http://" + base
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimRight(base, "/")+"/jobs/"+url.PathEscape(fs.Arg(0)), nil)
	if err != nil {
		fmt.Fprintf(stderr, "weir status: %v\n", err)
		return 2
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		fmt.Fprintf(stderr, "weir status: %v\n", err)
		return 1
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
	if err != nil {
		fmt.Fprintf(stderr, "weir status: reading the answer: %v\n", err)
		return 1
	}
	if resp.StatusCode != http.StatusOK {
		fmt.Fprintf(stderr, "weir status: %s: %s\n", resp.Status, strings.TrimSpace(string(body)))
		if resp.StatusCode == http.StatusNotFound {
			return 2
		}
		return 1
	}
	var job struct {
		State     string `json:"state"`
		Status    string `json:"weir-status"`
		Savepoint string `json:"savepoint-path"`
	}
	if err := json.Unmarshal(body, &job); err != nil {
		fmt.Fprintf(stderr, "weir status: the answer is not a job's details: %v\n", err)
		return 1
	}
	status := job.Status
	if status == "" { // a Flink cluster, or a Weir before weir-status
		status = job.State
	}
	line := status
	if job.Savepoint != "" {
		line += " " + job.Savepoint
	}
	if job.State != "" && job.State != status && !(status == "STOPPED_WITH_SAVEPOINT" && job.State == "FINISHED") {
		line += " (" + job.State + ")"
	}
	fmt.Fprintln(stdout, line)
	return 0
}
