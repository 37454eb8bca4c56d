package store

import (
	"errors"
	"log/slog"
	"maps"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"pgregory.net/rapid"
)

func TestCheckName(t *testing.T) {
	for _, ok := range []string{"a", "op-1.state", "A_b-c.9", strings.Repeat("x", MaxNameLen)} {
		if err := CheckName(ok); err != nil {
			t.Errorf("CheckName(%q) = %v", ok, err)
		}
	}
	for _, bad := range []string{"", ".", "..", "_manifest.json", ".tmp", "a/b", `a\b`, "a b", "ü", "a\x00", strings.Repeat("x", MaxNameLen+1)} {
		if err := CheckName(bad); err == nil {
			t.Errorf("CheckName(%q) succeeded", bad)
		}
	}
}

func TestKindText(t *testing.T) {
	for _, k := range []Kind{Checkpoint, Savepoint} {
		b, err := k.MarshalText()
		if err != nil {
			t.Fatal(err)
		}
		var got Kind
		if err := got.UnmarshalText(b); err != nil || got != k {
			t.Fatalf("%v round trip: %v, %v", k, got, err)
		}
	}
	if _, err := Kind(0).MarshalText(); err == nil {
		t.Fatal("Kind(0) marshals")
	}
	var k Kind
	if err := k.UnmarshalText([]byte("backup")); err == nil {
		t.Fatal("unknown kind unmarshals")
	}
	if Kind(7).String() != "Kind(7)" {
		t.Fatal(Kind(7).String())
	}
}

func TestValidate(t *testing.T) {
	files := map[string]FileInfo{"f": {Size: 10}, "g": {Size: 0}}
	op := func(mod func(*OperatorState)) Manifest {
		o := OperatorState{UID: "op", Parallelism: 2, MaxParallelism: 4, Subtasks: []SubtaskState{
			{Index: 0, OperatorState: "g", KeyedState: []KeyGroupSlice{{KeyGroup: 0, File: "f", Offset: 0, Length: 4}, {KeyGroup: 1, File: "f", Offset: 4, Length: 6}}},
			{Index: 1, ChannelState: "f", KeyedState: []KeyGroupSlice{{KeyGroup: 3, File: "g"}}},
		}}
		if mod != nil {
			mod(&o)
		}
		return Manifest{ID: 1, Kind: Checkpoint, Files: files, Operators: []OperatorState{o}}
	}
	good := op(nil)
	if err := good.Validate(); err != nil {
		t.Fatal(err)
	}
	cases := map[string]Manifest{
		"kind":             {ID: 1},
		"negative id":      {ID: -1, Kind: Checkpoint},
		"bad file name":    {ID: 1, Kind: Checkpoint, Files: map[string]FileInfo{"a/b": {}}},
		"negative size":    {ID: 1, Kind: Checkpoint, Files: map[string]FileInfo{"a": {Size: -1}}},
		"empty uid":        op(func(o *OperatorState) { o.UID = "" }),
		"parallelism":      op(func(o *OperatorState) { o.Parallelism = 0 }),
		"max parallelism":  op(func(o *OperatorState) { o.MaxParallelism = MaxKeyGroups + 1 }),
		"subtask index":    op(func(o *OperatorState) { o.Subtasks[1].Index = 2 }),
		"subtask twice":    op(func(o *OperatorState) { o.Subtasks[1].Index = 0 }),
		"unwritten op":     op(func(o *OperatorState) { o.Subtasks[0].OperatorState = "h" }),
		"unwritten chan":   op(func(o *OperatorState) { o.Subtasks[1].ChannelState = "h" }),
		"unwritten kg":     op(func(o *OperatorState) { o.Subtasks[1].KeyedState[0].File = "h" }),
		"key group range":  op(func(o *OperatorState) { o.Subtasks[1].KeyedState[0].KeyGroup = 4 }),
		"key group twice":  op(func(o *OperatorState) { o.Subtasks[1].KeyedState[0].KeyGroup = 1 }),
		"slice past end":   op(func(o *OperatorState) { o.Subtasks[0].KeyedState[1].Length = 7 }),
		"negative offset":  op(func(o *OperatorState) { o.Subtasks[0].KeyedState[0].Offset = -1 }),
		"keyed, no max":    op(func(o *OperatorState) { o.MaxParallelism = 0 }),
		"overflowing size": op(func(o *OperatorState) { o.Subtasks[0].KeyedState[1].Length = 1<<63 - 1 }),
	}
	two := op(nil)
	two.Operators = append(two.Operators, two.Operators[0])
	cases["uid twice"] = two
	for name, m := range cases {
		if err := m.Validate(); err == nil {
			t.Errorf("%s: Validate succeeded", name)
		}
	}
}

func TestKeyGroupSliceOf(t *testing.T) {
	data := []byte("0123456789")
	if got, err := (KeyGroupSlice{Offset: 3, Length: 4}).Of(data); err != nil || string(got) != "3456" {
		t.Fatalf("Of = %q, %v", got, err)
	}
	for _, s := range []KeyGroupSlice{{Offset: 8, Length: 3}, {Offset: -1}, {Offset: 11}, {Length: -1}, {Offset: 1, Length: 1<<63 - 1}} {
		if _, err := s.Of(data); !errors.Is(err, ErrCorrupt) {
			t.Errorf("%+v.Of = %v", s, err)
		}
	}
}

// genManifest draws a valid manifest.
func genManifest(t *rapid.T) *Manifest {
	m := &Manifest{
		ID:        rapid.Int64Range(0, 1<<40).Draw(t, "id"),
		Kind:      rapid.SampledFrom([]Kind{Checkpoint, Savepoint}).Draw(t, "kind"),
		JobID:     rapid.String().Draw(t, "job"),
		CreatedAt: time.Unix(rapid.Int64Range(0, 1<<34).Draw(t, "sec"), rapid.Int64Range(0, 1e9-1).Draw(t, "nsec")).UTC(),
		Files:     map[string]FileInfo{},
	}
	nameGen := rapid.StringMatching(`[a-z][a-z0-9._-]{0,12}`)
	for _, n := range rapid.SliceOfNDistinct(nameGen, 0, 6, rapid.ID[string]).Draw(t, "files") {
		m.Files[n] = FileInfo{Size: rapid.Int64Range(0, 1000).Draw(t, "size"), CRC32C: rapid.Uint32().Draw(t, "crc")}
	}
	names := slices.Sorted(maps.Keys(m.Files))
	if rapid.Bool().Draw(t, "props") {
		m.Properties = rapid.MapOf(rapid.String(), rapid.String()).Draw(t, "properties")
	}
	for _, uid := range rapid.SliceOfNDistinct(rapid.StringN(1, 8, -1), 0, 3, rapid.ID[string]).Draw(t, "uids") {
		p := rapid.IntRange(1, 4).Draw(t, "p")
		op := OperatorState{UID: uid, Parallelism: p, MaxParallelism: rapid.IntRange(0, 16).Draw(t, "maxp")}
		nextKG := 0
		for idx := range p {
			if rapid.Bool().Draw(t, "skip") {
				continue
			}
			st := SubtaskState{Index: idx}
			if len(names) > 0 {
				st.OperatorState = rapid.SampledFrom(append([]string{""}, names...)).Draw(t, "op")
				st.ChannelState = rapid.SampledFrom(append([]string{""}, names...)).Draw(t, "chan")
				for nextKG < op.MaxParallelism && rapid.Bool().Draw(t, "kg") {
					f := rapid.SampledFrom(names).Draw(t, "kgfile")
					size := m.Files[f].Size
					off := rapid.Int64Range(0, size).Draw(t, "off")
					st.KeyedState = append(st.KeyedState, KeyGroupSlice{KeyGroup: nextKG, File: f, Offset: off,
						Length: rapid.Int64Range(0, size-off).Draw(t, "len")})
					nextKG++
				}
			}
			op.Subtasks = append(op.Subtasks, st)
		}
		m.Operators = append(m.Operators, op)
	}
	return m
}

// TestManifestRoundTrip: every valid manifest survives encode/decode, and
// any single flipped byte of the encoding is caught.
func TestManifestRoundTrip(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		m := genManifest(t)
		if err := m.Validate(); err != nil {
			t.Fatalf("generated an invalid manifest: %v", err)
		}
		data, err := encodeManifest(m)
		if err != nil {
			t.Fatal(err)
		}
		got, err := decodeManifest(data, "test")
		if err != nil {
			t.Fatalf("decode: %v\n%s", err, data)
		}
		if !reflect.DeepEqual(normalize(got), normalize(m)) {
			t.Fatalf("round trip:\n got %+v\nwant %+v", got, m)
		}
		i := rapid.IntRange(0, len(data)-1).Draw(t, "flip")
		bit := byte(1) << rapid.IntRange(0, 7).Draw(t, "bit")
		bad := slices.Clone(data)
		bad[i] ^= bit
		if d, err := decodeManifest(bad, "test"); err == nil && !reflect.DeepEqual(normalize(d), normalize(m)) {
			t.Fatalf("flipping bit %d of byte %d (%q) went unnoticed:\n%s", bit, i, data[i], bad)
		}
	})
}

// normalize maps empty collections to nil, which JSON does not tell apart.
func normalize(m *Manifest) *Manifest {
	c := *m
	if len(c.Properties) == 0 {
		c.Properties = nil
	}
	if len(c.Files) == 0 {
		c.Files = nil
	}
	if len(c.Operators) == 0 {
		c.Operators = nil
	}
	c.Operators = slices.Clone(c.Operators)
	for i := range c.Operators {
		o := &c.Operators[i]
		if len(o.Subtasks) == 0 {
			o.Subtasks = nil
		}
		o.Subtasks = slices.Clone(o.Subtasks)
		for j := range o.Subtasks {
			if len(o.Subtasks[j].KeyedState) == 0 {
				o.Subtasks[j].KeyedState = nil
			}
		}
	}
	return &c
}

// TestStoreModel runs random sequences of operations (commits, aborts,
// crashes while writing, deletes, retention, restarts) against a local store
// and compares List and Latest with a simple model after each. The
// semantics live in code shared by both stores (core.go); the conformance
// suite checks that the S3 backend gives the same answers.
func TestStoreModel(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		mfs := newMemFS()
		_ = mfs.MkdirAll("/m")
		open := func() Store {
			s, err := NewLocal("/m", WithFS(mfs), WithLogger(slog.New(slog.DiscardHandler)))
			if err != nil {
				rt.Fatal(err)
			}
			return s
		}
		s := open()
		model := map[int64]Kind{}
		next := int64(1)
		commit := func(kind Kind) {
			w, err := s.Begin(ctx, next, kind)
			if err != nil {
				rt.Fatal(err)
			}
			if err := w.WriteFile(ctx, "a", fileData(next, "a", 20)); err != nil {
				rt.Fatal(err)
			}
			if _, err := w.Commit(ctx, Manifest{}); err != nil {
				rt.Fatal(err)
			}
			model[next] = kind
			next++
		}
		rt.Repeat(map[string]func(*rapid.T){
			"checkpoint": func(*rapid.T) { commit(Checkpoint) },
			"savepoint":  func(*rapid.T) { commit(Savepoint) },
			"abort": func(*rapid.T) {
				w, err := s.Begin(ctx, next, Checkpoint)
				if err != nil {
					rt.Fatal(err)
				}
				_ = w.WriteFile(ctx, "a", []byte("x"))
				if err := w.Abort(ctx); err != nil {
					rt.Fatal(err)
				}
				next++
			},
			"crash while writing": func(*rapid.T) {
				w, err := s.Begin(ctx, next, Checkpoint)
				if err != nil {
					rt.Fatal(err)
				}
				_ = w.WriteFile(ctx, "a", []byte("x"))
				s = open() // the writer's process is gone
				next++
			},
			"delete": func(t *rapid.T) {
				if len(model) == 0 {
					t.Skip("nothing to delete")
				}
				id := rapid.SampledFrom(slices.Sorted(maps.Keys(model))).Draw(t, "id")
				if err := s.Delete(ctx, id); err != nil {
					t.Fatal(err)
				}
				delete(model, id)
			},
			"retain": func(t *rapid.T) {
				n := rapid.IntRange(1, 3).Draw(t, "n")
				if err := s.Retain(ctx, n); err != nil {
					t.Fatal(err)
				}
				var cps []int64
				for id, k := range model {
					if k == Checkpoint {
						cps = append(cps, id)
					}
				}
				slices.Sort(cps)
				if len(cps) > n {
					for _, id := range cps[:len(cps)-n] {
						delete(model, id)
					}
				}
			},
			"restart": func(*rapid.T) { s = open() },
			"": func(t *rapid.T) {
				var want []Entry
				var latest int64 = -1
				for _, id := range slices.Sorted(maps.Keys(model)) {
					want = append(want, Entry{ID: id, Kind: model[id]})
					if model[id] == Checkpoint {
						latest = id
					}
				}
				got, err := s.List(ctx)
				if err != nil || !slices.Equal(got, want) {
					t.Fatalf("List = %v, %v; want %v", got, err, want)
				}
				m, err := s.Latest(ctx)
				switch {
				case latest < 0 && !errors.Is(err, ErrNoCheckpoint):
					t.Fatalf("Latest = %v, %v; want none", m, err)
				case latest >= 0 && (err != nil || m.ID != latest):
					t.Fatalf("Latest = %v, %v; want %d", m, err, latest)
				}
			},
		})
	})
}
