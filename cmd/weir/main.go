// Command weir is Weir's command-line tool: `weir scenario` replays
// conformance scenario files against the engine's operators, `weir nexmark`
// runs Nexmark queries, `weir savepoint` takes a savepoint of a running
// job through its REST server or inspects one, `weir status` prints a
// job's status (telling a job stopped with a savepoint from a finished
// one), `weir doctor` diagnoses a running job, `weir record` captures
// an operator's inputs as a scenario file and `weir history` serves the
// archives of ended jobs.
package main

import (
	"fmt"
	"io"
	"os"

	"github.com/weirstream/weir/internal/conformance"
	"github.com/weirstream/weir/internal/scenario"
)

const usage = `usage: weir <command> [arguments]

commands:
  scenario [--check] FILE...   run scenario files (format: docs/scenario-format.md)
  nexmark [--query Q] ...      run a Nexmark query on the built-in generator (--help for flags)
  savepoint --address A [--dir D] [--stop] JOB
                               take a savepoint of a running job through its control endpoint
  savepoint inspect PATH       show what a savepoint or checkpoint holds
  status --address A JOB       print a job's status (RUNNING, FINISHED, STOPPED_WITH_SAVEPOINT PATH,
                               CANCELED, FAILED) from its REST server
  doctor --url URL             diagnose a running job from its REST API (--help for flags)
  record --url URL --vertex V --subtask N [--for D]
                               capture one operator's inputs as a scenario file
  history [--addr A] DIR       serve the archives of ended jobs (rest.WithArchiveDir), as Flink's HistoryServer
  cluster status --bootstrap B --job NAME
                               the tasks of a job on Kafka: owners, committed checkpoints
`

func main() { os.Exit(run(os.Args[1:], os.Stdout, os.Stderr)) }

func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return 2
	}
	switch args[0] {
	case "scenario":
		return scenario.Main(args[1:], conformance.Runner(), stdout, stderr)
	case "nexmark":
		return nexmarkMain(args[1:], os.Stdin, stdout, stderr)
	case "savepoint":
		return savepointMain(args[1:], stdout, stderr)
	case "status":
		return statusMain(args[1:], stdout, stderr)
	case "doctor":
		return doctorMain(args[1:], stdout, stderr)
	case "record":
		return recordMain(args[1:], stdout, stderr)
	case "cluster":
		return clusterMain(args[1:], stdout, stderr)
	case "history":
		return historyMain(args[1:], stdout, stderr)
	case "help", "-h", "--help":
		fmt.Fprint(stdout, usage)
		return 0
	default:
		fmt.Fprintf(stderr, "weir: unknown command %q\n%s", args[0], usage)
		return 2
	}
}
