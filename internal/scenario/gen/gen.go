// Package gen generates random scenario files (docs/scenario-format.md)
// for the conformance corpus: every operator and parameter of the format,
// with input lines that stress the channel valves (1 to 3 channels per
// input, idle and active lines, watermarks that go backwards), late data
// and processing time. A file depends only on its seed, so the corpus in
// testdata/scenarios/generated can be regenerated and checked against the
// generator; the expected `> ` lines come from Apache Flink, through
// bench/flink-oracle (scripts/flink-oracle.sh).
package gen

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
	"time"
)

// A File is one generated scenario, without expected outputs.
type File struct {
	// Seed is the seed that produced the file.
	Seed uint64
	// Shape names the operator shape: watermarks-1, watermarks-2,
	// interval-join, window, window-join or cogroup.
	Shape string
	// Text is the file's content: a header comment naming the seed, the op
	// line and the input lines.
	Text string
}

// Name is the file's name in the corpus: <shape>-<seed>.scn.
func (f File) Name() string { return fmt.Sprintf("%s-%d.scn", f.Shape, f.Seed) }

// Header is the comment line that starts every generated file.
func Header(seed uint64) string {
	return fmt.Sprintf("# generated: go run ./internal/tools/scengen -seed %d", seed)
}

// shapes and their weights: the window shapes have the most parameters.
var shapes = []struct {
	name   string
	weight int
}{
	{"watermarks-1", 8},
	{"watermarks-2", 8},
	{"interval-join", 18},
	{"window", 40},
	{"window-join", 13},
	{"cogroup", 13},
}

// Generate returns the scenario of one seed.
func Generate(seed uint64) File {
	r := rand.New(rand.NewPCG(seed, 0x5eed))
	total := 0
	for _, s := range shapes {
		total += s.weight
	}
	pick := r.IntN(total)
	shape := shapes[0].name
	for _, s := range shapes {
		if pick < s.weight {
			shape = s.name
			break
		}
		pick -= s.weight
	}
	g := &gen{r: r}
	var op string
	var inputs int
	switch shape {
	case "watermarks-1", "watermarks-2":
		inputs = 1
		if shape == "watermarks-2" {
			inputs = 2
		}
		g.channels = 1 + r.IntN(3)
		op = fmt.Sprintf("op watermarks inputs=%d", inputs)
		g.recWeight, g.wmWeight, g.statusWeight, g.procWeight = 3, 5, 3, 1
	case "interval-join":
		inputs = 2
		g.channels = 1 + r.IntN(3)
		lower := int64(r.IntN(14)) - 9
		upper := lower + int64(r.IntN(11))
		op = fmt.Sprintf("op interval-join lower=%d upper=%d", lower, upper)
		if r.IntN(3) == 0 {
			op += " lower-exclusive"
		}
		if r.IntN(3) == 0 {
			op += " upper-exclusive"
		}
		g.recWeight, g.wmWeight, g.statusWeight, g.procWeight = 6, 4, 1, 0
	default: // window, window-join, cogroup
		inputs = 1
		if shape != "window" {
			inputs = 2
		}
		g.channels = 1 + r.IntN(3)
		var params string
		params, g.processing, g.noEnd = windowParams(r)
		op = "op " + shape + " " + params
		if shape == "window" {
			fns := []string{"count", "sum", "min", "max", "list"}
			fn := fns[r.IntN(len(fns))]
			op += " fn=" + fn
			g.numeric = fn == "sum" || fn == "min" || fn == "max"
		}
		g.recWeight, g.wmWeight, g.statusWeight, g.procWeight = 6, 4, 1, 0
		if g.processing {
			g.procWeight = 4
		} else if r.IntN(6) == 0 {
			g.procWeight = 1 // proc lines that an event-time operator ignores
		}
	}
	if g.channels > 1 || r.IntN(4) == 0 {
		op += fmt.Sprintf(" channels=%d", g.channels)
	}
	g.inputs = inputs
	lines := g.lines()
	// One file in 16 moves all its times next to the end of the int64
	// range, where time arithmetic overflows. The choice has its own
	// stream, so the other files stay as they were before it existed.
	x := rand.New(rand.NewPCG(seed, 0xed9e))
	if !g.noEnd && x.IntN(16) == 0 {
		lines = nearLimit(lines, x)
	}
	// One file in 16 sets one duration or count of the op line to a large
	// value (up to the largest whole number of milliseconds a Go
	// time.Duration holds), also on its own stream.
	if y := rand.New(rand.NewPCG(seed, 0xb16)); y.IntN(16) == 0 {
		op = largeParam(op, y)
	}
	var b strings.Builder
	b.WriteString(Header(seed) + "\n")
	b.WriteString(op + "\n")
	for _, l := range lines {
		b.WriteString(l + "\n")
	}
	return File{Seed: seed, Shape: shape, Text: b.String()}
}

// windowParams draws the window parameters of `window`, `window-join` and
// `cogroup`: the assigner, the time domain, the trigger, purging and the
// allowed lateness. noEnd is set where Flink would never return from the
// maximum watermark (a continuous event-time trigger on a global window
// keeps registering due timers), so the file has no `end` line and its
// watermarks stay small.
func windowParams(r *rand.Rand) (params string, processing, noEnd bool) {
	var p []string
	assigner := []string{"tumbling", "tumbling", "sliding", "sliding", "session", "session", "global"}[r.IntN(7)]
	switch assigner {
	case "tumbling":
		size := 2 + r.IntN(14)
		p = append(p, "assigner=tumbling", fmt.Sprintf("size=%d", size))
		if r.IntN(3) == 0 { // Flink: |offset| < size
			p = append(p, fmt.Sprintf("offset=%d", r.IntN(2*size-1)-(size-1)))
		}
	case "sliding":
		slide := 1 + r.IntN(8)
		var size int
		if r.IntN(5) == 0 {
			size = 1 + r.IntN(slide) // size <= slide: gaps between windows
		} else {
			size = slide * (1 + r.IntN(4))
			if r.IntN(3) == 0 {
				size += r.IntN(slide)
			}
		}
		p = append(p, "assigner=sliding", fmt.Sprintf("size=%d", size), fmt.Sprintf("slide=%d", slide))
		if slide > 1 && r.IntN(3) == 0 { // Flink: |offset| < slide
			p = append(p, fmt.Sprintf("offset=%d", r.IntN(2*slide-1)-(slide-1)))
		}
	case "session":
		p = append(p, "assigner=session", fmt.Sprintf("gap=%d", 1+r.IntN(10)))
	case "global":
		p = append(p, "assigner=global")
	}
	processing = r.IntN(10) < 3
	if processing {
		p = append(p, "time=processing")
	} else if r.IntN(4) == 0 {
		p = append(p, "time=event")
	}
	var trigger string
	if assigner == "global" {
		trigger = []string{"count", "count", "continuous", "continuous", "default"}[r.IntN(5)]
	} else {
		trigger = []string{"default", "default", "count", "continuous"}[r.IntN(4)]
		if trigger == "default" && r.IntN(2) == 0 {
			trigger = "" // the default, not written
		}
	}
	switch trigger {
	case "default":
		p = append(p, "trigger=default")
	case "count":
		p = append(p, "trigger=count", fmt.Sprintf("n=%d", 1+r.IntN(4)))
	case "continuous":
		p = append(p, "trigger=continuous", fmt.Sprintf("interval=%d", 1+r.IntN(10)))
	}
	if r.IntN(4) == 0 {
		p = append(p, "purging")
	}
	if !processing && r.IntN(3) == 0 {
		p = append(p, fmt.Sprintf("lateness=%d", 1+r.IntN(10)))
	}
	noEnd = assigner == "global" && trigger == "continuous" && !processing
	return strings.Join(p, " "), processing, noEnd
}

// gen draws the input lines of one file.
type gen struct {
	r          *rand.Rand
	inputs     int
	channels   int
	numeric    bool // values are int64 (fn=sum, min, max)
	processing bool // time=processing: windows follow the proc clock
	noEnd      bool

	recWeight, wmWeight, statusWeight, procWeight int
}

// lines returns 6 to 30 input lines, then (usually) `end`.
func (g *gen) lines() []string {
	r := g.r
	type channel struct {
		wm   int64
		idle bool
	}
	chans := make([][]channel, g.inputs)
	start := int64(r.IntN(16)) - 10
	for i := range chans {
		chans[i] = make([]channel, g.channels)
		for c := range chans[i] {
			chans[i][c].wm = start
		}
	}
	var proc int64
	keys := []string{"a", "a", "b", "b", "c"}
	seq := 0
	n := 6 + r.IntN(25)
	var out []string
	total := g.recWeight + g.wmWeight + g.statusWeight + g.procWeight
	for len(out) < n {
		in := 1 + r.IntN(g.inputs)
		ch := r.IntN(g.channels)
		c := &chans[in-1][ch]
		name := fmt.Sprintf("%d.%d", in, ch)
		if g.channels == 1 && r.IntN(2) == 0 {
			name = fmt.Sprintf("%d", in)
		}
		pick := r.IntN(total)
		switch {
		case pick < g.recWeight:
			ts := c.wm + int64(r.IntN(19)) - 6
			seq++
			var v string
			if g.numeric {
				v = fmt.Sprint(r.IntN(25) - 5)
			} else {
				v = fmt.Sprintf("%c%d", 'p'+rune(in-1)*('x'-'p'), seq)
			}
			out = append(out, fmt.Sprintf("%s rec %s %d %s", name, keys[r.IntN(len(keys))], ts, v))
		case pick < g.recWeight+g.wmWeight:
			w := c.wm + int64(r.IntN(11))
			if r.IntN(12) == 0 {
				w += 30 + int64(r.IntN(70)) // a jump: many firings at once
			}
			if r.IntN(8) == 0 {
				w = c.wm - 1 - int64(r.IntN(8)) // a watermark going backwards
			}
			if g.noEnd && w > 60 {
				w = 60
			}
			if w > c.wm {
				c.wm = w
			}
			out = append(out, fmt.Sprintf("%s wm %d", name, w))
		case pick < g.recWeight+g.wmWeight+g.statusWeight:
			c.idle = !c.idle
			if r.IntN(6) == 0 {
				c.idle = !c.idle // a repeated status
			}
			if c.idle {
				out = append(out, name+" idle")
			} else {
				out = append(out, name+" active")
			}
		default:
			proc += int64(r.IntN(9))
			out = append(out, fmt.Sprintf("proc %d", proc))
		}
	}
	if g.processing && r.IntN(2) == 0 {
		proc += int64(1 + r.IntN(20))
		out = append(out, fmt.Sprintf("proc %d", proc))
	}
	if !g.noEnd && r.IntN(8) != 0 {
		out = append(out, "end")
	}
	return out
}

// nearLimit shifts every record timestamp and watermark of lines so that
// the largest lands up to 40 ms below the maximum int64, or the smallest up
// to 40 ms above the minimum.
func nearLimit(lines []string, r *rand.Rand) []string {
	type at struct{ line, field int }
	var spots []at
	var fields [][]string
	lo, hi := int64(math.MaxInt64), int64(math.MinInt64)
	for i, l := range lines {
		f := strings.Fields(l)
		fields = append(fields, f)
		k := -1
		switch {
		case len(f) == 5 && f[1] == "rec":
			k = 3
		case len(f) == 3 && f[1] == "wm":
			k = 2
		}
		if k < 0 {
			continue
		}
		v, err := strconv.ParseInt(f[k], 10, 64)
		if err != nil {
			panic(err)
		}
		lo, hi = min(lo, v), max(hi, v)
		spots = append(spots, at{i, k})
	}
	if len(spots) == 0 {
		return lines
	}
	var by int64
	if r.IntN(2) == 0 {
		by = math.MaxInt64 - int64(r.IntN(41)) - hi
	} else {
		by = math.MinInt64 + int64(r.IntN(41)) - lo
	}
	out := append([]string(nil), lines...)
	for _, s := range spots {
		f := fields[s.line]
		v, _ := strconv.ParseInt(f[s.field], 10, 64)
		f[s.field] = strconv.FormatInt(v+by, 10)
		out[s.line] = strings.Join(f, " ")
	}
	return out
}

// maxDurationMs is the largest whole number of milliseconds a Go
// time.Duration holds (about 292 years): Weir's API takes durations.
const maxDurationMs = math.MaxInt64 / int64(time.Millisecond)

// largeParam sets one of the op line's lateness, gap, size (tumbling),
// interval, n, lower or upper to a large value, keeping the line valid.
func largeParam(op string, r *rand.Rand) string {
	large := []int64{maxDurationMs, maxDurationMs - 1, maxDurationMs / 2, 1_000_000_000_000, 86_400_000}
	v := large[r.IntN(len(large))]
	toks := strings.Fields(op)
	var cands []int
	for i, t := range toks {
		name, _, ok := strings.Cut(t, "=")
		if !ok {
			continue
		}
		switch name {
		case "lateness", "gap", "interval", "n", "lower", "upper":
			cands = append(cands, i)
		case "size":
			if strings.Contains(op, "assigner=tumbling") {
				cands = append(cands, i)
			}
		}
	}
	if len(cands) == 0 {
		return op
	}
	i := cands[r.IntN(len(cands))]
	name, _, _ := strings.Cut(toks[i], "=")
	if name == "lower" {
		v = -v // lower <= upper stays true
	}
	toks[i] = fmt.Sprintf("%s=%d", name, v)
	return strings.Join(toks, " ")
}
