package weir

import (
	"context"
	"crypto/rand"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/weirstream/weir/internal/checkpoint/durable"
	"github.com/weirstream/weir/internal/checkpoint/store"
	"github.com/weirstream/weir/internal/clock"
	"github.com/weirstream/weir/internal/engine"
	"github.com/weirstream/weir/internal/keygroup"
	"github.com/weirstream/weir/internal/state/kvstate"
	"github.com/weirstream/weir/state"
	"github.com/weirstream/weir/state/kv"
)

// pebbleOpener is the Pebble backend (state/pebble), which this package's
// own tests cannot import: SetPebbleOpenerForTest, called by an init of
// package weir_test (pebble_hook_test.go), sets it.
var pebbleOpener kv.Opener

// SetPebbleOpenerForTest sets the kv.Opener of the Pebble benchmarks.
func SetPebbleOpenerForTest(o kv.Opener) { pebbleOpener = o }

// BenchmarkPebbleCheckpoint compares a full checkpoint (every key group's
// canonical snapshot, written as one file) with an incremental one (stage
// the database, upload the SST files the store lacks) of a Pebble backend
// holding about 128 MiB of incompressible values, into a directory store,
// after 1% of the keys changed since the previous checkpoint. It reports
// the bytes each checkpoint stores (uploaded-B/op) besides its time. Run
// it with -benchtime 3x: the setup writes the state once per variant.
func BenchmarkPebbleCheckpoint(b *testing.B) {
	for _, mode := range []string{"full", "incremental"} {
		b.Run(mode, func(b *testing.B) {
			ps := newPebbleBenchState(b)
			defer ps.db.Discard()
			start := time.Now()
			first := ps.checkpoint(mode == "full")
			b.Logf("%s: first checkpoint stored %d bytes in %v", mode, first.UploadedBytes(), time.Since(start).Round(time.Millisecond))
			var uploaded int64
			b.ResetTimer()
			for i := range b.N {
				b.StopTimer()
				for k := int64(i); k < pebbleBenchKeys; k += 100 {
					ps.update(k)
				}
				b.StartTimer()
				uploaded += ps.checkpoint(mode == "full").UploadedBytes()
			}
			b.ReportMetric(float64(uploaded)/float64(b.N), "uploaded-B/op")
		})
	}
}

// BenchmarkPebbleRestore restores the incremental checkpoint of
// BenchmarkPebbleCheckpoint's 128 MiB state from a directory store, as a
// job restarting from its latest checkpoint does: find and verify the
// latest checkpoint, lay its database files out in a new directory and
// open the backend there. Run it with -benchtime 3x.
func BenchmarkPebbleRestore(b *testing.B) {
	ps := newPebbleBenchState(b)
	ps.checkpoint(false)
	if err := ps.db.Discard(); err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	d := durable.FromStore(ps.s, "")
	dirs := b.TempDir()
	b.ResetTimer()
	for i := range b.N {
		cp, err := d.Latest(ctx)
		if err != nil {
			b.Fatal(err)
		}
		img := cp.Operators["op"][0].KeyedFiles.(*durable.DBFiles).Image
		be, err := kvstate.RestoreImages[int64]([]kvstate.Image{img}, filepath.Join(dirs, strconv.Itoa(i)), 0, pebbleBenchMaxP-1, clock.NewManual(0), kvstate.Options{Store: pebbleOpener})
		if err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		if err := be.Discard(); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
	}
}

// The state of the Pebble checkpoint benchmarks: about 128 MiB of
// incompressible values under 128k keys, 128 key groups.
const pebbleBenchKeys, pebbleBenchValue, pebbleBenchMaxP = 128 << 10, 1 << 10, 128

type pebbleBenchState struct {
	b   *testing.B
	db  *kvstate.Backend[int64]
	v   state.ValueState[[]byte]
	val []byte
	s   *store.Local
	id  int64
}

// newPebbleBenchState writes the benchmark state into a new backend,
// compacts it and opens an empty directory store.
func newPebbleBenchState(b *testing.B) *pebbleBenchState {
	db, err := kvstate.Open[int64](b.TempDir(), 0, pebbleBenchMaxP-1, clock.NewManual(0), kvstate.Options{Store: pebbleOpener})
	if err != nil {
		b.Fatal(err)
	}
	v, err := kvstate.GetValue[int64, void](db, state.Value[[]byte]("v"))
	if err != nil {
		b.Fatal(err)
	}
	s, err := store.NewLocal(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	ps := &pebbleBenchState{b: b, db: db, v: v, val: make([]byte, pebbleBenchValue), s: s}
	for k := range int64(pebbleBenchKeys) {
		ps.update(k)
	}
	if err := db.Compact(); err != nil {
		b.Fatal(err)
	}
	return ps
}

// update writes a new random value under key k.
func (ps *pebbleBenchState) update(k int64) {
	ps.db.SetCurrentKey(k, keygroup.Of(hashLong(k), pebbleBenchMaxP))
	rand.Read(ps.val)
	ps.v.Update(ps.val)
}

// checkpoint stores the next checkpoint of the state, full (every key
// group's canonical snapshot in one file) or incremental (the staged SST
// files the store lacks), keeps only it and returns its manifest.
func (ps *pebbleBenchState) checkpoint(full bool) *store.Manifest {
	b, ctx := ps.b, context.Background()
	ps.id++
	w, err := ps.s.Begin(ctx, ps.id, store.Checkpoint)
	if err != nil {
		b.Fatal(err)
	}
	defer w.Abort(ctx)
	op := store.OperatorState{UID: "op", Parallelism: 1, MaxParallelism: pebbleBenchMaxP}
	st := store.SubtaskState{Index: 0}
	if full {
		var data []byte
		for kg := range pebbleBenchMaxP {
			snap, err := ps.db.SnapshotKeyGroup(kg)
			if err != nil {
				b.Fatal(err)
			}
			st.KeyedState = append(st.KeyedState, store.KeyGroupSlice{KeyGroup: kg, File: "op.0.kg", Offset: int64(len(data)), Length: int64(len(snap))})
			data = append(data, snap...)
		}
		if err := w.WriteFile(ctx, "op.0.kg", data); err != nil {
			b.Fatal(err)
		}
	} else {
		staged, err := ps.db.Stage(ps.id)
		if err != nil {
			b.Fatal(err)
		}
		sn := engine.OperatorSnapshot{KeyedFiles: &durable.DBFiles{Staged: staged}}
		if st.DB, err = durable.SaveFiles(ctx, w, store.Checkpoint, "op.0", &sn); err != nil {
			b.Fatal(err)
		}
	}
	op.Subtasks = []store.SubtaskState{st}
	m, err := w.Commit(ctx, store.Manifest{Operators: []store.OperatorState{op}})
	if err != nil {
		b.Fatal(err)
	}
	if err := ps.s.Retain(ctx, 1); err != nil {
		b.Fatal(err)
	}
	return m
}

// hashLong is Java's Long.hashCode, the key hash of int64 keys.
func hashLong(k int64) int32 { return int32(k ^ k>>32) }
