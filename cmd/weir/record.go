package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"
)

const recordUsage = `usage: weir record --url http://HOST:PORT --vertex V [--subtask N] [--for D] [--limit L] [--job JOB] [--token T] > case.scn

Captures what one subtask of a running job's vertex is given (its
records, the watermarks and idle/active statuses of each input channel,
processing time) for --for (default 30s) or --limit input lines, and
prints it as a scenario file (docs/scenario-format.md) of the
watermarks operator: the engine's channel valves and two-input combiner,
with the outputs the live operator got from them under each line.

  weir scenario --check case.scn   replays it offline: ok if the engine gives the same outputs
  weir scenario case.scn           prints what the engine does with the inputs

V is the vertex's id or name (as /jobs/:jobid lists them); N defaults to 0.
The capture costs nothing when off; while on, the subtask formats every
record it reads. It is a write action: a server with a token needs --token.

Exit status: 0 done, 1 the capture failed, 2 bad arguments.
`

func recordMain(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("record", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	base := fs.String("url", "", "")
	vertex := fs.String("vertex", "", "")
	subtask := fs.Int("subtask", 0, "")
	d := fs.Duration("for", 30*time.Second, "")
	limit := fs.Int("limit", 0, "")
	job := fs.String("job", "", "")
	token := fs.String("token", "", "")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprint(stdout, recordUsage)
			return 0
		}
		fmt.Fprintf(stderr, "weir record: %v\n%s", err, recordUsage)
		return 2
	}
	problem := ""
	switch {
	case *base == "":
		problem = "--url is required"
	case *vertex == "":
		problem = "--vertex is required"
	case *d <= 0 || *d > time.Hour:
		problem = "--for must be in (0, 1h]"
	case *subtask < 0 || *limit < 0:
		problem = "--subtask and --limit must not be negative"
	case fs.NArg() > 0:
		problem = "unexpected arguments " + strings.Join(fs.Args(), " ")
	}
	if problem != "" {
		fmt.Fprintf(stderr, "weir record: %s\n%s", problem, recordUsage)
		return 2
	}
	ctx := context.Background()
	c, id, err := connectJob(ctx, *base, *token, *job)
	if err != nil {
		fmt.Fprintf(stderr, "weir record: %v\n", err)
		return 1
	}
	u := fmt.Sprintf("%s/weir/jobs/%s/vertices/%s/subtasks/%d/record?seconds=%g&limit=%d",
		strings.TrimRight(c.Base, "/"), id, url.PathEscape(*vertex), *subtask, d.Seconds(), *limit)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		fmt.Fprintf(stderr, "weir record: %v\n", err)
		return 2
	}
	if *token != "" {
		req.Header.Set("Authorization", "Bearer "+*token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		fmt.Fprintf(stderr, "weir record: %v\n", err)
		return 1
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<16))
		fmt.Fprintf(stderr, "weir record: %s: %s\n", resp.Status, strings.TrimSpace(string(msg)))
		return 1
	}
	if _, err := io.Copy(stdout, resp.Body); err != nil {
		fmt.Fprintf(stderr, "weir record: %v\n", err)
		return 1
	}
	return 0
}
