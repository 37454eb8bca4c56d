package kafka_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/connector/kafka"
)

// TestKafkaRescaleRestore: a job reading four partitions stops with a
// savepoint at parallelism 2, resumes at 3, stops again and resumes at 1;
// before each run a third of the records is written. Each run's output
// ends at its savepoint's barrier, so across the three runs every record
// must appear exactly once: no offset lost or repeated when partitions
// move between subtasks.
func TestKafkaRescaleRestore(t *testing.T) {
	addr := broker(t)
	topic := newTopic(t, addr, 4)
	cl := manual(t, addr)
	write := func(from, to int) {
		var recs []*kgo.Record
		for i := from; i < to; i++ {
			recs = append(recs, rec(topic, int32(i%4), itoa(i), int64(i)))
		}
		produce(t, cl, recs...)
	}
	const total = 1200
	write(0, total/3)
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	seen := map[string]int{}
	var runs []int
	// run starts the job at parallelism p (from savepoint sp if set),
	// waits until until() holds, and stops it with a savepoint.
	run := func(p int, sp string, until func(got *weir.Collected[string]) bool) string {
		opts := []weir.Option{weir.WithParallelism(p)}
		if sp != "" {
			opts = append(opts, weir.RestoreFromSavepoint(sp))
		}
		env := weir.NewEnvironment(opts...)
		env.EnableCheckpointing(time.Hour)
		src := kafka.NewSource(kafka.String(), kafka.WithBrokers(addr), kafka.WithTopics(topic))
		got := weir.Collect(weir.FromDynamicSource(env, src, weir.NoWatermarks[string](), "kafka").UID("kafka"))
		h, err := env.ExecuteAsync(ctx, "rescale")
		if err != nil {
			t.Fatal(err)
		}
		for !until(got) {
			select {
			case <-ctx.Done():
				t.Fatalf("run %d (parallelism %d): %d records read by the deadline; splits %v", len(runs)+1, p, got.Len(), splitMetrics(h))
			case <-h.Done():
				t.Fatalf("run %d (parallelism %d) ended early after %d records: %v", len(runs)+1, p, got.Len(), h.Wait())
			case <-time.After(10 * time.Millisecond):
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
		runs = append(runs, got.Len())
		return path
	}
	// Each run waits until it has read as many records as were written
	// since the last; a repeated one makes it stop early, a lost one makes
	// it stop late or never (the deadline), and the counts below tell.
	third := func(got *weir.Collected[string]) bool { return got.Len() >= total/3 }
	sp := run(2, "", third)
	write(total/3, 2*total/3)
	sp = run(3, sp, third)
	write(2*total/3, total)
	run(1, sp, third)
	var missing, repeated []string
	for i := range total {
		switch seen[itoa(i)] {
		case 0:
			missing = append(missing, itoa(i))
		case 1:
		default:
			repeated = append(repeated, itoa(i))
		}
	}
	if len(missing) > 0 || len(repeated) > 0 || len(seen) != total {
		slices.Sort(missing)
		t.Fatalf("runs read %v records; missing %v, repeated %v", runs, missing, repeated)
	}
	t.Logf("records per run (parallelism 2, 3, 1): %v", runs)
}

// splitMetrics lists every source subtask's splits: id, records read,
// ended, for a failure's message.
func splitMetrics(h *weir.JobHandle) []string {
	var out []string
	for _, tm := range h.Metrics() {
		for _, om := range tm.Operators {
			for _, sm := range om.Splits {
				out = append(out, fmt.Sprintf("%d:%s=%d", tm.Subtask, sm.ID, sm.Records))
			}
		}
	}
	return out
}
