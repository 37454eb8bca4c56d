// Command reconcile matches orders with their payments in event time.
//
// Two generated streams, orders and payments, are keyed by order id and
// connected; a KeyedCoProcessFunction buffers each side in MapState keyed
// by event timestamp and registers one cleanup timer per buffered record.
// An order and a payment match when their timestamps are at most 15 minutes
// apart; an order still unpaid 15 minutes of event time after its timestamp
// goes to the "unmatched" side output. The job needs no outside service:
//
//	go run ./examples/reconcile -orders 100000 -parallelism 2
//
// The data is deterministic (a hash of the order index): about 90% of the
// orders are paid 0..10 minutes after the order, 3% up to 2 minutes before
// it (the payment may also arrive first), 1% 16..20 minutes after it (too
// late: the order is reported unmatched), 1% exactly 15 minutes or 15
// minutes and 1 ms after it (in time and too late), and 5% never.
//
// With -mode join the same reconciliation runs as an interval outer join
// (join.go), with the late records of both sides in side outputs. With
// -mode kafka it reads the orders and payments topics and writes the
// results to a topic exactly once (kafka.go; -mode produce writes sample
// data to the topics).
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/state"
)

// Timeout is how far apart in event time an order and its payment may be.
const Timeout = 15 * time.Minute

// Generation parameters.
const (
	orderSpacing = 500 * time.Millisecond // event time between orders
	orderJitter  = 30 * time.Second       // orders are out of order by less than this
	earliestPay  = 2 * time.Minute        // an early payment precedes its order by up to this
	latestPay    = 20 * time.Minute       // the latest (too late) payment
)

// Out-of-orderness bounds of the two generated streams. Each bounds the real
// disorder of its stream, so no record is ever late; that makes the result
// independent of parallelism and timing (see Reconciler).
const (
	orderOutOfOrderness   = orderJitter
	paymentOutOfOrderness = orderJitter + earliestPay + latestPay + time.Minute
)

// epoch is the event time of order 0.
var epoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).UnixMilli()

// Order is a purchase; TS is its event time in ms since the Unix epoch.
type Order struct {
	ID     int64
	TS     int64
	Amount int64 // cents
}

// String describes the order.
func (o Order) String() string {
	return fmt.Sprintf("order %d at %s for %s", o.ID, fmtTime(o.TS), fmtCents(o.Amount))
}

// Payment pays an order; TS is its event time.
type Payment struct {
	OrderID int64 // -1: no payment (filtered out)
	TS      int64
	Amount  int64
}

// Match is an order with its payment.
type Match struct {
	OrderID   int64
	OrderTS   int64
	PaymentTS int64
	Amount    int64
}

// String describes the match.
func (m Match) String() string {
	return fmt.Sprintf("order %d at %s for %s paid %s", m.OrderID, fmtTime(m.OrderTS), fmtCents(m.Amount),
		fmtDelay(time.Duration(m.PaymentTS-m.OrderTS)*time.Millisecond))
}

func fmtTime(ms int64) string { return time.UnixMilli(ms).UTC().Format("2006-01-02 15:04:05.000") }

func fmtCents(c int64) string { return fmt.Sprintf("%d.%02d", c/100, c%100) }

func fmtDelay(d time.Duration) string {
	if d < 0 {
		return fmt.Sprintf("%v before", -d)
	}
	return fmt.Sprintf("%v after", d)
}

// mix is SplitMix64's finalizer: a well-spread hash of i and a salt.
func mix(i int64, salt uint64) uint64 {
	z := uint64(i)*0x9e3779b97f4a7c15 + salt*0xbf58476d1ce4e5b9
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}

// OrderAt returns order i.
func OrderAt(i int64) Order {
	r := mix(i, 1)
	return Order{
		ID:     i,
		TS:     epoch + i*orderSpacing.Milliseconds() + int64(r%uint64(orderJitter.Milliseconds())),
		Amount: 100 + int64((r>>32)%50_000),
	}
}

// PaymentFor returns the payment of order i, if it is ever paid.
func PaymentFor(i int64) (Payment, bool) {
	o := OrderAt(i)
	r, d := mix(i, 2)%100, mix(i, 3)
	var delay int64
	switch {
	case r < 5: // never paid
		return Payment{}, false
	case r < 8: // paid before the order's timestamp
		delay = -1 - int64(d%uint64(earliestPay.Milliseconds()))
	case r < 9: // paid too late
		lo := (Timeout + time.Minute).Milliseconds()
		delay = lo + int64(d%uint64(latestPay.Milliseconds()-lo+1))
	case r < 10: // paid exactly at the limit (still in time) or 1 ms after it
		delay = Timeout.Milliseconds() + int64(d%2)
	default: // paid within 0..10 minutes
		delay = int64(d % uint64((10*time.Minute).Milliseconds()+1))
	}
	return Payment{OrderID: i, TS: o.TS + delay, Amount: o.Amount}, true
}

// paymentAt is the payment generator: the payment of order i, or a
// placeholder (OrderID -1, at the order's time) that is filtered out.
func paymentAt(i int64) Payment {
	if p, ok := PaymentFor(i); ok {
		return p
	}
	return Payment{OrderID: -1, TS: OrderAt(i).TS}
}

// UnmatchedTag is the side output of orders unpaid after Timeout.
var UnmatchedTag = weir.NewOutputTag[Order]("unmatched")

// Reconciler is the KeyedCoProcessFunction that matches orders (input 1)
// with payments (input 2) of one order id.
//
// Each side waits in MapState keyed by its event timestamp, with an
// event-time timer at timestamp+Timeout. A record that finds a waiting
// record of the other side within Timeout of its own timestamp matches it
// (the earliest such); otherwise it waits. When an order's timer fires, the
// order is still unpaid and goes to UnmatchedTag; a payment's timer drops
// the payment.
//
// The result does not depend on arrival order: with no late records, a
// timer at t fires only once the watermark has reached t, and then every
// record with a timestamp up to t has arrived. So an order and a payment
// within Timeout of each other always meet before either timer fires.
type Reconciler struct {
	orders   state.MapState[int64, Order]
	payments state.MapState[int64, Payment]
}

// Open gets the state handles.
func (r *Reconciler) Open(ctx weir.KeyedRuntimeContext[int64]) (err error) {
	if r.orders, err = weir.GetMapState(ctx, state.Map[int64, Order]("orders")); err != nil {
		return err
	}
	r.payments, err = weir.GetMapState(ctx, state.Map[int64, Payment]("payments"))
	return err
}

// within reports whether two timestamps are at most Timeout apart.
func within(a, b int64) bool {
	d := a - b
	return d <= Timeout.Milliseconds() && d >= -Timeout.Milliseconds()
}

// earliest returns the smallest key of m within Timeout of ts.
func earliest[V any](m state.MapState[int64, V], ts int64) (int64, bool) {
	best, found := int64(0), false
	for k := range m.Keys() {
		if within(k, ts) && (!found || k < best) {
			best, found = k, true
		}
	}
	return best, found
}

// taken forgets the cleanup timer of a record at ts that has been matched,
// unless a record of the other side waits with the same timestamp.
func (r *Reconciler) taken(ctx weir.KeyedContext[int64], ts int64) {
	if !r.orders.Contains(ts) && !r.payments.Contains(ts) {
		ctx.TimerService().DeleteEventTimeTimer(ts + Timeout.Milliseconds())
	}
}

// ProcessElement1 handles an order.
func (r *Reconciler) ProcessElement1(o Order, ctx weir.KeyedContext[int64], out weir.Collector[Match]) error {
	if ts, ok := earliest(r.payments, o.TS); ok {
		p, _ := r.payments.Get(ts)
		r.payments.Remove(ts)
		r.taken(ctx, ts)
		out.Collect(Match{OrderID: o.ID, OrderTS: o.TS, PaymentTS: p.TS, Amount: p.Amount})
		return nil
	}
	r.orders.Put(o.TS, o)
	ctx.TimerService().RegisterEventTimeTimer(o.TS + Timeout.Milliseconds())
	return nil
}

// ProcessElement2 handles a payment.
func (r *Reconciler) ProcessElement2(p Payment, ctx weir.KeyedContext[int64], out weir.Collector[Match]) error {
	if ts, ok := earliest(r.orders, p.TS); ok {
		o, _ := r.orders.Get(ts)
		r.orders.Remove(ts)
		r.taken(ctx, ts)
		out.Collect(Match{OrderID: o.ID, OrderTS: o.TS, PaymentTS: p.TS, Amount: p.Amount})
		return nil
	}
	r.payments.Put(p.TS, p)
	ctx.TimerService().RegisterEventTimeTimer(p.TS + Timeout.Milliseconds())
	return nil
}

// OnTimer reports the order (and drops the payment) that waited since
// ts-Timeout.
func (r *Reconciler) OnTimer(ts int64, ctx weir.OnTimerContext[int64], _ weir.Collector[Match]) error {
	at := ts - Timeout.Milliseconds()
	if o, ok := r.orders.Get(at); ok {
		r.orders.Remove(at)
		weir.Output(ctx, UnmatchedTag, o)
	}
	r.payments.Remove(at)
	return nil
}

// Build adds the reconciliation of n generated orders to env and returns
// the collected matches and unmatched orders (read them after the job).
func Build(env *weir.Environment, n int) (*weir.Collected[Match], *weir.Collected[Order]) {
	orders := weir.Generate(env, int64(n), 0, OrderAt,
		weir.ForBoundedOutOfOrderness[Order](orderOutOfOrderness).
			WithTimestampAssigner(func(o Order, _ int64) int64 { return o.TS })).Name("orders")
	allPayments := weir.Generate(env, int64(n), 0, paymentAt,
		weir.ForBoundedOutOfOrderness[Payment](paymentOutOfOrderness).
			WithTimestampAssigner(func(p Payment, _ int64) int64 { return p.TS })).Name("payments")
	payments := weir.Filter(allPayments, func(p Payment) bool { return p.OrderID >= 0 }).Name("paid")

	matches := weir.KeyedCoProcess(
		weir.ConnectKeyed(
			weir.KeyBy(orders, func(o Order) int64 { return o.ID }),
			weir.KeyBy(payments, func(p Payment) int64 { return p.OrderID })),
		&Reconciler{}).Name("reconcile")
	return weir.Collect(matches), weir.Collect(weir.SideOutput(matches, UnmatchedTag))
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "reconcile:", err)
		os.Exit(1)
	}
}

// run parses the flags, runs the job and prints the counts and samples.
func run(ctx context.Context, args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("reconcile", flag.ContinueOnError)
	n := fs.Int("orders", 100_000, "number of generated orders")
	p := fs.Int("parallelism", runtime.NumCPU(), "parallelism of every operator")
	samples := fs.Int("samples", 3, "sample lines to print of each kind")
	mode := fs.String("mode", "coprocess", "coprocess: the KeyedCoProcessFunction; join: the interval outer join (join.go); kafka: the co-process from and to Kafka topics (kafka.go); produce: write sample orders and payments to the topics")
	brokers := fs.String("brokers", defaultBrokers(), "kafka and produce: the Kafka bootstrap servers")
	topics := fs.String("topics", "orders,payments,results", "kafka and produce: the orders, payments and results topics")
	bounded := fs.Bool("bounded", false, "kafka: read the topics up to their end at the start, then end")
	checkpoint := fs.Duration("checkpoint", time.Second, "kafka: checkpoint interval (results are committed at each)")
	partitions := fs.Int("partitions", 3, "produce: partitions of the topics it creates")
	if err := fs.Parse(args); err != nil {
		return err
	}
	names := strings.Split(*topics, ",")
	if len(names) != 3 {
		return fmt.Errorf("-topics needs three names, got %q", *topics)
	}
	kc := KafkaConfig{Brokers: strings.Split(*brokers, ","), Orders: names[0], Payments: names[1], Results: names[2],
		Bounded: *bounded, Checkpoint: *checkpoint, TxnPrefix: "reconcile-" + names[2]}
	if *n < 0 {
		return fmt.Errorf("-orders must not be negative, got %d", *n)
	}
	switch *mode {
	case "coprocess":
	case "join":
		return runJoin(ctx, *n, *p, *samples, stdout)
	case "kafka":
		return runKafka(ctx, kc, *p, stdout)
	case "produce":
		if err := Produce(ctx, kc, *n, *partitions); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "wrote %d orders and their payments to %s and %s\n", *n, kc.Orders, kc.Payments)
		return nil
	default:
		return fmt.Errorf("-mode must be coprocess, join, kafka or produce, got %q", *mode)
	}
	env := weir.NewEnvironment(weir.WithParallelism(*p))
	matches, unmatched := Build(env, *n)
	start := time.Now()
	if err := env.Execute(ctx, "reconcile"); err != nil {
		return err
	}
	elapsed := time.Since(start)

	fmt.Fprintf(stdout, "reconciled %d orders at parallelism %d in %v\n", *n, *p, elapsed.Round(time.Millisecond))
	fmt.Fprintf(stdout, "matched:   %d\n", matches.Len())
	fmt.Fprintf(stdout, "unmatched: %d (no payment within %v)\n", unmatched.Len(), Timeout)
	ms := matches.Values()
	slices.SortFunc(ms, func(a, b Match) int { return cmpInt(a.OrderID, b.OrderID) })
	for _, m := range ms[:min(*samples, len(ms))] {
		fmt.Fprintf(stdout, "  matched   %v\n", m)
	}
	us := unmatched.Records()
	slices.SortFunc(us, func(a, b weir.Record[Order]) int { return cmpInt(a.Value.ID, b.Value.ID) })
	for _, u := range us[:min(*samples, len(us))] {
		fmt.Fprintf(stdout, "  unmatched %v (reported at %s)\n", u.Value, fmtTime(u.TS))
	}
	return nil
}

func cmpInt(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}
