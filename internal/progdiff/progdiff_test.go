package progdiff

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"
)

// programs is how many programs TestProgramsAgainstFlink compares:
// WEIR_PROGRAMS, else 100. WEIR_PROGRAMS_SEED shifts the seeds (default 1:
// seeds 1..N).
func programs(t *testing.T) (n int, first uint64) {
	n, first = 100, 1
	if s := os.Getenv("WEIR_PROGRAMS"); s != "" {
		v, err := strconv.Atoi(s)
		if err != nil || v < 1 {
			t.Fatalf("WEIR_PROGRAMS=%q: want a positive number", s)
		}
		n = v
	}
	if s := os.Getenv("WEIR_PROGRAMS_SEED"); s != "" {
		v, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			t.Fatalf("WEIR_PROGRAMS_SEED=%q: %v", s, err)
		}
		first = v
	}
	return n, first
}

func repoRoot(t *testing.T) string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..")
}

// TestProgramsAgainstFlink generates programs, runs each on Weir and on
// Flink (scripts/flink-programs.sh) and fails on any difference of a
// sink's lines as a multiset, printing the program.
func TestProgramsAgainstFlink(t *testing.T) {
	for _, tool := range []string{"java", "mvn"} {
		if _, err := exec.LookPath(tool); err != nil {
			if os.Getenv("WEIR_REQUIRE_SERVICES") == "1" {
				t.Fatalf("%s not found and WEIR_REQUIRE_SERVICES=1: the Flink side cannot run", tool)
			}
			t.Skipf("%s not found: skipping the Flink comparison (WEIR_REQUIRE_SERVICES=1 makes this fail)", tool)
		}
	}
	n, first := programs(t)
	root := repoRoot(t)
	script := filepath.Join(root, "scripts", "flink-programs.sh")
	start := time.Now()
	if out, err := exec.Command(script, "--build").CombinedOutput(); err != nil {
		t.Fatalf("building the Flink module: %v\n%s", err, out)
	}
	dir := t.TempDir()
	specDir, outDir := filepath.Join(dir, "specs"), filepath.Join(dir, "out")
	if err := os.MkdirAll(specDir, 0o755); err != nil {
		t.Fatal(err)
	}
	// One harness-mode program (harness.go) for every ten jobs.
	specs := make([]Spec, n+(n+9)/10)
	for i := range specs {
		if i < n {
			specs[i] = Generate(first + uint64(i))
		} else {
			specs[i] = GenerateHarness(first + uint64(i-n))
		}
		if err := os.WriteFile(filepath.Join(specDir, specs[i].Name+".json"), []byte(specs[i].JSON()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// Flink runs in the background while Weir runs the same programs.
	// The Flink side cancels a job after a minute; this bounds the whole
	// run so that a stuck JVM fails the test instead of stalling it.
	flinkCtx, cancelFlink := context.WithTimeout(context.Background(), 2*time.Minute+time.Duration(n)*2*time.Second)
	defer cancelFlink()
	cmd := exec.CommandContext(flinkCtx, script, specDir, outDir)
	cmd.WaitDelay = 10 * time.Second
	var flinkOut strings.Builder
	cmd.Stdout, cmd.Stderr = &flinkOut, &flinkOut
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	flinkDone := make(chan error, 1)
	go func() { flinkDone <- cmd.Wait() }()
	weirOut := make([]Output, len(specs))
	weirErr := make([]error, len(specs))
	for i, s := range specs {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		weirOut[i], weirErr[i] = Run(ctx, s)
		cancel()
	}
	weirTime := time.Since(start)
	if err := <-flinkDone; err != nil {
		t.Fatalf("the Flink side failed: %v\n%s", err, flinkOut.String())
	}
	t.Logf("%d programs and %d harness programs (seeds %d..%d): Weir done after %v, Flink after %v", n, len(specs)-n, first, first+uint64(n)-1,
		weirTime.Round(time.Millisecond), time.Since(start).Round(time.Millisecond))
	differ, lines, sinks, ordered := 0, 0, 0, 0
	for i, s := range specs {
		flink, ferr := readFlink(outDir, s.Name)
		var d string
		switch {
		case weirErr[i] != nil || ferr != nil:
			// The generator makes valid programs: an error on either side
			// is a difference too.
			d = fmt.Sprintf("weir error: %v\nflink error: %v", weirErr[i], ferr)
		default:
			d = s.Compare(weirOut[i], flink)
			for _, l := range flink {
				lines += len(l)
			}
			all, ord := countSinks(s)
			sinks += all
			ordered += ord
		}
		if d != "" {
			differ++
			if differ <= 5 {
				t.Errorf("%s differs:\n%s\nprogram:\n%s", s.Name, d, s.JSON())
			}
		}
	}
	t.Logf("compared %d sinks (%d of them in order), %d output lines on Flink", sinks, ordered, lines)
	if differ > 0 {
		t.Errorf("%d of %d programs differ", differ, len(specs))
	}
}

func countSinks(s Spec) (all, ordered int) {
	for _, x := range s.Nodes {
		if x.Op == "sink" {
			all++
			if x.Ordered {
				ordered++
			}
		}
	}
	return all, ordered
}

// readFlink reads the Flink side's output of one program.
func readFlink(dir, name string) (Output, error) {
	if b, err := os.ReadFile(filepath.Join(dir, name+".err")); err == nil {
		return nil, fmt.Errorf("%s", firstLines(string(b), 3))
	}
	return readLines(filepath.Join(dir, name+".out"))
}

// readLines reads sink lines ("sinkN key value ts") into an Output.
func readLines(file string) (Output, error) {
	f, err := os.Open(file)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	out := Output{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		l := sc.Text()
		sink, _, _ := strings.Cut(l, " ")
		id, err := strconv.Atoi(strings.TrimPrefix(sink, "sink"))
		if err != nil {
			return nil, fmt.Errorf("bad line %q", l)
		}
		out[id] = append(out[id], l)
	}
	return out, sc.Err()
}

func firstLines(s string, n int) string {
	l := strings.SplitN(s, "\n", n+1)
	if len(l) > n {
		l = l[:n]
	}
	return strings.Join(l, "\n")
}

// TestWeirRepeatable runs generated programs several times on Weir: the
// generator promises outputs that do not depend on scheduling, so the runs
// must agree (without Flink). It catches a block the generator uses where
// its output depends on how channels interleave.
func TestWeirRepeatable(t *testing.T) {
	for seed := uint64(1); seed <= 300; seed++ {
		s := Generate(seed)
		a, err := Run(context.Background(), s)
		if err != nil {
			t.Fatalf("%s: %v\n%s", s.Name, err, s.JSON())
		}
		for range 4 {
			b, err := Run(context.Background(), s)
			if err != nil {
				t.Fatalf("%s: %v", s.Name, err)
			}
			if d := s.Compare(a, b); d != "" {
				t.Fatalf("%s: two Weir runs differ:\n%s\n%s", s.Name, d, s.JSON())
			}
		}
	}
}

func TestGenerateIsDeterministic(t *testing.T) {
	for seed := uint64(1); seed <= 20; seed++ {
		if a, b := Generate(seed).JSON(), Generate(seed).JSON(); a != b {
			t.Fatalf("seed %d gives two programs", seed)
		}
	}
}

func TestCompare(t *testing.T) {
	s := Spec{Nodes: []Node{{Op: "sink", Sink: 0, Ordered: true}, {Op: "sink", Sink: 1}}}
	a := Output{0: {"sink0 a 1 2", "sink0 b 1 2"}, 1: {"sink1 a 1 2", "sink1 b 1 2"}}
	if d := s.Compare(a, Output{0: {"sink0 a 1 2", "sink0 b 1 2"}, 1: {"sink1 b 1 2", "sink1 a 1 2"}}); d != "" {
		t.Errorf("an unordered sink's order counted: %s", d)
	}
	if d := s.Compare(a, Output{0: {"sink0 b 1 2", "sink0 a 1 2"}, 1: a[1]}); d != "" {
		t.Errorf("an ordered sink's order across keys counted: %q", d)
	}
	a[0] = []string{"sink0 a 1 2", "sink0 a 2 2"}
	if d := s.Compare(a, Output{0: {"sink0 a 2 2", "sink0 a 1 2"}, 1: a[1]}); !strings.Contains(d, "sink0 (ordered) key a") {
		t.Errorf("an ordered sink's order per key not compared: %q", d)
	}
	if d := s.Compare(a, Output{0: a[0], 1: {"sink1 a 1 2", "sink1 a 1 2"}}); !strings.Contains(d, "weir only (x1): sink1 b 1 2") ||
		!strings.Contains(d, "flink only (x1): sink1 a 1 2") {
		t.Errorf("a multiset difference not described: %q", d)
	}
	if d := s.Compare(a, Output{0: a[0]}); !strings.Contains(d, "sink1: 2 lines on weir, 0 on flink") {
		t.Errorf("a missing sink not described: %q", d)
	}
}

func TestCompareHarness(t *testing.T) {
	s := GenerateHarness(1)
	a := Output{0: {"sink0 a|v=1 1 2", "sink0 b|v=- 1 2", "sink0 a|v=- 2 3"}}
	if d := s.Compare(a, Output{0: {"sink0 b|v=- 1 2", "sink0 a|v=1 1 2", "sink0 a|v=- 2 3"}}); d != "" {
		t.Errorf("a harness program's order across keys counted: %s", d)
	}
	if d := s.Compare(a, Output{0: {"sink0 a|v=- 2 3", "sink0 b|v=- 1 2", "sink0 a|v=1 1 2"}}); !strings.Contains(d, "sink0 (ordered) key a") {
		t.Errorf("a harness program's order per key not compared: %q", d)
	}
}

func TestHarnessRoundTrip(t *testing.T) {
	s := GenerateHarness(7)
	if s.Harness == nil || len(s.Harness.Steps) < 5 || s.Harness.Steps[0].Op != "time" {
		t.Fatalf("not a harness program: %s", s.JSON())
	}
	p, err := Parse([]byte(s.JSON()))
	if err != nil {
		t.Fatal(err)
	}
	if p.JSON() != s.JSON() {
		t.Fatalf("round trip changed the spec:\n%s\n%s", s.JSON(), p.JSON())
	}
}

func TestParseRoundTrip(t *testing.T) {
	s := Generate(3)
	p, err := Parse([]byte(s.JSON()))
	if err != nil {
		t.Fatal(err)
	}
	if p.JSON() != s.JSON() {
		t.Fatalf("round trip changed the spec:\n%s\n%s", s.JSON(), p.JSON())
	}
}

// TestProgramFile runs the spec in WEIR_PROGRAM_FILE on Weir and logs its
// sink lines, to look at one program (skipped without the variable).
func TestProgramFile(t *testing.T) {
	file := os.Getenv("WEIR_PROGRAM_FILE")
	if file == "" {
		t.Skip("WEIR_PROGRAM_FILE not set")
	}
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	s, err := Parse(b)
	if err != nil {
		t.Fatal(err)
	}
	out, err := Run(context.Background(), s)
	if err != nil {
		t.Fatal(err)
	}
	for sink := range len(out) + 10 {
		for _, l := range out[sink] {
			t.Log(l)
		}
	}
}

// TestRegressions runs the programs kept in testdata (NAME.json) on Weir
// and compares their sinks with Flink 2.2.1's output for them (NAME.flink,
// the NAME.out that scripts/flink-programs.sh wrote): programs that once showed a
// difference, or a case where Weir and Flink could easily part.
func TestRegressions(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "*.json"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no programs in testdata: %v", err)
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		s, err := Parse(b)
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		flink, err := readLines(strings.TrimSuffix(f, ".json") + ".flink")
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		weir, err := Run(context.Background(), s)
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		if d := s.Compare(weir, flink); d != "" {
			t.Errorf("%s differs from Flink:\n%s", f, d)
		}
	}
}
