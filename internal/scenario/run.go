package scenario

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"
)

// Driver runs one operator instance for a scenario, single-threaded and
// deterministically. Inputs are numbered from 1, channels from 0.
type Driver interface {
	// Record feeds a record to a channel of an input.
	Record(input, channel int, key string, ts int64, value string) error
	// Watermark feeds a watermark to a channel of an input.
	Watermark(input, channel int, ts int64) error
	// Status sets the watermark status of a channel of an input: idle or
	// active.
	Status(input, channel int, idle bool) error
	// ProcessingTime sets the processing-time clock to t, firing the
	// processing-time timers with timestamp <= t.
	ProcessingTime(t int64) error
	// End ends the input: the maximum watermark arrives on every channel of
	// input 1 in channel order, then on every channel of input 2. The
	// driver does that, as FORMAT.md describes.
	End() error
	// Outputs returns the output lines produced since the previous call,
	// e.g. "out k 9 v", "side late k 3 v", "wm 5" or "status idle". The
	// runner calls it after every input line.
	Outputs() []string
}

// Factory builds a driver for an op line. It validates the parameters (for
// example with Spec.CheckKnown and Spec.Int64) and fails on bad ones.
type Factory func(Spec) (Driver, error)

// Runner runs scenarios against a registry of operators. The registry is a
// plain value: build one per command or test.
type Runner struct {
	// Ops maps operator names to the factories building their drivers.
	Ops map[string]Factory
	// Unavailable maps the names of operators known to the format but not
	// in this build to the message explaining so, e.g. "window": "the window
	// operator is not available in this build yet". Ops takes precedence.
	Unavailable map[string]string
}

// Result holds the actual outputs of a run.
type Result struct {
	// Outputs[i] holds the normalised output lines emitted under
	// Scenario.Steps[i], in emission order, without the leading "> ".
	Outputs [][]string
}

func (r *Runner) factory(spec Spec) (Factory, error) {
	if r != nil {
		if f, ok := r.Ops[spec.Op]; ok && f != nil {
			return f, nil
		}
		if msg, ok := r.Unavailable[spec.Op]; ok {
			return nil, lineErr(spec.Line, "operator %s is unavailable: %s", spec.Op, msg)
		}
	}
	var known []string
	if r != nil {
		for name, f := range r.Ops {
			if f != nil {
				known = append(known, name)
			}
		}
		for name := range r.Unavailable {
			if _, ok := r.Ops[name]; !ok {
				known = append(known, name+" (unavailable)")
			}
		}
	}
	sort.Strings(known)
	if len(known) == 0 {
		return nil, lineErr(spec.Line, "unknown operator %q (no operators are registered)", spec.Op)
	}
	return nil, lineErr(spec.Line, "unknown operator %q (known: %s)", spec.Op, strings.Join(known, ", "))
}

// protect runs f and ties what goes wrong to line: an error f returns is
// prefixed with prefix, a panic is reported as a panic of who.
func protect(line int, who, prefix string, f func() error) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = lineErr(line, "%s panicked: %v", who, p)
		}
	}()
	if err := f(); err != nil {
		return &Error{Line: line, Err: fmt.Errorf("%s: %w", prefix, err)}
	}
	return nil
}

// Run executes a scenario: it builds the operator's driver from the op line,
// feeds it every input line in order and collects the outputs under each.
// An unknown or unavailable operator, a factory or driver error, a driver
// panic or a malformed output line fails the run with an *Error naming the
// line concerned.
func (r *Runner) Run(s *Scenario) (*Result, error) {
	if s == nil {
		return nil, errors.New("nil scenario")
	}
	f, err := r.factory(s.Spec)
	if err != nil {
		return nil, err
	}
	var d Driver
	err = protect(s.Spec.Line, "operator "+s.Spec.Op+" factory", "op "+s.Spec.Op, func() error {
		var ferr error
		d, ferr = f(s.Spec)
		return ferr
	})
	if err != nil {
		return nil, err
	}
	if d == nil {
		return nil, lineErr(s.Spec.Line, "op %s: the factory returned no driver", s.Spec.Op)
	}
	early, err := collect(d, s.Spec.Line)
	if err != nil {
		return nil, err
	}
	if len(early) > 0 {
		return nil, lineErr(s.Spec.Line, "operator emitted output before the first input line: [%s]", strings.Join(early, "; "))
	}
	res := &Result{Outputs: make([][]string, len(s.Steps))}
	for i := range s.Steps {
		st := &s.Steps[i]
		if err := protect(st.Line, "driver", st.Text, func() error { return feed(d, st) }); err != nil {
			return nil, err
		}
		out, err := collect(d, st.Line)
		if err != nil {
			return nil, err
		}
		res.Outputs[i] = out
	}
	return res, nil
}

func feed(d Driver, st *Step) error {
	switch st.Kind {
	case Record:
		return d.Record(st.Input, st.Channel, st.Key, st.Ts, st.Value)
	case Watermark:
		return d.Watermark(st.Input, st.Channel, st.Ts)
	case Idle:
		return d.Status(st.Input, st.Channel, true)
	case Active:
		return d.Status(st.Input, st.Channel, false)
	case Proc:
		return d.ProcessingTime(st.Ts)
	case End:
		return d.End()
	}
	return fmt.Errorf("unknown input kind %v", st.Kind)
}

// collect drains and validates the driver's outputs.
func collect(d Driver, line int) ([]string, error) {
	var raw []string
	if err := protect(line, "driver Outputs", "outputs", func() error {
		raw = d.Outputs()
		return nil
	}); err != nil {
		return nil, err
	}
	if len(raw) == 0 {
		return nil, nil
	}
	out := make([]string, len(raw))
	for i, o := range raw {
		n, err := ParseOutput(o)
		if err != nil {
			return nil, lineErr(line, "operator emitted a malformed output line: %v", err)
		}
		out[i] = n
	}
	return out, nil
}

// Mismatch is the first difference between expected and actual outputs
// found by Check.
type Mismatch struct {
	// Line is the 1-based line number of the input line concerned.
	Line int
	// Input is the normalised input line.
	Input string
	// Expected are the expected outputs under the input line, in file order.
	Expected []string
	// Got are the actual outputs under the input line, in emission order.
	Got []string
}

// Error returns "line N: expected [a; b] got [a; c]".
func (m *Mismatch) Error() string {
	return fmt.Sprintf("line %d: expected [%s] got [%s]", m.Line, strings.Join(m.Expected, "; "), strings.Join(m.Got, "; "))
}

// Check compares the actual outputs of res with the outputs expected by s,
// input line by input line. The outputs under one input line are compared as
// a multiset; the order of the input lines is exact. It returns nil when all
// match and otherwise a *Mismatch for the first input line that differs.
func Check(s *Scenario, res *Result) error {
	if res == nil || len(res.Outputs) != len(s.Steps) {
		got := 0
		if res != nil {
			got = len(res.Outputs)
		}
		return fmt.Errorf("result has outputs for %d input lines, the scenario has %d", got, len(s.Steps))
	}
	for i, st := range s.Steps {
		if !sameMultiset(st.Expected, res.Outputs[i]) {
			return &Mismatch{Line: st.Line, Input: st.Text, Expected: st.Expected, Got: res.Outputs[i]}
		}
	}
	return nil
}

func sameMultiset(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	count := make(map[string]int, len(a))
	for _, x := range a {
		count[x]++
	}
	for _, x := range b {
		if count[x] == 0 {
			return false
		}
		count[x]--
	}
	return true
}

// Print writes s back in the scenario format, with the outputs of res under
// each input line in place of the file's `> ` lines. Comments, blank lines
// and the op and input lines are written as they were. The actual outputs of
// an input line take the place of its first `> ` line, or follow the input
// line directly if it had none. With a nil res the expected outputs are
// written (normalised). The printout is itself a scenario file.
func Print(w io.Writer, s *Scenario, res *Result) error {
	outputs := make([][]string, len(s.Steps))
	if res == nil {
		for i, st := range s.Steps {
			outputs[i] = st.Expected
		}
	} else {
		if len(res.Outputs) != len(s.Steps) {
			return fmt.Errorf("result has outputs for %d input lines, the scenario has %d", len(res.Outputs), len(s.Steps))
		}
		outputs = res.Outputs
	}
	bw := bufio.NewWriter(w)
	written := make([]bool, len(s.Steps))
	emit := func(i int) {
		if written[i] {
			return
		}
		written[i] = true
		for _, o := range outputs[i] {
			bw.WriteString("> ")
			bw.WriteString(o)
			bw.WriteByte('\n')
		}
	}
	for _, l := range s.lines {
		switch l.kind {
		case lineOutput:
			emit(l.step)
		case lineInput:
			bw.WriteString(l.raw)
			bw.WriteByte('\n')
			if len(s.Steps[l.step].Expected) == 0 {
				emit(l.step)
			}
		default:
			bw.WriteString(l.raw)
			bw.WriteByte('\n')
		}
	}
	return bw.Flush()
}
