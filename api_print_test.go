package weir_test

import (
	"bytes"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/weirstream/weir"
)

type point struct {
	X, Y int
}

func printLines(t *testing.T, envP int, sinkP int, values []point) []string {
	t.Helper()
	var buf bytes.Buffer
	env := weir.NewEnvironment(weir.WithParallelism(envP), weir.WithStdout(&buf))
	s := weir.Print(weir.FromSlice(env, values))
	if sinkP > 0 {
		s.SetParallelism(sinkP)
	}
	mustRun(t, env)
	out := buf.String()
	if !strings.HasSuffix(out, "\n") {
		t.Fatalf("output %q does not end with a newline", out)
	}
	return strings.Split(strings.TrimSuffix(out, "\n"), "\n")
}

func TestPrintPrefixWithParallelism(t *testing.T) {
	var values []point
	for i := range 20 {
		values = append(values, point{i, -i})
	}
	lines := printLines(t, 2, 0, values)
	if len(lines) != 20 {
		t.Fatalf("%d lines: %q", len(lines), lines)
	}
	prefixes := map[string]int{}
	var rest []string
	for _, l := range lines {
		p, v, ok := strings.Cut(l, "> ")
		if !ok || (p != "1" && p != "2") {
			t.Fatalf("line %q has no subtask prefix 1> or 2>", l)
		}
		prefixes[p]++
		rest = append(rest, v)
	}
	// The source has parallelism 1: records are rebalanced over both sinks.
	if prefixes["1"] != 10 || prefixes["2"] != 10 {
		t.Fatalf("prefix counts %v, want 10 each", prefixes)
	}
	var want []string
	for _, v := range values {
		want = append(want, fmt.Sprint(v))
	}
	if !slices.Equal(sorted(rest), sorted(want)) {
		t.Fatalf("printed %q, want %q", rest, want)
	}
}

func TestPrintNoPrefixWithParallelismOne(t *testing.T) {
	values := []point{{1, 2}, {3, 4}, {5, 6}}
	want := []string{"{1 2}", "{3 4}", "{5 6}"}
	if lines := printLines(t, 1, 0, values); !slices.Equal(lines, want) {
		t.Fatalf("parallelism 1: %q, want %q", lines, want)
	}
	// A sink set to parallelism 1 in a parallel job has no prefix either.
	if lines := printLines(t, 3, 1, values); !slices.Equal(lines, want) {
		t.Fatalf("sink parallelism 1: %q, want %q", lines, want)
	}
}
