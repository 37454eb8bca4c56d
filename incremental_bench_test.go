package weir

import (
	"context"
	"crypto/rand"
	"testing"

	"github.com/weirstream/weir/internal/checkpoint/store"
	"github.com/weirstream/weir/internal/clock"
	"github.com/weirstream/weir/internal/keygroup"
	"github.com/weirstream/weir/internal/state/pebblestate"
	"github.com/weirstream/weir/state"
)

// BenchmarkPebbleCheckpoint compares a full checkpoint (every key group's
// canonical snapshot, written as one file) with an incremental one (stage
// the database, upload the SST files the store lacks) of a Pebble backend
// holding about 128 MiB of incompressible values, into a directory store,
// after 1% of the keys changed since the previous checkpoint. It reports
// the bytes each checkpoint stores (uploaded-B/op) besides its time. Run
// it with -benchtime 3x: the setup writes the state once per variant.
func BenchmarkPebbleCheckpoint(b *testing.B) {
	const keys, valueSize, maxP = 128 << 10, 1 << 10, 128
	for _, mode := range []string{"full", "incremental"} {
		b.Run(mode, func(b *testing.B) {
			ctx := context.Background()
			db, err := pebblestate.Open[int64](b.TempDir(), 0, maxP-1, clock.NewManual(0), pebblestate.Options{})
			if err != nil {
				b.Fatal(err)
			}
			defer db.Discard()
			v, err := pebblestate.GetValue[int64, void](db, state.Value[[]byte]("v"))
			if err != nil {
				b.Fatal(err)
			}
			val := make([]byte, valueSize)
			update := func(k int64) {
				db.SetCurrentKey(k, keygroup.Of(hashLong(k), maxP))
				rand.Read(val)
				v.Update(val)
			}
			for k := range int64(keys) {
				update(k)
			}
			s, err := store.NewLocal(b.TempDir())
			if err != nil {
				b.Fatal(err)
			}
			id := int64(0)
			checkpoint := func() *store.Manifest {
				id++
				w, err := s.Begin(ctx, id, store.Checkpoint)
				if err != nil {
					b.Fatal(err)
				}
				defer w.Abort(ctx)
				op := store.OperatorState{UID: "op", Parallelism: 1, MaxParallelism: maxP}
				st := store.SubtaskState{Index: 0}
				if mode == "full" {
					var data []byte
					for kg := range maxP {
						snap, err := db.SnapshotKeyGroup(kg)
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
					staged, err := db.Stage(id)
					if err != nil {
						b.Fatal(err)
					}
					sn := OperatorSnapshot{KeyedFiles: &pebbleFiles{staged: staged}}
					if st.DB, err = saveFiles(ctx, w, store.Checkpoint, "op.0", &sn); err != nil {
						b.Fatal(err)
					}
				}
				op.Subtasks = []store.SubtaskState{st}
				m, err := w.Commit(ctx, store.Manifest{Operators: []store.OperatorState{op}})
				if err != nil {
					b.Fatal(err)
				}
				if err := s.Retain(ctx, 1); err != nil {
					b.Fatal(err)
				}
				return m
			}
			if err := db.Compact(); err != nil {
				b.Fatal(err)
			}
			first := checkpoint()
			b.Logf("%s: first checkpoint stored %d bytes", mode, first.UploadedBytes())
			var uploaded int64
			b.ResetTimer()
			for i := range b.N {
				b.StopTimer()
				for k := int64(i); k < keys; k += 100 {
					update(k)
				}
				b.StartTimer()
				uploaded += checkpoint().UploadedBytes()
			}
			b.ReportMetric(float64(uploaded)/float64(b.N), "uploaded-B/op")
		})
	}
}

// hashLong is Java's Long.hashCode, the key hash of int64 keys.
func hashLong(k int64) int32 { return int32(k ^ k>>32) }
