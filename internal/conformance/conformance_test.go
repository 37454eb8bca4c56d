package conformance

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/weirstream/weir/internal/scenario"
)

// TestScenarios runs every scenario file of the repo (testdata/scenarios)
// and of the shared conformance suite whose operator this build has.
func TestScenarios(t *testing.T) {
	r := Runner()
	var files []string
	for _, pattern := range []string{"../../testdata/scenarios/*/*.scn", "../../../shared/conformance/*/*.scn"} {
		m, err := filepath.Glob(pattern)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, m...)
	}
	if len(files) == 0 {
		t.Fatal("no scenario files found")
	}
	for _, f := range files {
		t.Run(strings.TrimPrefix(f, "../../"), func(t *testing.T) {
			data, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			sc, err := scenario.Parse(f, strings.NewReader(string(data)))
			if err != nil {
				t.Fatal(err)
			}
			if msg, ok := r.Unavailable[sc.Spec.Op]; ok {
				t.Skip(msg)
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

// TestDurationBeyondRange: a duration parameter a time.Duration cannot hold
// is refused by name, not wrapped into another window (Flink takes any long
// of milliseconds; Weir's durations stop at about 292 years).
func TestDurationBeyondRange(t *testing.T) {
	for _, src := range []string{
		"op window assigner=tumbling size=10000000000000 fn=count\n1 rec k 1 x\nend\n",
		"op window assigner=tumbling size=1000000000000000000 fn=count\n1 rec k 1 x\nend\n",
		"op window assigner=tumbling size=10 lateness=9223372036854775807 fn=count\nend\n",
		"op cogroup assigner=session gap=-9223372036854775 channels=1\nend\n",
		"op interval-join lower=-10000000000000 upper=5\nend\n",
	} {
		sc, err := scenario.Parse("t.scn", strings.NewReader(src))
		if err != nil {
			t.Fatal(err)
		}
		_, err = Runner().Run(sc)
		if err == nil || !strings.Contains(err.Error(), "beyond what Weir's durations") {
			t.Errorf("%q: got %v, want the range error", strings.SplitN(src, "\n", 2)[0], err)
		}
	}
	// The largest duration a time.Duration holds is taken.
	sc, err := scenario.Parse("t.scn", strings.NewReader("op window assigner=tumbling size=10 lateness=9223372036854 fn=count\nend\n"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Runner().Run(sc); err != nil {
		t.Fatal(err)
	}
}
