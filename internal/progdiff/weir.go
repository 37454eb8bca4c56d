package progdiff

import (
	"context"
	"fmt"
	"io"
	"math"
	"strconv"
	"sync"
	"time"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/connector"
	"github.com/weirstream/weir/state"
	"github.com/weirstream/weir/window"
)

// R is the one record type of every stream.
type R struct {
	K string
	V int64
	T int64
}

func ms(n int64) time.Duration { return time.Duration(n) * time.Millisecond }

// punctuated is the generator of every source: after each record,
// watermark = max timestamp seen - bound - 1.
type punctuated struct {
	bound, max int64
	seen       bool
}

func (p *punctuated) OnEvent(_ R, ts int64, out weir.WatermarkOutput) {
	if !p.seen || ts > p.max {
		p.max, p.seen = ts, true
	}
	out.EmitWatermark(p.max - p.bound - 1)
}

func (p *punctuated) OnPeriodicEmit(weir.WatermarkOutput) {}

// Run runs the spec as a Weir job (or, in the harness mode, on Weir's
// test harness) and returns each sink's lines.
func Run(ctx context.Context, s Spec) (Output, error) {
	if s.Harness != nil {
		return runHarness(s)
	}
	env := weir.NewEnvironment(weir.WithParallelism(1))
	streams := map[int]weir.DataStream[R]{}
	tags := map[int]weir.OutputTag[R]{}
	// rightTags: the right input's late records of an ijoin node.
	rightTags := map[int]weir.OutputTag[R]{}
	var mu sync.Mutex
	out := Output{}
	key := func(r R) string { return r.K }
	for _, n := range s.Nodes {
		in := func(i int) weir.DataStream[R] {
			ds, ok := streams[n.In[i]]
			if !ok {
				panic(fmt.Sprintf("node %d: input %d not defined before", n.ID, n.In[i]))
			}
			return ds
		}
		part := func(ds weir.DataStream[R]) weir.DataStream[R] {
			switch n.Part {
			case "rebalance":
				return weir.Rebalance(ds)
			case "rescale":
				return weir.Rescale(ds)
			case "broadcast":
				return weir.BroadcastPartition(ds)
			}
			return ds
		}
		par := func(ds weir.DataStream[R]) weir.DataStream[R] { return ds.SetParallelism(n.Par) }
		tag := weir.NewOutputTag[R](fmt.Sprintf("side-%d", n.ID))
		rightTag := weir.NewOutputTag[R](fmt.Sprintf("side-%d-right", n.ID))
		var ds weir.DataStream[R]
		switch n.Op {
		case "source":
			recs := make([]weir.Record[R], len(n.Data))
			for i, r := range n.Data {
				recs[i] = weir.Record[R]{Value: R{r.K, r.V, r.T}, TS: r.T}
			}
			bound := n.Bound
			strategy := weir.ForGenerator(func() weir.WatermarkGenerator[R] {
				return &punctuated{bound: bound}
			}).WithTimestampAssigner(func(r R, _ int64) int64 { return r.T })
			if n.Par > 1 {
				ds = weir.FromSource[R](env, partSource(recs), strategy, fmt.Sprintf("source-%d", n.ID)).SetParallelism(n.Par)
			} else {
				ds = weir.FromRecords(env, recs, strategy)
			}
		case "map":
			a, kind := n.A, n.Kind
			ds = par(weir.Map(part(in(0)), func(r R) R {
				switch kind {
				case "add":
					r.V += a
				case "mul":
					r.V = floorMod(r.V*a, 1000003)
				case "rekey":
					r.K = "k" + strconv.FormatInt(floorMod(r.V, a), 10)
				}
				return r
			}))
		case "filter":
			a, b := n.A, n.B
			ds = par(weir.Filter(part(in(0)), func(r R) bool { return floorMod(r.V, a) != b }))
		case "flatmap":
			ds = par(weir.FlatMap(part(in(0)), func(r R, out weir.Collector[R]) error {
				for i := range floorMod(r.V, 3) {
					out.Collect(R{r.K, r.V + i, r.T})
				}
				return nil
			}))
		case "proc":
			ds = par(weir.ProcessStreamFunc(part(in(0)), func(r R, ctx weir.Context, out weir.Collector[R]) error {
				if floorMod(r.V, 5) == 0 {
					weir.Output(ctx, tag, r)
				}
				ts, _ := ctx.Timestamp()
				out.Collect(R{r.K, r.V*2 + floorMod(ts, 7), r.T})
				return nil
			}))
		case "windowall":
			ws := weir.WindowAll(in(0), assigner(n))
			if n.Lateness > 0 {
				ws = ws.AllowedLateness(ms(n.Lateness))
			}
			ds = weir.ProcessWindowFunc(ws, func(_ weir.NoKey, ctx weir.ProcessWindowContext[window.TimeWindow], elems []R, out weir.Collector[R]) error {
				var s int64
				for _, r := range elems {
					s += r.V
				}
				out.Collect(R{"all@" + strconv.FormatInt(ctx.Window().Start, 10), int64(len(elems))*1000 + s, 0})
				return nil
			})
		case "union":
			more := make([]weir.DataStream[R], 0, len(n.In)-1)
			for i := 1; i < len(n.In); i++ {
				more = append(more, in(i))
			}
			ds = weir.Union(in(0), more...)
		case "rolling":
			f := func(a, b R) R { return R{b.K, a.V + b.V, b.T} }
			if n.Kind == "max" {
				f = func(a, b R) R { return R{b.K, max(a.V, b.V), b.T} }
			}
			ds = par(weir.RollingReduce(weir.KeyBy(in(0), key), f))
		case "window":
			ds = buildWindow(n, weir.KeyBy(in(0), key), tag)
		case "countwin":
			var ws weir.WindowedStream[string, R, window.GlobalWindow]
			if n.B > 0 {
				ws = weir.CountWindow(weir.KeyBy(in(0), key), n.A, n.B)
			} else {
				ws = weir.CountWindow(weir.KeyBy(in(0), key), n.A)
			}
			ds = par(weir.ProcessWindowFunc(ws, func(k string, _ weir.ProcessWindowContext[window.GlobalWindow], elems []R, out weir.Collector[R]) error {
				var s int64
				for _, r := range elems {
					s += r.V
				}
				out.Collect(R{k, int64(len(elems))*1000 + s, 0})
				return nil
			}))
		case "async":
			if n.Kind == "ordered" {
				ds = par(weir.OrderedWait[R, R](part(in(0)), asyncFn{}, time.Minute, 4))
			} else {
				ds = par(weir.UnorderedWait[R, R](part(in(0)), asyncFn{}, time.Minute, 4))
			}
		case "coproc":
			ds = par(weir.CoProcess[R, R, R](weir.Connect(in(0), in(1)), coproc{}))
		case "kproc":
			ds = par(weir.Process[string, R, R](weir.KeyBy(in(0), key), &kproc{Kind: n.Kind, Delay: n.A, Tag: tag}))
		case "cokproc":
			ds = par(weir.KeyedCoProcess[string, R, R, R](weir.ConnectKeyed(weir.KeyBy(in(0), key), weir.KeyBy(in(1), key)),
				&kproc{Kind: "buffer", Delay: n.A, Tag: tag}))
		case "ijoin":
			var opts []weir.IntervalJoinOption
			if n.Kind == "lower-exclusive" || n.Kind == "exclusive" {
				opts = append(opts, weir.LowerBoundExclusive())
			}
			if n.Kind == "upper-exclusive" || n.Kind == "exclusive" {
				opts = append(opts, weir.UpperBoundExclusive())
			}
			if n.Late {
				opts = append(opts, weir.SideOutputLeftLateData(tag), weir.SideOutputRightLateData(rightTag))
			}
			ds = par(weir.IntervalJoinFunc(weir.KeyBy(in(0), key), weir.KeyBy(in(1), key), weir.Between(ms(n.Lower), ms(n.Upper)),
				func(l, r R, _ weir.JoinContext, out weir.Collector[R]) error {
					out.Collect(R{l.K, l.V*1000 + r.V, 0})
					return nil
				}, opts...))
		case "wjoin":
			j := weir.WindowJoin(weir.KeyBy(in(0), key), weir.KeyBy(in(1), key), assigner(n))
			if n.Kind == "cogroup" {
				ds = par(weir.CoGroup(j, func(k string, _ window.TimeWindow, left, right []R, out weir.Collector[R]) error {
					var sl, sr int64
					for _, r := range left {
						sl += r.V
					}
					for _, r := range right {
						sr += r.V
					}
					out.Collect(R{k, (sl*1000+sr)*100 + int64(len(left))*10 + int64(len(right)), 0})
					return nil
				}))
			} else {
				ds = par(weir.Join(j, func(a, b R) R { return R{a.K, a.V*1000 + b.V, 0} }))
			}
		case "bcast":
			ds = par(weir.ProcessKeyedBroadcast[string, R, R, R](weir.ConnectKeyedBroadcast(weir.KeyBy(in(0), key), weir.Broadcast(in(1), bstate)),
				&bproc{Delay: n.A}))
		case "side":
			if n.Kind == "right" {
				ds = weir.SideOutput(in(0), rightTags[n.In[0]])
			} else {
				ds = weir.SideOutput(in(0), tags[n.In[0]])
			}
		case "sink":
			sink := n.Sink
			lines := weir.ProcessStreamFunc(part(in(0)), func(r R, ctx weir.Context, out weir.Collector[string]) error {
				ts := "none"
				if t, ok := ctx.Timestamp(); ok {
					ts = strconv.FormatInt(t, 10)
				}
				out.Collect(fmt.Sprintf("sink%d %s %d %s", sink, r.K, r.V, ts))
				return nil
			}).SetParallelism(n.Par)
			weir.SinkFunc(lines, func(l string) error {
				mu.Lock()
				out[sink] = append(out[sink], l)
				mu.Unlock()
				return nil
			}).SetParallelism(n.Par)
			continue
		default:
			return nil, fmt.Errorf("node %d: unknown op %q", n.ID, n.Op)
		}
		streams[n.ID] = ds
		tags[n.ID] = tag
		rightTags[n.ID] = rightTag
	}
	if err := env.Execute(ctx, s.Name); err != nil {
		return nil, err
	}
	return out, nil
}

type aggAcc struct {
	K    string
	N, S int64
}

type agg struct{}

func (agg) CreateAccumulator() aggAcc { return aggAcc{} }
func (agg) Add(r R, a aggAcc) aggAcc  { return aggAcc{r.K, a.N + 1, a.S + r.V} }
func (agg) GetResult(a aggAcc) R      { return R{a.K, a.N*1000 + a.S, 0} }
func (agg) Merge(a, b aggAcc) aggAcc {
	k := a.K
	if k == "" {
		k = b.K
	}
	return aggAcc{k, a.N + b.N, a.S + b.S}
}

// assigner is the window assigner of a window, windowall or wjoin node:
// sliding when slide is set, sessions when gap is, else tumbling.
func assigner(n Node) window.Assigner[window.TimeWindow] {
	switch {
	case n.Gap > 0:
		return window.EventTimeSessions(ms(n.Gap))
	case n.Slide > 0:
		return window.SlidingEventTime(ms(n.Size), ms(n.Slide)).WithOffset(ms(n.Offset))
	default:
		return window.TumblingEventTime(ms(n.Size)).WithOffset(ms(n.Offset))
	}
}

func buildWindow(n Node, ks weir.KeyedStream[string, R], tag weir.OutputTag[R]) weir.DataStream[R] {
	ws := weir.Window(ks, assigner(n))
	if n.Count > 0 {
		ws = ws.Trigger(window.CountTrigger(n.Count))
	}
	switch n.Evictor {
	case "count":
		ws = ws.Evictor(window.CountEvictor(n.Keep, n.EvictAfter))
	case "time":
		ws = ws.Evictor(window.TimeEvictor(ms(n.Keep), n.EvictAfter))
	}
	if n.Lateness > 0 {
		ws = ws.AllowedLateness(ms(n.Lateness))
	}
	if n.Late {
		ws = ws.SideOutputLateData(tag)
	}
	var ds weir.DataStream[R]
	switch n.Fn {
	case "reduce":
		ds = weir.Reduce(ws, func(a, b R) R { return R{a.K, a.V + b.V, max(a.T, b.T)} })
	case "aggregate":
		ds = weir.Aggregate(ws, agg{})
	case "reduceproc":
		ds = weir.ReduceWithProcessFunc(ws, func(a, b R) R { return R{a.K, a.V + b.V, max(a.T, b.T)} },
			func(k string, ctx weir.ProcessWindowContext[window.TimeWindow], elems []R, out weir.Collector[R]) error {
				out.Collect(R{k + "@" + strconv.FormatInt(ctx.Window().End, 10), elems[0].V, 0})
				return nil
			})
	case "aggproc":
		ds = weir.AggregateWithProcessFunc(ws, agg{},
			func(k string, ctx weir.ProcessWindowContext[window.TimeWindow], elems []R, out weir.Collector[R]) error {
				out.Collect(R{k + "#" + strconv.FormatInt(ctx.Window().Start, 10), elems[0].V, 0})
				return nil
			})
	default:
		ds = weir.ProcessWindowFunc(ws, func(k string, ctx weir.ProcessWindowContext[window.TimeWindow], elems []R, out weir.Collector[R]) error {
			var s int64
			for _, r := range elems {
				s += r.V
			}
			out.Collect(R{k + "@" + strconv.FormatInt(ctx.Window().Start, 10), int64(len(elems))*1000 + s, 0})
			return nil
		})
	}
	return ds.SetParallelism(n.Par)
}

// kproc is the keyed (co-)process function of the kproc and cokproc
// blocks (README.md).
type kproc struct {
	Kind  string
	Delay int64
	Tag   weir.OutputTag[R]

	buf   state.MapState[int64, int64]
	fired state.ValueState[int64]
	total state.ReducingState[int64]
	last  state.ListState[int64]
	stats state.AggregatingState[int64, int64]
}

func (p *kproc) Open(ctx weir.KeyedRuntimeContext[string]) (err error) {
	if p.buf, err = weir.GetMapState(ctx, state.Map[int64, int64]("buf")); err != nil {
		return err
	}
	if p.fired, err = weir.GetValueState(ctx, state.Value[int64]("fired")); err != nil {
		return err
	}
	if p.total, err = weir.GetReducingState(ctx, state.Reducing[int64]("total", func(a, b int64) int64 { return a + b })); err != nil {
		return err
	}
	if p.last, err = weir.GetListState(ctx, state.List[int64]("last")); err != nil {
		return err
	}
	p.stats, err = weir.GetAggregatingState(ctx, state.Aggregating[int64, stats, int64]("stats", statsFn{}))
	return err
}

// stats is the accumulator of the kproc block's AggregatingState: count,
// sum and maximum of the values added.
type stats struct{ N, S, Max int64 }

// statsFn aggregates values into stats; the result is
// (count*1000 + sum)*100 + floorMod(max, 100).
type statsFn struct{}

func (statsFn) CreateAccumulator() stats { return stats{Max: math.MinInt64} }
func (statsFn) Add(v int64, a stats) stats {
	return stats{a.N + 1, a.S + v, max(a.Max, v)}
}
func (statsFn) GetResult(a stats) int64 { return (a.N*1000+a.S)*100 + floorMod(a.Max, 100) }
func (statsFn) Merge(a, b stats) stats  { return stats{a.N + b.N, a.S + b.S, max(a.Max, b.Max)} }

func (p *kproc) element(r R, mult int64, ctx weir.KeyedContext[string], out weir.Collector[R]) error {
	if floorMod(r.V, 5) == 0 {
		weir.Output(ctx, p.Tag, r)
	}
	ts, _ := ctx.Timestamp()
	if p.Kind == "agg" {
		p.stats.Add(r.V)
		v, _ := p.stats.Get()
		out.Collect(R{r.K, v, r.T})
		if floorMod(r.V, 7) == 0 {
			p.stats.Clear()
		}
		return nil
	}
	if p.Kind == "running" {
		p.total.Add(r.V)
		l := append(p.last.Get(), r.V)
		if len(l) > 3 {
			l = l[len(l)-3:]
		}
		p.last.Update(l)
		t, _ := p.total.Get()
		var s int64
		for _, v := range l {
			s += v
		}
		out.Collect(R{r.K, t*1000 + s, r.T})
		return nil
	}
	old, _ := p.buf.Get(ts)
	p.buf.Put(ts, old+r.V*mult)
	ctx.TimerService().RegisterEventTimeTimer(ts + p.Delay)
	return nil
}

func (p *kproc) ProcessElement(r R, ctx weir.KeyedContext[string], out weir.Collector[R]) error {
	return p.element(r, 1, ctx, out)
}

func (p *kproc) ProcessElement1(r R, ctx weir.KeyedContext[string], out weir.Collector[R]) error {
	return p.element(r, 1, ctx, out)
}

func (p *kproc) ProcessElement2(r R, ctx weir.KeyedContext[string], out weir.Collector[R]) error {
	return p.element(r, 7, ctx, out)
}

func (p *kproc) OnTimer(t int64, ctx weir.OnTimerContext[string], out weir.Collector[R]) error {
	var sum int64
	var done []int64
	for ts, v := range p.buf.All() {
		if ts <= t {
			sum += v
			done = append(done, ts)
		}
	}
	for _, ts := range done {
		p.buf.Remove(ts)
	}
	f, _ := p.fired.Value()
	f++
	p.fired.Update(f)
	out.Collect(R{ctx.CurrentKey(), sum*1000 + f, 0})
	return nil
}

// bstate is the broadcast state of the bcast block: timestamp -> sum.
var bstate = state.Map[int64, int64]("bstate")

// bproc is the keyed broadcast process function of the bcast block
// (README.md).
type bproc struct {
	Delay int64
	buf   state.MapState[int64, int64]
}

func (p *bproc) Open(ctx weir.KeyedRuntimeContext[string]) (err error) {
	p.buf, err = weir.GetMapState(ctx, state.Map[int64, int64]("buf"))
	return err
}

func (p *bproc) ProcessElement(r R, ctx weir.KeyedReadOnlyBroadcastContext[string], _ weir.Collector[R]) error {
	ts, _ := ctx.Timestamp()
	old, _ := p.buf.Get(ts)
	p.buf.Put(ts, old+r.V)
	ctx.TimerService().RegisterEventTimeTimer(ts + p.Delay)
	return nil
}

func (p *bproc) ProcessBroadcastElement(r R, ctx weir.KeyedBroadcastContext[string], _ weir.Collector[R]) error {
	bs, err := weir.BroadcastStateOf(ctx, bstate)
	if err != nil {
		return err
	}
	ts, _ := ctx.Timestamp()
	old, _ := bs.Get(ts)
	bs.Put(ts, old+r.V)
	return nil
}

func (p *bproc) OnTimer(t int64, ctx weir.KeyedBroadcastOnTimerContext[string], out weir.Collector[R]) error {
	var own, b int64
	var done []int64
	for ts, v := range p.buf.All() {
		if ts <= t {
			own += v
			done = append(done, ts)
		}
	}
	for _, ts := range done {
		p.buf.Remove(ts)
	}
	bs, err := weir.ReadOnlyBroadcastStateOf(ctx, bstate)
	if err != nil {
		return err
	}
	for ts, v := range bs.All() {
		if ts <= t {
			b += v
		}
	}
	out.Collect(R{ctx.CurrentKey(), own*1000 + b, 0})
	return nil
}

// asyncFn answers every record at once with one result (the async block).
type asyncFn struct{}

func (asyncFn) AsyncInvoke(_ context.Context, r R, res weir.ResultFuture[R]) {
	res.Complete([]R{{r.K, r.V*3 + 1, r.T}})
}

// coproc is the non-keyed co-process block: each input's records, marked
// by the input they came from.
type coproc struct{}

func (coproc) ProcessElement1(r R, _ weir.Context, out weir.Collector[R]) error {
	out.Collect(R{r.K, r.V + 100, r.T})
	return nil
}

func (coproc) ProcessElement2(r R, _ weir.Context, out weir.Collector[R]) error {
	out.Collect(R{r.K, r.V - 100, r.T})
	return nil
}

// partSource is the parallel source block: split s of p holds the records
// at the indexes i with i mod p == s, and goes to subtask s.
type partSource []weir.Record[R]

// partSplit is split S of P.
type partSplit struct{ S, P int }

func (s partSplit) SplitID() string { return fmt.Sprintf("%d/%d", s.S, s.P) }

func (s partSource) Splits(p int) ([]connector.Split, error) {
	splits := make([]connector.Split, p)
	for i := range splits {
		splits[i] = partSplit{i, p}
	}
	return splits, nil
}

func (s partSource) Reader(split connector.Split) (connector.SplitReader[R], error) {
	sp, ok := split.(partSplit)
	if !ok {
		return nil, fmt.Errorf("not a split of this source: %v", split)
	}
	return &partReader{src: s, next: sp.S, step: sp.P}, nil
}

// partReader reads one split of a partSource, one record a call.
type partReader struct {
	src        partSource
	next, step int
}

func (r *partReader) Read(_ context.Context, buf []connector.Record[R]) ([]connector.Record[R], error) {
	if r.next >= len(r.src) {
		return buf, io.EOF
	}
	buf = append(buf, r.src[r.next])
	r.next += r.step
	if r.next >= len(r.src) {
		return buf, io.EOF
	}
	return buf, nil
}

func (r *partReader) Close() error { return nil }
