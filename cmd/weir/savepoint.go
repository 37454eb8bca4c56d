package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/weirstream/weir/internal/checkpoint/store"
	"github.com/weirstream/weir/internal/control"
)

const savepointUsage = `usage: weir savepoint --address HOST:PORT [--dir DIR] [--stop] [--timeout D] JOB
       weir savepoint inspect [--json] [--s3-endpoint URL] [--s3-region R] PATH

The first form asks the control endpoint of a running job (started with
weir.WithControlAddress) for a savepoint of JOB into DIR, a directory on the
job's machine (a relative DIR is taken from the current directory) or an
s3://bucket/prefix path if the job was given weir.WithS3 (without --dir,
the job's weir.DefaultSavepointDir), and prints the savepoint's path. --stop stops the job once
the savepoint is stored (Flink's stop-with-savepoint, without draining).

inspect prints what a savepoint or checkpoint holds: each operator UID with
its parallelism, max parallelism, key groups and sizes, after verifying
every file's checksum (with the shared files an incremental checkpoint
references). PATH may be s3://bucket/prefix/...: --s3-endpoint (default
$AWS_ENDPOINT_URL), --s3-region (default $AWS_REGION) and the credentials
in $AWS_ACCESS_KEY_ID, $AWS_SECRET_ACCESS_KEY, $AWS_SESSION_TOKEN. PATH is a savepoint-<id> or chk-<id> directory, or a
directory holding savepoints (its newest one). --json prints the manifest.

Exit status: 0 done, 1 the savepoint failed or a file is damaged, 2 bad
arguments, no such job, or no savepoint at PATH.
`

func savepointMain(args []string, stdout, stderr io.Writer) int {
	if len(args) > 0 && args[0] == "inspect" {
		return inspectMain(args[1:], stdout, stderr)
	}
	fs := flag.NewFlagSet("savepoint", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	addr := fs.String("address", "", "")
	dir := fs.String("dir", "", "")
	stop := fs.Bool("stop", false, "")
	timeout := fs.Duration("timeout", 0, "")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprint(stdout, savepointUsage)
			return 0
		}
		fmt.Fprintf(stderr, "weir savepoint: %v\n%s", err, savepointUsage)
		return 2
	}
	var problem string
	switch {
	case *addr == "":
		problem = "--address is required"
	case fs.NArg() != 1:
		problem = "give exactly one job name"
	case *timeout < 0:
		problem = "--timeout must not be negative"
	}
	if problem != "" {
		fmt.Fprintf(stderr, "weir savepoint: %s\n%s", problem, savepointUsage)
		return 2
	}
	ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt)
	defer cancel()
	if *timeout > 0 {
		var c context.CancelFunc
		ctx, c = context.WithTimeout(ctx, *timeout)
		defer c()
	}
	target := *dir
	// A relative directory is made absolute (the job's process may have
	// another working directory); an s3://bucket/prefix target is the
	// job's to resolve (weir.WithS3); no --dir asks for the job's default.
	if target != "" && !strings.Contains(target, "://") {
		if abs, err := filepath.Abs(target); err == nil {
			target = abs
		}
	}
	path, err := control.TriggerSavepoint(ctx, http.DefaultClient, *addr, fs.Arg(0), target, *stop)
	if err != nil {
		fmt.Fprintf(stderr, "weir savepoint: %v\n", err)
		var se *control.StatusError
		if errors.As(err, &se) && (se.Code == http.StatusBadRequest || se.Code == http.StatusNotFound) {
			return 2
		}
		return 1
	}
	fmt.Fprintln(stdout, path)
	return 0
}

func inspectMain(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("savepoint inspect", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	asJSON := fs.Bool("json", false, "")
	endpoint := fs.String("s3-endpoint", firstEnv("AWS_ENDPOINT_URL_S3", "AWS_ENDPOINT_URL"), "")
	region := fs.String("s3-region", firstEnv("AWS_REGION", "AWS_DEFAULT_REGION"), "")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprint(stdout, savepointUsage)
			return 0
		}
		fmt.Fprintf(stderr, "weir savepoint inspect: %v\n%s", err, savepointUsage)
		return 2
	}
	if fs.NArg() != 1 {
		fmt.Fprintf(stderr, "weir savepoint inspect: give exactly one path\n%s", savepointUsage)
		return 2
	}
	ctx := context.Background()
	path := fs.Arg(0)
	s, m, err := openInspected(ctx, path, *endpoint, *region)
	if err != nil {
		fmt.Fprintf(stderr, "weir savepoint inspect: %v\n", err)
		if errors.Is(err, store.ErrCorrupt) {
			return 1
		}
		return 2
	}
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(m); err != nil {
			fmt.Fprintf(stderr, "weir savepoint inspect: %v\n", err)
			return 1
		}
	} else {
		printManifest(stdout, m)
	}
	// Verify every file.
	damaged := 0
	for _, name := range slices.Sorted(maps.Keys(m.Files)) {
		if _, err := s.ReadFile(ctx, m, name); err != nil {
			fmt.Fprintf(stderr, "DAMAGED %s: %v\n", name, err)
			damaged++
		}
	}
	// The shared files an incremental checkpoint references.
	for _, name := range slices.Sorted(maps.Keys(m.Shared)) {
		if _, err := s.ReadShared(ctx, m, name); err != nil {
			fmt.Fprintf(stderr, "DAMAGED shared/%s: %v\n", name, err)
			damaged++
		}
	}
	if damaged > 0 {
		fmt.Fprintf(stderr, "weir savepoint inspect: %d of %d files damaged; this %s cannot be restored\n", damaged, len(m.Files)+len(m.Shared), m.Kind)
		return 1
	}
	return 0
}

func printManifest(w io.Writer, m *store.Manifest) {
	var total int64
	for _, f := range m.Files {
		total += f.Size
	}
	fmt.Fprintf(w, "%s %d", m.Kind, m.ID)
	if m.JobID != "" {
		fmt.Fprintf(w, " of job %q", m.JobID)
	}
	fmt.Fprintf(w, ", taken %s\n", m.CreatedAt.UTC().Format(time.RFC3339))
	fmt.Fprintf(w, "%d operators, %d files, %s\n", len(m.Operators), len(m.Files), size(total))
	if len(m.Shared) > 0 {
		var shared, uploaded int64
		for _, f := range m.Shared {
			shared += f.Size
			if f.Checkpoint == m.ID {
				uploaded += f.Size
			}
		}
		fmt.Fprintf(w, "incremental: %d shared files, %s (%s uploaded by this checkpoint)\n", len(m.Shared), size(shared), size(uploaded))
	}
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "UID\tPARALLELISM\tMAX PARALLELISM\tKEY GROUPS\tKEYED STATE\tOPERATOR STATE\tCHANNEL STATE")
	for _, op := range m.Operators {
		var keyed, opState, chState int64
		kgs, lo, hi := 0, -1, -1
		for _, st := range op.Subtasks {
			opState += m.Files[st.OperatorState].Size
			chState += m.Files[st.ChannelState].Size
			if db := st.DB; db != nil {
				// Keyed state as database files (incremental checkpoints).
				for _, f := range db.Files {
					keyed += m.Files[f.File].Size + m.Shared[f.Shared].Size
				}
			}
			for _, sl := range st.KeyedState {
				keyed += sl.Length
				kgs++
				if lo < 0 || sl.KeyGroup < lo {
					lo = sl.KeyGroup
				}
				hi = max(hi, sl.KeyGroup)
			}
		}
		maxP, groups := "-", "-"
		if op.MaxParallelism > 0 {
			maxP = strconv.Itoa(op.MaxParallelism)
		}
		if kgs > 0 {
			groups = fmt.Sprintf("%d in [%d, %d]", kgs, lo, hi)
		}
		fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%s\t%s\t%s\n", op.UID, op.Parallelism, maxP, groups, size(keyed), size(opState), size(chState))
	}
	tw.Flush()
}

func size(n int64) string {
	switch {
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d B", n)
}

// firstEnv returns the first of the environment variables that is set.
func firstEnv(names ...string) string {
	for _, n := range names {
		if v := os.Getenv(n); v != "" {
			return v
		}
	}
	return ""
}

// openInspected opens the savepoint or checkpoint at path: a local
// directory, or an s3://bucket/prefix path read from endpoint with the
// credentials of the AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY and
// AWS_SESSION_TOKEN environment variables.
func openInspected(ctx context.Context, path, endpoint, region string) (store.Store, *store.Manifest, error) {
	p, err := store.ParseS3Path(path)
	if err != nil {
		return nil, nil, err
	}
	if p == nil {
		return store.OpenPath(ctx, path)
	}
	creds := store.Credentials{AccessKeyID: os.Getenv("AWS_ACCESS_KEY_ID"), SecretAccessKey: os.Getenv("AWS_SECRET_ACCESS_KEY"),
		SessionToken: os.Getenv("AWS_SESSION_TOKEN")}
	switch {
	case endpoint == "":
		return nil, nil, fmt.Errorf("%s is in S3: give --s3-endpoint (or set AWS_ENDPOINT_URL)", path)
	case creds.AccessKeyID == "" || creds.SecretAccessKey == "":
		return nil, nil, fmt.Errorf("%s is in S3: set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY", path)
	}
	var opts []store.Option
	if region != "" {
		opts = append(opts, store.WithRegion(region))
	}
	parent, base := p.Split()
	return store.OpenFrom(ctx, path, p.Key, parent, base, func(root string) (store.Store, error) {
		return store.NewS3(endpoint, p.Bucket, root, creds, http.DefaultClient, opts...)
	})
}
