// Package progdiff is a differential tester for whole programs: a program
// is a Spec (a DAG of building blocks with bounded input data, format in
// README.md here), run as a Weir job (Run) and as an Apache Flink job
// (bench/flink-programs, through scripts/flink-programs.sh); the outputs
// of each sink must be equal as multisets of lines. Generate makes random
// valid specs from a seed, choosing only blocks whose output does not
// depend on how the engines interleave channels.
package progdiff

import (
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"
)

// Rec is one input record: key, value and event timestamp (ms).
type Rec struct {
	K string `json:"k"`
	V int64  `json:"v"`
	T int64  `json:"t"`
}

// Node is one building block of a program; which fields matter depends on
// Op (README.md).
type Node struct {
	ID   int    `json:"id"`
	Op   string `json:"op"`
	In   []int  `json:"in,omitempty"`
	Par  int    `json:"par,omitempty"`
	Part string `json:"part,omitempty"`
	Kind string `json:"kind,omitempty"`
	Fn   string `json:"fn,omitempty"`
	A    int64  `json:"a,omitempty"`
	B    int64  `json:"b,omitempty"`

	// source
	Bound int64 `json:"bound,omitempty"`
	Data  []Rec `json:"data,omitempty"`

	// windows and joins (ms)
	Size     int64 `json:"size,omitempty"`
	Slide    int64 `json:"slide,omitempty"`
	Offset   int64 `json:"offset,omitempty"`
	Gap      int64 `json:"gap,omitempty"`
	Lateness int64 `json:"lateness,omitempty"`
	Late     bool  `json:"late,omitempty"`
	Count    int64 `json:"count,omitempty"`
	Lower    int64 `json:"lower,omitempty"`
	Upper    int64 `json:"upper,omitempty"`
	// window evictor: "count" (keep Keep elements) or "time" (keep Keep
	// ms), before the window function, or after it with EvictAfter.
	Evictor    string `json:"evictor,omitempty"`
	Keep       int64  `json:"keep,omitempty"`
	EvictAfter bool   `json:"evictafter,omitempty"`

	// sink
	Sink int `json:"sink,omitempty"`
	// Ordered: the sink's lines of each key come in one order on every run
	// (the generator sets it when the sink and its input run at
	// parallelism 1 on a stream whose order per key is fixed); they are
	// compared as sequences per key.
	Ordered bool `json:"ordered,omitempty"`
}

// Spec is a whole program.
type Spec struct {
	Name string `json:"name"`
	// Harness, when set, makes the spec a program of the harness mode
	// (harness.go) instead of a job; it has no nodes then.
	Harness *Harness `json:"harness,omitempty"`
	Nodes   []Node   `json:"nodes"`
}

// JSON returns the spec as JSON, one node a line.
func (s Spec) JSON() string {
	name, err := json.Marshal(s.Name)
	if err != nil {
		panic(err)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "{\"name\": %s, ", name)
	if s.Harness != nil {
		h, err := json.Marshal(s.Harness)
		if err != nil {
			panic(err)
		}
		fmt.Fprintf(&b, "\"harness\": %s,\n", h)
	}
	b.WriteString("\"nodes\": [\n")
	for i, n := range s.Nodes {
		l, err := json.Marshal(n)
		if err != nil {
			panic(err)
		}
		b.Write(l)
		if i < len(s.Nodes)-1 {
			b.WriteString(",")
		}
		b.WriteString("\n")
	}
	b.WriteString("]}\n")
	return b.String()
}

// Parse reads a spec.
func Parse(b []byte) (Spec, error) {
	var s Spec
	err := json.Unmarshal(b, &s)
	return s, err
}

// Output is a program's output: the lines of each sink.
type Output map[int][]string

// Compare compares the outputs of s on the two engines: each sink's lines
// as multisets, and each key's lines as sequences for the sinks marked
// Ordered. It returns "" when they agree, else a description of the
// difference.
func (s Spec) Compare(weir, flink Output) string {
	if d := Diff(weir, flink); d != "" {
		return d
	}
	var b strings.Builder
	sinks := s.Nodes
	if s.Harness != nil {
		// A harness program's output comes in one order per key.
		sinks = []Node{{Op: "sink", Ordered: true}}
	}
	for _, n := range sinks {
		if n.Op != "sink" || !n.Ordered {
			continue
		}
		w, f := byKey(weir[n.Sink]), byKey(flink[n.Sink])
		keys := make([]string, 0, len(w))
		for k := range w {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			if i := slices.Compare(w[k], f[k]); i != 0 {
				fmt.Fprintf(&b, "sink%d (ordered) key %s: on weir\n  %s\non flink\n  %s\n", n.Sink, k,
					strings.Join(w[k], "\n  "), strings.Join(f[k], "\n  "))
				break
			}
		}
	}
	return b.String()
}

// byKey groups lines "sinkN key value ts" by key (up to a "|"), in order.
func byKey(lines []string) map[string][]string {
	m := map[string][]string{}
	for _, l := range lines {
		f := strings.Fields(l)
		if len(f) > 1 {
			// The harness mode's keys carry "|" and what the function saw.
			k, _, _ := strings.Cut(f[1], "|")
			m[k] = append(m[k], l)
		}
	}
	return m
}

// Diff compares two outputs as multisets of lines per sink; it returns ""
// when they are equal, else a description of the difference.
func Diff(weir, flink Output) string {
	var b strings.Builder
	sinks := map[int]bool{}
	for k := range weir {
		sinks[k] = true
	}
	for k := range flink {
		sinks[k] = true
	}
	ids := make([]int, 0, len(sinks))
	for k := range sinks {
		ids = append(ids, k)
	}
	sort.Ints(ids)
	for _, id := range ids {
		count := map[string]int{}
		for _, l := range weir[id] {
			count[l]++
		}
		for _, l := range flink[id] {
			count[l]--
		}
		var only []string
		for l, n := range count {
			switch {
			case n > 0:
				only = append(only, fmt.Sprintf("  weir only (x%d): %s", n, l))
			case n < 0:
				only = append(only, fmt.Sprintf("  flink only (x%d): %s", -n, l))
			}
		}
		if len(only) > 0 {
			sort.Strings(only)
			fmt.Fprintf(&b, "sink%d: %d lines on weir, %d on flink\n%s\n", id, len(weir[id]), len(flink[id]), strings.Join(only, "\n"))
		}
	}
	return b.String()
}

func floorMod(a, m int64) int64 {
	r := a % m
	if r != 0 && (r < 0) != (m < 0) {
		r += m
	}
	return r
}
