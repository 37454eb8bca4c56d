package main

import (
	"cmp"
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
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/internal/checkpoint/store"
	"github.com/weirstream/weir/internal/control"
	"github.com/weirstream/weir/internal/hooks"
	"github.com/weirstream/weir/savepoint"
	"github.com/weirstream/weir/storage/s3"
)

const savepointUsage = `usage: weir savepoint --address HOST:PORT [--dir LOCATION] [--stop] [--timeout D] JOB
       weir savepoint inspect [--json] [--s3-endpoint URL] [--s3-region R] LOCATION

The first form asks the control endpoint of a running job (started with
weir.WithPlugin(rest.New(ADDR))) for a
savepoint of JOB into LOCATION: a directory on the job's machine (a path,
relative to the current directory, or file:///dir) or s3://bucket/prefix,
which the job reaches as its weir.WithStorage(s3.New(...)) says (without --dir: the job's
weir.DefaultSavepointDir), and prints the savepoint's location. The
server takes only a LOCATION under the job's default savepoint directory
or a root it was started with (rest.AllowSavepointTargets); it refuses
others. --stop stops the job once the savepoint is stored (Flink's
stop-with-savepoint, without draining).

inspect prints what a savepoint or checkpoint holds: each operator UID with
its parallelism, max parallelism, key groups and sizes; then, for each
operator keeping keyed state as process functions do, its key type, its
event-time and processing-time timer counts, and each state's name, kind,
number of keys, TTL and schema (the fields and types it was written with,
which a restore resolves by field name); after verifying
every file's checksum (with the shared files an incremental checkpoint
references). LOCATION is a savepoint-<id> or chk-<id> directory, or a
directory holding savepoints (its newest one), as a path, file:///dir or
s3://bucket/prefix/...; for S3, --s3-endpoint (default $AWS_ENDPOINT_URL_S3,
$AWS_ENDPOINT_URL, else AWS) and --s3-region (default $AWS_REGION), with
credentials from the standard chain: $AWS_ACCESS_KEY_ID and
$AWS_SECRET_ACCESS_KEY (and $AWS_SESSION_TOKEN), the shared credentials file
(~/.aws/credentials, $AWS_PROFILE), web identity or the instance's role.
--json prints the manifest.

Exit status: 0 done, 1 the savepoint failed or a file is damaged, 2 bad
arguments, no such job, a LOCATION the server refuses, or no savepoint at
LOCATION.
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
	// job's to resolve (weir.WithStorage); no --dir asks for the job's default.
	if target != "" {
		loc, err := store.ParseLocation(target)
		if err == nil {
			loc, err = loc.Abs()
		}
		if err != nil {
			fmt.Fprintf(stderr, "weir savepoint: --dir: %v\n", err)
			return 2
		}
		target = loc.String()
	}
	path, err := control.TriggerSavepoint(ctx, http.DefaultClient, *addr, fs.Arg(0), target, *stop)
	if err != nil {
		fmt.Fprintf(stderr, "weir savepoint: %v\n", err)
		var se *control.StatusError
		if errors.As(err, &se) && (se.Code == http.StatusBadRequest || se.Code == http.StatusNotFound || se.Code == http.StatusForbidden) {
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
	endpoint := fs.String("s3-endpoint", "", "")
	region := fs.String("s3-region", "", "")
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
		printStates(ctx, stdout, path, *endpoint, *region)
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
		if err := s.VerifyShared(ctx, m, name); err != nil {
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
	fmt.Fprintln(tw, "UID\tNAME\tKIND\tPARALLELISM\tMAX PARALLELISM\tKEY GROUPS\tKEYED STATE\tOPERATOR STATE\tCHANNEL STATE")
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
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\t%s\t%s\t%s\t%s\n", op.UID, cmp.Or(op.Name, "-"), cmp.Or(op.Kind, "-"),
			op.Parallelism, maxP, groups, size(keyed), size(opState), size(chState))
	}
	tw.Flush()
}

// printStates lists the keyed states of each operator that keeps them in
// the format of process functions: name, kind, schema and the number of
// keys holding a value, with the operator's key type and timer counts.
// Windows and joins keep their own formats and are not listed.
func printStates(ctx context.Context, w io.Writer, path, endpoint, region string) {
	sp, err := savepoint.Read(ctx, path, savepoint.WithStorage(s3Storage(endpoint, region)))
	if err != nil {
		fmt.Fprintf(w, "\n(keyed states not listed: %v)\n", err)
		return
	}
	for _, op := range sp.Operators() {
		if op.KeyType == "" {
			continue
		}
		timers := "timers: unknown (the keys' encoding cannot be walked without the job's types)"
		if op.ProcessingTimers >= 0 {
			timers = fmt.Sprintf("%d event-time and %d processing-time timers", op.EventTimers, op.ProcessingTimers)
		}
		fmt.Fprintf(w, "\n%s: key %s, %s\n", op.UID, op.KeyType, timers)
		tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "  STATE\tKIND\tKEYS\tTTL\tSCHEMA")
		for _, st := range op.KeyedStates {
			ttl := "-"
			if st.TTL {
				ttl = "yes"
			}
			fmt.Fprintf(tw, "  %s\t%s\t%d\t%s\t%s\n", st.Name, st.Kind, st.Entries, ttl, strings.Join(st.Types, " -> "))
		}
		tw.Flush()
	}
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

// openInspected opens the savepoint or checkpoint at path: a local
// directory, or an s3:// location reached at endpoint (empty: as the
// environment says) with credentials from the standard chain.
func openInspected(ctx context.Context, path, endpoint, region string) (store.Store, *store.Manifest, error) {
	loc, err := store.ParseLocation(path)
	if err != nil {
		return nil, nil, err
	}
	r, err := hooks.Remotes([]weir.Storage{s3Storage(endpoint, region)}, "weir.WithStorage")
	if err != nil {
		return nil, nil, err
	}
	return store.OpenLocation(ctx, loc, r)
}

// s3Storage returns the storage of s3:// locations reached at endpoint
// in region (empty: as the environment says) with credentials from the
// standard chain.
func s3Storage(endpoint, region string) weir.Storage {
	return s3.New(s3.Options{Endpoint: endpoint, Region: region})
}
