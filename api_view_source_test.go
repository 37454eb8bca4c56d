package weir_test

import (
	"context"
	"io"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/connector"
)

// viewEv holds pointers (strings, a pointer) and more than a few words, as
// a Nexmark event does: a buffer of them is cleared after use, and a value
// is copied when a function receives it.
type viewEv struct {
	ID   int64
	Name string
	Ptr  *int64
	Pad  [4]int64
}

// viewSource replays records held in memory as connector.ViewReader views of
// it, in batches of at most batch records (small, so that a job sees
// many), and counts which read path the engine took.
type viewSource struct {
	splits [][]weir.Record[viewEv]
	batch  int
	views  atomic.Int64
	reads  atomic.Int64
}

func (s *viewSource) Splits(int) ([]connector.Split, error) {
	out := make([]connector.Split, len(s.splits))
	for i := range out {
		out[i] = chanSplit(i)
	}
	return out, nil
}

func (s *viewSource) Reader(sp connector.Split) (connector.SplitReader[viewEv], error) {
	return &viewReader{s: s, recs: s.splits[int(sp.(chanSplit))]}, nil
}

type viewReader struct {
	s    *viewSource
	recs []weir.Record[viewEv]
}

func (r *viewReader) next(limit int) ([]weir.Record[viewEv], error) {
	n := min(limit, r.s.batch, len(r.recs))
	v := r.recs[:n:n]
	r.recs = r.recs[n:]
	if len(r.recs) == 0 {
		return v, io.EOF
	}
	return v, nil
}

func (r *viewReader) ReadView(_ context.Context, limit int) ([]weir.Record[viewEv], error) {
	r.s.views.Add(1)
	return r.next(limit)
}

func (r *viewReader) Read(_ context.Context, buf []weir.Record[viewEv]) ([]weir.Record[viewEv], error) {
	r.s.reads.Add(1)
	v, err := r.next(max(cap(buf)-len(buf), 1))
	return append(buf, v...), err
}

func (r *viewReader) Close() error { return nil }

// viewMemory makes n records per split over splits splits, with distinct
// strings and pointers, and a deep copy to compare the memory with after
// a job.
func viewMemory(splits, n int) (mem, want [][]weir.Record[viewEv]) {
	for s := range splits {
		var recs, cp []weir.Record[viewEv]
		for i := range n {
			id := int64(s*n + i)
			p := new(int64)
			*p = id
			e := viewEv{ID: id, Name: "ev-" + strconv.FormatInt(id, 10), Ptr: p, Pad: [4]int64{id, -id, id * 2, 7}}
			recs = append(recs, weir.Record[viewEv]{Value: e, TS: 1000 + id})
			cp = append(cp, weir.Record[viewEv]{Value: e, TS: 1000 + id})
		}
		mem, want = append(mem, recs), append(want, cp)
	}
	return mem, want
}

func checkViewEv(t *testing.T, what string, e viewEv) {
	t.Helper()
	id := e.ID
	if e.Name != "ev-"+strconv.FormatInt(id, 10) || e.Ptr == nil || *e.Ptr != id || e.Pad != [4]int64{id, -id, id * 2, 7} {
		t.Fatalf("%s: damaged value %+v", what, e)
	}
}

func checkMemory(t *testing.T, mem, want [][]weir.Record[viewEv]) {
	t.Helper()
	for s := range mem {
		for i := range mem[s] {
			g, w := mem[s][i], want[s][i]
			if g.TS != w.TS || g.Value.ID != w.Value.ID || g.Value.Name != w.Value.Name || g.Value.Ptr != w.Value.Ptr || g.Value.Pad != w.Value.Pad {
				t.Fatalf("the source's memory changed at split %d record %d: %+v, was %+v", s, i, g, w)
			}
		}
	}
}

// TestViewSourceValuesHeld runs a view source into a chained Filter and
// Map, whose functions keep every value they are given, and straight into
// a second sink (two targets of the source's batch). The values held
// across batches, the results and the source's memory must all stay what
// they were: the engine hands out the memory as batches without copying,
// so clearing, reusing or writing a batch would show in one of them.
func TestViewSourceValuesHeld(t *testing.T) {
	const splits, n = 3, 5000
	mem, want := viewMemory(splits, n)
	src := &viewSource{splits: mem, batch: 100}
	env := weir.NewEnvironment(weir.WithParallelism(2))
	ev := weir.FromSource(env, connector.Source[viewEv](src), weir.ForBoundedOutOfOrderness[viewEv](0), "view")
	var mu sync.Mutex
	var heldF, heldM []viewEv
	kept := weir.Filter(ev, func(e viewEv) bool {
		mu.Lock()
		heldF = append(heldF, e)
		mu.Unlock()
		return e.ID%3 != 0
	})
	mapped := weir.Map(kept, func(e viewEv) viewEv {
		mu.Lock()
		heldM = append(heldM, e)
		mu.Unlock()
		e.Name += "!"
		e.Pad[3] = 8
		return e
	})
	out := weir.Collect(mapped)
	all := weir.Collect(ev)
	mustRun(t, env)

	if src.views.Load() == 0 || src.reads.Load() != 0 {
		t.Fatalf("views %d reads %d: want every batch read as a view", src.views.Load(), src.reads.Load())
	}
	checkMemory(t, mem, want)
	if len(heldF) != splits*n {
		t.Fatalf("filter saw %d values, want %d", len(heldF), splits*n)
	}
	for _, e := range heldF {
		checkViewEv(t, "held by the filter", e)
	}
	for _, e := range heldM {
		checkViewEv(t, "held by the map", e)
	}
	var ids []int64
	for _, r := range out.Records() {
		e := r.Value
		if e.Name != "ev-"+strconv.FormatInt(e.ID, 10)+"!" || e.Pad[3] != 8 || *e.Ptr != e.ID || r.TS != 1000+e.ID {
			t.Fatalf("result %+v at %d", e, r.TS)
		}
		ids = append(ids, e.ID)
	}
	slices.Sort(ids)
	var wantIDs []int64
	for id := range int64(splits * n) {
		if id%3 != 0 {
			wantIDs = append(wantIDs, id)
		}
	}
	if !slices.Equal(ids, wantIDs) || len(heldM) != len(wantIDs) {
		t.Fatalf("%d results, the map held %d, want %d", len(ids), len(heldM), len(wantIDs))
	}
	if all.Len() != splits*n {
		t.Fatalf("the second sink got %d records, want %d", all.Len(), splits*n)
	}
	for _, r := range all.Records() {
		checkViewEv(t, "second sink", r.Value)
		if r.TS != 1000+r.Value.ID {
			t.Fatalf("second sink: %d at %d", r.Value.ID, r.TS)
		}
	}
}

// TestViewSourceTimestampAssigner: a source with a timestamp assigner
// writes timestamps into its batches, so it must read with Read (a copy),
// leaving the memory's timestamps as they were, while its records carry
// the assigned ones.
func TestViewSourceTimestampAssigner(t *testing.T) {
	mem, want := viewMemory(2, 3000)
	src := &viewSource{splits: mem, batch: 64}
	env := weir.NewEnvironment(weir.WithParallelism(2))
	ws := weir.ForBoundedOutOfOrderness[viewEv](0).WithTimestampAssigner(func(e viewEv, _ int64) int64 { return 5 * e.ID })
	out := weir.Collect(weir.Map(weir.FromSource(env, connector.Source[viewEv](src), ws, "view"), func(e viewEv) viewEv { return e }))
	mustRun(t, env)
	checkMemory(t, mem, want)
	if src.views.Load() != 0 || src.reads.Load() == 0 {
		t.Fatalf("views %d reads %d: want Read only", src.views.Load(), src.reads.Load())
	}
	if out.Len() != 6000 {
		t.Fatalf("%d results", out.Len())
	}
	for _, r := range out.Records() {
		checkViewEv(t, "result", r.Value)
		if r.TS != 5*r.Value.ID {
			t.Fatalf("record %d at %d, want %d", r.Value.ID, r.TS, 5*r.Value.ID)
		}
	}
}

// TestViewSourceSharedByJobs runs jobs at once over the same memory, each
// through a filter, a map and a key-by exchange (under -race a write to
// the shared memory would be reported).
func TestViewSourceSharedByJobs(t *testing.T) {
	mem, want := viewMemory(2, 4000)
	var wg sync.WaitGroup
	errs := make([]error, 3)
	counts := make([]int, 3)
	for j := range errs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			src := &viewSource{splits: mem, batch: 1024}
			env := weir.NewEnvironment(weir.WithParallelism(2), quiet())
			ev := weir.FromSource(env, connector.Source[viewEv](src), weir.NoWatermarks[viewEv](), "view")
			ids := weir.Map(weir.Filter(ev, func(e viewEv) bool { return e.ID%2 == 0 }), func(e viewEv) int64 { return *e.Ptr })
			sums := weir.RollingReduce(weir.KeyBy(ids, func(id int64) int64 { return id % 7 }), func(a, b int64) int64 { return a + b })
			res := weir.Collect(sums)
			errs[j] = env.Execute(context.Background(), "shared")
			counts[j] = res.Len()
		}()
	}
	wg.Wait()
	for j, err := range errs {
		if err != nil {
			t.Fatalf("job %d: %v", j, err)
		}
		if counts[j] != 4000 {
			t.Fatalf("job %d: %d results, want 4000", j, counts[j])
		}
	}
	checkMemory(t, mem, want)
}
