package conformance

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/weirstream/weir/internal/scenario"
)

// TestWindowScenarios runs every window scenario of the shared conformance
// suite (skipped if the folder is missing) and of the repo.
func TestWindowScenarios(t *testing.T) {
	r := Runner()
	for _, dir := range []string{"../../../shared/conformance/window", "../../testdata/scenarios/window"} {
		files, err := filepath.Glob(filepath.Join(dir, "*.scn"))
		if err != nil {
			t.Fatal(err)
		}
		if len(files) == 0 {
			if strings.Contains(dir, "shared") {
				t.Logf("skipping %s: no scenario files", dir)
				continue
			}
			t.Fatalf("no scenario files in %s", dir)
		}
		for _, f := range files {
			t.Run(filepath.Base(f), func(t *testing.T) {
				data, err := os.ReadFile(f)
				if err != nil {
					t.Fatal(err)
				}
				sc, err := scenario.Parse(f, strings.NewReader(string(data)))
				if err != nil {
					t.Fatal(err)
				}
				if sc.Spec.Op != "window" {
					t.Fatalf("op %q in a window scenario", sc.Spec.Op)
				}
				res, err := r.Run(sc)
				if err != nil {
					t.Fatal(err)
				}
				if err := scenario.Check(sc, res); err != nil {
					t.Fatal(err)
				}
			})
		}
	}
}

// TestWindowParams checks the window op's parameter validation.
func TestWindowParams(t *testing.T) {
	bad := []string{
		"op window fn=sum",                          // no assigner
		"op window assigner=tumbling fn=sum",        // no size
		"op window assigner=tumbling size=0 fn=sum", // size 0
		"op window assigner=tumbling size=10 offset=10 fn=sum",
		"op window assigner=sliding size=10 fn=sum", // no slide
		"op window assigner=session gap=0 fn=sum",
		"op window assigner=session gap=3 size=4 fn=sum", // size does not apply
		"op window assigner=tumbling size=10 trigger=count fn=sum",
		"op window assigner=tumbling size=10 trigger=count n=0 fn=sum",
		"op window assigner=tumbling size=10 trigger=continuous interval=0 fn=sum",
		"op window assigner=tumbling size=10 lateness=-1 fn=sum",
		"op window assigner=tumbling size=10 fn=avg",
		"op window assigner=tumbling size=10 fn=sum bogus",
	}
	r := Runner()
	for _, line := range bad {
		sc, err := scenario.Parse("x.scn", strings.NewReader(line+"\n1 wm 1\n"))
		if err != nil {
			t.Fatalf("%s: %v", line, err)
		}
		if _, err := r.Run(sc); err == nil {
			t.Errorf("%s: accepted", line)
		}
	}
}
