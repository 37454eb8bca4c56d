package scenario

import (
	"fmt"
	"io"
	"os"
	"strings"
)

const usage = `usage: weir scenario [--check] FILE...

Runs each scenario file against the engine's own operator.
Without --check, prints each scenario back with the actual outputs under
each input line (the printout is itself a scenario file).
With --check, compares the actual outputs with the expected ones and prints
one line per file, "ok FILE" or "FAIL FILE: line N: ...", then
"N passed, M failed"; the exit status is 1 if any file failed.
`

// Main implements `weir scenario`. args are the arguments after the
// subcommand: the flag --check (also -check) and the scenario files, in any
// order; "--" ends the flags. It returns the exit status: 0 on success, 1 if
// a file failed (did not parse or run, or, with --check, did not match), 2
// for a usage error such as no files. -h or --help prints the usage and
// returns 0.
func Main(args []string, r *Runner, stdout, stderr io.Writer) int {
	check := false
	var files []string
	flags := true
	for _, a := range args {
		switch {
		case flags && a == "--":
			flags = false
		case flags && (a == "--check" || a == "-check"):
			check = true
		case flags && (a == "-h" || a == "-help" || a == "--help"):
			fmt.Fprint(stdout, usage)
			return 0
		case flags && len(a) > 1 && strings.HasPrefix(a, "-"):
			fmt.Fprintf(stderr, "weir scenario: unknown flag %s\n%s", a, usage)
			return 2
		default:
			files = append(files, a)
		}
	}
	if len(files) == 0 {
		fmt.Fprintf(stderr, "weir scenario: no scenario files given\n%s", usage)
		return 2
	}
	passed, failed := 0, 0
	for _, name := range files {
		s, res, err := runFile(r, name)
		if check {
			if err == nil {
				err = Check(s, res)
			}
			if err != nil {
				failed++
				fmt.Fprintf(stdout, "FAIL %s: %s\n", name, oneLine(err.Error()))
			} else {
				passed++
				fmt.Fprintf(stdout, "ok %s\n", name)
			}
			continue
		}
		if err != nil {
			failed++
			fmt.Fprintf(stderr, "%s: %s\n", name, oneLine(err.Error()))
			continue
		}
		if len(files) > 1 {
			if passed > 0 {
				fmt.Fprintln(stdout)
			}
			fmt.Fprintf(stdout, "# ==> %s <==\n", name)
		}
		if err := Print(stdout, s, res); err != nil {
			fmt.Fprintf(stderr, "weir scenario: writing %s: %v\n", name, err)
			return 1
		}
		passed++
	}
	if check {
		fmt.Fprintf(stdout, "%d passed, %d failed\n", passed, failed)
	}
	if failed > 0 {
		return 1
	}
	return 0
}

// runFile parses and runs one file.
func runFile(r *Runner, name string) (*Scenario, *Result, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	s, err := Parse(name, f)
	if err != nil {
		return nil, nil, err
	}
	res, err := r.Run(s)
	if err != nil {
		return nil, nil, err
	}
	return s, res, nil
}

// oneLine keeps a message on one line of the report.
func oneLine(msg string) string {
	return strings.Join(strings.Fields(strings.ReplaceAll(msg, "\n", " ")), " ")
}
