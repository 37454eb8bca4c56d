// Package builtinsrc holds the engines of the root package's built-in
// sources: a slice read as one split (FromSlice, FromRecords) and a
// generator of f(i) (Generate). The root wraps them in types of its own,
// whose names are the sources' kinds in savepoints.
package builtinsrc

import (
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"reflect"
	"slices"
	"strconv"
	"strings"

	"github.com/weirstream/weir/connector"
	"github.com/weirstream/weir/internal/clock"
)

// TypeName is the name of v's type, pointers and type arguments left out
// ("weir.generatorSource").
func TypeName(v any) string {
	t := reflect.TypeOf(v)
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t == nil {
		return "nil"
	}
	name := t.String()
	if i := strings.IndexByte(name, '['); i >= 0 {
		name = name[:i]
	}
	return name
}

type stringSplit string

func (s stringSplit) SplitID() string { return string(s) }

// Slice reads a slice as one split.
type Slice[T any] struct{ Recs []connector.Record[T] }

// Splits implements connector.Source: one split.
func (s Slice[T]) Splits(int) ([]connector.Split, error) {
	return []connector.Split{stringSplit("slice")}, nil
}

// Reader implements connector.Source.
func (s Slice[T]) Reader(connector.Split) (connector.SplitReader[T], error) {
	return &sliceReader[T]{recs: s.Recs}, nil
}

type sliceReader[T any] struct {
	recs []connector.Record[T]
	pos  int
}

func (r *sliceReader[T]) Read(_ context.Context, buf []connector.Record[T]) ([]connector.Record[T], error) {
	n := min(cap(buf)-len(buf), len(r.recs)-r.pos)
	if n <= 0 {
		n = min(1024, len(r.recs)-r.pos)
	}
	buf = append(buf, r.recs[r.pos:r.pos+n]...)
	r.pos += n
	if r.pos >= len(r.recs) {
		return buf, io.EOF
	}
	return buf, nil
}
func (r *sliceReader[T]) Close() error { return nil }

// Position implements connector.PositionedReader: the index of the next record.
func (r *sliceReader[T]) Position() ([]byte, error) {
	return binary.AppendVarint(nil, int64(r.pos)), nil
}

// ReaderAt resumes the slice at a position.
func (s Slice[T]) ReaderAt(_ connector.Split, pos []byte) (connector.SplitReader[T], error) {
	p, err := decodePosition(pos)
	if err != nil || p < 0 || p > int64(len(s.Recs)) {
		return nil, fmt.Errorf("bad slice position %v", pos)
	}
	return &sliceReader[T]{recs: s.Recs, pos: int(p)}, nil
}

func decodePosition(pos []byte) (int64, error) {
	v, n := binary.Varint(pos)
	if n <= 0 {
		return 0, fmt.Errorf("bad position %x", pos)
	}
	return v, nil
}

// Generator produces f(i) for i in [0, count), or forever if count < 0.
type Generator[T any] struct {
	count int64
	f     func(i int64) T
	rate  float64
	clk   clock.Clock
}

// NewGenerator returns the generator of f(i) for i in [0, count) (forever
// if count < 0), at most rate records per second in all if rate > 0,
// measured on clk.
func NewGenerator[T any](count int64, rate float64, f func(i int64) T, clk clock.Clock) *Generator[T] {
	return &Generator[T]{count: count, f: f, rate: rate, clk: clk}
}

type genSplit struct {
	index, of  int
	start, end int64 // bounded: [start, end)
}

func (s genSplit) SplitID() string {
	return "gen-" + strconv.Itoa(s.index) + "-of-" + strconv.Itoa(s.of)
}

// Splits divides the generator into p splits, as Flink's
// NumberSequenceSource divides its range by the parallelism it first runs
// at; a restore keeps those splits at any parallelism (RestoreSplits).
func (g *Generator[T]) Splits(p int) ([]connector.Split, error) {
	out := make([]connector.Split, p)
	for i := range p {
		out[i] = g.split(i, p)
	}
	return out, nil
}

// split returns split index of a division into of splits: the range
// [count*index/of, count*(index+1)/of) of a bounded generator, the indexes
// index, index+of, index+2*of, ... of an unbounded one.
func (g *Generator[T]) split(index, of int) genSplit {
	sp := genSplit{index: index, of: of}
	if g.count >= 0 {
		sp.start = g.count * int64(index) / int64(of)
		sp.end = g.count * int64(index+1) / int64(of)
	}
	return sp
}

// maxGenSplits bounds the division a checkpoint's split ids may name (a
// guard against a damaged id, far above any parallelism).
const maxGenSplits = 1 << 16

// RestoreSplits implements connector.SplitRestorer: the splits "gen-<i>-of-<n>" a
// checkpoint names, completed with the other splits of their division
// (a split that had not started yet may be named by none of the old
// subtasks' state in checkpoints written before every owned split was
// recorded), in index order. Every id must come from one division.
func (g *Generator[T]) RestoreSplits(ids []string) ([]connector.Split, error) {
	of := 0
	for _, id := range ids {
		i, n, ok := parseGenSplit(id)
		if !ok || n > maxGenSplits || i >= n {
			return nil, fmt.Errorf("split %q is not a split of a generator (gen-<i>-of-<n>)", id)
		}
		if of != 0 && n != of {
			return nil, fmt.Errorf("the checkpoint names splits of a generator divided into %d and into %d splits", of, n)
		}
		of = n
	}
	out := make([]connector.Split, of)
	for i := range of {
		out[i] = g.split(i, of)
	}
	return out, nil
}

// Endless implements connector.EndlessSource: an unbounded generator's splits never
// end.
func (g *Generator[T]) Endless() bool { return g.count < 0 }

// parseGenSplit parses "gen-<i>-of-<n>" (n >= 1, i >= 0, canonical
// decimals).
func parseGenSplit(id string) (i, n int, ok bool) {
	rest, ok := strings.CutPrefix(id, "gen-")
	if !ok {
		return 0, 0, false
	}
	is, ns, ok := strings.Cut(rest, "-of-")
	if !ok {
		return 0, 0, false
	}
	i, err1 := strconv.Atoi(is)
	n, err2 := strconv.Atoi(ns)
	if err1 != nil || err2 != nil || i < 0 || n < 1 || strconv.Itoa(i) != is || strconv.Itoa(n) != ns {
		return 0, 0, false
	}
	return i, n, true
}

// Reader implements connector.Source.
func (g *Generator[T]) Reader(s connector.Split) (connector.SplitReader[T], error) {
	sp := s.(genSplit)
	r := &genReader[T]{g: g, next: sp.start, end: sp.end, step: 1}
	if g.count < 0 {
		r.next, r.step, r.end = int64(sp.index), int64(sp.of), -1
	}
	if g.rate > 0 {
		r.perMilli = g.rate / float64(sp.of) / 1000
		r.startAt = g.clk.NowMillis()
	}
	return r, nil
}

type genReader[T any] struct {
	g        *Generator[T]
	next     int64
	end      int64 // -1: unbounded
	step     int64
	perMilli float64
	startAt  int64
	emitted  int64
}

func (r *genReader[T]) Read(ctx context.Context, buf []connector.Record[T]) ([]connector.Record[T], error) {
	n := int64(cap(buf) - len(buf))
	if n <= 0 {
		n = 1024
	}
	if r.end >= 0 {
		n = min(n, r.end-r.next)
	}
	if r.perMilli > 0 {
		// Allowed so far by the rate; wait until at least one is allowed.
		for {
			now := r.g.clk.NowMillis()
			allowed := int64(float64(now-r.startAt+1)*r.perMilli) - r.emitted
			if allowed > 0 {
				n = min(n, allowed)
				break
			}
			wait := int64(float64(r.emitted+1)/r.perMilli) + r.startAt - now
			if err := clock.Sleep(ctx, r.g.clk, now+max(wait, 1)); err != nil {
				return buf, err
			}
		}
	}
	f, next, step := r.g.f, r.next, r.step
	start := len(buf)
	buf = slices.Grow(buf, int(n))[:start+int(n)]
	dst := buf[start:]
	for i := range dst {
		dst[i] = connector.Record[T]{Value: f(next), TS: connector.NoTimestamp}
		next += step
	}
	r.next = next
	r.emitted += n
	if r.end >= 0 && r.next >= r.end {
		return buf, io.EOF
	}
	return buf, nil
}

func (r *genReader[T]) Close() error { return nil }

// Position implements connector.PositionedReader: the next index.
func (r *genReader[T]) Position() ([]byte, error) { return binary.AppendVarint(nil, r.next), nil }

// ReaderAt resumes a split of the generator at an index.
func (g *Generator[T]) ReaderAt(s connector.Split, pos []byte) (connector.SplitReader[T], error) {
	next, err := decodePosition(pos)
	if err != nil {
		return nil, err
	}
	sr, err := g.Reader(s)
	if err != nil {
		return nil, err
	}
	sr.(*genReader[T]).next = next
	return sr, nil
}
