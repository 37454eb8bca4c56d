package weir_test

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/connector"
)

// A DynamicSource without Kafka: splits "s<i>" appear when the test
// releases them; each holds the records "s<i>-0".."s<i>-<n-1>" with
// timestamps 0..n-1 and split i goes to subtask i mod p.

type dynSplit struct{ i int }

func (s dynSplit) SplitID() string { return "s" + strconv.Itoa(s.i) }

type dynSource struct {
	n        int // records per split
	interval time.Duration
	mu       sync.Mutex
	released int
}

func (d *dynSource) release(k int) {
	d.mu.Lock()
	d.released = k
	d.mu.Unlock()
}

// dynSource is a connector.DynamicSource alone: no Splits, no Reader.
var _ connector.DynamicSource[string] = (*dynSource)(nil)

func (d *dynSource) SplitOwner(s connector.Split, p int) int { return s.(dynSplit).i % p }
func (d *dynSource) EncodeSplit(s connector.Split) ([]byte, error) {
	return []byte(strconv.Itoa(s.(dynSplit).i)), nil
}
func (d *dynSource) DecodeSplit(b []byte) (connector.Split, error) {
	i, err := strconv.Atoi(string(b))
	return dynSplit{i}, err
}
func (d *dynSource) NewSubtaskReader(info connector.SubtaskInfo) (connector.SubtaskReader[string], error) {
	return &dynReader{d: d, info: info, next: map[int]int{}, wake: make(chan struct{}, 1)}, nil
}

type dynReader struct {
	d    *dynSource
	info connector.SubtaskInfo
	mu   sync.Mutex
	next map[int]int // split -> next record
	wake chan struct{}
}

func (r *dynReader) Discover(_ context.Context, _ bool, known func(string) bool) ([]connector.Split, error) {
	r.d.mu.Lock()
	defer r.d.mu.Unlock()
	var out []connector.Split
	for i := range r.d.released {
		if s := (dynSplit{i}); !known(s.SplitID()) {
			out = append(out, s)
		}
	}
	return out, nil
}

func (r *dynReader) DiscoveryInterval() time.Duration { return r.d.interval }

func (r *dynReader) AddSplits(splits []connector.Split, pos [][]byte) error {
	r.mu.Lock()
	for k, s := range splits {
		next := 0
		if pos[k] != nil {
			v, _ := binary.Varint(pos[k])
			next = int(v)
		}
		r.next[s.(dynSplit).i] = next
	}
	r.mu.Unlock()
	select {
	case r.wake <- struct{}{}:
	default:
	}
	return nil
}

// Fetch returns up to 7 records of every split not at its end, then the
// ends; it blocks while there is nothing.
func (r *dynReader) Fetch(ctx context.Context, buf []weir.Record[string]) ([]connector.SplitBatch[string], []weir.Record[string], error) {
	for {
		r.mu.Lock()
		type span struct{ i, from, to, next int }
		var spans []span
		ids := make([]int, 0, len(r.next))
		for i := range r.next {
			ids = append(ids, i)
		}
		slices.Sort(ids)
		for _, i := range ids {
			next := r.next[i]
			if next > r.d.n {
				continue
			}
			from := len(buf)
			for j := next; j < min(next+7, r.d.n); j++ {
				buf = append(buf, weir.Record[string]{Value: fmt.Sprintf("s%d-%d", i, j), TS: int64(j)})
			}
			r.next[i] = next + (len(buf) - from)
			if r.next[i] == r.d.n {
				r.next[i]++ // the end is reported once
			}
			spans = append(spans, span{i, from, len(buf), r.next[i]})
		}
		r.mu.Unlock()
		if len(spans) > 0 {
			var out []connector.SplitBatch[string]
			for _, s := range spans {
				at := min(s.next, r.d.n)
				out = append(out, connector.SplitBatch[string]{Split: dynSplit{s.i}.SplitID(), Recs: buf[s.from:s.to],
					Pos: binary.AppendVarint(nil, int64(at)), End: s.next > r.d.n})
			}
			return out, buf, nil
		}
		select {
		case <-r.wake:
		case <-ctx.Done():
			return nil, buf, ctx.Err()
		}
	}
}

func (r *dynReader) Close() error { return nil }

func wantDyn(from, to, n int) []string {
	var out []string
	for i := from; i < to; i++ {
		for j := range n {
			out = append(out, fmt.Sprintf("s%d-%d", i, j))
		}
	}
	slices.Sort(out)
	return out
}

// TestDynamicSourceBounded: discovery once (interval 0): the subtasks
// read the splits found at start and the job ends when they have (the
// subtask that owns no split ends at once).
func TestDynamicSourceBounded(t *testing.T) {
	src := &dynSource{n: 20}
	src.release(2)
	env := weir.NewEnvironment(weir.WithParallelism(3))
	in := weir.FromDynamicSource[string](env, src, weir.ForMonotonousTimestamps[string](), "dyn")
	got := weir.Collect(in)
	mustRun(t, env)
	if v := sorted(got.Values()); !slices.Equal(v, wantDyn(0, 2, 20)) {
		t.Fatalf("read %v", v)
	}
}

// TestDynamicSourceGrowsAndRescales: splits released while the job runs
// are read; a savepoint at parallelism 2 restores at 3 and then 1, where
// further splits appear: every record is read exactly once over the runs.
func TestDynamicSourceGrowsAndRescales(t *testing.T) {
	const n = 30
	src := &dynSource{n: n, interval: time.Millisecond}
	dir := t.TempDir()
	seen := map[string]int{}
	run := func(p int, sp string, release, until int) string {
		opts := []weir.Option{weir.WithParallelism(p)}
		if sp != "" {
			opts = append(opts, weir.RestoreFromSavepoint(sp))
		}
		env := weir.NewEnvironment(opts...)
		env.EnableCheckpointing(time.Hour)
		got := weir.Collect(weir.FromDynamicSource[string](env, src, weir.ForMonotonousTimestamps[string](), "dyn").UID("dyn"))
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		h, err := env.ExecuteAsync(ctx, "dyn")
		if err != nil {
			t.Fatal(err)
		}
		src.release(release)
		for got.Len() < until {
			select {
			case <-ctx.Done():
				t.Fatalf("read %d of %d records", got.Len(), until)
			case <-time.After(5 * time.Millisecond):
			}
		}
		path, err := h.StopWithSavepoint(ctx, dir)
		if err != nil {
			t.Fatal(err)
		}
		if err := h.Wait(); !errors.Is(err, weir.ErrStopped) {
			t.Fatal(err)
		}
		for _, v := range got.Values() {
			seen[v]++
		}
		return path
	}
	src.release(2)
	sp := run(2, "", 4, 4*n) // two splits at start, two more while running
	sp = run(3, sp, 7, 3*n)  // three new ones after the rescale
	run(1, sp, 8, n)         // one more at parallelism 1
	var bad []string
	for _, w := range wantDyn(0, 8, n) {
		if seen[w] != 1 {
			bad = append(bad, fmt.Sprintf("%s x%d", w, seen[w]))
		}
	}
	if len(bad) > 0 || len(seen) != 8*n {
		t.Fatalf("%d distinct records, want %d; wrong counts: %s", len(seen), 8*n, strings.Join(bad[:min(len(bad), 10)], ", "))
	}
}
