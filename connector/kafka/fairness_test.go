package kafka_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/connector/kafka"
)

// punctuated emits a watermark of every event's timestamp - 1.
type punctuated struct{}

func (punctuated) OnEvent(_ string, ts int64, out weir.WatermarkOutput) { out.EmitWatermark(ts - 1) }
func (punctuated) OnPeriodicEmit(weir.WatermarkOutput)                  {}

// TestKafkaPartitionFairness: one source subtask reads four partitions
// with a backlog each (the same event times in every partition). The
// subtask interleaves them, so records of every partition come before
// all of any one partition has been read, and the watermark (the minimum
// over the four partitions, each a punctuated generator) moves before
// that too. Read one partition after the other, the first partition's
// whole backlog would come first with the watermark at its minimum.
func TestKafkaPartitionFairness(t *testing.T) {
	addr := broker(t)
	const parts, per = 4, 5000
	topic := newTopic(t, addr, parts)
	cl := manual(t, addr)
	var recs []*kgo.Record
	for p := range parts {
		for i := range per {
			recs = append(recs, rec(topic, int32(p), fmt.Sprintf("%d-%d", p, i), int64(1+i*10)))
		}
	}
	produce(t, cl, recs...)

	env := weir.NewEnvironment(weir.WithParallelism(1), weir.WithAutoWatermarkInterval(0))
	src := kafka.NewSource(kafka.String(), kafka.WithBrokers(addr), kafka.WithTopics(topic), kafka.WithBounded(kafka.Latest()))
	in := weir.FromDynamicSource(env, src, weir.ForGenerator(func() weir.WatermarkGenerator[string] { return punctuated{} }), "in")
	type seen struct {
		part int
		wm   int64
	}
	var mu sync.Mutex
	var got []seen
	weir.Collect(weir.ProcessStreamFunc(in, func(v string, ctx weir.Context, _ weir.Collector[string]) error {
		var p int
		fmt.Sscanf(v[:strings.IndexByte(v, '-')], "%d", &p)
		mu.Lock()
		got = append(got, seen{p, ctx.CurrentWatermark()})
		mu.Unlock()
		return nil
	}))
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	if err := env.Execute(ctx, "fairness"); err != nil {
		t.Fatal(err)
	}
	if len(got) != parts*per {
		t.Fatalf("%d records, want %d", len(got), parts*per)
	}
	// k: the records before the first partition was read to its end.
	count := make([]int, parts)
	k := -1
	for i, s := range got {
		if count[s.part]++; count[s.part] == per {
			k = i
			break
		}
	}
	var first []int // the first index of each partition
	for p := range parts {
		first = append(first, -1)
		for i, s := range got[:k] {
			if s.part == p {
				first[p] = i
				break
			}
		}
	}
	moved := -1
	for i, s := range got[:k] {
		if s.wm != weir.MinWatermark {
			moved = i
			break
		}
	}
	t.Logf("partition %d read to its end at record %d; first records of the partitions at %v; watermark moved at record %d",
		got[k].part, k, first, moved)
	for p, f := range first {
		if f < 0 {
			t.Errorf("partition %d: no record before record %d, where partition %d was read to its end", p, k, got[k].part)
		}
	}
	if moved < 0 {
		t.Errorf("the watermark stayed at its minimum for the first %d records (until partition %d was read to its end)", k, got[k].part)
	}
}
