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
