package weir_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/weirtest"
)

var ptTag = weir.NewOutputTag[string]("pt")

// ptCmd tells ptTimers what to do for a key.
type ptCmd struct {
	Key string
	Op  string // "reg" (at now+At), "del" (at now+At), "past" (at now-1), "probe"
	At  int64
}

// ptTimers registers and deletes processing-time timers as told and reports
// each element and timer on ch.
type ptTimers struct{ ch chan<- string }

func (f ptTimers) ProcessElement(c ptCmd, ctx weir.KeyedContext[string], _ weir.Collector[string]) error {
	now := ctx.CurrentProcessingTime()
	if ts := ctx.TimerService().CurrentProcessingTime(); ts != now {
		return fmt.Errorf("timer service time %d, context time %d", ts, now)
	}
	switch c.Op {
	case "reg":
		ctx.TimerService().RegisterProcessingTimeTimer(now + c.At)
	case "del":
		ctx.TimerService().DeleteProcessingTimeTimer(now + c.At)
	case "past":
		ctx.TimerService().RegisterProcessingTimeTimer(now - 1)
	}
	f.ch <- fmt.Sprintf("%s %s %d at %d", c.Key, c.Op, c.At, now)
	return nil
}

func (f ptTimers) OnTimer(ts int64, ctx weir.OnTimerContext[string], out weir.Collector[string]) error {
	if ctx.TimeDomain() != weir.ProcessingTime {
		return fmt.Errorf("timer %d in %v", ts, ctx.TimeDomain())
	}
	if got, ok := ctx.Timestamp(); !ok || got != ts {
		return fmt.Errorf("timer context timestamp %d, %v; want %d", got, ok, ts)
	}
	e := fmt.Sprintf("timer %s@%d", ctx.CurrentKey(), ts)
	out.Collect(e)
	weir.Output(ctx, ptTag, e)
	f.ch <- fmt.Sprintf("%s at %d", e, ctx.CurrentProcessingTime())
	return nil
}

// TestProcessingTimeTimersWithManualClock runs a keyed function on a manual
// clock: timers fire when the clock reaches them, in order, not before;
// deleted timers do not fire; a timer registered in the past fires without
// the clock moving; main output from a processing-time timer has no
// timestamp, side output has the timer's time.
func TestProcessingTimeTimersWithManualClock(t *testing.T) {
	clk := weirtest.NewManualClock(1000)
	env := weir.NewEnvironment(weir.WithParallelism(1), weir.WithClock(clk))
	src := newChanSource[ptCmd](1)
	in := weir.FromSource[ptCmd](env, src, weir.NoWatermarks[ptCmd](), "cmds")
	ch := make(chan string, 100)
	out := weir.Process(weir.KeyBy(in, func(c ptCmd) string { return c.Key }), ptTimers{ch})
	mainRes := weir.Collect(out)
	sideRes := weir.Collect(weir.SideOutput(out, ptTag))
	h := start(t, env)

	// do sends cmds and returns the events up to the last one's; two probe
	// elements make sure every timer due at the current clock has fired
	// (the task checks due timers after each element).
	probes := 0
	do := func(cmds ...ptCmd) []string {
		t.Helper()
		probes++
		p1, p2 := fmt.Sprintf("probe%da", probes), fmt.Sprintf("probe%db", probes)
		cmds = append(cmds, ptCmd{Key: p1, Op: "probe"}, ptCmd{Key: p2, Op: "probe"})
		var got []string
		for _, c := range cmds {
			src.send(t, h, 0, rec(c, weir.NoTimestamp))
		}
		for {
			e := recv(t, h, ch)
			if strings.HasPrefix(e, "probe") {
				if strings.HasPrefix(e, p2) {
					return got
				}
				continue
			}
			got = append(got, e)
		}
	}
	expect := func(step string, got []string, want ...string) {
		t.Helper()
		if !slices.Equal(got, want) {
			t.Fatalf("%s: events %q, want %q", step, got, want)
		}
	}
	expect("register", do(ptCmd{"a", "reg", 10}, ptCmd{"a", "reg", 20}, ptCmd{"b", "reg", 15}, ptCmd{"b", "reg", 30}),
		"a reg 10 at 1000", "a reg 20 at 1000", "b reg 15 at 1000", "b reg 30 at 1000")
	clk.Set(1009)
	expect("at 1009", do())
	clk.Set(1010)
	expect("at 1010", do(), "timer a@1010 at 1010")
	// Jumping over several timers fires them in timestamp order.
	clk.Set(1025)
	expect("at 1025", do(), "timer b@1015 at 1025", "timer a@1020 at 1025")
	expect("delete", do(ptCmd{"b", "del", 5}), "b del 5 at 1025")
	// b's timer at 1030 is deleted (1025+5); a past-dated timer fires at
	// once, without the clock moving.
	expect("past", do(ptCmd{"c", "past", 0}), "c past 0 at 1025", "timer c@1024 at 1025")
	clk.Set(2000)
	expect("at 2000", do())
	// Registering the same timer twice fires it once.
	expect("dedup", do(ptCmd{"d", "reg", 1}, ptCmd{"d", "reg", 1}), "d reg 1 at 2000", "d reg 1 at 2000")
	clk.Set(2001)
	expect("at 2001", do(), "timer d@2001 at 2001")
	src.close()
	if err := wait(t, h); err != nil {
		t.Fatal(err)
	}

	wantMain := []weir.Record[string]{
		rec("timer a@1010", weir.NoTimestamp), rec("timer b@1015", weir.NoTimestamp), rec("timer a@1020", weir.NoTimestamp),
		rec("timer c@1024", weir.NoTimestamp), rec("timer d@2001", weir.NoTimestamp),
	}
	if got := mainRes.Records(); fmt.Sprint(got) != fmt.Sprint(wantMain) {
		t.Errorf("main output %v, want %v (no timestamps)", got, wantMain)
	}
	wantSide := []weir.Record[string]{
		rec("timer a@1010", 1010), rec("timer b@1015", 1015), rec("timer a@1020", 1020),
		rec("timer c@1024", 1024), rec("timer d@2001", 2001),
	}
	if got := sideRes.Records(); fmt.Sprint(got) != fmt.Sprint(wantSide) {
		t.Errorf("side output %v, want %v (timer times)", got, wantSide)
	}
}

// TestBoundedJobEndsWithPendingProcessingTimers: a bounded job ends at the
// end of its input; processing-time timers still pending (an hour away on
// the wall clock) neither fire nor hold the job up.
func TestBoundedJobEndsWithPendingProcessingTimers(t *testing.T) {
	env := weir.NewEnvironment(weir.WithParallelism(2))
	src := weir.FromSlice(env, []string{"a", "b", "c"})
	cmds := weir.Map(src, func(k string) ptCmd { return ptCmd{Key: k, Op: "reg", At: time.Hour.Milliseconds()} })
	ch := make(chan string, 10)
	res := weir.Collect(weir.Process(weir.KeyBy(cmds, func(c ptCmd) string { return c.Key }), ptTimers{ch}))
	mustRun(t, env)
	if res.Len() != 0 || len(ch) != 3 {
		t.Fatalf("%d timers fired, %d elements seen; want 0 and 3", res.Len(), len(ch))
	}
}
