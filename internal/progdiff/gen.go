package progdiff

import (
	"fmt"
	"math/rand/v2"
)

// props are what the generator knows of a stream.
type props struct {
	// par is the number of subtasks that produce the stream (0 for a
	// union: several producers).
	par int
	// ordered: the sequence of records and watermarks of each key at each
	// producing subtask does not depend on how channels interleave. (The
	// order across keys may: Flink fires timers of equal timestamps in an
	// unspecified order.)
	ordered bool
	// timers: records may come from timers (windows, process functions,
	// joins), so records of different keys with equal timestamps may come
	// in either order.
	timers bool
	// late: the stream may carry records behind its own watermark.
	late bool
	// final: only sinks may read the stream (its records carry the
	// largest timestamp).
	final bool
}

// keyOrdered tells whether a keyed operator fed by a stream of p sees, per
// key, a sequence of records and watermarks that does not depend on how
// channels interleave: the stream is ordered and has one producer.
func (p props) keyOrdered() bool { return p.ordered && p.par == 1 }

type gen struct {
	r     *rand.Rand
	spec  Spec
	props []props // by node id
	used  []bool
	sinks int
}

// Generate returns a random valid program; the same seed gives the same
// program. It chooses only blocks whose output (as a multiset per sink)
// does not depend on how the engines interleave channels (README.md).
func Generate(seed uint64) Spec {
	g := &gen{r: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))}
	g.spec.Name = fmt.Sprintf("prog-%d", seed)
	for range 1 + g.r.IntN(3) {
		g.source()
	}
	for range 1 + g.r.IntN(7) {
		g.op()
	}
	for id := range g.props {
		if !g.used[id] || g.r.IntN(8) == 0 {
			g.sink(id)
		}
	}
	return g.spec
}

func (g *gen) add(n Node, p props) int {
	n.ID = len(g.spec.Nodes)
	g.spec.Nodes = append(g.spec.Nodes, n)
	g.props = append(g.props, p)
	g.used = append(g.used, false)
	for _, i := range n.In {
		g.used[i] = true
	}
	return n.ID
}

func (g *gen) between(lo, hi int64) int64 { return lo + g.r.Int64N(hi-lo+1) }

func (g *gen) source() {
	bound := g.between(0, 5)
	late := g.r.IntN(3) == 0
	keys := 1 + g.r.IntN(5)
	var data []Rec
	var maxTS int64 = g.between(0, 20)
	for range g.between(3, 25) {
		ts := maxTS + g.between(-bound, 8)
		if late && g.r.IntN(4) == 0 {
			ts = maxTS - bound - g.between(1, 25)
		}
		maxTS = max(maxTS, ts)
		data = append(data, Rec{K: string(rune('a' + g.r.IntN(keys))), V: g.between(-10, 40), T: ts})
	}
	// A parallel source: subtask s emits the records at indexes i with
	// i mod par == s, each subtask with its own watermarks, which stay
	// below the timestamps of its records that are not late.
	par := 1
	if g.r.IntN(3) == 0 {
		par = 2 + g.r.IntN(2)
	}
	g.add(Node{Op: "source", Par: par, Bound: bound, Data: data}, props{par: par, ordered: true, late: late})
}

func (g *gen) pick() int {
	for {
		if i := g.r.IntN(len(g.props)); !g.props[i].final {
			return i
		}
	}
}

func (g *gen) par() int { return 1 + g.r.IntN(3) }

// partition chooses how a non-keyed operator of parallelism p reads in.
func (g *gen) partition(in props, p int, broadcast bool) (string, props) {
	opts := []string{"rebalance", "rescale"}
	if in.par == p {
		opts = append(opts, "forward", "forward")
	}
	if broadcast {
		opts = append(opts, "broadcast")
	}
	part := opts[g.r.IntN(len(opts))]
	out := props{par: p, late: in.late, timers: in.timers, ordered: in.ordered && (in.par == 1 || part == "forward")}
	if part == "forward" {
		part = ""
	}
	return part, out
}

func (g *gen) op() {
	i := g.pick()
	in := g.props[i]
	p := g.par()
	keyed := props{par: p, ordered: in.keyOrdered(), late: in.late, timers: true}
	// An event-time operator fed late records decides what is late by the
	// watermark at the moment the record arrives: only deterministic when
	// that sequence is.
	timely := !in.late || in.keyOrdered()
	switch g.r.IntN(16) {
	case 14:
		// Async I/O: the ordered kind keeps the input's order; the
		// unordered one may reorder records between two watermarks.
		part, out := g.partition(in, p, false)
		kind := []string{"ordered", "unordered"}[g.r.IntN(2)]
		if kind == "unordered" {
			out.ordered = false
		}
		g.add(Node{Op: "async", In: []int{i}, Par: p, Part: part, Kind: kind}, out)
	case 15:
		// A non-keyed co-process function: the two inputs interleave.
		j := g.pick()
		if j == i {
			return
		}
		out := props{par: p, late: in.late || g.props[j].late, timers: in.timers || g.props[j].timers}
		g.add(Node{Op: "coproc", In: []int{i, j}, Par: p}, out)
	case 13:
		// Count windows keep or evict records by arrival order.
		if !in.keyOrdered() {
			return
		}
		n := Node{Op: "countwin", In: []int{i}, Par: p, A: g.between(1, 4)}
		if g.r.IntN(2) == 0 {
			n.B = g.between(1, 3)
		}
		g.add(n, props{par: p, ordered: true, final: true})
	case 11:
		part, out := g.partition(in, p, true)
		id := g.add(Node{Op: "proc", In: []int{i}, Par: p, Part: part}, out)
		if g.r.IntN(2) == 0 {
			g.add(Node{Op: "side", In: []int{id}}, out)
		}
	case 12:
		// All keys in one window: lateness would need the whole input's
		// order fixed, so only on inputs without late records.
		if in.late {
			return
		}
		n := Node{Op: "windowall", In: []int{i}, Par: 1}
		g.timeWindow(&n)
		if g.r.IntN(3) == 0 {
			n.Lateness = g.between(1, 20)
		}
		g.add(n, props{par: 1, timers: true})
	case 0:
		part, out := g.partition(in, p, true)
		kind := []string{"add", "mul", "rekey"}[g.r.IntN(3)]
		if kind == "rekey" && in.timers {
			// Records of two keys in a timer tie may become one key.
			out.ordered = false
		}
		g.add(Node{Op: "map", In: []int{i}, Par: p, Part: part, Kind: kind, A: g.between(1, 7)}, out)
	case 1:
		part, out := g.partition(in, p, true)
		a := g.between(2, 5)
		g.add(Node{Op: "filter", In: []int{i}, Par: p, Part: part, A: a, B: g.between(0, a-1)}, out)
	case 2:
		part, out := g.partition(in, p, g.r.IntN(2) == 0)
		g.add(Node{Op: "flatmap", In: []int{i}, Par: p, Part: part}, out)
	case 3:
		j := g.pick()
		if j == i {
			return
		}
		ids := []int{i, j}
		if k := g.pick(); g.r.IntN(3) == 0 && k != i && k != j {
			ids = append(ids, k)
		}
		var out props
		for _, k := range ids {
			out.late = out.late || g.props[k].late
			out.timers = out.timers || g.props[k].timers
		}
		g.add(Node{Op: "union", In: ids}, out)
	case 4:
		if !in.keyOrdered() {
			return
		}
		kinds := []string{"sum", "max"}
		keyed.timers = in.timers
		g.add(Node{Op: "rolling", In: []int{i}, Par: p, Kind: kinds[g.r.IntN(2)]}, keyed)
	case 5, 6:
		if !timely {
			return
		}
		g.window(i, in, keyed)
	case 7:
		if !timely {
			return
		}
		kind := "buffer"
		if in.keyOrdered() {
			// Running state is order-sensitive: each record's output
			// depends on the records before it.
			kind = []string{"buffer", "running", "agg"}[g.r.IntN(3)]
		}
		id := g.add(Node{Op: "kproc", In: []int{i}, Par: p, Kind: kind, A: g.between(0, 10)}, keyed)
		if g.r.IntN(2) == 0 {
			g.add(Node{Op: "side", In: []int{id}}, props{par: p, ordered: keyed.ordered, late: in.late, timers: in.timers})
		}
	case 8, 9, 10:
		j := g.pick()
		if j == i || in.late || g.props[j].late {
			return
		}
		two := props{par: p, timers: true}
		switch g.r.IntN(5) {
		case 4:
			g.add(Node{Op: "bcast", In: []int{i, j}, Par: p, A: g.between(0, 10)}, two)
		case 0:
			lo := g.between(-10, 5)
			kind := []string{"", "", "lower-exclusive", "upper-exclusive", "exclusive"}[g.r.IntN(5)]
			up := lo + g.between(0, 15)
			// Late side outputs: a record is late when its timestamp is
			// below the minimum of both inputs' watermarks, so late
			// records would race with the other input's watermarks;
			// inputs carry none, and the side outputs must stay empty.
			late := g.r.IntN(2) == 0
			id := g.add(Node{Op: "ijoin", In: []int{i, j}, Par: p, Kind: kind, Lower: lo, Upper: up, Late: late}, two)
			if late {
				for _, side := range []string{"", "right"} {
					if g.r.IntN(2) == 0 {
						g.add(Node{Op: "side", In: []int{id}, Kind: side}, props{par: p, timers: true})
					}
				}
			}
		case 1, 2:
			n := Node{Op: "wjoin", In: []int{i, j}, Par: p}
			g.timeWindow(&n)
			n.Kind = []string{"join", "cogroup"}[g.r.IntN(2)]
			g.add(n, two)
		case 3:
			id := g.add(Node{Op: "cokproc", In: []int{i, j}, Par: p, A: g.between(0, 10)}, two)
			if g.r.IntN(2) == 0 {
				g.add(Node{Op: "side", In: []int{id}}, two)
			}
		}
	}
}

func (g *gen) window(i int, in, keyed props) {
	n := Node{Op: "window", In: []int{i}, Par: keyed.par}
	// A record at ts merges with a session that ends at ts, unless the
	// watermark reached ts-1 first and the session fired and was purged:
	// a race between channels (README.md).
	if in.keyOrdered() && g.r.IntN(3) == 0 {
		n.Kind, n.Gap = "session", g.between(1, 12)
	} else {
		g.timeWindow(&n)
	}
	n.Fn = []string{"reduce", "aggregate", "process", "reduceproc", "aggproc"}[g.r.IntN(5)]
	if in.keyOrdered() && g.r.IntN(4) == 0 {
		n.Count = g.between(1, 4)
	}
	if g.r.IntN(3) == 0 {
		n.Lateness = g.between(1, 20)
	}
	n.Late = g.r.IntN(3) == 0
	if g.r.IntN(4) == 0 {
		// A count evictor keeps the last elements by arrival order; a
		// time evictor decides by timestamps only.
		if in.keyOrdered() && g.r.IntN(2) == 0 {
			n.Evictor, n.Keep = "count", g.between(1, 4)
		} else {
			n.Evictor, n.Keep = "time", g.between(0, 15)
			if n.Keep == 0 && (n.Fn == "reduce" || n.Fn == "reduceproc") {
				// Keeping 0 ms evicts every element: Flink reduces no
				// elements to null and fails (docs/coming-from-flink.md).
				n.Keep = 1
			}
		}
		n.EvictAfter = g.r.IntN(2) == 0
	}
	out := keyed
	out.late = in.late && n.Lateness > 0
	id := g.add(n, out)
	if n.Late {
		g.add(Node{Op: "side", In: []int{id}}, props{par: keyed.par, ordered: keyed.ordered, late: true, timers: in.timers})
	}
}

// timeWindow makes n a tumbling or sliding window (and names it in Kind).
func (g *gen) timeWindow(n *Node) {
	if g.r.IntN(2) == 0 {
		n.Kind, n.Size = "tumbling", g.between(2, 30)
		n.Offset = g.between(0, n.Size-1) * int64(g.r.IntN(2))
		return
	}
	n.Kind, n.Slide = "sliding", g.between(2, 15)
	n.Size = n.Slide * g.between(1, 4)
	n.Offset = g.between(0, n.Slide-1) * int64(g.r.IntN(2))
}

func (g *gen) sink(id int) {
	in := g.props[id]
	p := g.par()
	part, out := g.partition(in, p, false)
	g.spec.Nodes = append(g.spec.Nodes, Node{ID: len(g.spec.Nodes), Op: "sink", In: []int{id}, Par: p, Part: part, Sink: g.sinks,
		Ordered: out.ordered && p == 1})
	g.sinks++
}
