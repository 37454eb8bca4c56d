package gen

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/weirstream/weir/internal/scenario"
)

// TestCorpusIsGenerated checks that every file of the generated corpus is
// what the generator makes from the seed its header names, plus the
// expected `> ` lines (Flink's), so the corpus can be regenerated.
func TestCorpusIsGenerated(t *testing.T) {
	files, err := filepath.Glob("../../../testdata/scenarios/generated/*.scn")
	if err != nil {
		t.Fatal(err)
	}
	if len(files) < 2000 {
		t.Fatalf("the generated corpus has %d files, want at least 2000", len(files))
	}
	for _, path := range files {
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		text := string(data)
		first, _, _ := strings.Cut(text, "\n")
		const prefix = "# generated: go run ./internal/tools/scengen -seed "
		if !strings.HasPrefix(first, prefix) {
			t.Errorf("%s: the first line is not the generator's header: %q", path, first)
			continue
		}
		seed, err := strconv.ParseUint(strings.TrimPrefix(first, prefix), 10, 64)
		if err != nil {
			t.Errorf("%s: %v", path, err)
			continue
		}
		f := Generate(seed)
		if got := filepath.Base(path); got != f.Name() {
			t.Errorf("%s: seed %d makes %s", path, seed, f.Name())
		}
		var inputs []string
		for _, l := range strings.SplitAfter(text, "\n") {
			if !strings.HasPrefix(l, ">") {
				inputs = append(inputs, l)
			}
		}
		if got := strings.Join(inputs, ""); got != f.Text {
			t.Errorf("%s: without its > lines the file is not what seed %d makes:\n%s\nwant:\n%s", path, seed, got, f.Text)
		}
	}
}

// TestGenerateParses checks that generated files parse, are deterministic
// and, over 2,000 seeds, use every operator shape and parameter of the
// format.
func TestGenerateParses(t *testing.T) {
	want := []string{
		"op watermarks inputs=1", "op watermarks inputs=2", "op interval-join", "op window ", "op window-join", "op cogroup",
		"lower-exclusive", "upper-exclusive",
		"assigner=tumbling", "assigner=sliding", "assigner=session", "assigner=global", "offset=-", "offset=",
		"time=event", "time=processing", "trigger=default", "trigger=count", "trigger=continuous", "purging", "lateness=",
		"fn=count", "fn=sum", "fn=min", "fn=max", "fn=list", "channels=1", "channels=2", "channels=3",
		" rec ", " wm ", " idle\n", " active\n", "\nproc ", "\nend\n", " 92233720368547", " -92233720368547", "=9223372036854 ", "=-9223372036854 ",
	}
	seen := map[string]int{}
	for seed := uint64(1); seed <= 2000; seed++ {
		f := Generate(seed)
		if again := Generate(seed); again != f {
			t.Fatalf("seed %d: two different files", seed)
		}
		sc, err := scenario.Parse(f.Name(), strings.NewReader(f.Text))
		if err != nil {
			t.Fatalf("seed %d: %v\n%s", seed, err, f.Text)
		}
		if len(sc.Steps) < 6 {
			t.Errorf("seed %d: %d input lines", seed, len(sc.Steps))
		}
		for _, w := range want {
			if strings.Contains(f.Text, w) {
				seen[w]++
			}
		}
	}
	for _, w := range want {
		if seen[w] == 0 {
			t.Errorf("no file of the first 2000 seeds has %q", w)
		}
	}
}
