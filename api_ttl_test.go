package weir_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/state"
	"github.com/weirstream/weir/weirtest"
)

// ttlOp is one state operation, run at the clock time At.
type ttlOp struct {
	At   int64
	Op   string // "update", "value", "add", "get"
	V    string
	Want string // expected report of the operation
}

// ttlFn applies operations to a value and a list state with TTL and reports
// the results on ch.
type ttlFn struct {
	cfg   state.TTLConfig
	ch    chan<- string
	value state.ValueState[string]
	list  state.ListState[string]
}

func (f *ttlFn) Open(ctx weir.KeyedRuntimeContext[string]) (err error) {
	if f.value, err = weir.GetValueState(ctx, state.Value[string]("v", state.WithTTL(f.cfg))); err != nil {
		return err
	}
	f.list, err = weir.GetListState(ctx, state.List[string]("l", state.WithTTL(f.cfg)))
	return err
}

func (f *ttlFn) ProcessElement(op ttlOp, ctx weir.KeyedContext[string], _ weir.Collector[string]) error {
	switch op.Op {
	case "update":
		f.value.Update(op.V)
		f.ch <- "ok"
	case "add":
		f.list.Add(op.V)
		f.ch <- "ok"
	case "value":
		v, ok := f.value.Value()
		if !ok {
			v = "null"
		}
		f.ch <- v
	case "get":
		f.ch <- fmt.Sprint(f.list.Get())
	}
	return nil
}

func (f *ttlFn) OnTimer(int64, weir.OnTimerContext[string], weir.Collector[string]) error { return nil }

// TestStateTTLWithManualClock runs the V17 vectors of the Flink reference
// (ttl = 10 ms) through a keyed function in a job whose processing-time
// clock is a manual clock.
func TestStateTTLWithManualClock(t *testing.T) {
	ttl := func(u state.UpdateType, v state.Visibility) state.TTLConfig {
		c := state.TTL(10 * time.Millisecond)
		c.Update, c.Visibility = u, v
		return c
	}
	noBackground := func(c state.TTLConfig) state.TTLConfig {
		c.DisableBackgroundCleanup = true
		return c
	}
	cases := []struct {
		name string
		cfg  state.TTLConfig
		ops  []ttlOp
	}{
		{"OnCreateAndWrite/NeverReturnExpired", ttl(state.UpdateOnCreateAndWrite, state.NeverReturnExpired), []ttlOp{
			{0, "update", "v", "ok"}, {9, "value", "", "v"}, {10, "value", "", "null"}, {11, "value", "", "null"},
		}},
		{"OnReadAndWrite/NeverReturnExpired", ttl(state.UpdateOnReadAndWrite, state.NeverReturnExpired), []ttlOp{
			{0, "update", "v", "ok"}, {9, "value", "", "v"}, {18, "value", "", "v"}, {28, "value", "", "null"},
		}},
		// The expired value is returned once, then gone; V17 assumes no
		// background cleanup.
		{"OnCreateAndWrite/ReturnExpiredIfNotCleanedUp", noBackground(ttl(state.UpdateOnCreateAndWrite, state.ReturnExpiredIfNotCleanedUp)), []ttlOp{
			{0, "update", "v", "ok"}, {15, "value", "", "v"}, {16, "value", "", "null"},
		}},
		// With Flink's default incremental cleanup the access cleans the
		// expired entry up before reading it.
		{"ReturnExpiredIfNotCleanedUp with incremental cleanup", ttl(state.UpdateOnCreateAndWrite, state.ReturnExpiredIfNotCleanedUp), []ttlOp{
			{0, "update", "v", "ok"}, {15, "value", "", "null"},
		}},
		{"write refreshes", ttl(state.UpdateOnCreateAndWrite, state.NeverReturnExpired), []ttlOp{
			{0, "update", "v", "ok"}, {8, "update", "w", "ok"}, {17, "value", "", "w"}, {18, "value", "", "null"},
		}},
		{"ListState", ttl(state.UpdateOnCreateAndWrite, state.NeverReturnExpired), []ttlOp{
			{0, "add", "a", "ok"}, {5, "add", "b", "ok"}, {12, "get", "", "[b]"}, {15, "get", "", "[]"},
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			clk := weirtest.NewManualClock(0)
			env := weir.NewEnvironment(weir.WithParallelism(1), weir.WithClock(clk))
			src := newChanSource[ttlOp](1)
			in := weir.FromSource[ttlOp](env, src, weir.NoWatermarks[ttlOp](), "ops")
			ch := make(chan string, 10)
			weir.Collect(weir.Process(weir.KeyBy(in, func(ttlOp) string { return "k" }),
				&ttlFn{cfg: c.cfg, ch: ch}))
			h := start(t, env)
			for _, op := range c.ops {
				clk.Set(op.At)
				src.send(t, h, 0, rec(op, weir.NoTimestamp))
				if got := recv(t, h, ch); got != op.Want {
					t.Fatalf("%s at %d: got %q, want %q", op.Op, op.At, got, op.Want)
				}
			}
			src.close()
			if err := wait(t, h); err != nil {
				t.Fatal(err)
			}
		})
	}
}

func TestStateTTLInvalidConfigFailsJob(t *testing.T) {
	env := weir.NewEnvironment(weir.WithParallelism(1), quiet())
	in := weir.FromSlice(env, []ttlOp{{Op: "value"}})
	ch := make(chan string, 10)
	weir.Collect(weir.Process(weir.KeyBy(in, func(ttlOp) string { return "k" }),
		&ttlFn{cfg: state.TTL(time.Microsecond), ch: ch}).Name("badttl"))
	err := run(t, env)
	if err == nil || !contains(err.Error(), "badttl", "ttl", "1ms") {
		t.Fatalf("got %v, want an error naming the operator and the TTL problem", err)
	}
}
