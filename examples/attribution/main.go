// Command attribution attributes each ad click to the latest impression of
// the same user within the 30 minutes before the click, and reports the
// clicks that no impression explains.
//
//	go run ./examples/attribution -clicks 50000 -parallelism 2
//
// Two generated streams, clicks and impressions, are keyed by user and
// joined with weir.IntervalOuterJoin: clicks on the left, impressions on the
// right, and the rule of interval joins is "right.ts - left.ts in [lower,
// upper]", so "the impression is 0 to 30 minutes before the click" is
// Between(-30*time.Minute, 0) (both bounds inclusive). The join is a left
// outer join: a click that matched no impression comes out once, with a nil
// impression, when its cleanup timer fires (at the click's timestamp, the
// upper bound being 0).
//
// The join emits every matching (click, impression) pair; the latest
// impression is picked downstream, by Latest, a KeyedProcessFunction keyed
// by click id (see its comment for why its timer sees every candidate).
//
// The data is deterministic (a hash of the index). Impressions come every
// 250 ms to one of -users users. Click i follows impression 4i: for about
// half of the clicks the same user clicks 0..30 minutes after it, for some
// exactly 0 or 30 minutes after it (in time) or 30 minutes and 1 ms after it
// (too late for that impression), 31..60 minutes after it, or up to 5
// minutes before it; about a quarter are clicks of a random user. Whether a
// click is attributed, and to which impression, depends on all the
// impressions of its user: a brute-force computation in the test says.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime"
	"slices"
	"time"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/state"
)

// Window is how long before a click an impression may be to explain it.
const Window = 30 * time.Minute

// ImpressionsPerClick is the ratio of generated impressions to clicks.
const ImpressionsPerClick = 4

// Generation parameters.
const (
	impressionSpacing = 250 * time.Millisecond // event time between impressions
	impressionJitter  = 20 * time.Second       // impressions are out of order by less than this
	earliestClick     = 5 * time.Minute        // a click precedes its impression by up to this
	latestClick       = 60 * time.Minute       // the latest click after its impression
)

// Out-of-orderness bounds of the two generated streams. Each bounds the real
// disorder of its stream, so no record is ever late, and the result does
// not depend on parallelism or timing.
const (
	impressionOutOfOrderness = impressionJitter
	clickOutOfOrderness      = impressionJitter + earliestClick + latestClick + time.Minute
)

// epoch is the event time of impression 0.
var epoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).UnixMilli()

// Impression is an ad shown to a user; TS is its event time in ms since the
// Unix epoch.
type Impression struct {
	ID   int64
	User int64
	TS   int64
}

// Click is a user's click on an ad.
type Click struct {
	ID   int64
	User int64
	TS   int64
}

// String describes the click.
func (c Click) String() string {
	return fmt.Sprintf("click %d by user %d at %s", c.ID, c.User, fmtTime(c.TS))
}

// Attribution is a click with the impression it is attributed to, if any
// (Attributed false: Impression is the zero value). The join emits one per
// candidate impression; Latest keeps one per click.
type Attribution struct {
	Click      Click
	Impression Impression
	Attributed bool
}

// String describes the attribution.
func (a Attribution) String() string {
	if !a.Attributed {
		return a.Click.String() + ": no impression"
	}
	return fmt.Sprintf("%v <- impression %d at %s (%v before)", a.Click, a.Impression.ID,
		fmtTime(a.Impression.TS), time.Duration(a.Click.TS-a.Impression.TS)*time.Millisecond)
}

func fmtTime(ms int64) string { return time.UnixMilli(ms).UTC().Format("2006-01-02 15:04:05.000") }

// mix is SplitMix64's finalizer: a well-spread hash of i and a salt.
func mix(i int64, salt uint64) uint64 {
	z := uint64(i)*0x9e3779b97f4a7c15 + salt*0xbf58476d1ce4e5b9
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}

// Data generates the two streams for a number of users.
type Data struct {
	Users int64
}

// Impression returns impression j.
func (d Data) Impression(j int64) Impression {
	r := mix(j, 1)
	return Impression{
		ID:   j,
		User: int64((r >> 32) % uint64(d.Users)),
		TS:   epoch + j*impressionSpacing.Milliseconds() + int64(r%uint64(impressionJitter.Milliseconds())),
	}
}

// Click returns click i, which follows impression ImpressionsPerClick*i.
func (d Data) Click(i int64) Click {
	imp := d.Impression(ImpressionsPerClick * i)
	c := Click{ID: i, User: imp.User}
	r, x := mix(i, 2)%100, mix(i, 3)
	between := func(lo, hi time.Duration) int64 { // uniform in [lo, hi] ms
		return lo.Milliseconds() + int64(x%uint64(hi.Milliseconds()-lo.Milliseconds()+1))
	}
	var delay int64
	switch {
	case r < 50: // the same user, within the window
		delay = between(0, Window)
	case r < 53: // at the same time as the impression
		delay = 0
	case r < 56: // exactly at the window's edge: still attributed
		delay = Window.Milliseconds()
	case r < 59: // 1 ms past the edge
		delay = Window.Milliseconds() + 1
	case r < 69: // too late for this impression
		delay = between(Window+time.Minute, latestClick)
	case r < 74: // before the impression
		delay = -between(time.Millisecond, earliestClick)
	default: // a random user, about when the impression was shown
		c.User = int64(mix(i, 4) % uint64(d.Users))
		delay = between(0, 10*time.Minute)
	}
	c.TS = imp.TS + delay
	return c
}

// Latest keeps, per click, the latest of its candidate impressions: the
// one with the largest timestamp, and of several with that timestamp the
// one with the largest id (the last generated). It is keyed by click id.
//
// Every candidate of a click carries the click's timestamp (the join
// emits a pair at the larger timestamp of the two, and a candidate
// impression is never after its click; an unattributed click is emitted at
// its own timestamp). The join emits all of them before its watermark
// reaches the click's timestamp: a pair is emitted when its later record
// arrives, which is before the click's cleanup timer (at the click's
// timestamp) fires, the unattributed click when that timer fires, and the
// join fires a timer before it forwards the watermark that triggers it.
// This needs every record to arrive above the join's watermark, which the
// generated streams do: each stays within its out-of-orderness bound. (A
// record exactly on the watermark is not late for the join and could still
// produce a candidate at that timestamp after the watermark.) So an
// event-time timer at the click's timestamp fires after the last candidate
// and emits the choice once, with the click's timestamp. (Keying by click id moves the candidates of one click to one
// subtask; a window of 1 ms per click id would do the same job.)
type Latest struct {
	best state.ValueState[Attribution]
}

// Open gets the state handle.
func (l *Latest) Open(ctx weir.KeyedRuntimeContext[int64]) (err error) {
	l.best, err = weir.GetValueState(ctx, state.Value[Attribution]("best"))
	return err
}

// Later reports whether candidate a is a later impression than b.
func Later(a, b Attribution) bool {
	switch {
	case a.Attributed != b.Attributed:
		return a.Attributed
	case a.Impression.TS != b.Impression.TS:
		return a.Impression.TS > b.Impression.TS
	}
	return a.Impression.ID > b.Impression.ID
}

// ProcessElement keeps the candidate if it is the first or a later one.
func (l *Latest) ProcessElement(a Attribution, ctx weir.KeyedContext[int64], _ weir.Collector[Attribution]) error {
	best, ok := l.best.Value()
	if !ok {
		ctx.TimerService().RegisterEventTimeTimer(a.Click.TS)
	}
	if !ok || Later(a, best) {
		l.best.Update(a)
	}
	return nil
}

// OnTimer emits the click's attribution.
func (l *Latest) OnTimer(_ int64, _ weir.OnTimerContext[int64], out weir.Collector[Attribution]) error {
	if best, ok := l.best.Value(); ok {
		out.Collect(best)
		l.best.Clear()
	}
	return nil
}

// Candidates is the left outer interval join of clicks with the
// impressions of the same user at most Window before them: one Attribution
// per matching pair, and one unattributed per click without any.
func Candidates(clicks weir.DataStream[Click], impressions weir.DataStream[Impression]) weir.DataStream[Attribution] {
	return weir.IntervalOuterJoinFunc(
		weir.KeyBy(clicks, func(c Click) int64 { return c.User }),
		weir.KeyBy(impressions, func(i Impression) int64 { return i.User }),
		weir.Between(-Window, 0), weir.LeftOuter,
		func(c *Click, i *Impression, _ weir.JoinContext, out weir.Collector[Attribution]) error {
			a := Attribution{Click: *c} // never nil in a left outer join
			if i != nil {
				a.Impression, a.Attributed = *i, true
			}
			out.Collect(a)
			return nil
		}).Name("candidates")
}

// Attribute picks the latest candidate of each click.
func Attribute(candidates weir.DataStream[Attribution]) weir.DataStream[Attribution] {
	return weir.Process(weir.KeyBy(candidates, func(a Attribution) int64 { return a.Click.ID }),
		&Latest{}).Name("latest")
}

// Build adds the attribution of n generated clicks (and
// ImpressionsPerClick*n impressions) to env and returns the collected
// attributions, one per click (read it after the job).
func Build(env *weir.Environment, d Data, n int) *weir.Collected[Attribution] {
	clicks := weir.Generate(env, int64(n), 0, d.Click,
		weir.ForBoundedOutOfOrderness[Click](clickOutOfOrderness).
			WithTimestampAssigner(func(c Click, _ int64) int64 { return c.TS })).Name("clicks")
	impressions := weir.Generate(env, ImpressionsPerClick*int64(n), 0, d.Impression,
		weir.ForBoundedOutOfOrderness[Impression](impressionOutOfOrderness).
			WithTimestampAssigner(func(i Impression, _ int64) int64 { return i.TS })).Name("impressions")
	return weir.Collect(Attribute(Candidates(clicks, impressions)))
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "attribution:", err)
		os.Exit(1)
	}
}

// run parses the flags, runs the job and prints the counts and samples.
func run(ctx context.Context, args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("attribution", flag.ContinueOnError)
	n := fs.Int("clicks", 50_000, "number of generated clicks (impressions: 4 per click)")
	users := fs.Int64("users", 5000, "number of users")
	p := fs.Int("parallelism", runtime.NumCPU(), "parallelism of every operator")
	samples := fs.Int("samples", 3, "sample lines to print of each kind")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *n < 0 {
		return fmt.Errorf("-clicks must not be negative, got %d", *n)
	}
	if *users < 1 {
		return fmt.Errorf("-users must be positive, got %d", *users)
	}
	env := weir.NewEnvironment(weir.WithParallelism(*p))
	res := Build(env, Data{Users: *users}, *n)
	start := time.Now()
	if err := env.Execute(ctx, "attribution"); err != nil {
		return err
	}
	elapsed := time.Since(start)

	all := res.Values()
	slices.SortFunc(all, func(a, b Attribution) int { return cmpInt(a.Click.ID, b.Click.ID) })
	var attributed, unattributed []Attribution
	for _, a := range all {
		if a.Attributed {
			attributed = append(attributed, a)
		} else {
			unattributed = append(unattributed, a)
		}
	}
	fmt.Fprintf(stdout, "attributed %d clicks against %d impressions of %d users at parallelism %d in %v\n",
		*n, ImpressionsPerClick**n, *users, *p, elapsed.Round(time.Millisecond))
	fmt.Fprintf(stdout, "attributed:   %d (to the user's latest impression at most %v before the click)\n", len(attributed), Window)
	fmt.Fprintf(stdout, "unattributed: %d (no impression of the user in the %v before the click)\n", len(unattributed), Window)
	for _, a := range attributed[:min(*samples, len(attributed))] {
		fmt.Fprintf(stdout, "  %v\n", a)
	}
	for _, a := range unattributed[:min(*samples, len(unattributed))] {
		fmt.Fprintf(stdout, "  %v\n", a)
	}
	return nil
}

func cmpInt(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}
