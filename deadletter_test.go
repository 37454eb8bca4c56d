package weir_test

import (
	"bytes"
	"encoding/gob"
	"errors"
	"fmt"
	"strconv"
	"testing"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/weirtest"
)

var errOdd = errors.New("odd")

func evenOnly(v int64) (string, error) {
	if v%2 != 0 {
		return "", fmt.Errorf("value %d: %w", v, errOdd)
	}
	return strconv.FormatInt(v, 10), nil
}

// TestMapErrFailsTheJob: without DeadLetters the first error fails the
// job, naming the operator and the record and wrapping the function's
// error.
func TestMapErrFailsTheJob(t *testing.T) {
	env := weir.NewEnvironment(weir.WithParallelism(1), quiet())
	weir.Collect(weir.MapErr(weir.FromSlice(env, []int64{2, 4, 7, 8}), evenOnly).Name("parse"))
	err := run(t, env)
	if err == nil || !errors.Is(err, errOdd) || !contains(err.Error(), `operator "parse"`, "record 7", "value 7: odd") {
		t.Fatalf("got %v", err)
	}
	env = weir.NewEnvironment(weir.WithParallelism(1), quiet())
	weir.Collect(weir.FlatMapErr(weir.FromSlice(env, []string{"x", "yy"}), func(s string, out weir.Collector[int]) error {
		if len(s) > 1 {
			return errors.New("too long")
		}
		out.Collect(len(s))
		return nil
	}))
	if err := run(t, env); err == nil || !contains(err.Error(), `operator "FlatMap"`, "record yy", "too long") {
		t.Fatalf("FlatMapErr: got %v", err)
	}
}

// TestMapErrDeadLetters: with DeadLetters, failed records go to the side
// output with their timestamp, error and operator, the others to the main
// output, and the job goes on.
func TestMapErrDeadLetters(t *testing.T) {
	bad := weir.NewOutputTag[weir.DeadLetter[int64]]("bad")
	h, err := weirtest.NewOneInput(func(in weir.DataStream[int64]) weir.DataStream[string] {
		return weir.MapErr(in, evenOnly, weir.DeadLetters(bad)).Name("parse")
	}, weirtest.SideOutputs(bad))
	ok(t, err)
	defer h.Close()
	for i := range int64(5) {
		ok(t, h.ProcessElement(i, i*10))
	}
	if got := fmt.Sprint(h.Output()); got != "[{0 0} {2 20} {4 40}]" {
		t.Fatalf("main output %s", got)
	}
	dead := weirtest.SideOutputOf(h.Events(), bad)
	if len(dead) != 2 {
		t.Fatalf("dead letters %v", dead)
	}
	for i, d := range dead {
		v := int64(2*i + 1)
		if d.TS != v*10 || d.Value.Value != v || d.Value.TS != v*10 || d.Value.Operator != "parse" || !errors.Is(d.Value.Err, errOdd) {
			t.Fatalf("dead letter %d: %+v", i, d)
		}
	}
	if s := dead[0].Value.String(); s != "parse: value 1: odd (record 1)" {
		t.Fatalf("String() = %q", s)
	}
}

// TestFlatMapErrDeadLetters: records collected before the error are kept.
func TestFlatMapErrDeadLetters(t *testing.T) {
	bad := weir.NewOutputTag[weir.DeadLetter[string]]("bad")
	env := weir.NewEnvironment(weir.WithParallelism(1))
	out := weir.FlatMapErr(weir.FromSlice(env, []string{"1 2", "3 x 4", "5"}), func(s string, out weir.Collector[int]) error {
		for _, f := range bytes.Fields([]byte(s)) {
			n, err := strconv.Atoi(string(f))
			if err != nil {
				return err
			}
			out.Collect(n)
		}
		return nil
	}, weir.DeadLetters(bad))
	main, dead := weir.Collect(out), weir.Collect(weir.SideOutput(out, bad))
	mustRun(t, env)
	if got := fmt.Sprint(main.Values()); got != "[1 2 3 5]" {
		t.Fatalf("main %s", got)
	}
	if d := dead.Values(); len(d) != 1 || d[0].Value != "3 x 4" || !contains(d[0].Err.Error(), `parsing "x"`) {
		t.Fatalf("dead letters %v", d)
	}
}

// TestDeadLetterGob: a dead letter survives gob (channel state, sinks) with
// its error's message.
func TestDeadLetterGob(t *testing.T) {
	in := weir.DeadLetter[int64]{Value: 7, TS: 70, Err: errOdd, Operator: "parse"}
	var b bytes.Buffer
	ok(t, gob.NewEncoder(&b).Encode(&in))
	var out weir.DeadLetter[int64]
	ok(t, gob.NewDecoder(&b).Decode(&out))
	if out.Value != 7 || out.TS != 70 || out.Operator != "parse" || out.Err == nil || out.Err.Error() != "odd" {
		t.Fatalf("decoded %+v", out)
	}
}

// TestDeadLetterTagType: reading the dead-letter tag with another type
// fails the build.
func TestDeadLetterTagType(t *testing.T) {
	env := weir.NewEnvironment()
	bad := weir.NewOutputTag[weir.DeadLetter[int64]]("bad")
	out := weir.MapErr(weir.FromSlice(env, []int64{1}), evenOnly, weir.DeadLetters(bad))
	weir.Collect(weir.SideOutput(out, weir.NewOutputTag[string]("bad")))
	if err := run(t, env); err == nil || !contains(err.Error(), `side output "bad" used with types`) {
		t.Fatalf("got %v", err)
	}
}
