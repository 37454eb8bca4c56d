package main

// The interval-join version of the reconciliation (-mode join):
//
//	go run ./examples/reconcile -mode join -orders 100000 -parallelism 2
//
// Instead of a hand-written KeyedCoProcessFunction, orders (left) and
// payments (right), keyed by order id, go through weir.IntervalOuterJoin.
// The rule of interval joins is "right.ts - left.ts in [lower, upper]", and
// Reconciler matches an order and a payment when they are at most Timeout
// apart in either direction (a payment may precede its order), so the
// bounds are Between(-Timeout, Timeout), both inclusive. (Between(0,
// Timeout) would be "the payment comes 0 to 15 minutes after the order" and
// would report the early payments' orders as unmatched.)
//
// Compared with Reconciler on the same data, the job reports the same
// matches and the same unmatched orders, at the same moment (when the
// watermark reaches the order's timestamp + Timeout), with these intended
// differences:
//
//   - Timestamps. An unmatched order comes out of the outer join at its own
//     timestamp, o.TS (Reconciler's timer emits it at o.TS + Timeout); a
//     match carries max(order.TS, payment.TS) (Reconciler's, the timestamp
//     of whichever record arrived second).
//   - Several payments for one order id. The join emits every pair within
//     the bounds; Reconciler pairs each record with the earliest waiting
//     one of the other side. The generated data has at most one payment per
//     order, so both emit the same single pair.
//   - Late records (timestamp below the join's watermark) are not joined:
//     they go to LateOrdersTag and LatePaymentsTag, and a late order is
//     then neither matched nor unmatched. Reconciler has no lateness check:
//     a late record still matches a waiting one or waits itself, and a
//     late order without a payment is reported unmatched when its timer
//     (o.TS + Timeout) fires (at the next watermark if it is already past).
//     The generated streams are never late (each stays within its
//     out-of-orderness bound), so both side outputs are empty and the
//     counts agree; join_test.go shows the difference step by step.
//   - Payments that never match are dropped by both (the join is LeftOuter;
//     FullOuter would report them too).

import (
	"context"
	"fmt"
	"io"
	"slices"
	"time"

	"github.com/weirstream/weir"
)

// Side outputs of the interval-join version: the records that arrived late
// for the join.
var (
	LateOrdersTag   = weir.NewOutputTag[Order]("late-orders")
	LatePaymentsTag = weir.NewOutputTag[Payment]("late-payments")
)

// JoinResults are the outputs of BuildJoin, to read after the job.
type JoinResults struct {
	Matches      *weir.Collected[Match]
	Unmatched    *weir.Collected[Order] // at the order's timestamp
	LateOrders   *weir.Collected[Order]
	LatePayments *weir.Collected[Payment]
}

// ReconcileJoin matches orders with payments at most Timeout apart with a
// left outer interval join. It emits the matches; the orders without a
// payment go to UnmatchedTag when their cleanup timer fires (when the
// watermark reaches o.TS + Timeout), and late records to LateOrdersTag and
// LatePaymentsTag.
func ReconcileJoin(orders weir.DataStream[Order], payments weir.DataStream[Payment]) weir.DataStream[Match] {
	return weir.IntervalOuterJoinFunc(
		weir.KeyBy(orders, func(o Order) int64 { return o.ID }),
		weir.KeyBy(payments, func(p Payment) int64 { return p.OrderID }),
		weir.Between(-Timeout, Timeout), weir.LeftOuter,
		func(o *Order, p *Payment, ctx weir.JoinContext, out weir.Collector[Match]) error {
			if p == nil { // never matched: reported at o.TS
				weir.Output(ctx, UnmatchedTag, *o)
				return nil
			}
			out.Collect(Match{OrderID: o.ID, OrderTS: o.TS, PaymentTS: p.TS, Amount: p.Amount})
			return nil
		},
		weir.SideOutputLeftLateData(LateOrdersTag), weir.SideOutputRightLateData(LatePaymentsTag)).Name("reconcile-join")
}

// BuildJoin adds the interval-join reconciliation of the same n generated
// orders and payments as Build to env.
func BuildJoin(env *weir.Environment, n int) JoinResults {
	return buildJoin(env, n,
		weir.ForBoundedOutOfOrderness[Order](orderOutOfOrderness),
		weir.ForBoundedOutOfOrderness[Payment](paymentOutOfOrderness))
}

// buildJoin is BuildJoin with the watermark strategies of the two streams
// as parameters (the tests make records late with tighter ones).
func buildJoin(env *weir.Environment, n int, os weir.WatermarkStrategy[Order], ps weir.WatermarkStrategy[Payment]) JoinResults {
	orders := weir.Generate(env, int64(n), 0, OrderAt,
		os.WithTimestampAssigner(func(o Order, _ int64) int64 { return o.TS })).Name("orders")
	allPayments := weir.Generate(env, int64(n), 0, paymentAt,
		ps.WithTimestampAssigner(func(p Payment, _ int64) int64 { return p.TS })).Name("payments")
	payments := weir.Filter(allPayments, func(p Payment) bool { return p.OrderID >= 0 }).Name("paid")
	matches := ReconcileJoin(orders, payments)
	return JoinResults{
		Matches:      weir.Collect(matches),
		Unmatched:    weir.Collect(weir.SideOutput(matches, UnmatchedTag)),
		LateOrders:   weir.Collect(weir.SideOutput(matches, LateOrdersTag)),
		LatePayments: weir.Collect(weir.SideOutput(matches, LatePaymentsTag)),
	}
}

// runJoin runs the interval-join version and prints the counts and samples.
func runJoin(ctx context.Context, n, p, samples int, stdout io.Writer) error {
	env := weir.NewEnvironment(weir.WithParallelism(p))
	res := BuildJoin(env, n)
	start := time.Now()
	if err := env.Execute(ctx, "reconcile-join"); err != nil {
		return err
	}
	elapsed := time.Since(start)

	fmt.Fprintf(stdout, "reconciled %d orders with an interval join at parallelism %d in %v\n", n, p, elapsed.Round(time.Millisecond))
	fmt.Fprintf(stdout, "matched:   %d\n", res.Matches.Len())
	fmt.Fprintf(stdout, "unmatched: %d (no payment within %v)\n", res.Unmatched.Len(), Timeout)
	fmt.Fprintf(stdout, "late:      %d orders, %d payments\n", res.LateOrders.Len(), res.LatePayments.Len())
	ms := res.Matches.Values()
	slices.SortFunc(ms, func(a, b Match) int { return cmpInt(a.OrderID, b.OrderID) })
	for _, m := range ms[:min(samples, len(ms))] {
		fmt.Fprintf(stdout, "  matched   %v\n", m)
	}
	us := res.Unmatched.Values()
	slices.SortFunc(us, func(a, b Order) int { return cmpInt(a.ID, b.ID) })
	for _, u := range us[:min(samples, len(us))] {
		fmt.Fprintf(stdout, "  unmatched %v\n", u)
	}
	return nil
}
