package conformance

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/weirstream/weir/internal/scenario"
)

// skipMarker in a scenario file leaves it out of TestScenariosAgainstFlink:
// a file that states one of Weir's documented differences from Flink.
const skipMarker = "# flink-oracle: skip"

// TestScenariosAgainstFlink runs every scenario file of testdata/scenarios
// through Apache Flink's own operators (bench/flink-oracle, through
// scripts/flink-oracle.sh) and fails where Flink's outputs differ from the
// `> ` lines the file lists, or where Flink fails on the file. It needs
// Java 17 and Maven, takes about a minute, and runs only when asked:
//
//	WEIR_FLINK_ORACLE=1 go test -run TestScenariosAgainstFlink ./internal/conformance/
func TestScenariosAgainstFlink(t *testing.T) {
	if os.Getenv("WEIR_FLINK_ORACLE") != "1" {
		t.Skip("set WEIR_FLINK_ORACLE=1 to check the scenario files against Flink (Java 17 and Maven)")
	}
	all, err := filepath.Glob("../../testdata/scenarios/*/*.scn")
	if err != nil {
		t.Fatal(err)
	}
	var files []string
	for _, f := range all {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Contains(data, []byte(skipMarker)) {
			files = append(files, f)
		}
	}
	if len(files) == 0 {
		t.Fatal("no scenario files found")
	}
	out := t.TempDir()
	cmd := exec.Command("../../scripts/flink-oracle.sh", append([]string{"-o", out}, files...)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("scripts/flink-oracle.sh: %v\n%s", err, stderr.String())
	}
	differ := 0
	for _, f := range files {
		name := strings.TrimPrefix(f, "../../")
		flinkFile := filepath.Join(out, filepath.Base(filepath.Dir(f)), filepath.Base(f))
		if err := agreesWithFlink(f, flinkFile); err != nil {
			differ++
			t.Errorf("%s: %v", name, err)
		}
	}
	t.Logf("%d scenario files checked against Flink, %d differ", len(files), differ)
}

// agreesWithFlink compares the expected outputs of the scenario file f with
// Flink's printout of it, line by input line, as multisets (the order
// scenario.Check allows).
func agreesWithFlink(f, flinkFile string) error {
	want, err := parseFile(f)
	if err != nil {
		return err
	}
	data, err := os.ReadFile(flinkFile)
	if err != nil {
		return err
	}
	for _, l := range strings.Split(string(data), "\n") {
		if strings.HasPrefix(l, "# error:") {
			return &flinkError{l}
		}
	}
	flink, err := scenario.Parse(flinkFile, bytes.NewReader(data))
	if err != nil {
		return err
	}
	res := &scenario.Result{Outputs: make([][]string, len(flink.Steps))}
	for i, st := range flink.Steps {
		res.Outputs[i] = st.Expected
	}
	err = scenario.Check(want, res)
	var m *scenario.Mismatch
	if errors.As(err, &m) {
		return fmt.Errorf("line %d (%s): the file lists [%s], Flink emits [%s]",
			m.Line, m.Input, strings.Join(m.Expected, "; "), strings.Join(m.Got, "; "))
	}
	return err
}

func parseFile(f string) (*scenario.Scenario, error) {
	data, err := os.ReadFile(f)
	if err != nil {
		return nil, err
	}
	return scenario.Parse(f, bytes.NewReader(data))
}

type flinkError struct{ line string }

func (e *flinkError) Error() string { return "Flink failed: " + e.line }
