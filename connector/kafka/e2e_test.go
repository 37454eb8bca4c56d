package kafka_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/connector/kafka"
	"github.com/weirstream/weir/state"
)

// The end-to-end exactly-once test of issue 14: orders and payments
// topics in, a keyed co-process with state and event-time timers matching
// them, an exactly-once Kafka sink out, while faults are injected at
// random records: a panic in the co-process, a task failing (an error
// from a function), and the connection to the broker cut for a while
// (every client reaches the broker through a TCP proxy the test cuts).
// The job restarts from its checkpoints; a read_committed consumer must
// then see every expected result exactly once and nothing else.
// WEIR_FAULT_TRIALS=N runs N trials (default 1), each with its own seed.

type payment struct {
	ID   int   `json:"id"`
	Paid int   `json:"paid"`
	TS   int64 `json:"ts"`
}

// e2eMatch keeps the order and the payment of an id and, at the order's
// time + 1 s (an event-time timer), emits the match.
type e2eMatch struct {
	inj   *injector
	order state.ValueState[order]
	pay   state.ValueState[payment]
}

func (f *e2eMatch) Open(ctx weir.KeyedRuntimeContext[int]) (err error) {
	if f.order, err = weir.GetValueState(ctx, state.Value[order]("order")); err != nil {
		return err
	}
	f.pay, err = weir.GetValueState(ctx, state.Value[payment]("payment"))
	return err
}

func (f *e2eMatch) ProcessElement1(o order, ctx weir.KeyedContext[int], _ weir.Collector[string]) error {
	if o.ID < 0 {
		return nil // a partition's last record, there to move event time on
	}
	f.order.Update(o)
	ctx.TimerService().RegisterEventTimeTimer(o.TS + 1000)
	return nil
}

func (f *e2eMatch) ProcessElement2(p payment, _ weir.KeyedContext[int], _ weir.Collector[string]) error {
	f.inj.step("payments")
	if p.ID >= 0 {
		f.pay.Update(p)
	}
	return nil
}

func (f *e2eMatch) OnTimer(_ int64, ctx weir.OnTimerContext[int], out weir.Collector[string]) error {
	o, _ := f.order.Value()
	p, ok := f.pay.Value()
	if !ok {
		out.Collect(fmt.Sprintf("id=%d unpaid", ctx.CurrentKey()))
	} else {
		out.Collect(resultLine(o, p))
	}
	f.order.Clear()
	f.pay.Clear()
	return nil
}

func resultLine(o order, p payment) string {
	return fmt.Sprintf("id=%d amount=%d paid=%d", o.ID, o.Amount, p.Paid)
}

// injector fires faults at given counts of records seen at a point,
// counted over all attempts, each once.
type injector struct {
	mu     sync.Mutex
	counts map[string]int
	faults []fault
	px     *proxy
	log    func(string, ...any)
	timers sync.WaitGroup
}

type fault struct {
	at    string // "orders" or "payments"
	after int
	kind  string // "panic", "fail", "cut"
	cutMs int
	fired bool
}

var errKilled = errors.New("injected: task killed")

func (in *injector) step(at string) {
	in.mu.Lock()
	in.counts[at]++
	n := in.counts[at]
	var fire *fault
	for i := range in.faults {
		f := &in.faults[i]
		if !f.fired && f.at == at && n >= f.after {
			f.fired = true
			fire = f
			break
		}
	}
	in.mu.Unlock()
	if fire == nil {
		return
	}
	in.log("fault", "kind", fire.kind, "at", at, "record", n)
	switch fire.kind {
	case "panic":
		panic(fmt.Sprintf("injected panic at %s record %d", at, n))
	case "fail":
		panic(errKilled)
	case "cut":
		in.px.cut()
		in.timers.Add(1)
		time.AfterFunc(time.Duration(fire.cutMs)*time.Millisecond, func() {
			defer in.timers.Done()
			in.px.restore()
		})
	}
}

func TestKafkaExactlyOnceEndToEnd(t *testing.T) {
	addr := broker(t)
	trials := 1
	if s := os.Getenv("WEIR_FAULT_TRIALS"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 {
			t.Fatalf("WEIR_FAULT_TRIALS=%q", s)
		}
		trials = n
	}
	for trial := range trials {
		seed := uint64(time.Now().UnixNano()) + uint64(trial)
		if s := os.Getenv("WEIR_FAULT_SEED"); s != "" {
			v, err := strconv.ParseUint(s, 10, 64)
			if err != nil {
				t.Fatalf("WEIR_FAULT_SEED=%q", s)
			}
			seed = v + uint64(trial)
		}
		t.Run("trial-"+strconv.Itoa(trial), func(t *testing.T) { exactlyOnceTrial(t, addr, seed) })
	}
}

func exactlyOnceTrial(t *testing.T, addr string, seed uint64) {
	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	const n = 1500
	p := 1 + rng.IntN(3)
	t.Logf("seed %d, parallelism %d", seed, p)
	orders, payments, results := newTopic(t, addr, 3), newTopic(t, addr, 3), newTopic(t, addr, 3)
	cl := manual(t, addr)
	// The input is written in waves; after each the test waits until the
	// job has read it and taken two more checkpoints, so that faults find
	// checkpoints to restore from mid-stream.
	const waves = 5
	var want []string
	wave := make([][]*kgo.Record, waves)
	for i := range n {
		o := order{ID: i, Amount: 10 + i%97, TS: int64(i) * 10}
		py := payment{ID: i, Paid: 10 + i%89, TS: int64(i)*10 + 5}
		w := i * waves / n
		wave[w] = append(wave[w], rec(orders, int32(i%3), orderJSON(o), o.TS), rec(payments, int32(i%3), mustJSON(py), py.TS))
		want = append(want, resultLine(o, py))
	}
	// A last record per partition, far ahead in event time, so that the
	// watermark passes every real record's timer.
	for part := range 3 {
		end := int64(n)*10 + 5000
		wave[waves-1] = append(wave[waves-1], rec(orders, int32(part), orderJSON(order{ID: -1 - part, TS: end}), end),
			rec(payments, int32(part), mustJSON(payment{ID: -1 - part, TS: end}), end))
	}

	px := newProxy(t, addr)
	inj := &injector{counts: map[string]int{}, px: px, log: func(msg string, args ...any) { t.Log(append([]any{msg}, args...)...) }}
	kinds := []string{"panic", "fail", "cut"}
	for range 1 + rng.IntN(4) {
		f := fault{kind: kinds[rng.IntN(len(kinds))], after: 1 + rng.IntN(n), cutMs: 200 + rng.IntN(1500)}
		f.at = "orders"
		if f.kind == "panic" {
			f.at = "payments"
		}
		inj.faults = append(inj.faults, f)
	}
	t.Logf("faults %+v", inj.faults)
	defer inj.timers.Wait()

	restores := &countHandler{msg: "restoring from checkpoint"}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("the job's last log records:\n%s", restores.tail())
		}
	})
	env := weir.NewEnvironment(weir.WithParallelism(p), weir.WithRestartStrategy(weir.FixedDelayRestart(50, 20*time.Millisecond)),
		weir.WithLogger(slog.New(restores)))
	env.EnableCheckpointing(20*time.Millisecond, weir.CheckpointTimeout(20*time.Second), weir.TolerableCheckpointFailures(1000))
	via := kafka.WithClientOptions(kgo.Dialer(px.Dial))
	strategy := func() weir.WatermarkStrategy[order] {
		return weir.ForBoundedOutOfOrderness[order](100 * time.Millisecond)
	}
	osrc := weir.FromDynamicSource(env, kafka.NewSource(kafka.JSON[order](), kafka.WithBrokers(addr), kafka.WithTopics(orders), via), strategy(), "orders").UID("orders")
	ps := weir.FromDynamicSource(env, kafka.NewSource(kafka.JSON[payment](), kafka.WithBrokers(addr), kafka.WithTopics(payments), via), weir.ForBoundedOutOfOrderness[payment](100*time.Millisecond), "payments").UID("payments")
	osrc = weir.ProcessStreamFunc(osrc, func(o order, _ weir.Context, out weir.Collector[order]) error {
		inj.step("orders")
		out.Collect(o)
		return nil
	})
	matched := weir.KeyedCoProcess(weir.ConnectKeyed(weir.KeyBy(osrc, func(o order) int { return o.ID }), weir.KeyBy(ps, func(p payment) int { return p.ID })),
		&e2eMatch{inj: inj}).UID("match")
	kafka.NewSink(kafka.StringValues(), kafka.WithBrokers(addr), kafka.WithDefaultTopic(results), via,
		kafka.WithDeliveryGuarantee(kafka.ExactlyOnce), kafka.WithTransactionalIDPrefix(results),
		kafka.WithTransactionTimeout(time.Minute)).To(matched).UID("results")
	// The sources are unbounded (a bounded source's subtask that ends
	// would stop the job's checkpoints): once every result is committed
	// and the faults are over, the job stops with a savepoint, which
	// commits the last transactions.
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	h, err := env.ExecuteAsync(ctx, "exactly-once")
	if err != nil {
		t.Fatal(err)
	}
	written, start := 0, time.Now()
	for i, w := range wave {
		produce(t, cl, w...)
		written += len(w) / 2
		checkpoints := snapshots(h)
		for positions(h, orders) != written || positions(h, payments) != written || snapshots(h) < checkpoints+2 {
			select {
			case <-h.Done():
				t.Fatalf("the job ended: %v", h.Wait())
			case <-ctx.Done():
				t.Fatalf("waiting for the job to read %d records of each topic (read %d and %d) and take two checkpoints (took %d since): %v",
					written, positions(h, orders), positions(h, payments), snapshots(h)-checkpoints, ctx.Err())
			case <-time.After(10 * time.Millisecond):
			}
		}
		t.Logf("wave %d read and two checkpoints taken after %v", i, time.Since(start).Round(time.Millisecond))
	}
	waitCommitted(t, ctx, addr, results, n, h)
	inj.timers.Wait()
	for {
		sctx, scancel := context.WithTimeout(ctx, 20*time.Second)
		_, err := h.StopWithSavepoint(sctx, t.TempDir())
		scancel()
		if err == nil {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("stopping with a savepoint: %v", err)
		}
	}
	if err := h.Wait(); !errors.Is(err, weir.ErrStopped) {
		t.Fatal(err)
	}
	t.Logf("restored from a checkpoint %d times", restores.n.Load())
	got := values(readAll(t, addr, results, true))
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		var dup, missing []string
		seen := map[string]int{}
		for _, g := range got {
			seen[g]++
			if seen[g] == 2 {
				dup = append(dup, g)
			}
		}
		for _, w := range want {
			if seen[w] == 0 {
				missing = append(missing, w)
			}
		}
		t.Fatalf("read_committed: %d results, want %d; %d repeated (%q), %d missing (%q)", len(got), len(want), len(dup), dup[:min(len(dup), 3)], len(missing), missing[:min(len(missing), 3)])
	}
}

// countHandler counts the log records with message msg and keeps the
// last 200 records of level Info and above, for a failed trial to show.
type countHandler struct {
	msg string
	n   atomic.Int64

	mu   sync.Mutex
	last []string
}

func (h *countHandler) Enabled(context.Context, slog.Level) bool { return true }
func (h *countHandler) Handle(_ context.Context, r slog.Record) error {
	if r.Message == h.msg {
		h.n.Add(1)
	}
	if r.Level < slog.LevelInfo {
		return nil
	}
	line := r.Time.Format("15:04:05.000") + " " + r.Level.String() + " " + r.Message
	r.Attrs(func(a slog.Attr) bool {
		if a.Key != "stack" { // the panics' stacks are injected ones
			line += " " + a.String()
		}
		return true
	})
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.last) == 200 {
		h.last = h.last[1:]
	}
	h.last = append(h.last, line)
	return nil
}

// tail returns the records kept, one per line.
func (h *countHandler) tail() string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return strings.Join(h.last, "\n")
}
func (h *countHandler) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h *countHandler) WithGroup(string) slog.Handler      { return h }

// waitCommitted waits until a read_committed consumer has seen n records
// in topic, failing if the job ends first.
func waitCommitted(t *testing.T, ctx context.Context, addr, topic string, n int, h *weir.JobHandle) {
	t.Helper()
	cl := client(t, addr, kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()), kgo.FetchMaxWait(200*time.Millisecond))
	seen := 0
	for seen < n {
		select {
		case <-h.Done():
			t.Fatalf("the job ended (%v) with %d of %d results committed", h.Wait(), seen, n)
		default:
		}
		pctx, pcancel := context.WithTimeout(ctx, time.Second)
		fs := cl.PollFetches(pctx)
		pcancel()
		if ctx.Err() != nil {
			t.Fatalf("only %d of %d results committed before the deadline; the job's tasks: %s", seen, n, taskSummary(h))
		}
		seen += fs.NumRecords()
	}
}

// positions sums the source positions (kafka_current_offset) on topic.
func positions(h *weir.JobHandle, topic string) int {
	n := 0
	for _, tm := range h.Metrics() {
		for _, om := range tm.Operators {
			for _, g := range om.Gauges {
				if g.Name == "kafka_current_offset" && g.Labels["topic"] == topic {
					n += int(g.Value)
				}
			}
		}
	}
	return n
}

// snapshots is the smallest number of snapshots a task has taken.
func snapshots(h *weir.JobHandle) int64 {
	least := int64(-1)
	for _, tm := range h.Metrics() {
		if least < 0 || tm.Checkpoints < least {
			least = tm.Checkpoints
		}
	}
	return least
}

// taskSummary is what a stuck job's tasks show: per task its checkpoints,
// and per operator its records and watermarks.
func taskSummary(h *weir.JobHandle) string {
	var b strings.Builder
	for _, tm := range h.Metrics() {
		fmt.Fprintf(&b, "\n  %s[%d] checkpoints=%d:", tm.Task, tm.Subtask, tm.Checkpoints)
		for _, om := range tm.Operators {
			fmt.Fprintf(&b, " %s(in=%d out=%d inWM=%v outWM=%d idle=%v)", om.Name, om.RecordsIn, om.RecordsOut, om.InputWatermarks, om.OutputWatermark, om.OutputIdle)
		}
	}
	return b.String()
}
