// Package scenario implements the conformance scenario format of
// docs/scenario-format.md and the `weir scenario` runner: it parses a
// scenario file, drives one operator instance through its input lines,
// single-threaded and deterministically, and prints or checks what the
// operator emits under each input line.
//
// The package knows no operator. Operators are plugged in through a Runner,
// which maps operator names to Factory functions building a Driver.
package scenario

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Error is an error tied to one line of a scenario file. Its message starts
// with "line N: ".
type Error struct {
	// Line is the 1-based line number.
	Line int
	// Err is the underlying problem.
	Err error
}

// Error returns "line N: <problem>".
func (e *Error) Error() string { return fmt.Sprintf("line %d: %v", e.Line, e.Err) }

// Unwrap returns the underlying problem.
func (e *Error) Unwrap() error { return e.Err }

func lineErr(line int, format string, args ...any) error {
	return &Error{Line: line, Err: fmt.Errorf(format, args...)}
}

// Kind is the kind of an input line.
type Kind int

// The kinds of input lines.
const (
	// Record is `<in> rec <key> <ts> <value>`.
	Record Kind = iota + 1
	// Watermark is `<in> wm <ts>`.
	Watermark
	// Idle is `<in> idle`.
	Idle
	// Active is `<in> active`.
	Active
	// Proc is `proc <t>`.
	Proc
	// End is `end`.
	End
)

// String returns the keyword of the kind as written in a scenario file.
func (k Kind) String() string {
	switch k {
	case Record:
		return "rec"
	case Watermark:
		return "wm"
	case Idle:
		return "idle"
	case Active:
		return "active"
	case Proc:
		return "proc"
	case End:
		return "end"
	}
	return fmt.Sprintf("Kind(%d)", int(k))
}

// Step is one input line of a scenario together with the outputs expected
// under it.
type Step struct {
	// Line is the 1-based line number of the input line.
	Line int
	// Text is the input line with its comment removed and whitespace
	// normalised to single spaces.
	Text string
	// Kind is the kind of input line.
	Kind Kind
	// Input is the 1-based input number (1 or 2) for Record, Watermark, Idle
	// and Active; 0 otherwise.
	Input int
	// Channel is the 0-based channel of the input for Record, Watermark, Idle
	// and Active.
	Channel int
	// Key is the record key (Record only).
	Key string
	// Ts is the record or watermark timestamp, or the processing time of a
	// Proc line.
	Ts int64
	// Value is the record value (Record only).
	Value string
	// Expected holds the normalised `> ` lines under the input line, in file
	// order, without the leading "> ".
	Expected []string
}

type lineKind int

const (
	lineOther  lineKind = iota // blank or comment-only
	lineOp                     // the op line
	lineInput                  // an input line
	lineOutput                 // a `>` line
)

type srcLine struct {
	raw  string
	kind lineKind
	step int // index into Steps for lineInput and lineOutput
}

// Scenario is a parsed scenario file. It keeps the original lines so that it
// can be printed back with Print.
type Scenario struct {
	// Name is the name given to Parse, usually the file name.
	Name string
	// Spec is the parsed op line.
	Spec Spec
	// Steps are the input lines, in file order.
	Steps []Step

	lines []srcLine
}

// Parse reads a scenario file. name is only recorded in the Scenario. Every
// error is an *Error naming the offending line.
func Parse(name string, r io.Reader) (*Scenario, error) {
	s := &Scenario{Name: name}
	br := bufio.NewReader(r)
	num := 0
	haveOp := false
	endLine := 0   // line of the `end` line, if seen
	var proc int64 // the processing-time clock, starting at 0
	procLine := 0
	for {
		raw, err := br.ReadString('\n')
		if err != nil && !errors.Is(err, io.EOF) {
			return nil, lineErr(num+1, "read: %v", err)
		}
		if raw == "" && err != nil {
			break
		}
		num++
		raw = strings.TrimSuffix(strings.TrimSuffix(raw, "\n"), "\r")
		if !utf8.ValidString(raw) {
			return nil, lineErr(num, "not valid UTF-8")
		}
		text := raw
		if i := strings.IndexByte(text, '#'); i >= 0 {
			text = text[:i]
		}
		fields := strings.Fields(text)
		switch {
		case len(fields) == 0:
			s.lines = append(s.lines, srcLine{raw: raw, kind: lineOther})

		case strings.HasPrefix(fields[0], ">"):
			if !haveOp {
				return nil, lineErr(num, "expected output line before the op line")
			}
			if len(s.Steps) == 0 {
				return nil, lineErr(num, "expected output line before the first input line (outputs go right under the input line that causes them)")
			}
			out, perr := ParseOutput(strings.TrimPrefix(strings.TrimSpace(text), ">"))
			if perr != nil {
				return nil, &Error{Line: num, Err: perr}
			}
			st := &s.Steps[len(s.Steps)-1]
			st.Expected = append(st.Expected, out)
			s.lines = append(s.lines, srcLine{raw: raw, kind: lineOutput, step: len(s.Steps) - 1})

		case !haveOp:
			if fields[0] != "op" {
				return nil, lineErr(num, "the first line must be `op <operator> <param>=<value> ... <flag> ...`, got %q", strings.Join(fields, " "))
			}
			spec, perr := parseOp(fields[1:])
			if perr != nil {
				return nil, &Error{Line: num, Err: perr}
			}
			spec.Line = num
			s.Spec = spec
			haveOp = true
			s.lines = append(s.lines, srcLine{raw: raw, kind: lineOp})

		case fields[0] == "op":
			return nil, lineErr(num, "a second op line (the op line is line %d)", s.Spec.Line)

		default:
			st, perr := parseInput(fields)
			if perr != nil {
				return nil, &Error{Line: num, Err: perr}
			}
			if endLine != 0 {
				return nil, lineErr(num, "input line after `end` (line %d): the input has ended", endLine)
			}
			switch st.Kind {
			case End:
				endLine = num
			case Proc:
				if st.Ts < proc {
					if procLine == 0 {
						return nil, lineErr(num, "processing time %d is before the start of the clock (0)", st.Ts)
					}
					return nil, lineErr(num, "processing time goes back from %d (line %d) to %d", proc, procLine, st.Ts)
				}
				proc, procLine = st.Ts, num
			}
			st.Line = num
			s.Steps = append(s.Steps, st)
			s.lines = append(s.lines, srcLine{raw: raw, kind: lineInput, step: len(s.Steps) - 1})
		}
		if err != nil {
			break
		}
	}
	if !haveOp {
		return nil, lineErr(num+1, "end of file before the op line (`op <operator> ...`)")
	}
	return s, nil
}

func parseOp(args []string) (Spec, error) {
	spec := Spec{Params: map[string]string{}, Flags: map[string]bool{}}
	if len(args) == 0 {
		return spec, errors.New("op line without an operator name: want `op <operator> <param>=<value> ... <flag> ...`")
	}
	spec.Op = args[0]
	if strings.Contains(spec.Op, "=") {
		return spec, fmt.Errorf("op line: operator name expected before parameters, got %q", spec.Op)
	}
	for _, tok := range args[1:] {
		name, value, isParam := strings.Cut(tok, "=")
		if name == "" {
			return spec, fmt.Errorf("op line: parameter %q has no name", tok)
		}
		if _, dup := spec.Params[name]; dup || spec.Flags[name] {
			return spec, fmt.Errorf("op line: %s given twice", name)
		}
		if isParam {
			if value == "" {
				return spec, fmt.Errorf("op line: parameter %s has an empty value", name)
			}
			spec.Params[name] = value
		} else {
			spec.Flags[name] = true
		}
	}
	return spec, nil
}

func parseTs(what, tok string) (int64, error) {
	n, err := strconv.ParseInt(tok, 10, 64)
	if err != nil {
		if errors.Is(err, strconv.ErrRange) {
			return 0, fmt.Errorf("%s %q is out of the int64 range", what, tok)
		}
		return 0, fmt.Errorf("%s %q is not an integer (int64 milliseconds)", what, tok)
	}
	return n, nil
}

func wantArgs(fields []string, n int, form string) error {
	if len(fields) != n {
		return fmt.Errorf("want `%s`, got %q", form, strings.Join(fields, " "))
	}
	return nil
}

// parseInput parses the fields of an input line.
func parseInput(fields []string) (Step, error) {
	st := Step{Text: strings.Join(fields, " ")}
	switch fields[0] {
	case "proc":
		if err := wantArgs(fields, 2, "proc <t>"); err != nil {
			return st, err
		}
		t, err := parseTs("processing time", fields[1])
		if err != nil {
			return st, err
		}
		st.Kind, st.Ts = Proc, t
		return st, nil
	case "end":
		if err := wantArgs(fields, 1, "end"); err != nil {
			return st, err
		}
		st.Kind = End
		return st, nil
	}
	in, ch, err := parseIn(fields[0])
	if err != nil {
		return st, err
	}
	st.Input, st.Channel = in, ch
	if len(fields) < 2 {
		return st, fmt.Errorf("input %s without an event: want `<in> rec <key> <ts> <value>`, `<in> wm <ts>`, `<in> idle` or `<in> active`", fields[0])
	}
	switch fields[1] {
	case "rec":
		if err := wantArgs(fields, 5, "<in> rec <key> <ts> <value>"); err != nil {
			return st, err
		}
		ts, err := parseTs("timestamp", fields[3])
		if err != nil {
			return st, err
		}
		st.Kind, st.Key, st.Ts, st.Value = Record, fields[2], ts, fields[4]
	case "wm":
		if err := wantArgs(fields, 3, "<in> wm <ts>"); err != nil {
			return st, err
		}
		ts, err := parseTs("watermark", fields[2])
		if err != nil {
			return st, err
		}
		st.Kind, st.Ts = Watermark, ts
	case "idle":
		if err := wantArgs(fields, 2, "<in> idle"); err != nil {
			return st, err
		}
		st.Kind = Idle
	case "active":
		if err := wantArgs(fields, 2, "<in> active"); err != nil {
			return st, err
		}
		st.Kind = Active
	default:
		return st, fmt.Errorf("unknown event %q: want `<in> rec <key> <ts> <value>`, `<in> wm <ts>`, `<in> idle` or `<in> active`", fields[1])
	}
	return st, nil
}

// parseIn parses `<in>`: 1 or 2, optionally followed by `.channel`.
func parseIn(tok string) (input, channel int, err error) {
	inTok, chTok, hasCh := strings.Cut(tok, ".")
	switch inTok {
	case "1":
		input = 1
	case "2":
		input = 2
	default:
		return 0, 0, fmt.Errorf("unknown input line starting with %q: want `<in> ...` with <in> 1 or 2 (optionally .channel, e.g. 1.0), `proc <t>` or `end`", tok)
	}
	if !hasCh {
		return input, 0, nil
	}
	if chTok == "" || strings.TrimLeft(chTok, "0123456789") != "" {
		return 0, 0, fmt.Errorf("bad channel in %q: want a channel number from 0, e.g. %d.0", tok, input)
	}
	c, perr := strconv.ParseInt(chTok, 10, 32)
	if perr != nil || c > math.MaxInt32 {
		return 0, 0, fmt.Errorf("channel in %q is too large", tok)
	}
	return input, int(c), nil
}

// ParseOutput parses one output line (without the leading `>`), validates it
// against the output grammar of FORMAT.md and returns it normalised: tokens
// separated by single spaces, timestamps in canonical decimal form.
//
//	out <key> <ts> <value>
//	side <tag> <key> <ts> <value>
//	wm <ts>
//	status idle | status active
func ParseOutput(line string) (string, error) {
	if strings.ContainsAny(line, "#\n\r") {
		return "", fmt.Errorf("output line %q contains '#' or a line break", line)
	}
	f := strings.Fields(line)
	if len(f) == 0 {
		return "", errors.New("empty output line: want `> out ...`, `> side ...`, `> wm ...` or `> status ...`")
	}
	bad := func(form string) (string, error) {
		return "", fmt.Errorf("bad output line %q: want `%s`", strings.Join(f, " "), form)
	}
	tsAt := func(i int) error {
		ts, err := parseTs("output timestamp", f[i])
		if err != nil {
			return err
		}
		f[i] = strconv.FormatInt(ts, 10)
		return nil
	}
	switch f[0] {
	case "out":
		if len(f) != 4 {
			return bad("out <key> <ts> <value>")
		}
		if err := tsAt(2); err != nil {
			return "", err
		}
	case "side":
		if len(f) != 5 {
			return bad("side <tag> <key> <ts> <value>")
		}
		if err := tsAt(3); err != nil {
			return "", err
		}
	case "wm":
		if len(f) != 2 {
			return bad("wm <ts>")
		}
		if err := tsAt(1); err != nil {
			return "", err
		}
	case "status":
		if len(f) != 2 || (f[1] != "idle" && f[1] != "active") {
			return bad("status idle` or `status active")
		}
	default:
		return "", fmt.Errorf("unknown output %q: want `out <key> <ts> <value>`, `side <tag> <key> <ts> <value>`, `wm <ts>` or `status idle|active`", f[0])
	}
	return strings.Join(f, " "), nil
}
