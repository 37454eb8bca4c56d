package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/weirstream/weir/internal/doctor"
)

const doctorUsage = `usage: weir doctor --url http://HOST:PORT [--job JOB] [--samples N] [--every D] [--token T] [--json]

Reads a running job's REST API (a job started with weir.WithPlugin(rest.New(ADDR)))
over a short observation window, --samples snapshots --every apart
(default 10 snapshots, 1s apart), and prints findings, each with its
evidence, cause and fix: the five failures of the field guide to
two-stream jobs and the failures of operations:

  watermark-gap       a two-input operator's input watermarks far apart: names
                      the slow input, its source, split and subtask, silent or
                      behind (a note when the declared out-of-orderness bounds
                      or the watermark alignment account for the gap)
  alignment           checkpoints slow because of barrier alignment: the
                      operator, subtask and input whose barrier came last
  state-growth        state or timers rising while the watermark stands still,
                      keyed state without timers or TTL growing, or state bytes
                      rising within a steady set of keys
  hot-key             one subtask overloaded by skewed keys: the hot keys and
                      their share over the window
  inverted-bounds     an interval join whose mirrored bounds would match more
  checkpoint-failure  the latest checkpoints expire, are declined or are not
                      stored: which subtasks did not acknowledge and why
  crash-loop          restarts again and again: how many, and the last exception
  watermark-alignment (a note) watermark alignment holds a source back and an
                      operator's watermark waits for the group's slowest source

Notes tell what looks like a failure but is by design; they are printed
but do not count as findings for the exit status.

JOB is the job's id or name (default: the server's only job). --token is
sent as a bearer token: monitoring is open, but a server shows key values
(the hot keys) and exceptions' texts only with its token (rest.WithToken)
or when started with rest.WithOpenDetails; without, the findings stand
and the keys are reported as redacted.

Exit status: 0 no finding (notes only, or nothing), 3 findings printed, 1 the server could not be
read, 2 bad arguments.
`

func doctorMain(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("doctor", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	base := fs.String("url", "", "")
	job := fs.String("job", "", "")
	samples := fs.Int("samples", 10, "")
	every := fs.Duration("every", time.Second, "")
	token := fs.String("token", "", "")
	asJSON := fs.Bool("json", false, "")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprint(stdout, doctorUsage)
			return 0
		}
		fmt.Fprintf(stderr, "weir doctor: %v\n%s", err, doctorUsage)
		return 2
	}
	problem := ""
	switch {
	case *base == "":
		problem = "--url is required"
	case fs.NArg() > 0:
		problem = "unexpected arguments " + strings.Join(fs.Args(), " ")
	case *samples < 2:
		problem = "--samples must be at least 2"
	case *every <= 0:
		problem = "--every must be positive"
	}
	if problem != "" {
		fmt.Fprintf(stderr, "weir doctor: %s\n%s", problem, doctorUsage)
		return 2
	}
	ctx := context.Background()
	c, id, err := connectJob(ctx, *base, *token, *job)
	if err != nil {
		fmt.Fprintf(stderr, "weir doctor: %v\n", err)
		return 1
	}
	snaps, err := c.Observe(ctx, id, *samples, *every)
	if err != nil {
		fmt.Fprintf(stderr, "weir doctor: %v\n", err)
		return 1
	}
	findings := doctor.Analyze(snaps, doctor.Options{})
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if findings == nil {
			findings = []doctor.Finding{}
		}
		enc.Encode(findings)
	} else {
		doctor.Print(stdout, id, snaps, findings)
	}
	if doctor.Problems(findings) > 0 {
		return 3
	}
	return 0
}

// connectJob finds job on the REST server at base (a URL, or host:port
// for http), for weir doctor and weir record.
func connectJob(ctx context.Context, base, token, job string) (*doctor.Client, string, error) {
	if !strings.Contains(base, "://") {
		base = "http://" + base
	}
	c := &doctor.Client{Base: base, Token: token}
	id, err := c.Job(ctx, job)
	return c, id, err
}
