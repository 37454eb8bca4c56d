package scenario

import (
	"bytes"
	"errors"
	"reflect"
	"strings"
	"testing"
)

func run(t *testing.T, text string) (*Scenario, *Result) {
	t.Helper()
	s := mustParse(t, text)
	res, err := echoRunner().Run(s)
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	return s, res
}

func TestRunEcho(t *testing.T) {
	s, res := run(t, "op echo inputs=2 channels=2\n"+
		"1 rec k 1 a\n"+
		"2.1 rec j -5 b\n"+
		"1.1 wm 3\n"+
		"proc 7\n"+
		"2 idle\n"+
		"2 active\n"+
		"end\n")
	want := [][]string{
		{"out k 1 a"},
		{"side in2 j -5 b"},
		{"wm 3"},
		nil,
		{"status idle"},
		{"status active"},
		{"wm 9223372036854775807", "wm 9223372036854775807", "wm 9223372036854775807", "wm 9223372036854775807"},
	}
	if !reflect.DeepEqual(res.Outputs, want) {
		t.Errorf("Outputs = %q, want %q", res.Outputs, want)
	}
	// Nothing was expected, so the first step is the first mismatch.
	err := Check(s, res)
	var m *Mismatch
	if !errors.As(err, &m) || m.Line != 2 || m.Input != "1 rec k 1 a" {
		t.Fatalf("Check = %v", err)
	}
	if got, want := err.Error(), "line 2: expected [] got [out k 1 a]"; got != want {
		t.Errorf("message %q, want %q", got, want)
	}
}

const echoScenario = `# an echo scenario
op echo inputs=2 channels=2   # the op line

1 rec k 1 a   # first record
> out k 1 a
1.1 rec k 2 b
> out k 2 b
# the watermark
2.1 wm -4
> wm -4
proc 10
2 idle
> status idle
end
> wm 9223372036854775807
> wm 9223372036854775807
> wm 9223372036854775807
> wm 9223372036854775807
`

// TestPrintRoundTrip: when the actual outputs equal the expected ones, the
// printout is the file itself.
func TestPrintRoundTrip(t *testing.T) {
	s, res := run(t, echoScenario)
	if err := Check(s, res); err != nil {
		t.Fatalf("Check: %v", err)
	}
	var buf bytes.Buffer
	if err := Print(&buf, s, res); err != nil {
		t.Fatal(err)
	}
	if buf.String() != echoScenario {
		t.Errorf("printout differs\n got:\n%s\nwant:\n%s", buf.String(), echoScenario)
	}
}

// TestPrintNormalises: odd spacing in output lines and comments after them
// are normalised; everything else is kept as written.
func TestPrintNormalises(t *testing.T) {
	in := "op echo   # c\n" +
		"1  rec k 1 a\n" +
		">out   k 01 a   # dropped comment\n" +
		"# kept\n" +
		"1 wm 2\n" +
		">   wm 2\n"
	want := "op echo   # c\n" +
		"1  rec k 1 a\n" +
		"> out k 1 a\n" +
		"# kept\n" +
		"1 wm 2\n" +
		"> wm 2\n"
	s, res := run(t, in)
	if err := Check(s, res); err != nil {
		t.Fatalf("Check: %v", err)
	}
	var buf bytes.Buffer
	if err := Print(&buf, s, res); err != nil {
		t.Fatal(err)
	}
	if buf.String() != want {
		t.Errorf("printout\n%s\nwant\n%s", buf.String(), want)
	}
}

// TestPrintActual: the printout carries the actual outputs, not the
// expected ones, in the place of the old `> ` lines, and parses back.
func TestPrintActual(t *testing.T) {
	in := "op echo\n" +
		"1 rec k 1 a\n" +
		"# between\n" +
		"> wm 99\n" +
		"> wm 98\n" +
		"1 wm 5\n" +
		"# after wm\n" +
		"1 idle\n" +
		"> status active\n"
	want := "op echo\n" +
		"1 rec k 1 a\n" +
		"# between\n" +
		"> out k 1 a\n" +
		"1 wm 5\n" +
		"> wm 5\n" +
		"# after wm\n" +
		"1 idle\n" +
		"> status idle\n"
	s, res := run(t, in)
	if err := Check(s, res); err == nil {
		t.Fatal("Check passed, want a mismatch")
	} else if got := err.Error(); got != "line 2: expected [wm 99; wm 98] got [out k 1 a]" {
		t.Errorf("Check = %q", got)
	}
	var buf bytes.Buffer
	if err := Print(&buf, s, res); err != nil {
		t.Fatal(err)
	}
	if buf.String() != want {
		t.Errorf("printout\n%s\nwant\n%s", buf.String(), want)
	}
	s2 := mustParse(t, buf.String())
	if err := Check(s2, res); err != nil {
		t.Errorf("the printout does not check against the same result: %v", err)
	}
}

func TestCheckMultiset(t *testing.T) {
	s := mustParse(t, "op echo\n"+
		"1 wm 1\n"+ // line 2
		"> out a 1 x\n"+
		"> out b 1 y\n"+
		"> out a 1 x\n"+
		"1 wm 2\n"+ // line 6
		"> wm 2\n"+
		"1 wm 3\n") // line 8
	cases := []struct {
		name string
		out  [][]string
		err  string
	}{
		{"same order", [][]string{{"out a 1 x", "out b 1 y", "out a 1 x"}, {"wm 2"}, nil}, ""},
		{"reordered", [][]string{{"out b 1 y", "out a 1 x", "out a 1 x"}, {"wm 2"}, {}}, ""},
		{"missing duplicate", [][]string{{"out b 1 y", "out a 1 x", "out b 1 y"}, {"wm 2"}, nil},
			"line 2: expected [out a 1 x; out b 1 y; out a 1 x] got [out b 1 y; out a 1 x; out b 1 y]"},
		{"one too few", [][]string{{"out a 1 x", "out b 1 y"}, {"wm 2"}, nil},
			"line 2: expected [out a 1 x; out b 1 y; out a 1 x] got [out a 1 x; out b 1 y]"},
		{"one step late", [][]string{{"out a 1 x", "out b 1 y", "out a 1 x"}, nil, {"wm 2"}},
			"line 6: expected [wm 2] got []"},
		{"extra at end", [][]string{{"out a 1 x", "out b 1 y", "out a 1 x"}, {"wm 2"}, {"wm 3"}},
			"line 8: expected [] got [wm 3]"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := Check(s, &Result{Outputs: c.out})
			switch {
			case c.err == "" && err != nil:
				t.Errorf("Check = %v, want nil", err)
			case c.err != "" && (err == nil || err.Error() != c.err):
				t.Errorf("Check = %v, want %q", err, c.err)
			}
		})
	}
	if err := Check(s, &Result{Outputs: [][]string{nil}}); err == nil {
		t.Error("Check with a short result passed")
	}
	if err := Check(s, nil); err == nil {
		t.Error("Check with a nil result passed")
	}
}

// TestCheckReverseOrder: a driver that emits the outputs of one input line
// in another order still passes.
func TestCheckReverseOrder(t *testing.T) {
	s, res := run(t, "op echo channels=3 reverse\nend\n> wm 9223372036854775807\n> wm 9223372036854775807\n> wm 9223372036854775807\n")
	if err := Check(s, res); err != nil {
		t.Errorf("Check: %v", err)
	}
}

func TestRunErrors(t *testing.T) {
	cases := []struct {
		name, text string
		line       int
		msg        string
	}{
		{"unknown op", "op nope\n1 wm 1\n", 1, `unknown operator "nope" (known: echo, window (unavailable))`},
		{"unavailable op", "# c\nop window size=10\n", 2, "operator window is unavailable: the window operator is not available in this build yet"},
		{"factory error", "op echo inputs=3\n", 1, "op echo: inputs=3: want 1 or 2"},
		{"unknown param", "op echo size=3\n", 1, "op echo: unknown parameter size"},
		{"driver error", "op echo\n1 rec k 1 a\n2 rec k 2 b\n", 3, "2 rec k 2 b: no input 2 (inputs=1)"},
		{"bad channel", "op echo channels=2\n1.2 wm 1\n", 2, "no channel 2 (channels=2)"},
		{"driver failure", "op echo fail-at=5\n1 rec k 1 a\n\n1 rec k 5 a\n", 4, "echo failure"},
		{"driver panic", "op echo panic-at=5\n1 rec k 1 a\n1 rec k 5 a\n1 rec k 6 a\n", 3, "driver panicked: echo panic"},
		{"malformed output", "op echo garbage\n1 wm 1\n1 rec k 1 a\n", 3, `malformed output line: unknown output "bogus"`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := mustParse(t, c.text)
			res, err := echoRunner().Run(s)
			if err == nil {
				t.Fatalf("Run succeeded: %v", res.Outputs)
			}
			var le *Error
			if !errors.As(err, &le) || le.Line != c.line {
				t.Errorf("error %v: want an *Error on line %d", err, c.line)
			}
			if !strings.Contains(err.Error(), c.msg) {
				t.Errorf("error %q does not contain %q", err, c.msg)
			}
		})
	}
}

func TestRunFactoryPanicsAndNil(t *testing.T) {
	r := &Runner{Ops: map[string]Factory{
		"boom": func(Spec) (Driver, error) { panic("no way") },
		"nil":  func(Spec) (Driver, error) { return nil, nil },
		"early": func(Spec) (Driver, error) {
			d := &echoDriver{inputs: 1, channels: 1, out: []string{"wm 0"}}
			return d, nil
		},
	}}
	for op, msg := range map[string]string{
		"boom":  "line 1: operator boom factory panicked: no way",
		"nil":   "line 1: op nil: the factory returned no driver",
		"early": "line 1: operator emitted output before the first input line: [wm 0]",
	} {
		_, err := r.Run(mustParse(t, "op "+op+"\n1 wm 1\n"))
		if err == nil || err.Error() != msg {
			t.Errorf("%s: Run = %v, want %q", op, err, msg)
		}
	}
	var nilRunner *Runner
	if _, err := nilRunner.Run(mustParse(t, "op echo\n")); err == nil || !strings.Contains(err.Error(), "no operators are registered") {
		t.Errorf("nil runner: %v", err)
	}
}

// panicOutputs panics in Outputs.
type panicOutputs struct{ echoDriver }

func (*panicOutputs) Outputs() []string { panic("outputs broke") }

func TestRunOutputsPanic(t *testing.T) {
	r := &Runner{Ops: map[string]Factory{"p": func(Spec) (Driver, error) {
		return &panicOutputs{echoDriver{inputs: 1, channels: 1}}, nil
	}}}
	_, err := r.Run(mustParse(t, "op p\n"))
	if err == nil || !strings.Contains(err.Error(), "line 1: driver Outputs panicked: outputs broke") {
		t.Errorf("Run = %v", err)
	}
}
