package weir_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"slices"
	"strconv"
	"time"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/connector"
	"github.com/weirstream/weir/state"
)

// This file and the other example_*_test.go files hold the runnable
// examples of the package documentation. Every one runs in the test suite
// and prints deterministic output: jobs run at parallelism 1 (or sort
// what they collect), and anything that depends on processing time runs
// in the test harness on its manual clock.

// WordCount is a word and how often it was seen.
type WordCount struct {
	Word string
	N    int
}

// The package example: a word count with a rolling sum per word, the
// running count emitted for every word.
func Example() {
	env := weir.NewEnvironment(weir.WithParallelism(1))
	words := weir.FromSlice(env, []string{"a", "b", "a", "c", "a"})
	ones := weir.Map(words, func(w string) WordCount { return WordCount{Word: w, N: 1} })
	counts := weir.Sum(weir.KeyBy(ones, func(c WordCount) string { return c.Word }),
		func(c WordCount) int { return c.N }, func(c *WordCount, n int) { c.N = n })
	weir.Print(counts)
	if err := env.Execute(context.Background(), "wordcount"); err != nil {
		log.Fatal(err)
	}
	// Output:
	// {a 1}
	// {b 1}
	// {a 2}
	// {c 1}
	// {a 3}
}

// An environment takes its options when it is made; Execute runs the job
// it built and returns when a bounded job has ended (or it failed, or ctx
// was cancelled).
func ExampleNewEnvironment() {
	env := weir.NewEnvironment(
		weir.WithParallelism(1),                              // default: the number of CPUs
		weir.WithMaxParallelism(128),                         // key groups, as Flink's default
		weir.WithAutoWatermarkInterval(200*time.Millisecond), // periodic watermarks
		weir.WithBufferSize(1024),                            // records per exchanged batch
	)
	squares := weir.Map(weir.FromSlice(env, []int{1, 2, 3}), func(v int) int { return v * v })
	weir.Print(squares)
	if err := env.Execute(context.Background(), "squares"); err != nil {
		log.Fatal(err)
	}
	// Output:
	// 1
	// 4
	// 9
}

// ExecuteAsync returns a JobHandle at once: Wait for the end, Cancel to
// stop, Metrics for per-task and per-operator figures.
func ExampleEnvironment_ExecuteAsync() {
	env := weir.NewEnvironment(weir.WithParallelism(1))
	evens := weir.Filter(weir.Generate(env, 10, 0, func(i int64) int64 { return i }, weir.NoWatermarks[int64]()),
		func(v int64) bool { return v%2 == 0 }).Name("evens")
	got := weir.Collect(evens)
	h, err := env.ExecuteAsync(context.Background(), "evens")
	if err != nil {
		log.Fatal(err)
	}
	if err := h.Wait(); err != nil {
		log.Fatal(err)
	}
	fmt.Println(got.Values())
	for _, t := range h.Metrics() {
		for _, op := range t.Operators {
			if op.Name == "evens" {
				fmt.Println(op.Name, "in", op.RecordsIn, "out", op.RecordsOut)
			}
		}
	}
	// Output:
	// [0 2 4 6 8]
	// evens in 10 out 5
}

// FromSlice is a bounded source without timestamps, Generate calls a
// function per index (bounded, or unbounded with count < 0, optionally
// rate-limited), FromRecords carries timestamps.
func ExampleFromSlice() {
	env := weir.NewEnvironment(weir.WithParallelism(1))
	weir.Print(weir.FromSlice(env, []string{"x", "y"}))
	weir.Print(weir.Generate(env, 3, 0, func(i int64) string { return "g" + strconv.FormatInt(i, 10) }, weir.NoWatermarks[string]()))
	if err := env.Execute(context.Background(), "sources"); err != nil {
		log.Fatal(err)
	}
	// Unordered output:
	// x
	// y
	// g0
	// g1
	// g2
}

// FromRecords takes records with event timestamps (ms); a function sees a
// record's timestamp in its Context.
func ExampleFromRecords() {
	env := weir.NewEnvironment(weir.WithParallelism(1))
	recs := []weir.Record[string]{{Value: "login", TS: 1000}, {Value: "click", TS: 1500}}
	events := weir.FromRecords(env, recs, weir.ForMonotonousTimestamps[string]())
	weir.Print(weir.ProcessStreamFunc(events, func(v string, ctx weir.Context, out weir.Collector[string]) error {
		ts, _ := ctx.Timestamp()
		out.Collect(fmt.Sprintf("%s at %d", v, ts))
		return nil
	}))
	if err := env.Execute(context.Background(), "records"); err != nil {
		log.Fatal(err)
	}
	// Output:
	// login at 1000
	// click at 1500
}

// countdown is a Source of one split per start value: split n reads n,
// n-1, ..., 1. Its readers report their position and it reopens a split
// there, so it takes part in checkpoints.
type countdown struct{ starts []int }

type countdownSplit int

func (s countdownSplit) SplitID() string { return "countdown-" + strconv.Itoa(int(s)) }

func (c countdown) Splits(int) ([]connector.Split, error) {
	var out []connector.Split
	for _, n := range c.starts {
		out = append(out, countdownSplit(n))
	}
	return out, nil
}

func (c countdown) Reader(s connector.Split) (connector.SplitReader[int], error) {
	return &countdownReader{next: int(s.(countdownSplit))}, nil
}

func (c countdown) ReaderAt(s connector.Split, pos []byte) (connector.SplitReader[int], error) {
	n, err := strconv.Atoi(string(pos))
	return &countdownReader{next: n}, err
}

type countdownReader struct{ next int }

func (r *countdownReader) Read(_ context.Context, buf []weir.Record[int]) ([]weir.Record[int], error) {
	for ; r.next > 0 && len(buf) < cap(buf); r.next-- {
		buf = append(buf, weir.Record[int]{Value: r.next, TS: weir.NoTimestamp})
	}
	if r.next == 0 {
		return buf, io.EOF
	}
	return buf, nil
}

func (r *countdownReader) Position() ([]byte, error) { return []byte(strconv.Itoa(r.next)), nil }
func (r *countdownReader) Close() error              { return nil }

// FromSource reads any Source: its splits are spread over the source's
// subtasks (split i to subtask i mod parallelism).
func ExampleFromSource() {
	env := weir.NewEnvironment(weir.WithParallelism(2))
	got := weir.Collect(weir.FromSource(env, countdown{starts: []int{3, 2}}, weir.NoWatermarks[int](), "countdown"))
	if err := env.Execute(context.Background(), "countdown"); err != nil {
		log.Fatal(err)
	}
	v := got.Values()
	slices.Sort(v)
	fmt.Println(v)
	// Output:
	// [1 1 2 2 3]
}

// visits counts the events of each key in keyed state and reports the
// count when the key has been quiet for 10 s of event time: every event
// moves the key's event-time timer (delete the old, register the new).
type visits struct {
	count    state.ValueState[int]
	deadline state.ValueState[int64]
}

func (v *visits) Open(ctx weir.KeyedRuntimeContext[string]) (err error) {
	if v.count, err = weir.GetValueState(ctx, state.Value[int]("count")); err != nil {
		return err
	}
	v.deadline, err = weir.GetValueState(ctx, state.Value[int64]("deadline"))
	return err
}

func (v *visits) ProcessElement(user string, ctx weir.KeyedContext[string], _ weir.Collector[string]) error {
	n, _ := v.count.Value()
	v.count.Update(n + 1)
	if old, ok := v.deadline.Value(); ok {
		ctx.TimerService().DeleteEventTimeTimer(old)
	}
	ts, _ := ctx.Timestamp()
	v.deadline.Update(ts + 10_000)
	ctx.TimerService().RegisterEventTimeTimer(ts + 10_000)
	return nil
}

func (v *visits) OnTimer(ts int64, ctx weir.OnTimerContext[string], out weir.Collector[string]) error {
	n, _ := v.count.Value()
	out.Collect(fmt.Sprintf("%s: %d visits, quiet since %d", ctx.CurrentKey(), n, ts-10_000))
	v.count.Clear()
	v.deadline.Clear()
	return nil
}

// everyEvent is a punctuated WatermarkGenerator: a watermark after every
// event (its timestamp - 1), so that timers fire between events whatever
// the periodic ticks do: the watermark follows its event, so the event at
// 20 s fires the timers of ann (15 s) and bob (12 s) before ann's event at
// 30 s arrives. ForMonotonousTimestamps emits the same watermarks, but
// only on the periodic tick.
type everyEvent[T any] struct{}

func (everyEvent[T]) OnEvent(_ T, ts int64, out weir.WatermarkOutput) { out.EmitWatermark(ts - 1) }
func (everyEvent[T]) OnPeriodicEmit(weir.WatermarkOutput)             {}

// KeyBy partitions a stream by key; Process runs a KeyedProcessFunction
// on it, with keyed state (obtained in Open) and timers. A bounded job
// ends with the maximum watermark, so every event-time timer fires.
func ExampleProcess() {
	env := weir.NewEnvironment(weir.WithParallelism(1))
	clicks := weir.FromRecords(env, []weir.Record[string]{
		{Value: "ann", TS: 1_000}, {Value: "bob", TS: 2_000}, {Value: "ann", TS: 5_000},
		{Value: "carl", TS: 20_000}, {Value: "ann", TS: 30_000},
	}, weir.ForGenerator(func() weir.WatermarkGenerator[string] { return &everyEvent[string]{} }))
	weir.Print(weir.Process(weir.KeyBy(clicks, func(u string) string { return u }), &visits{}))
	if err := env.Execute(context.Background(), "visits"); err != nil {
		log.Fatal(err)
	}
	// Output:
	// bob: 1 visits, quiet since 2000
	// ann: 2 visits, quiet since 5000
	// carl: 1 visits, quiet since 20000
	// ann: 1 visits, quiet since 30000
}

// ProcessFunc takes a plain function when no OnTimer is needed; the key
// and the timer service are in the context.
func ExampleProcessFunc() {
	env := weir.NewEnvironment(weir.WithParallelism(1))
	words := weir.KeyBy(weir.FromSlice(env, []string{"go", "flink", "weir"}), func(w string) int { return len(w) })
	weir.Print(weir.ProcessFunc(words, func(w string, ctx weir.KeyedContext[int], out weir.Collector[string]) error {
		out.Collect(fmt.Sprintf("%s has %d letters", w, ctx.CurrentKey()))
		return nil
	}))
	if err := env.Execute(context.Background(), "letters"); err != nil {
		log.Fatal(err)
	}
	// Output:
	// go has 2 letters
	// flink has 5 letters
	// weir has 4 letters
}

// Trade is a stock trade.
type Trade struct {
	Symbol string
	Price  float64
	Qty    int
}

// Rolling aggregations on a keyed stream emit the key's running value for
// every record: Sum adds up a field, keeping the first record's other
// fields; MaxBy keeps the whole record with the largest field.
func ExampleSum() {
	env := weir.NewEnvironment(weir.WithParallelism(1))
	trades := weir.FromSlice(env, []Trade{{"ACME", 10, 5}, {"ACME", 12, 3}, {"INIT", 7, 1}, {"ACME", 11, 2}})
	bySymbol := weir.KeyBy(trades, func(t Trade) string { return t.Symbol })
	weir.Print(weir.Sum(bySymbol, func(t Trade) int { return t.Qty }, func(t *Trade, q int) { t.Qty = q }))
	if err := env.Execute(context.Background(), "volume"); err != nil {
		log.Fatal(err)
	}
	// Output:
	// {ACME 10 5}
	// {ACME 10 8}
	// {INIT 7 1}
	// {ACME 10 10}
}

// MaxBy keeps the record with the largest field so far (the first of
// equal ones, unless LastOnTies); Max would keep the first record and set
// only its field.
func ExampleMaxBy() {
	env := weir.NewEnvironment(weir.WithParallelism(1))
	trades := weir.FromSlice(env, []Trade{{"ACME", 10, 5}, {"ACME", 12, 3}, {"ACME", 11, 2}})
	bySymbol := weir.KeyBy(trades, func(t Trade) string { return t.Symbol })
	weir.Print(weir.MaxBy(bySymbol, func(t Trade) float64 { return t.Price }))
	weir.Print(weir.Max(bySymbol, func(t Trade) float64 { return t.Price }, func(t *Trade, p float64) { t.Price = p }))
	if err := env.Execute(context.Background(), "highs"); err != nil {
		log.Fatal(err)
	}
	// Unordered output:
	// {ACME 10 5}
	// {ACME 12 3}
	// {ACME 12 3}
	// {ACME 10 5}
	// {ACME 12 5}
	// {ACME 12 5}
}

// RollingReduce combines each record with its key's running value.
func ExampleRollingReduce() {
	env := weir.NewEnvironment(weir.WithParallelism(1))
	words := weir.KeyBy(weir.FromSlice(env, []string{"b", "a", "c", "ab"}), func(w string) int { return len(w) })
	weir.Print(weir.RollingReduce(words, func(acc, w string) string { return acc + "+" + w }))
	if err := env.Execute(context.Background(), "concat"); err != nil {
		log.Fatal(err)
	}
	// Output:
	// b
	// b+a
	// b+a+c
	// ab
}

// MapErr's function may fail a record. By default the job then fails with
// an error naming the operator and the record; with DeadLetters the record
// and its error go to a side output and the job goes on.
func ExampleMapErr() {
	env := weir.NewEnvironment(weir.WithParallelism(1))
	lines := weir.FromSlice(env, []string{"1", "two", "3"})
	unparsable := weir.NewOutputTag[weir.DeadLetter[string]]("unparsable")
	nums := weir.MapErr(lines, strconv.Atoi, weir.DeadLetters(unparsable)).Name("parse")
	weir.Print(nums)
	weir.Print(weir.Map(weir.SideOutput(nums, unparsable), func(d weir.DeadLetter[string]) string {
		return fmt.Sprintf("dead letter %q from %s: %v", d.Value, d.Operator, errors.Unwrap(d.Err))
	}))
	if err := env.Execute(context.Background(), "parse"); err != nil {
		log.Fatal(err)
	}
	// Unordered output:
	// 1
	// 3
	// dead letter "two" from parse: invalid syntax
}

// A ProcessFunction may emit to side outputs, named by typed tags.
func ExampleSideOutput() {
	env := weir.NewEnvironment(weir.WithParallelism(1))
	big := weir.NewOutputTag[int]("big")
	small := weir.ProcessStreamFunc(weir.FromSlice(env, []int{3, 300, 4, 400}), func(v int, ctx weir.Context, out weir.Collector[int]) error {
		if v >= 100 {
			weir.Output(ctx, big, v)
			return nil
		}
		out.Collect(v)
		return nil
	})
	weir.Print(weir.Map(small, func(v int) string { return "small " + strconv.Itoa(v) }))
	weir.Print(weir.Map(weir.SideOutput(small, big), func(v int) string { return "big " + strconv.Itoa(v) }))
	if err := env.Execute(context.Background(), "split"); err != nil {
		log.Fatal(err)
	}
	// Unordered output:
	// small 3
	// small 4
	// big 300
	// big 400
}

// PartitionCustom routes each record to the subtask a partitioner picks
// for its key (Print prefixes each line with its subtask, 1-based, when it
// runs in parallel); Rescale and Shuffle need no key: round robin to a
// subset of the next operator's subtasks, and random.
func ExamplePartitionCustom() {
	env := weir.NewEnvironment(weir.WithParallelism(1))
	nums := weir.FromSlice(env, []int{1, 2, 3, 4, 5, 6})
	byParity := weir.PartitionCustom(nums, func(odd bool, n int) int {
		if odd {
			return 1 % n
		}
		return 0
	}, func(v int) bool { return v%2 == 1 })
	weir.Print(byParity).SetParallelism(2)
	if err := env.Execute(context.Background(), "parity"); err != nil {
		log.Fatal(err)
	}
	// Unordered output:
	// 1> 2
	// 1> 4
	// 1> 6
	// 2> 1
	// 2> 3
	// 2> 5
}
