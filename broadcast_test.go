package weir_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/state"
	"github.com/weirstream/weir/weirtest"
)

type order struct {
	ID      int
	Product string
}

type product struct {
	Name  string
	Price int
	Del   bool
}

var products = state.Map[string, int]("products")

// enrich joins orders with a product table that arrives as a change stream,
// counts orders per product in keyed state and, when a product is deleted,
// resets that product's count on every key through ApplyToKeyedState.
type enrich struct {
	count state.ValueState[int]
}

func (e *enrich) Open(ctx weir.KeyedRuntimeContext[string]) (err error) {
	e.count, err = weir.GetValueState(ctx, state.Value[int]("count"))
	return err
}

func (e *enrich) ProcessElement(o order, ctx weir.KeyedReadOnlyBroadcastContext[string], out weir.Collector[string]) error {
	table, err := weir.ReadOnlyBroadcastStateOf(ctx, products)
	if err != nil {
		return err
	}
	n, _ := e.count.Value()
	e.count.Update(n + 1)
	price, ok := table.Get(o.Product)
	if !ok {
		out.Collect(fmt.Sprintf("order %d: unknown product %s", o.ID, o.Product))
		return nil
	}
	out.Collect(fmt.Sprintf("order %d: %s at %d (#%d)", o.ID, o.Product, price, n+1))
	return nil
}

func (e *enrich) ProcessBroadcastElement(p product, ctx weir.KeyedBroadcastContext[string], out weir.Collector[string]) error {
	table, err := weir.BroadcastStateOf(ctx, products)
	if err != nil {
		return err
	}
	if p.Del {
		table.Remove(p.Name)
		return ctx.ApplyToKeyedState("count", func(key string) error {
			if key == p.Name {
				e.count.Clear()
			}
			return nil
		})
	}
	table.Put(p.Name, p.Price)
	return nil
}

func (e *enrich) OnTimer(int64, weir.KeyedBroadcastOnTimerContext[string], weir.Collector[string]) error {
	return nil
}

func TestKeyedBroadcastEnrichment(t *testing.T) {
	h, err := weirtest.NewTwoInput(func(orders weir.DataStream[order], table weir.DataStream[product]) weir.DataStream[string] {
		keyed := weir.KeyBy(orders, func(o order) string { return o.Product })
		return weir.ProcessKeyedBroadcast(weir.ConnectKeyedBroadcast(keyed, weir.Broadcast(table, products)), &enrich{})
	})
	if err != nil {
		t.Fatal(err)
	}
	steps := []func() error{
		func() error { return h.ProcessElement1(0, order{1, "apple"}, 1) },
		func() error { return h.ProcessElement2(0, product{Name: "apple", Price: 3}, 2) },
		func() error { return h.ProcessElement1(0, order{2, "apple"}, 3) },
		func() error { return h.ProcessElement2(0, product{Name: "pear", Price: 5}, 4) },
		func() error { return h.ProcessElement1(0, order{3, "pear"}, 5) },
		func() error { return h.ProcessElement2(0, product{Name: "apple", Del: true}, 6) },
		func() error { return h.ProcessElement1(0, order{4, "apple"}, 7) },
		func() error { return h.ProcessElement1(0, order{5, "pear"}, 8) },
	}
	for _, s := range steps {
		if err := s(); err != nil {
			t.Fatal(err)
		}
	}
	var got []string
	for _, r := range h.Output() {
		got = append(got, r.Value)
	}
	want := []string{
		"order 1: unknown product apple",
		"order 2: apple at 3 (#2)",
		"order 3: pear at 5 (#1)",
		"order 4: unknown product apple", // the count of apple was reset to 0 by the delete
		"order 5: pear at 5 (#2)",
	}
	if !slices.Equal(got, want) {
		t.Fatalf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	// The count restarted for apple: a further apple order with the product back.
	if err := h.ProcessElement2(0, product{Name: "apple", Price: 4}, 9); err != nil {
		t.Fatal(err)
	}
	if err := h.ProcessElement1(0, order{6, "apple"}, 10); err != nil {
		t.Fatal(err)
	}
	out := h.Output()
	if last := out[len(out)-1].Value; last != "order 6: apple at 4 (#2)" {
		t.Fatalf("after re-adding apple: %q", last)
	}
}

type bcastEcho struct{}

var allowed = state.Map[string, bool]("allowed")
var undeclared = state.Map[string, bool]("undeclared")

func (bcastEcho) ProcessElement(v string, ctx weir.ReadOnlyBroadcastContext, out weir.Collector[string]) error {
	s, err := weir.ReadOnlyBroadcastStateOf(ctx, allowed)
	if err != nil {
		return err
	}
	if ok, _ := s.Get(v); ok {
		out.Collect(v)
	}
	return nil
}

func (bcastEcho) ProcessBroadcastElement(v string, ctx weir.BroadcastContext, _ weir.Collector[string]) error {
	if v == "bad" {
		_, err := weir.BroadcastStateOf(ctx, undeclared)
		return err
	}
	s, err := weir.BroadcastStateOf(ctx, allowed)
	if err != nil {
		return err
	}
	s.Put(v, true)
	return nil
}

func TestBroadcastStateNonKeyed(t *testing.T) {
	env := weir.NewEnvironment(weir.WithParallelism(3))
	rules := weir.FromSlice(env, []string{"a", "c"})
	// Elements wait for the rules: a gate that is only opened after the
	// rules are in keeps this test deterministic.
	words := weir.FromSlice(env, []string{"a", "b", "c", "a"})
	out := weir.Collect(weir.ProcessBroadcast(weir.ConnectBroadcast(weir.Rebalance(words), weir.Broadcast(rules, allowed)), bcastEcho{}))
	if err := env.Execute(t.Context(), "bcast"); err != nil {
		t.Fatal(err)
	}
	if out.Len() > 3 {
		t.Fatalf("got %v", out.Values())
	}
	// With the harness the order is fixed.
	h, err := weirtest.NewTwoInput(func(a, b weir.DataStream[string]) weir.DataStream[string] {
		return weir.ProcessBroadcast(weir.ConnectBroadcast(a, weir.Broadcast(b, allowed)), bcastEcho{})
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"a", "c"} {
		if err := h.ProcessElement2(0, s, 0); err != nil {
			t.Fatal(err)
		}
	}
	for _, s := range []string{"a", "b", "c"} {
		if err := h.ProcessElement1(0, s, 0); err != nil {
			t.Fatal(err)
		}
	}
	if got := len(h.Output()); got != 2 {
		t.Fatalf("%d outputs, want 2", got)
	}
	err = h.ProcessElement2(0, "bad", 0)
	if err == nil || !strings.Contains(err.Error(), "not declared") {
		t.Fatalf("undeclared broadcast state: %v", err)
	}
}
