package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	irest "github.com/weirstream/weir/internal/rest"
)

const historyUsage = `usage: weir history [--addr HOST:PORT] [--token T] [--host NAME]... DIR

Serves the job archives in DIR, read-only, as Flink's HistoryServer: the
files a REST server started with rest.WithArchiveDir(DIR) writes when a
job ends, one per job. The same REST paths answer as on the job's own
server at its end (/jobs/overview lists every archived job, /jobs/JOB,
/jobs/JOB/exceptions, /jobs/JOB/checkpoints, ...; under /v1/ too), and
Weir's dashboard at / shows an archived job (#job=NAME-OR-ID picks one).
Archives written while it runs appear within a second. It runs until
interrupted (SIGINT or SIGTERM).

  --addr   the address to listen on (default 127.0.0.1:8082, Flink's
           HistoryServer port; port 0 picks a free one, printed)
  --token  a token every request but the dashboard's files and /healthz
           must carry (Authorization: Bearer T; the dashboard has a field
           for it): archives hold key values and exceptions' texts. An
           address that is not loopback needs one.
  --host   a name, besides IP addresses, loopback names and the machine's
           name, that requests may give in their Host header (a reverse
           proxy's); repeatable

Exit status: 0 interrupted, 1 the server could not start, 2 bad arguments.
`

// hostList is a repeatable flag.
type hostList []string

func (h *hostList) String() string     { return strings.Join(*h, ",") }
func (h *hostList) Set(v string) error { *h = append(*h, v); return nil }

func historyMain(args []string, stdout, stderr io.Writer) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return serveHistory(ctx, args, stdout, stderr)
}

// serveHistory runs `weir history` until ctx ends.
func serveHistory(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("history", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	addr := fs.String("addr", irest.DefaultHistoryAddr, "")
	token := fs.String("token", "", "")
	var hosts hostList
	fs.Var(&hosts, "host", "")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprint(stdout, historyUsage)
			return 0
		}
		fmt.Fprintf(stderr, "weir history: %v\n%s", err, historyUsage)
		return 2
	}
	if fs.NArg() != 1 {
		fmt.Fprintf(stderr, "weir history: give exactly one archive directory\n%s", historyUsage)
		return 2
	}
	log := slog.New(slog.NewTextHandler(stderr, nil))
	srv, err := irest.ListenHistory(*addr, fs.Arg(0), irest.Options{Token: *token, Hosts: hosts, Logger: log})
	if err != nil {
		fmt.Fprintf(stderr, "weir history: %v\n", err)
		return 1
	}
	fmt.Fprintf(stdout, "serving the job archives of %s at http://%s/\n", fs.Arg(0), srv.Addr())
	<-ctx.Done()
	if err := srv.Close(5 * time.Second); err != nil {
		fmt.Fprintf(stderr, "weir history: %v\n", err)
	}
	return 0
}
