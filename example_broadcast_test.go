package weir_test

import (
	"context"
	"fmt"
	"log"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/state"
)

// Order is a customer's order in a category, with its event time (ms).
type Order struct {
	User     string
	Category string
	Amount   int
	At       int64
}

// Limit is a rule of the broadcast stream: orders in Category above Max
// are flagged.
type Limit struct {
	Category string
	Max      int
}

// limits is the broadcast state: the current limit per category.
var limits = state.Map[string, int]("limits")

// flagOrders holds each order in keyed state until the watermark passes
// it, then checks it against the limits. Holding the order makes the
// result independent of the order in which the two inputs arrive: the
// watermark of a two-input operator is the minimum of both inputs', so
// a timer at an order's time fires only after every rule stamped
// earlier has been processed.
type flagOrders struct {
	held state.ListState[Order]
}

func (f *flagOrders) Open(ctx weir.KeyedRuntimeContext[string]) (err error) {
	f.held, err = weir.GetListState(ctx, state.List[Order]("held"))
	return err
}

func (f *flagOrders) ProcessElement(o Order, ctx weir.KeyedReadOnlyBroadcastContext[string], _ weir.Collector[string]) error {
	f.held.Add(o)
	ctx.TimerService().RegisterEventTimeTimer(o.At)
	return nil
}

func (f *flagOrders) ProcessBroadcastElement(l Limit, ctx weir.KeyedBroadcastContext[string], _ weir.Collector[string]) error {
	rules, err := weir.BroadcastStateOf(ctx, limits)
	if err != nil {
		return err
	}
	rules.Put(l.Category, l.Max)
	return nil
}

func (f *flagOrders) OnTimer(ts int64, ctx weir.KeyedBroadcastOnTimerContext[string], out weir.Collector[string]) error {
	rules, err := weir.ReadOnlyBroadcastStateOf(ctx, limits)
	if err != nil {
		return err
	}
	var later []Order
	for o := range f.held.All() {
		if o.At > ts {
			later = append(later, o)
			continue
		}
		if max, ok := rules.Get(o.Category); ok && o.Amount > max {
			out.Collect(fmt.Sprintf("%s: %d on %s at %d, over the limit %d", o.User, o.Amount, o.Category, o.At, max))
		}
	}
	f.held.Update(later)
	return nil
}

// Broadcast state: a low-throughput stream of rules is sent whole to
// every subtask (two here) and kept in broadcast state, the same map on
// each; the keyed stream of orders reads it. A later rule for the same
// category replaces the earlier one (books: 100, then 50).
func ExampleProcessKeyedBroadcast() {
	env := weir.NewEnvironment(weir.WithParallelism(2))
	orders := weir.FromRecords(env, []weir.Record[Order]{
		{Value: Order{"ann", "books", 80, 2_000}, TS: 2_000},
		{Value: Order{"bob", "games", 300, 3_500}, TS: 3_500},
		{Value: Order{"ann", "books", 80, 4_000}, TS: 4_000},
		{Value: Order{"bob", "books", 20, 5_000}, TS: 5_000},
	}, weir.ForMonotonousTimestamps[Order]())
	rules := weir.FromRecords(env, []weir.Record[Limit]{
		{Value: Limit{"books", 100}, TS: 0},
		{Value: Limit{"games", 200}, TS: 0},
		{Value: Limit{"books", 50}, TS: 0},
	}, weir.ForMonotonousTimestamps[Limit]())
	byUser := weir.KeyBy(orders, func(o Order) string { return o.User })
	flagged := weir.ProcessKeyedBroadcast(weir.ConnectKeyedBroadcast(byUser, weir.Broadcast(rules, limits)), &flagOrders{})
	weir.Print(flagged)
	if err := env.Execute(context.Background(), "order limits"); err != nil {
		log.Fatal(err)
	}
	// Print prefixes each line with the subtask that printed it, as
	// Flink's print() does when the sink runs in parallel.

	// Unordered output:
	// 2> ann: 80 on books at 2000, over the limit 50
	// 2> bob: 300 on games at 3500, over the limit 200
	// 2> ann: 80 on books at 4000, over the limit 50
}
