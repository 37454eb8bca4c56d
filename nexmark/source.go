package nexmark

import (
	"context"
	"io"
	"slices"
	"strconv"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/connector"
)

// split is one generator's range.
type split struct{ index, of int }

func (s split) SplitID() string {
	return "nexmark-" + strconv.Itoa(s.index) + "-of-" + strconv.Itoa(s.of)
}

type source struct{ cfg Config }

// Source returns the generator as a weir source: one split per generator
// (cfg.Generators, or one per source subtask when it is 0), each a
// Generator with its own id range, timeline and seeded RNG. Records carry
// their event timestamps; use it with Watermarks(cfg), or call Events.
// An invalid config fails the job when it starts.
func Source(cfg Config) connector.Source[Event] { return source{cfg: cfg} }

func (s source) Splits(parallelism int) ([]connector.Split, error) {
	if err := s.cfg.Validate(); err != nil {
		return nil, err
	}
	n := s.cfg.Generators
	if n == 0 {
		n = parallelism
	}
	out := make([]connector.Split, n)
	for i := range n {
		out[i] = split{index: i, of: n}
	}
	return out, nil
}

func (s source) Reader(sp connector.Split) (connector.SplitReader[Event], error) {
	x := sp.(split)
	return &reader{g: newGenerator(s.cfg.withDefaults(), x.index, x.of)}, nil
}

type reader struct{ g *Generator }

// Read fills buf's free capacity (at least 1024 records) with events.
func (r *reader) Read(ctx context.Context, buf []weir.Record[Event]) ([]weir.Record[Event], error) {
	n := cap(buf) - len(buf)
	if n <= 0 {
		n = 1024
	}
	n = int(min(int64(n), r.g.Remaining()))
	start := len(buf)
	buf = slices.Grow(buf, n)[:start+n]
	g := r.g
	for i := range buf[start:] {
		rec := &buf[start+i]
		rec.TS = g.Next(&rec.Value)
	}
	if !g.HasNext() {
		return buf, io.EOF
	}
	return buf, ctx.Err()
}

func (r *reader) Close() error { return nil }

// Watermarks is the Nexmark table's watermark strategy: bounded
// out-of-orderness of cfg.WatermarkDelay (default 4 s) on the event time
// the source puts on each record.
func Watermarks(cfg Config) weir.WatermarkStrategy[Event] {
	return weir.ForBoundedOutOfOrderness[Event](cfg.withDefaults().WatermarkDelay)
}

// Events adds the generator source with its watermark strategy to env.
func Events(env *weir.Environment, cfg Config) weir.DataStream[Event] {
	return weir.FromSource(env, Source(cfg), Watermarks(cfg), "Nexmark")
}
