package kafka_test

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/connector/kafka"
)

type order struct {
	ID     int   `json:"id"`
	Amount int   `json:"amount"`
	TS     int64 `json:"ts"`
}

func orderJSON(o order) string { return mustJSON(o) }

func mustJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return string(b)
}

// malformedTopic holds orders on partition 0: at offset 5 a value that is
// no JSON, at offset 7 JSON of the wrong type, the others good.
func malformedTopic(t *testing.T, addr string) string {
	topic := newTopic(t, addr, 1)
	cl := manual(t, addr)
	for i := range 10 {
		v := orderJSON(order{ID: i, Amount: i * 10, TS: int64(i)})
		switch i {
		case 5:
			v = "{not json"
		case 7:
			v = `{"id":"seven"}`
		}
		produce(t, cl, rec(topic, 0, v, int64(i)))
	}
	return topic
}

func TestKafkaMalformedFailsJob(t *testing.T) {
	addr := broker(t)
	topic := malformedTopic(t, addr)
	env := weir.NewEnvironment(weir.WithParallelism(1))
	src := kafka.NewSource(kafka.JSON[order](), kafka.WithBrokers(addr), kafka.WithTopics(topic), kafka.WithBounded(kafka.Latest()))
	weir.Collect(weir.FromDynamicSource(env, src, weir.NoWatermarks[order](), "orders"))
	err := env.Execute(context.Background(), "malformed")
	var me *kafka.MalformedError
	if !errors.As(err, &me) {
		t.Fatalf("err = %v, want a MalformedError", err)
	}
	if me.Topic != topic || me.Partition != 0 || me.Offset != 5 {
		t.Fatalf("malformed record at %s/%d/%d, want %s/0/5", me.Topic, me.Partition, me.Offset, topic)
	}
	for _, w := range []string{topic, "partition 0", "offset 5"} {
		if !strings.Contains(err.Error(), w) {
			t.Fatalf("error %q does not name %q", err, w)
		}
	}
}

func TestKafkaMalformedToDeadLetters(t *testing.T) {
	addr := broker(t)
	topic := malformedTopic(t, addr)
	env := weir.NewEnvironment(weir.WithParallelism(1))
	dead := weir.NewOutputTag[kafka.DeadLetter]("dead")
	src := kafka.NewSource(kafka.JSON[order](), kafka.WithBrokers(addr), kafka.WithTopics(topic),
		kafka.WithBounded(kafka.Latest()), kafka.WithDeadLetters(dead))
	orders := weir.FromDynamicSource(env, src, weir.NoWatermarks[order](), "orders")
	good := weir.Collect(orders)
	bad := weir.Collect(weir.SideOutput(orders, dead))
	if err := env.Execute(context.Background(), "dead letters"); err != nil {
		t.Fatal(err)
	}
	var ids []int
	for _, o := range good.Values() {
		ids = append(ids, o.ID)
	}
	if !slices.Equal(ids, []int{0, 1, 2, 3, 4, 6, 8, 9}) {
		t.Fatalf("good orders %v", ids)
	}
	dl := bad.Values()
	if len(dl) != 2 || dl[0].Record.Offset != 5 || string(dl[0].Record.Value) != "{not json" || dl[0].Record.Topic != topic ||
		dl[1].Record.Offset != 7 || string(dl[1].Record.Value) != `{"id":"seven"}` {
		t.Fatalf("dead letters %+v", dl)
	}
	// The errors say "json: " once: a syntax error and a type error.
	for i, want := range []string{"json: invalid character", "json: cannot unmarshal string"} {
		if e := dl[i].Error; !strings.HasPrefix(e, want) || strings.Contains(e, "json: json:") {
			t.Errorf("dead letter at offset %d: error %q, want it to start with %q, once", dl[i].Record.Offset, e, want)
		}
	}
}

func TestKafkaUnknownTopic(t *testing.T) {
	addr := broker(t)
	env := weir.NewEnvironment(weir.WithParallelism(2))
	src := kafka.NewSource(kafka.String(), kafka.WithBrokers(addr), kafka.WithTopics("weir-no-such-topic"))
	weir.Collect(weir.FromDynamicSource(env, src, weir.NoWatermarks[string](), "missing"))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	err := env.Execute(ctx, "unknown topic")
	if err == nil || !strings.Contains(err.Error(), `topic "weir-no-such-topic" does not exist`) {
		t.Fatalf("err = %v, want the missing topic named", err)
	}
}

func TestKafkaUnreachableBroker(t *testing.T) {
	// A port nothing listens on: take one and close it.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	env := weir.NewEnvironment(weir.WithParallelism(1))
	src := kafka.NewSource(kafka.String(), kafka.WithBrokers(addr), kafka.WithTopics("t"), kafka.WithRequestTimeout(3*time.Second))
	weir.Collect(weir.FromDynamicSource(env, src, weir.NoWatermarks[string](), "nowhere"))
	// The bound only fails on a hang: the source gives up after 3 s.
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	err = env.Execute(ctx, "unreachable")
	if ctx.Err() != nil {
		t.Fatal("the job hung on an unreachable broker")
	}
	if err == nil || !strings.Contains(err.Error(), "no answer from the brokers ["+addr+"] within 3s") {
		t.Fatalf("err = %v, want the brokers and the timeout named", err)
	}
}

func TestKafkaTopicDeletedWhileRunning(t *testing.T) {
	addr := broker(t)
	topic := newTopic(t, addr, 2)
	cl := manual(t, addr)
	produce(t, cl, rec(topic, 0, "a", 1), rec(topic, 1, "b", 2))
	env := weir.NewEnvironment(weir.WithParallelism(1))
	src := kafka.NewSource(kafka.String(), kafka.WithBrokers(addr), kafka.WithTopics(topic),
		kafka.WithPartitionDiscovery(100*time.Millisecond))
	got := weir.Collect(weir.FromDynamicSource(env, src, weir.NoWatermarks[string](), "doomed"))
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	h, err := env.ExecuteAsync(ctx, "deleted")
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, ctx, "both records", func() bool { return got.Len() == 2 })
	if _, err := admin(t, addr).DeleteTopic(ctx, topic); err != nil {
		t.Fatal(err)
	}
	err = h.Wait()
	if ctx.Err() != nil {
		t.Fatal("the job did not notice the deleted topic")
	}
	if err == nil || !strings.Contains(err.Error(), `topic "`+topic+`" was deleted while the job read it`) {
		t.Fatalf("err = %v, want the deleted topic named", err)
	}
}

// waitFor polls cond until it holds; ctx's deadline only catches a hang.
func waitFor(t testing.TB, ctx context.Context, what string, cond func() bool) {
	t.Helper()
	for !cond() {
		select {
		case <-ctx.Done():
			t.Fatalf("waiting for %s: %v", what, ctx.Err())
		case <-time.After(10 * time.Millisecond):
		}
	}
}
