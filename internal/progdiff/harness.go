package progdiff

import (
	"fmt"
	"math/rand/v2"
	"strconv"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/state"
	"github.com/weirstream/weir/weirtest"
)

// Harness is a program of the harness mode: one keyed process operator
// (the ttl block, README.md) driven by a script of steps through a test
// harness with a manual processing-time clock (Weir's weirtest.OneInput,
// Flink's KeyedOneInputStreamOperatorTestHarness), for what a MiniCluster
// cannot control: state TTL and processing-time timers.
type Harness struct {
	// TTL of the value, list and map states, ms.
	TTL int64 `json:"ttl"`
	// Update: "write" (TTL refreshed on create and write) or "read" (also
	// on read).
	Update string `json:"update"`
	// Delay of the timers the function registers, ms.
	Delay int64  `json:"delay"`
	Steps []Step `json:"steps"`
}

// Step is one step of a harness program: a record ("rec": K, V at
// timestamp T), a watermark ("wm" T) or processing time moved to T
// ("time": the TTL clock first, then the timers).
type Step struct {
	Op string `json:"op"`
	K  string `json:"k,omitempty"`
	V  int64  `json:"v,omitempty"`
	T  int64  `json:"t"`
}

// runHarness runs a harness program on Weir's test harness and returns its
// output as sink 0's lines.
func runHarness(s Spec) (Output, error) {
	h := s.Harness
	fn := &ttlProc{cfg: *h}
	hs, err := weirtest.NewOneInput(func(in weir.DataStream[R]) weir.DataStream[R] {
		return weir.Process[string, R, R](weir.KeyBy(in, func(r R) string { return r.K }), fn)
	})
	if err != nil {
		return nil, err
	}
	defer hs.Close()
	for _, st := range h.Steps {
		switch st.Op {
		case "rec":
			err = hs.ProcessElement(R{st.K, st.V, st.T}, st.T)
		case "wm":
			err = hs.ProcessWatermark(st.T)
		case "time":
			err = hs.SetProcessingTime(st.T)
		default:
			err = fmt.Errorf("unknown step %q", st.Op)
		}
		if err != nil {
			return nil, err
		}
	}
	out := Output{}
	for _, r := range hs.Output() {
		ts := "none"
		if r.TS != weir.NoTimestamp {
			ts = strconv.FormatInt(r.TS, 10)
		}
		out[0] = append(out[0], fmt.Sprintf("sink0 %s %d %s", r.Value.K, r.Value.V, ts))
	}
	return out, nil
}

// ttlProc is the keyed process function of the harness mode (README.md):
// value, list and map state with TTL, event- and processing-time timers.
type ttlProc struct {
	cfg  Harness
	val  state.ValueState[int64]
	list state.ListState[int64]
	m    state.MapState[int64, int64]
}

func (p *ttlProc) Open(ctx weir.KeyedRuntimeContext[string]) (err error) {
	ttl := state.TTL(ms(p.cfg.TTL))
	if p.cfg.Update == "read" {
		ttl.Update = state.UpdateOnReadAndWrite
	}
	opt := state.WithTTL(ttl)
	if p.val, err = weir.GetValueState(ctx, state.Value[int64]("val", opt)); err != nil {
		return err
	}
	if p.list, err = weir.GetListState(ctx, state.List[int64]("list", opt)); err != nil {
		return err
	}
	p.m, err = weir.GetMapState(ctx, state.Map[int64, int64]("map", opt))
	return err
}

// view reads the three states: "v=VALUE|l=COUNT,SUM|m=COUNT,SUM" (VALUE
// "-" when absent).
func (p *ttlProc) view() string {
	v := "-"
	if x, ok := p.val.Value(); ok {
		v = strconv.FormatInt(x, 10)
	}
	var n, s int64
	for x := range p.list.All() {
		n++
		s += x
	}
	var mn, ms int64
	for _, x := range p.m.All() {
		mn++
		ms += x
	}
	return fmt.Sprintf("v=%s|l=%d,%d|m=%d,%d", v, n, s, mn, ms)
}

func (p *ttlProc) ProcessElement(r R, ctx weir.KeyedContext[string], out weir.Collector[R]) error {
	out.Collect(R{r.K + "|" + p.view(), r.V, r.T})
	if floorMod(r.V, 2) == 0 {
		old, _ := p.val.Value()
		p.val.Update(old + r.V)
	}
	p.list.Add(r.V)
	if floorMod(r.V, 3) != 0 {
		p.m.Put(floorMod(r.V, 4), r.V)
	}
	ts := ctx.TimerService()
	ts.RegisterProcessingTimeTimer(ts.CurrentProcessingTime() + p.cfg.Delay)
	if t, ok := ctx.Timestamp(); ok {
		ts.RegisterEventTimeTimer(t + p.cfg.Delay)
	}
	return nil
}

func (p *ttlProc) OnTimer(t int64, ctx weir.OnTimerContext[string], out weir.Collector[R]) error {
	domain := "event"
	if ctx.TimeDomain() != weir.EventTime {
		domain = "proc"
	}
	out.Collect(R{ctx.CurrentKey() + "|" + domain + "@" + strconv.FormatInt(t, 10) + "|" + p.view(), 0, 0})
	return nil
}

// GenerateHarness returns a random program of the harness mode; the same
// seed gives the same program. Processing time and watermarks only move
// forward; the first step sets processing time.
func GenerateHarness(seed uint64) Spec {
	g := &gen{r: rand.New(rand.NewPCG(seed, seed^0x5851f42d4c957f2d))}
	h := &Harness{TTL: g.between(1, 10), Update: []string{"write", "read"}[g.r.IntN(2)], Delay: g.between(1, 10)}
	now, wm := g.between(0, 5), int64(-1)
	h.Steps = append(h.Steps, Step{Op: "time", T: now})
	keys := 1 + g.r.IntN(3)
	for range g.between(5, 40) {
		switch g.r.IntN(6) {
		case 0, 1:
			// Often past the TTL or a timer, sometimes not at all.
			now += g.between(0, 2*h.TTL)
			h.Steps = append(h.Steps, Step{Op: "time", T: now})
		case 2:
			wm += g.between(1, 10)
			h.Steps = append(h.Steps, Step{Op: "wm", T: wm})
		default:
			h.Steps = append(h.Steps, Step{Op: "rec", K: string(rune('a' + g.r.IntN(keys))), V: g.between(-10, 40), T: wm + g.between(-3, 10)})
		}
	}
	h.Steps = append(h.Steps, Step{Op: "time", T: now + 3*h.TTL + h.Delay}, Step{Op: "wm", T: wm + 50})
	return Spec{Name: fmt.Sprintf("harness-%d", seed), Harness: h}
}
