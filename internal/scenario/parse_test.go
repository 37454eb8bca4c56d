package scenario

import (
	"bytes"
	"errors"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
)

func mustParse(t *testing.T, text string) *Scenario {
	t.Helper()
	s, err := Parse("test.scn", strings.NewReader(text))
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	return s
}

func TestParseGood(t *testing.T) {
	text := "# leading comment\n" +
		"\n" +
		"op  echo inputs=2   channels=3 lower=-1 reverse # trailing comment\n" +
		"1 rec k 1 v1   # comment after tokens\n" +
		">   out   k  01   v1  \n" +
		"2.2 rec key -8 val\n" +
		">side in2 key -8 val\n" +
		"# a comment between outputs\n" +
		"> wm 5\n" +
		"1.0 wm -9223372036854775808\n" +
		"2 idle\r\n" +
		"> status idle\r\n" +
		"1.1\tactive\n" +
		"proc 0\n" +
		"proc 10\n" +
		"end\n" +
		"> wm 9223372036854775807" // no final newline
	s := mustParse(t, text)
	if s.Name != "test.scn" {
		t.Errorf("Name = %q", s.Name)
	}
	wantSpec := Spec{
		Op:     "echo",
		Params: map[string]string{"inputs": "2", "channels": "3", "lower": "-1"},
		Flags:  map[string]bool{"reverse": true},
		Line:   3,
	}
	if !reflect.DeepEqual(s.Spec, wantSpec) {
		t.Errorf("Spec = %+v, want %+v", s.Spec, wantSpec)
	}
	want := []Step{
		{Line: 4, Text: "1 rec k 1 v1", Kind: Record, Input: 1, Channel: 0, Key: "k", Ts: 1, Value: "v1", Expected: []string{"out k 1 v1"}},
		{Line: 6, Text: "2.2 rec key -8 val", Kind: Record, Input: 2, Channel: 2, Key: "key", Ts: -8, Value: "val", Expected: []string{"side in2 key -8 val", "wm 5"}},
		{Line: 10, Text: "1.0 wm -9223372036854775808", Kind: Watermark, Input: 1, Channel: 0, Ts: math.MinInt64},
		{Line: 11, Text: "2 idle", Kind: Idle, Input: 2, Channel: 0, Expected: []string{"status idle"}},
		{Line: 13, Text: "1.1 active", Kind: Active, Input: 1, Channel: 1},
		{Line: 14, Text: "proc 0", Kind: Proc, Ts: 0},
		{Line: 15, Text: "proc 10", Kind: Proc, Ts: 10},
		{Line: 16, Text: "end", Kind: End, Expected: []string{"wm 9223372036854775807"}},
	}
	if !reflect.DeepEqual(s.Steps, want) {
		t.Errorf("Steps mismatch\n got %+v\nwant %+v", s.Steps, want)
	}
}

func TestParseOpOnly(t *testing.T) {
	s := mustParse(t, "op echo\n# nothing else\n")
	if s.Spec.Op != "echo" || len(s.Steps) != 0 || s.Spec.Line != 1 {
		t.Errorf("got %+v", s)
	}
}

func TestParseErrors(t *testing.T) {
	cases := []struct {
		name, text string
		line       int
		msg        string
	}{
		{"empty", "", 1, "before the op line"},
		{"only comments", "# a\n\n# b\n", 4, "before the op line"},
		{"input first", "1 rec k 1 v\n", 1, "first line must be `op"},
		{"op without name", "op\n", 1, "without an operator name"},
		{"op param first", "op a=1\n", 1, "operator name expected"},
		{"dup param", "op w size=1 size=2\n", 1, "size given twice"},
		{"dup flag", "op w purging purging\n", 1, "purging given twice"},
		{"flag and param", "op w x x=1\n", 1, "x given twice"},
		{"empty value", "op w size=\n", 1, "empty value"},
		{"empty name", "op w =3\n", 1, "no name"},
		{"second op", "op w\n1 wm 1\nop w\n", 3, "second op line"},
		{"output before op", "# c\n> wm 1\nop w\n", 2, "before the op line"},
		{"output under op", "op w\n> wm 1\n", 2, "before the first input line"},
		{"output under op after comment", "op w\n# c\n\n> wm 1\n1 wm 1\n", 4, "before the first input line"},
		{"bad output kind", "op w\n1 wm 1\n> foo 1\n", 3, "unknown output \"foo\""},
		{"empty output", "op w\n1 wm 1\n>\n", 3, "empty output line"},
		{"output comment only", "op w\n1 wm 1\n>   # c\n", 3, "empty output line"},
		{"out too short", "op w\n1 wm 1\n> out k 1\n", 3, "out <key> <ts> <value>"},
		{"out too long", "op w\n1 wm 1\n> out k 1 v x\n", 3, "out <key> <ts> <value>"},
		{"out bad ts", "op w\n1 wm 1\n> out k x v\n", 3, "not an integer"},
		{"side short", "op w\n1 wm 1\n> side late k 1\n", 3, "side <tag>"},
		{"wm bad", "op w\n1 wm 1\n> wm\n", 3, "wm <ts>"},
		{"status bad", "op w\n1 wm 1\n> status sleepy\n", 3, "status idle"},
		{"unknown input", "op w\nfoo\n", 2, "unknown input line starting with \"foo\""},
		{"input 3", "op w\n3 wm 1\n", 2, "<in> 1 or 2"},
		{"input 0", "op w\n0 wm 1\n", 2, "<in> 1 or 2"},
		{"bad channel", "op w\n1.x wm 1\n", 2, "bad channel"},
		{"empty channel", "op w\n1. wm 1\n", 2, "bad channel"},
		{"negative channel", "op w\n1.-1 wm 1\n", 2, "bad channel"},
		{"huge channel", "op w\n1.99999999999 wm 1\n", 2, "too large"},
		{"no event", "op w\n1\n", 2, "without an event"},
		{"unknown event", "op w\n1 rc k 1 v\n", 2, "unknown event \"rc\""},
		{"rec short", "op w\n1 rec k 1\n", 2, "<in> rec <key> <ts> <value>"},
		{"rec long", "op w\n1 rec k 1 v w\n", 2, "<in> rec <key> <ts> <value>"},
		{"rec bad ts", "op w\n1 rec k 1.5 v\n", 2, "timestamp \"1.5\" is not an integer"},
		{"rec ts overflow", "op w\n1 rec k 9223372036854775808 v\n", 2, "out of the int64 range"},
		{"wm missing ts", "op w\n1 wm\n", 2, "<in> wm <ts>"},
		{"wm bad ts", "op w\n1 wm x\n", 2, "watermark \"x\""},
		{"idle extra", "op w\n1 idle now\n", 2, "<in> idle"},
		{"active extra", "op w\n1 active 3\n", 2, "<in> active"},
		{"proc missing", "op w\nproc\n", 2, "proc <t>"},
		{"proc bad", "op w\nproc soon\n", 2, "processing time \"soon\""},
		{"proc negative", "op w\nproc -1\n", 2, "before the start of the clock"},
		{"proc back", "op w\nproc 5\n1 wm 1\nproc 4\n", 4, "goes back from 5 (line 2) to 4"},
		{"end extra", "op w\nend now\n", 2, "want `end`"},
		{"after end", "op w\nend\n> wm 1\n1 wm 1\n", 4, "after `end` (line 2)"},
		{"invalid utf8", "op w\n1 rec k 1 \xff\n", 2, "UTF-8"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s, err := Parse("x.scn", strings.NewReader(c.text))
			if err == nil {
				t.Fatalf("Parse succeeded: %+v", s)
			}
			var le *Error
			if !errors.As(err, &le) {
				t.Fatalf("error %v (%T) is not an *Error", err, err)
			}
			if le.Line != c.line {
				t.Errorf("line = %d, want %d (%v)", le.Line, c.line, err)
			}
			wantPrefix := "line " + strconv.Itoa(c.line) + ": "
			if !strings.HasPrefix(err.Error(), wantPrefix) {
				t.Errorf("error %q does not start with %q", err, wantPrefix)
			}
			if !strings.Contains(err.Error(), c.msg) {
				t.Errorf("error %q does not contain %q", err, c.msg)
			}
		})
	}
}

func TestParseOutput(t *testing.T) {
	good := map[string]string{
		"out k 9 v":              "out k 9 v",
		"  out\tk   09  v ":      "out k 9 v",
		"out k -0 v":             "out k 0 v",
		"out k +7 (a,b)":         "out k 7 (a,b)",
		"side late k -3 x":       "side late k -3 x",
		"wm 9223372036854775807": "wm 9223372036854775807",
		"status idle":            "status idle",
		"status active":          "status active",
	}
	for in, want := range good {
		got, err := ParseOutput(in)
		if err != nil || got != want {
			t.Errorf("ParseOutput(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, in := range []string{"", "out k", "out k x v", "wm", "wm 1 2", "status", "status on", "side t k 1", "nope 1", "out k 1 v#x", "out k 1 v\nwm 2"} {
		if got, err := ParseOutput(in); err == nil {
			t.Errorf("ParseOutput(%q) = %q, want an error", in, got)
		}
	}
}

// conformanceDir is the shared conformance folder, relative to this package.
const conformanceDir = "../../../shared/conformance"

func conformanceFiles(t *testing.T) []string {
	t.Helper()
	if _, err := os.Stat(conformanceDir); err != nil {
		t.Skipf("no conformance folder at %s: %v", conformanceDir, err)
	}
	files, err := filepath.Glob(filepath.Join(conformanceDir, "*", "*.scn"))
	if err != nil {
		t.Fatal(err)
	}
	top, err := filepath.Glob(filepath.Join(conformanceDir, "*.scn"))
	if err != nil {
		t.Fatal(err)
	}
	files = append(files, top...)
	if len(files) == 0 {
		t.Fatalf("no .scn files under %s", conformanceDir)
	}
	return files
}

// TestConformanceFilesParse parses every shared scenario and prints it back
// with its own expected outputs: the printout must be the file itself (the
// files are written in canonical form) and must parse to the same steps.
func TestConformanceFilesParse(t *testing.T) {
	for _, path := range conformanceFiles(t) {
		t.Run(filepath.ToSlash(path[len(conformanceDir)+1:]), func(t *testing.T) {
			data, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			s, err := Parse(path, bytes.NewReader(data))
			if err != nil {
				t.Fatalf("%s: %v", path, err)
			}
			if s.Spec.Op == "" || len(s.Steps) == 0 {
				t.Fatalf("%s: no op or no steps: %+v", path, s)
			}
			var buf bytes.Buffer
			if err := Print(&buf, s, nil); err != nil {
				t.Fatal(err)
			}
			if got, want := normalise(buf.String()), normalise(string(data)); got != want {
				t.Errorf("printout differs from the file\n got:\n%s\nwant:\n%s", got, want)
			}
			s2, err := Parse(path, &buf)
			if err != nil {
				t.Fatalf("printout does not parse: %v", err)
			}
			if !reflect.DeepEqual(s.Steps, s2.Steps) || !reflect.DeepEqual(s.Spec, s2.Spec) {
				t.Errorf("printout parses differently")
			}
		})
	}
}

// normalise drops trailing whitespace of each line and the final newline.
func normalise(text string) string {
	lines := strings.Split(strings.TrimRight(text, "\n"), "\n")
	for i, l := range lines {
		lines[i] = strings.TrimRight(l, " \t\r")
	}
	return strings.Join(lines, "\n")
}
