package savepoint_test

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/connector"
	"github.com/weirstream/weir/savepoint"
	"github.com/weirstream/weir/state"
	"github.com/weirstream/weir/state/pebble"
	"github.com/weirstream/weir/weirtest"
)

// ev is an input record of the test job.
type ev struct {
	Key string
	V   int64
}

func evAt(i int64) ev { return ev{Key: fmt.Sprintf("k%02d", i*7%23), V: i} }

// Acc is the value state of the test job.
type Acc struct {
	Count int64
	Sum   int64
	Last  string
}

// counter keeps, per key, an Acc (value state), the values seen (list
// state) and how many values had each remainder mod 5 (map state), and
// emits after each element a line showing all three.
type counter struct {
	acc  state.ValueState[Acc]
	hist state.ListState[int64]
	mods state.MapState[int64, int64]
}

func (c *counter) Open(ctx weir.KeyedRuntimeContext[string]) (err error) {
	if c.acc, err = weir.GetValueState(ctx, state.Value[Acc]("acc")); err != nil {
		return err
	}
	if c.hist, err = weir.GetListState(ctx, state.List[int64]("hist")); err != nil {
		return err
	}
	c.mods, err = weir.GetMapState(ctx, state.Map[int64, int64]("mods"))
	return err
}

func (c *counter) ProcessElement(e ev, ctx weir.KeyedContext[string], out weir.Collector[string]) error {
	a, _ := c.acc.Value()
	a.Count++
	a.Sum += e.V
	a.Last = fmt.Sprint(e.V)
	c.acc.Update(a)
	c.hist.Add(e.V)
	n, _ := c.mods.Get(e.V % 5)
	c.mods.Put(e.V%5, n+1)
	var hs int64
	for v := range c.hist.All() {
		hs += v
	}
	out.Collect(line(ctx.CurrentKey(), a, hs, n+1))
	return nil
}

func (c *counter) OnTimer(int64, weir.OnTimerContext[string], weir.Collector[string]) error {
	return nil
}

func line(key string, a Acc, histSum, mod int64) string {
	return fmt.Sprintf("%s count=%d sum=%d last=%s hist=%d mod=%d", key, a.Count, a.Sum, a.Last, histSum, mod)
}

// model is what the job's state should be: per key.
type model struct {
	acc  map[string]Acc
	hist map[string][]int64
	mods map[string]map[int64]int64
}

func newModel() *model {
	return &model{acc: map[string]Acc{}, hist: map[string][]int64{}, mods: map[string]map[int64]int64{}}
}

// apply processes e as the job does and returns the line it emits.
func (m *model) apply(e ev) string {
	a := m.acc[e.Key]
	a.Count++
	a.Sum += e.V
	a.Last = fmt.Sprint(e.V)
	m.acc[e.Key] = a
	m.hist[e.Key] = append(m.hist[e.Key], e.V)
	if m.mods[e.Key] == nil {
		m.mods[e.Key] = map[int64]int64{}
	}
	m.mods[e.Key][e.V%5]++
	var hs int64
	for _, v := range m.hist[e.Key] {
		hs += v
	}
	return line(e.Key, a, hs, m.mods[e.Key][e.V%5])
}

// gatedSource emits evAt(0..n-1) as one split, and holds once it has
// emitted limit records (closing reached) until the job stops.
type gatedSource struct {
	n, limit int64
	reached  chan struct{}
	once     sync.Once
}

type oneSplit struct{}

func (oneSplit) SplitID() string { return "gated" }

func (s *gatedSource) Splits(int) ([]connector.Split, error) {
	return []connector.Split{oneSplit{}}, nil
}
func (s *gatedSource) Reader(connector.Split) (connector.SplitReader[ev], error) {
	return &gatedReader{s: s}, nil
}
func (s *gatedSource) ReaderAt(_ connector.Split, pos []byte) (connector.SplitReader[ev], error) {
	next, n := binary.Varint(pos)
	if n <= 0 {
		return nil, fmt.Errorf("bad position %x", pos)
	}
	return &gatedReader{s: s, next: next}, nil
}

type gatedReader struct {
	s    *gatedSource
	next int64
}

func (r *gatedReader) Read(ctx context.Context, buf []weir.Record[ev]) ([]weir.Record[ev], error) {
	s := r.s
	if r.next >= s.n {
		return buf, io.EOF
	}
	if r.next >= s.limit {
		s.once.Do(func() { close(s.reached) })
		<-ctx.Done()
		return buf, ctx.Err()
	}
	end := min(r.next+40, s.limit, s.n)
	for ; r.next < end; r.next++ {
		buf = append(buf, weir.Record[ev]{Value: evAt(r.next), TS: r.next})
	}
	return buf, nil
}

func (r *gatedReader) Position() ([]byte, error) { return binary.AppendVarint(nil, r.next), nil }
func (r *gatedReader) Close() error              { return nil }

// job builds the test job: the gated source and the counter, keyed by
// ev.Key, with UID "counter".
func job(env *weir.Environment, src connector.Source[ev]) *weir.Collected[string] {
	in := weir.FromSource(env, src, weir.ForMonotonousTimestamps[ev](), "events").SetParallelism(1).UID("source")
	out := weir.Process(weir.KeyBy(in, func(e ev) string { return e.Key }), &counter{}).UID("counter").Name("counter")
	return weir.Collect(out)
}

// stopAt runs the job over evAt(0..n-1) at parallelism p, stops it with a
// savepoint once limit records are read and returns the savepoint's path
// and the lines emitted.
func stopAt(t *testing.T, n, limit int64, p int, dir string, opts ...weir.Option) (string, []string) {
	t.Helper()
	env := weir.NewEnvironment(append([]weir.Option{weir.WithParallelism(p)}, opts...)...)
	env.EnableCheckpointing(time.Hour)
	src := &gatedSource{n: n, limit: limit, reached: make(chan struct{})}
	out := job(env, src)
	h, err := env.ExecuteAsync(t.Context(), "first")
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-src.reached:
	case <-h.Done():
		t.Fatalf("the job ended early: %v", h.Wait())
	}
	path, err := h.StopWithSavepoint(t.Context(), dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := h.Wait(); !errors.Is(err, weir.ErrStopped) {
		t.Fatal(err)
	}
	return path, out.Values()
}

func sorted(s []string) []string {
	s = slices.Clone(s)
	slices.Sort(s)
	return s
}

// TestReadJobSavepoint runs a real keyed job with value state of a
// struct, list state and map state, stops it with a savepoint half-way
// and reads every key's state back exactly, with either state backend.
func TestReadJobSavepoint(t *testing.T) {
	t.Run("heap", func(t *testing.T) { testReadJobSavepoint(t) })
	t.Run("pebble", func(t *testing.T) {
		testReadJobSavepoint(t, weir.WithStateBackend(pebble.New(t.TempDir())))
	})
}

func testReadJobSavepoint(t *testing.T, opts ...weir.Option) {
	const n, limit = 2000, 1000
	path, lines := stopAt(t, n, limit, 2, filepath.Join(t.TempDir(), "sp"), opts...)
	want := newModel()
	var wantLines []string
	for i := range int64(limit) {
		wantLines = append(wantLines, want.apply(evAt(i)))
	}
	if !slices.Equal(sorted(lines), sorted(wantLines)) {
		t.Fatalf("the job emitted %d lines, want %d", len(lines), len(wantLines))
	}

	sp, err := savepoint.Read(t.Context(), path)
	if err != nil {
		t.Fatal(err)
	}
	if sp.MaxParallelism() != 128 {
		t.Errorf("max parallelism %d, want 128", sp.MaxParallelism())
	}
	info, err := sp.Operator("counter")
	if err != nil {
		t.Fatal(err)
	}
	if info.Kind != "KeyedProcess" || info.Name != "counter" || info.Parallelism != 2 || info.KeyGroups != 128 {
		t.Errorf("operator: %+v", info)
	}
	var names []string
	for _, s := range info.KeyedStates {
		names = append(names, s.Name+":"+s.Kind)
		if s.Entries != len(want.acc) {
			t.Errorf("state %s has %d entries, want %d", s.Name, s.Entries, len(want.acc))
		}
	}
	if got := strings.Join(names, ","); got != "acc:value,hist:list,mods:map" {
		t.Errorf("keyed states %s", got)
	}
	var uids []string
	for _, op := range sp.Operators() {
		uids = append(uids, op.UID)
	}
	if got := strings.Join(uids, ","); got != "counter,source" { // the sink has no state
		t.Errorf("operators: %s", got)
	}

	accs, err := savepoint.ReadValueState[string, Acc](sp, "counter", "acc")
	if err != nil {
		t.Fatal(err)
	}
	if got := maps.Collect(accs); !maps.Equal(got, want.acc) {
		t.Errorf("acc: got %v, want %v", got, want.acc)
	}
	hist, err := savepoint.ReadListState[string, int64](sp, "counter", "hist")
	if err != nil {
		t.Fatal(err)
	}
	if got := maps.Collect(hist); !maps.EqualFunc(got, want.hist, slices.Equal) {
		t.Errorf("hist: got %v, want %v", got, want.hist)
	}
	mods, err := savepoint.ReadMapState[string, int64, int64](sp, "counter", "mods")
	if err != nil {
		t.Fatal(err)
	}
	if got := maps.Collect(mods); !maps.EqualFunc(got, want.mods, maps.Equal) {
		t.Errorf("mods: got %v, want %v", got, want.mods)
	}
	// The iterator can be stopped early and used again.
	for range accs {
		break
	}
	if got := len(maps.Collect(accs)); got != len(want.acc) {
		t.Errorf("second iteration: %d keys", got)
	}
}

// TestRoundTripRestoresTransformedState reads a job's savepoint, doubles
// every key's sum and list elements, writes a new savepoint with the
// source's position copied unchanged, restores the job from it at another
// parallelism and checks that every line it emits for the rest of the
// input reflects the changed state.
func TestRoundTripRestoresTransformedState(t *testing.T) {
	const n, limit = 2000, 1000
	dir := t.TempDir()
	path, _ := stopAt(t, n, limit, 2, filepath.Join(dir, "sp"))
	sp, err := savepoint.Read(t.Context(), path)
	if err != nil {
		t.Fatal(err)
	}
	accs, err := savepoint.ReadValueState[string, Acc](sp, "counter", "acc")
	if err != nil {
		t.Fatal(err)
	}
	hist, err := savepoint.ReadListState[string, int64](sp, "counter", "hist")
	if err != nil {
		t.Fatal(err)
	}
	mods, err := savepoint.ReadMapState[string, int64, int64](sp, "counter", "mods")
	if err != nil {
		t.Fatal(err)
	}
	doubled := func(yield func(string, Acc) bool) {
		for k, a := range accs {
			a.Sum *= 2
			if !yield(k, a) {
				return
			}
		}
	}
	doubledHist := func(yield func(string, []int64) bool) {
		for k, l := range hist {
			for i := range l {
				l[i] *= 2
			}
			if !yield(k, l) {
				return
			}
		}
	}
	out, err := savepoint.FromSavepoint(sp).
		WithOperator("counter", 3,
			savepoint.ValueState("acc", doubled),
			savepoint.ListState("hist", doubledHist),
			savepoint.MapState("mods", mods)).
		Write(t.Context(), filepath.Join(dir, "written"))
	if err != nil {
		t.Fatal(err)
	}
	if filepath.Base(out) != "savepoint-1" {
		t.Errorf("written to %s", out)
	}

	// The model: the state after limit records, transformed.
	m := newModel()
	for i := range int64(limit) {
		m.apply(evAt(i))
	}
	for k, a := range m.acc {
		a.Sum *= 2
		m.acc[k] = a
		for i := range m.hist[k] {
			m.hist[k][i] *= 2
		}
	}
	// The written savepoint reads back as written.
	sp2, err := savepoint.Read(t.Context(), out)
	if err != nil {
		t.Fatal(err)
	}
	accs2, err := savepoint.ReadValueState[string, Acc](sp2, "counter", "acc")
	if err != nil {
		t.Fatal(err)
	}
	if got := maps.Collect(accs2); !maps.Equal(got, m.acc) {
		t.Errorf("written acc: got %v, want %v", got, m.acc)
	}
	if info, _ := sp2.Operator("counter"); info.Kind != "KeyedProcess" || info.Parallelism != 3 {
		t.Errorf("written operator keeps its kind and has the new parallelism: %+v", info)
	}

	var want []string
	for i := int64(limit); i < n; i++ {
		want = append(want, m.apply(evAt(i)))
	}
	env := weir.NewEnvironment(weir.WithParallelism(2), weir.RestoreFromSavepoint(out))
	res := job(env, &gatedSource{n: n, limit: n, reached: make(chan struct{})})
	if err := env.Execute(t.Context(), "restored"); err != nil {
		t.Fatal(err)
	}
	got := res.Values()
	if !slices.Equal(sorted(got), sorted(want)) {
		t.Fatalf("the restored job emitted %d lines, want %d; first got %v, first want %v", len(got), len(want), head(sorted(got)), head(sorted(want)))
	}
}

func head(s []string) []string { return s[:min(len(s), 3)] }

// TestBootstrapFromMap writes a savepoint from Go maps and starts a job
// from it, at a parallelism other than the one written.
func TestBootstrapFromMap(t *testing.T) {
	accs := map[string]Acc{"a": {Count: 10, Sum: 100, Last: "x"}, "b": {Count: 1, Sum: -5}}
	hist := map[string][]int64{"a": {50, 50}, "c": {7}}
	mods := map[string]map[int64]int64{"a": {0: 3, 1: 4}, "b": {2: 9}}
	path, err := savepoint.New(64).
		WithOperator("counter", 3,
			savepoint.ValueState("acc", maps.All(accs)),
			savepoint.ListState("hist", maps.All(hist)),
			savepoint.MapState("mods", maps.All(mods))).
		Write(t.Context(), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	m := newModel()
	maps.Copy(m.acc, accs)
	for k, l := range hist {
		m.hist[k] = slices.Clone(l)
	}
	for k, mm := range mods {
		m.mods[k] = maps.Clone(mm)
	}
	input := []ev{{"a", 1}, {"b", 2}, {"c", 3}, {"d", 4}, {"a", 5}, {"b", 7}}
	var want []string
	for _, e := range input {
		want = append(want, m.apply(e))
	}

	env := weir.NewEnvironment(weir.WithParallelism(2), weir.WithMaxParallelism(64), weir.RestoreFromSavepoint(path))
	in := weir.FromSlice(env, input)
	res := weir.Collect(weir.Process(weir.KeyBy(in, func(e ev) string { return e.Key }), &counter{}).UID("counter"))
	if err := env.Execute(t.Context(), "bootstrapped"); err != nil {
		t.Fatal(err)
	}
	if got := res.Values(); !slices.Equal(sorted(got), sorted(want)) {
		t.Fatalf("got %v\nwant %v", sorted(got), sorted(want))
	}

	// A job with the default max parallelism (128) refuses it.
	env = weir.NewEnvironment(weir.RestoreFromSavepoint(path))
	weir.Discard(weir.Process(weir.KeyBy(weir.FromSlice(env, input), func(e ev) string { return e.Key }), &counter{}).UID("counter"))
	if err := env.Execute(t.Context(), "wrong max parallelism"); err == nil || !strings.Contains(err.Error(), "max parallelism") {
		t.Fatalf("restore with another max parallelism: %v", err)
	}
}

// AccV2 is Acc evolved: fields reordered, one removed, one added.
type AccV2 struct {
	Sum   int64
	Extra string
	Count int64
}

// AccBad changes the type of Count.
type AccBad struct {
	Count string
	Sum   int64
	Last  string
}

// TestSchemaResolution: the Go type asked for is resolved against the
// recorded schema as a job's restore resolves it: an evolution by field
// name is read, an incompatible type, key type or kind is refused with an
// IncompatibleError before anything is read.
func TestSchemaResolution(t *testing.T) {
	m := map[string]Acc{"a": {Count: 3, Sum: 30, Last: "z"}, "b": {Count: 1, Sum: 2}}
	path, err := savepoint.New(128).WithOperator("counter", 1, savepoint.ValueState("acc", maps.All(m))).Write(t.Context(), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	sp, err := savepoint.Read(t.Context(), path)
	if err != nil {
		t.Fatal(err)
	}
	v2, err := savepoint.ReadValueState[string, AccV2](sp, "counter", "acc")
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]AccV2{"a": {Sum: 30, Count: 3}, "b": {Sum: 2, Count: 1}}
	if got := maps.Collect(v2); !maps.Equal(got, want) {
		t.Errorf("evolved: got %v, want %v", got, want)
	}

	check := func(what string, err error, part string) {
		t.Helper()
		var ie *savepoint.IncompatibleError
		if !errors.As(err, &ie) || !errors.Is(err, savepoint.ErrIncompatible) {
			t.Fatalf("%s: got %v (%T), want an IncompatibleError", what, err, err)
		}
		if ie.Operator != "counter" || ie.What != part {
			t.Errorf("%s: %+v", what, ie)
		}
		if !strings.Contains(err.Error(), `operator "counter"`) {
			t.Errorf("%s: %v", what, err)
		}
		t.Logf("%s: %v", what, err)
	}
	_, err = savepoint.ReadValueState[string, AccBad](sp, "counter", "acc")
	check("retyped field", err, "value")
	var ie *savepoint.IncompatibleError
	if errors.As(err, &ie) && (ie.Field != "Count" || ie.State != "acc") {
		t.Errorf("retyped field: field %q state %q", ie.Field, ie.State)
	}
	_, err = savepoint.ReadValueState[string, int64](sp, "counter", "acc")
	check("scalar for a struct", err, "value")
	_, err = savepoint.ReadValueState[int64, Acc](sp, "counter", "acc")
	check("key type", err, "key")
	type Key string
	_, err = savepoint.ReadValueState[Key, Acc](sp, "counter", "acc")
	check("named key type", err, "key")
	_, err = savepoint.ReadListState[string, Acc](sp, "counter", "acc")
	check("another kind", err, "")
	_, err = savepoint.ReadValueState[string, Acc](sp, "counter", "acc", state.WithCodec[Acc](accCodec{}))
	check("a codec for the built-in encoding", err, "value")
}

// accCodec is a user codec of Acc (Count and Sum only).
type accCodec struct{}

func (accCodec) Append(dst []byte, a Acc) ([]byte, error) {
	dst = binary.AppendVarint(dst, a.Count)
	return binary.AppendVarint(dst, a.Sum), nil
}

func (accCodec) Decode(src []byte) (Acc, []byte, error) {
	c, n := binary.Varint(src)
	if n <= 0 {
		return Acc{}, src, errors.New("bad count")
	}
	s, m := binary.Varint(src[n:])
	if m <= 0 {
		return Acc{}, src, errors.New("bad sum")
	}
	return Acc{Count: c, Sum: s}, src[n+m:], nil
}

// TestUserCodec: a state written with a codec is read with it.
func TestUserCodec(t *testing.T) {
	m := map[string]Acc{"a": {Count: 3, Sum: 30}, "b": {Count: 1, Sum: 2}}
	path, err := savepoint.New(128).WithOperator("op", 1,
		savepoint.ValueState("acc", maps.All(m), state.WithCodec[Acc](accCodec{}))).Write(t.Context(), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	sp, err := savepoint.Read(t.Context(), path)
	if err != nil {
		t.Fatal(err)
	}
	got, err := savepoint.ReadValueState[string, Acc](sp, "op", "acc", state.WithCodec[Acc](accCodec{}))
	if err != nil {
		t.Fatal(err)
	}
	if g := maps.Collect(got); !maps.Equal(g, m) {
		t.Errorf("got %v, want %v", g, m)
	}
	if _, err := savepoint.ReadValueState[string, Acc](sp, "op", "acc"); !errors.Is(err, savepoint.ErrIncompatible) {
		t.Errorf("read without the codec: %v", err)
	}
}

// TestUnknownNames: unknown operators and states give errors naming what
// there is.
func TestUnknownNames(t *testing.T) {
	path, err := savepoint.New(128).
		WithOperator("counter", 2, savepoint.ValueState("acc", maps.All(map[string]int64{"a": 1}))).
		WithOperator("rules", 2, savepoint.BroadcastState("rules", map[string]int{"r": 1})).
		Write(t.Context(), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	sp, err := savepoint.Read(t.Context(), path)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		err  error
		want string
	}{
		{second(savepoint.ReadValueState[string, int64](sp, "nope", "acc")), `no operator with UID "nope" (its operators: "counter", "rules")`},
		{second(savepoint.ReadValueState[string, int64](sp, "counter", "nope")), `operator "counter" (kind not recorded) has no keyed state named "nope" (its keyed states: "acc")`},
		{second(savepoint.ReadMapState[string, string, int](sp, "rules", "rules")), `operator "rules" (kind not recorded) has no keyed state`},
		{second(savepoint.ReadBroadcastState[string, int](sp, "rules", "nope")), `operator "rules" (kind not recorded) has no broadcast state named "nope" (its broadcast states: "rules")`},
		{second(savepoint.ReadBroadcastState[string, int](sp, "counter", "rules")), `operator "counter" (kind not recorded) has no broadcast state`},
		{second(sp.Operator("nope")), `no operator with UID "nope"`},
		{second(savepoint.Read(t.Context(), filepath.Join(t.TempDir(), "missing"))), `savepoint: `},
		{second(savepoint.New(0).Write(t.Context(), t.TempDir())), `max parallelism must be in [1, 32768], got 0`},
		{second(savepoint.New(4).WithOperator("x", 5, savepoint.ValueState("v", maps.All(map[int]int{}))).Write(t.Context(), t.TempDir())), `parallelism must be in [1, max parallelism 4], got 5`},
		{second(savepoint.New(4).WithOperator("x", 1, savepoint.ValueState("v", maps.All(map[int]int{})), savepoint.ValueState("w", maps.All(map[string]int{}))).Write(t.Context(), t.TempDir())), `keyed state "w" has keys of type string and another keyed state of the operator keys of type int`},
		{second(savepoint.New(4).WithOperator("x", 1, savepoint.ValueState("v", maps.All(map[int]int{})), savepoint.ListState("v", maps.All(map[int][]int{}))).Write(t.Context(), t.TempDir())), `keyed state "v" is given twice`},
		{second(savepoint.New(4).WithOperator("x", 1, savepoint.ValueState("v", maps.All(map[*int]int{}))).Write(t.Context(), t.TempDir())), `cannot hash key type *int`},
		{second(savepoint.New(4).WithOperator("x", 1).Write(t.Context(), t.TempDir())), `no state given`},
		{second(savepoint.New(4).RemoveOperator("x").Write(t.Context(), t.TempDir())), `cannot remove operator "x"`},
		{second(savepoint.FromSavepoint(sp).CopyOperator(sp, "nope").Write(t.Context(), t.TempDir())), `no operator with UID "nope"`},
		{second(savepoint.New(64).CopyOperator(sp, "counter").Write(t.Context(), t.TempDir())), `max parallelism 128, the new savepoint 64`},
	} {
		if c.err == nil || !strings.Contains(c.err.Error(), c.want) {
			t.Errorf("got error %v, want one containing %q", c.err, c.want)
		}
	}
}

func second[T any](_ T, err error) error { return err }

// bcastJob connects a keyed stream of ev with a broadcast stream of rules
// (name=factor); each element is emitted multiplied by the factor of the
// rule named after its key ("key*factor=product"), and each rule is
// stored in the broadcast state "rules".
type bcastFn struct{}

var rulesDesc = state.Map[string, int64]("rules")

func (bcastFn) ProcessElement(e ev, ctx weir.KeyedReadOnlyBroadcastContext[string], out weir.Collector[string]) error {
	rules, err := weir.ReadOnlyBroadcastStateOf(ctx, rulesDesc)
	if err != nil {
		return err
	}
	f, ok := rules.Get(e.Key)
	if !ok {
		f = 1
	}
	out.Collect(fmt.Sprintf("%s*%d=%d", e.Key, f, e.V*f))
	return nil
}

func (bcastFn) ProcessBroadcastElement(r ev, ctx weir.KeyedBroadcastContext[string], _ weir.Collector[string]) error {
	rules, err := weir.BroadcastStateOf(ctx, rulesDesc)
	if err != nil {
		return err
	}
	rules.Put(r.Key, r.V)
	return nil
}

func (bcastFn) OnTimer(int64, weir.KeyedBroadcastOnTimerContext[string], weir.Collector[string]) error {
	return nil
}

// TestBroadcastState bootstraps broadcast state and keyed state of a keyed
// broadcast operator, starts a job from it and checks that the elements
// see the rules; then the written broadcast state reads back.
func TestBroadcastState(t *testing.T) {
	rules := map[string]int64{"a": 10, "b": 3}
	path, err := savepoint.New(128).
		WithOperator("joined", 2, savepoint.BroadcastState("rules", rules)).
		Write(t.Context(), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	sp, err := savepoint.Read(t.Context(), path)
	if err != nil {
		t.Fatal(err)
	}
	got, err := savepoint.ReadBroadcastState[string, int64](sp, "joined", "rules")
	if err != nil {
		t.Fatal(err)
	}
	if !maps.Equal(got, rules) {
		t.Errorf("read back %v, want %v", got, rules)
	}

	env := weir.NewEnvironment(weir.WithParallelism(3), weir.RestoreFromSavepoint(path))
	elems := weir.KeyBy(weir.FromSlice(env, []ev{{"a", 1}, {"b", 2}, {"c", 3}}), func(e ev) string { return e.Key })
	noRules := weir.Broadcast(weir.FromSlice(env, []ev{}), rulesDesc)
	res := weir.Collect(weir.ProcessKeyedBroadcast(weir.ConnectKeyedBroadcast(elems, noRules), bcastFn{}).UID("joined"))
	if err := env.Execute(t.Context(), "broadcast"); err != nil {
		t.Fatal(err)
	}
	want := []string{"a*10=10", "b*3=6", "c*1=3"}
	if g := sorted(res.Values()); !slices.Equal(g, want) {
		t.Errorf("got %v, want %v", g, want)
	}
}

// TestReadJobBroadcastState stops a keyed broadcast job with a savepoint
// after its rules are in and reads its broadcast state back; then
// transforms it and checks that a job restored from the result applies
// the changed rules.
func TestReadJobBroadcastState(t *testing.T) {
	const nRules = 7
	dir := t.TempDir()
	build := func(env *weir.Environment, elems, rules connector.Source[ev]) *weir.Collected[string] {
		in := weir.KeyBy(weir.FromSource(env, elems, weir.ForMonotonousTimestamps[ev](), "elems").SetParallelism(1).UID("elems"),
			func(e ev) string { return e.Key })
		rs := weir.Broadcast(weir.FromSource(env, rules, weir.ForMonotonousTimestamps[ev](), "rules").SetParallelism(1).UID("rules"), rulesDesc)
		return weir.Collect(weir.ProcessKeyedBroadcast(weir.ConnectKeyedBroadcast(in, rs), bcastFn{}).UID("joined"))
	}
	env := weir.NewEnvironment(weir.WithParallelism(2))
	env.EnableCheckpointing(time.Hour)
	elems := &gatedSource{n: 100, limit: 0, reached: make(chan struct{})}
	rules := &gatedSource{n: 100, limit: nRules, reached: make(chan struct{})}
	build(env, elems, rules)
	h, err := env.ExecuteAsync(t.Context(), "rules")
	if err != nil {
		t.Fatal(err)
	}
	<-elems.reached
	<-rules.reached
	path, err := h.StopWithSavepoint(t.Context(), filepath.Join(dir, "sp"))
	if err != nil {
		t.Fatal(err)
	}
	if err := h.Wait(); !errors.Is(err, weir.ErrStopped) {
		t.Fatal(err)
	}
	want := map[string]int64{}
	for i := range int64(nRules) {
		e := evAt(i)
		want[e.Key] = e.V
	}
	sp, err := savepoint.Read(t.Context(), path)
	if err != nil {
		t.Fatal(err)
	}
	got, err := savepoint.ReadBroadcastState[string, int64](sp, "joined", "rules")
	if err != nil {
		t.Fatal(err)
	}
	if !maps.Equal(got, want) {
		t.Fatalf("broadcast state %v, want %v", got, want)
	}

	// Every factor plus 100; the sources' positions are copied.
	for k := range got {
		got[k] += 100
	}
	out, err := savepoint.FromSavepoint(sp).WithOperator("joined", 2, savepoint.BroadcastState("rules", got)).Write(t.Context(), filepath.Join(dir, "out"))
	if err != nil {
		t.Fatal(err)
	}
	env = weir.NewEnvironment(weir.WithParallelism(3), weir.RestoreFromSavepoint(out))
	res := build(env, &gatedSource{n: 30, limit: 30}, &gatedSource{n: nRules, limit: nRules})
	if err := env.Execute(t.Context(), "restored"); err != nil {
		t.Fatal(err)
	}
	var wantLines []string
	for i := range int64(30) {
		e := evAt(i)
		f, ok := got[e.Key]
		if !ok {
			f = 1
		}
		wantLines = append(wantLines, fmt.Sprintf("%s*%d=%d", e.Key, f, e.V*f))
	}
	if g := sorted(res.Values()); !slices.Equal(g, sorted(wantLines)) {
		t.Errorf("got %v\nwant %v", g, sorted(wantLines))
	}
}

// TestIncrementalCheckpointRefused: the retained incremental checkpoint
// of a job on the Pebble backend keeps its keyed state in database files;
// reading or copying it is refused with a message saying to take a
// savepoint.
func TestIncrementalCheckpointRefused(t *testing.T) {
	dir := t.TempDir()
	env := weir.NewEnvironment(weir.WithStateBackend(pebble.New(t.TempDir())))
	env.EnableCheckpointing(20*time.Millisecond, weir.CheckpointStorage(dir))
	src := &gatedSource{n: 1000, limit: 500, reached: make(chan struct{})}
	job(env, src)
	h, err := env.ExecuteAsync(t.Context(), "incremental")
	if err != nil {
		t.Fatal(err)
	}
	defer h.Cancel()
	<-src.reached
	var chk string
	for deadline := time.Now().Add(20 * time.Second); chk == "" && time.Now().Before(deadline); {
		time.Sleep(20 * time.Millisecond)
		ms, _ := filepath.Glob(filepath.Join(dir, "chk-*", "_manifest.json"))
		for _, m := range ms {
			sp, err := savepoint.Read(t.Context(), filepath.Dir(m))
			if err != nil {
				continue // retired meanwhile
			}
			if info, _ := sp.Operator("counter"); info.KeyGroups > 0 {
				chk = filepath.Dir(m)
				_, err := savepoint.ReadValueState[string, Acc](sp, "counter", "acc")
				if err == nil || !strings.Contains(err.Error(), "incremental checkpoint") {
					t.Errorf("reading an incremental checkpoint: %v", err)
				}
				if _, err := savepoint.FromSavepoint(sp).Write(t.Context(), t.TempDir()); err == nil || !strings.Contains(err.Error(), "incremental checkpoint") {
					t.Errorf("copying an incremental checkpoint: %v", err)
				}
				break
			}
		}
	}
	if chk == "" {
		t.Fatal("no checkpoint with keyed state was taken")
	}
}

// TestTTL: a state written with TTL reads with all its values without
// TTL, and with a TTL it hides the values that have expired by now; one
// written without TTL cannot be read with TTL (as a job's restore).
func TestTTL(t *testing.T) {
	m := map[int64]string{1: "a", 2: "b", 3: "c"}
	clk := weirtest.NewManualClock(1_000_000)
	path, err := savepoint.New(128).UseClock(clk).
		WithOperator("op", 1,
			savepoint.ValueState("ttl", maps.All(m), state.WithTTL(state.TTL(time.Hour))),
			savepoint.ValueState("plain", maps.All(m))).
		Write(t.Context(), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	sp, err := savepoint.Read(t.Context(), path, savepoint.WithClock(clk))
	if err != nil {
		t.Fatal(err)
	}
	info, _ := sp.Operator("op")
	if len(info.KeyedStates) != 2 || info.KeyedStates[0].Name != "plain" || info.KeyedStates[0].TTL || !info.KeyedStates[1].TTL {
		t.Errorf("states %+v", info.KeyedStates)
	}
	count := func(opts ...state.Option) int {
		t.Helper()
		vs, err := savepoint.ReadValueState[int64, string](sp, "op", "ttl", opts...)
		if err != nil {
			t.Fatal(err)
		}
		return len(maps.Collect(vs))
	}
	if n := count(); n != 3 {
		t.Errorf("without TTL: %d values", n)
	}
	if n := count(state.WithTTL(state.TTL(time.Hour))); n != 3 {
		t.Errorf("with the TTL written: %d values", n)
	}
	if n := count(state.WithTTL(state.TTL(time.Millisecond))); n != 3 {
		t.Errorf("with a TTL of 1ms, at once: %d values", n)
	}
	clk.Advance(5)
	if n := count(state.WithTTL(state.TTL(time.Millisecond))); n != 0 {
		t.Errorf("with a TTL of 1ms, 5ms later: %d values", n)
	}
	_, err = savepoint.ReadValueState[int64, string](sp, "op", "plain", state.WithTTL(state.TTL(time.Hour)))
	if err == nil || !strings.Contains(err.Error(), "without TTL") {
		t.Errorf("reading with TTL a state written without: %v", err)
	}
}

// TestReadOldFormat reads the savepoint of testdata/oldformat, written by
// an earlier version in version 1 of the key-group format (type names, no
// schemas): the job summed the numbers 0..1999 per key v mod 5.
func TestReadOldFormat(t *testing.T) {
	sp, err := savepoint.Read(t.Context(), filepath.Join("..", "testdata", "oldformat", "dir", "savepoint-6"))
	if err != nil {
		t.Fatal(err)
	}
	info, err := sp.Operator("sums")
	if err != nil {
		t.Fatal(err)
	}
	if len(info.KeyedStates) != 1 || info.KeyedStates[0].Name != "sum" || info.KeyType != "int64" {
		t.Errorf("operator %+v", info)
	}
	sums, err := savepoint.ReadValueState[int64, int64](sp, "sums", "sum")
	if err != nil {
		t.Fatal(err)
	}
	want := map[int64]int64{}
	for v := range int64(2000) {
		want[v%5] += v
	}
	if got := maps.Collect(sums); !maps.Equal(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
	if _, err := savepoint.ReadValueState[int64, string](sp, "sums", "sum"); err == nil {
		t.Error("read an int64 state as string")
	} else {
		t.Log(err)
	}
}

// avgAcc is the accumulator of the mean.
type avgAcc struct{ Sum, N int64 }

type mean struct{}

func (mean) CreateAccumulator() avgAcc    { return avgAcc{} }
func (mean) Add(v int64, a avgAcc) avgAcc { return avgAcc{a.Sum + v, a.N + 1} }
func (mean) GetResult(a avgAcc) float64   { return float64(a.Sum) / float64(a.N) }
func (mean) Merge(a, b avgAcc) avgAcc     { return avgAcc{a.Sum + b.Sum, a.N + b.N} }
func maxOf(a, b int64) int64              { return max(a, b) }
func statsKey(e ev) string                { return e.Key }

// stats keeps the maximum (reducing state) and mean (aggregating state)
// of each key's values and emits both after each element.
type stats struct {
	max  state.ReducingState[int64]
	mean state.AggregatingState[int64, float64]
}

func (s *stats) Open(ctx weir.KeyedRuntimeContext[string]) (err error) {
	if s.max, err = weir.GetReducingState(ctx, state.Reducing[int64]("max", maxOf)); err != nil {
		return err
	}
	s.mean, err = weir.GetAggregatingState(ctx, state.Aggregating[int64, avgAcc, float64]("mean", mean{}))
	return err
}

func (s *stats) ProcessElement(e ev, ctx weir.KeyedContext[string], out weir.Collector[string]) error {
	s.max.Add(e.V)
	s.mean.Add(e.V)
	m, _ := s.max.Get()
	a, _ := s.mean.Get()
	out.Collect(fmt.Sprintf("%s max=%d mean=%.3f", e.Key, m, a))
	return nil
}

func (*stats) OnTimer(int64, weir.OnTimerContext[string], weir.Collector[string]) error {
	return nil
}

// TestReducingAndAggregating reads the reducing and aggregating state of
// a real job's savepoint, writes changed values and restores a job from
// them.
func TestReducingAndAggregating(t *testing.T) {
	const n, limit = 600, 300
	dir := t.TempDir()
	env := weir.NewEnvironment(weir.WithParallelism(2))
	env.EnableCheckpointing(time.Hour)
	src := &gatedSource{n: n, limit: limit, reached: make(chan struct{})}
	in := weir.FromSource(env, src, weir.ForMonotonousTimestamps[ev](), "events").SetParallelism(1).UID("source")
	weir.Discard(weir.Process(weir.KeyBy(in, statsKey), &stats{}).UID("stats"))
	h, err := env.ExecuteAsync(t.Context(), "stats")
	if err != nil {
		t.Fatal(err)
	}
	<-src.reached
	path, err := h.StopWithSavepoint(t.Context(), filepath.Join(dir, "sp"))
	if err != nil {
		t.Fatal(err)
	}
	if err := h.Wait(); !errors.Is(err, weir.ErrStopped) {
		t.Fatal(err)
	}
	wantMax, wantAcc := map[string]int64{}, map[string]avgAcc{}
	for i := range int64(limit) {
		e := evAt(i)
		wantMax[e.Key] = max(wantMax[e.Key], e.V)
		wantAcc[e.Key] = mean{}.Add(e.V, wantAcc[e.Key])
	}
	sp, err := savepoint.Read(t.Context(), path)
	if err != nil {
		t.Fatal(err)
	}
	maxes, err := savepoint.ReadReducingState[string, int64](sp, "stats", "max")
	if err != nil {
		t.Fatal(err)
	}
	if got := maps.Collect(maxes); !maps.Equal(got, wantMax) {
		t.Errorf("max: got %v, want %v", got, wantMax)
	}
	accs, err := savepoint.ReadAggregatingState[string, avgAcc](sp, "stats", "mean")
	if err != nil {
		t.Fatal(err)
	}
	if got := maps.Collect(accs); !maps.Equal(got, wantAcc) {
		t.Errorf("mean: got %v, want %v", got, wantAcc)
	}
	if _, err := savepoint.ReadAggregatingState[string, int64](sp, "stats", "mean"); !errors.Is(err, savepoint.ErrIncompatible) {
		t.Errorf("accumulator read as int64: %v", err)
	}

	// Write: every max 10000 higher, every accumulator one value of 0 more.
	for k := range wantMax {
		wantMax[k] += 10000
		wantAcc[k] = mean{}.Add(0, wantAcc[k])
	}
	out, err := savepoint.FromSavepoint(sp).WithOperator("stats", 1,
		savepoint.ReducingState("max", maps.All(wantMax)),
		savepoint.AggregatingState("mean", maps.All(wantAcc))).Write(t.Context(), filepath.Join(dir, "out"))
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for i := int64(limit); i < n; i++ {
		e := evAt(i)
		wantMax[e.Key] = max(wantMax[e.Key], e.V)
		wantAcc[e.Key] = mean{}.Add(e.V, wantAcc[e.Key])
		want = append(want, fmt.Sprintf("%s max=%d mean=%.3f", e.Key, wantMax[e.Key], mean{}.GetResult(wantAcc[e.Key])))
	}
	env = weir.NewEnvironment(weir.WithParallelism(3), weir.RestoreFromSavepoint(out))
	in = weir.FromSource(env, &gatedSource{n: n, limit: n}, weir.ForMonotonousTimestamps[ev](), "events").SetParallelism(1).UID("source")
	res := weir.Collect(weir.Process(weir.KeyBy(in, statsKey), &stats{}).UID("stats"))
	if err := env.Execute(t.Context(), "restored"); err != nil {
		t.Fatal(err)
	}
	if got := sorted(res.Values()); !slices.Equal(got, sorted(want)) {
		t.Errorf("restored job: got %d lines, want %d; first %v, want %v", len(got), len(want), head(got), head(sorted(want)))
	}
}

// panicCodec panics when told to, as a buggy user codec might.
type panicCodec struct{ append, decode bool }

func (c panicCodec) Append(dst []byte, v int64) ([]byte, error) {
	if c.append {
		panic("append")
	}
	return binary.AppendVarint(dst, v), nil
}

func (c panicCodec) Decode(src []byte) (int64, []byte, error) {
	if c.decode {
		panic("decode")
	}
	v, n := binary.Varint(src)
	if n <= 0 {
		return 0, src, errors.New("bad varint")
	}
	return v, src[n:], nil
}

// TestCodecPanics: a codec that panics gives an error, not a panic.
func TestCodecPanics(t *testing.T) {
	m := map[string]int64{"a": 1}
	_, err := savepoint.New(8).WithOperator("op", 1, savepoint.ValueState("v", maps.All(m), state.WithCodec[int64](panicCodec{append: true}))).Write(t.Context(), t.TempDir())
	if err == nil || !strings.Contains(err.Error(), "panic: append") {
		t.Errorf("writing: %v", err)
	}
	path, err := savepoint.New(8).WithOperator("op", 1, savepoint.ValueState("v", maps.All(m), state.WithCodec[int64](panicCodec{}))).Write(t.Context(), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	sp, err := savepoint.Read(t.Context(), path)
	if err != nil {
		t.Fatal(err)
	}
	_, err = savepoint.ReadValueState[string, int64](sp, "op", "v", state.WithCodec[int64](panicCodec{decode: true}))
	if err == nil || !strings.Contains(err.Error(), "panic: decode") {
		t.Errorf("reading: %v", err)
	}
	vs, err := savepoint.ReadValueState[string, int64](sp, "op", "v", state.WithCodec[int64](panicCodec{}))
	if err != nil {
		t.Fatal(err)
	}
	if got := maps.Collect(vs); !maps.Equal(got, m) {
		t.Errorf("got %v", got)
	}
}
