package weir_test

import (
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"slices"
	"sync"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/connector"
	"github.com/weirstream/weir/state"
)

// The job of the checkpoint-format fixtures in testdata/oldformat (see the
// README there): the numbers 0..n-1 from one resumable split (UID
// "numbers"), keyed by v mod 5, summed per key in a keyed process function
// (UID "sums") that registers an event-time timer at the end of time and
// emits "key=sum" when it fires. A run that restores both the source's
// position and the sums emits the sums of the whole range; one that loses
// either does not.

// fixtureN is how many numbers the job reads; the fixtures were taken
// after the first fixtureN/2.
const fixtureN = 4000

// numbers is a source of 0..n-1 whose first run holds after limit
// numbers until it is stopped. It looks like rescale_test.go's
// gatedSource but must stay as it is: its split id and position encoding
// are in the fixtures.
type numbers struct {
	n, limit int64
	reached  chan struct{}
	once     sync.Once
}

type numbersSplit struct{}

func (numbersSplit) SplitID() string { return "numbers" }

func (s *numbers) Splits(int) ([]connector.Split, error) {
	return []connector.Split{numbersSplit{}}, nil
}

func (s *numbers) Reader(connector.Split) (connector.SplitReader[int64], error) {
	return &numbersReader{s: s}, nil
}

// ReaderAt resumes at a position Position reported.
func (s *numbers) ReaderAt(_ connector.Split, pos []byte) (connector.SplitReader[int64], error) {
	next, k := binary.Varint(pos)
	if k <= 0 {
		return nil, fmt.Errorf("bad position %x", pos)
	}
	return &numbersReader{s: s, next: next}, nil
}

type numbersReader struct {
	s    *numbers
	next int64
}

func (r *numbersReader) Read(ctx context.Context, buf []weir.Record[int64]) ([]weir.Record[int64], error) {
	s := r.s
	if r.next >= s.n {
		return buf, io.EOF
	}
	if r.next >= s.limit {
		s.once.Do(func() { close(s.reached) })
		<-ctx.Done()
		return buf, ctx.Err()
	}
	for end := min(r.next+100, s.limit, s.n); r.next < end; r.next++ {
		buf = append(buf, weir.Record[int64]{Value: r.next, TS: r.next})
	}
	return buf, nil
}

func (r *numbersReader) Position() ([]byte, error) { return binary.AppendVarint(nil, r.next), nil }
func (r *numbersReader) Close() error              { return nil }

// sumAtEnd keeps a running sum per key and emits it at the end of input.
type sumAtEnd struct{ sum state.ValueState[int64] }

func (f *sumAtEnd) Open(ctx weir.KeyedRuntimeContext[int64]) (err error) {
	f.sum, err = weir.GetValueState(ctx, state.Value[int64]("sum"))
	return err
}

func (f *sumAtEnd) ProcessElement(v int64, ctx weir.KeyedContext[int64], _ weir.Collector[string]) error {
	s, _ := f.sum.Value()
	f.sum.Update(s + v)
	ctx.TimerService().RegisterEventTimeTimer(1 << 40)
	return nil
}

func (f *sumAtEnd) OnTimer(_ int64, ctx weir.OnTimerContext[int64], out weir.Collector[string]) error {
	s, _ := f.sum.Value()
	out.Collect(fmt.Sprintf("%d=%d", ctx.CurrentKey(), s))
	return nil
}

// fixtureJob builds the job on env and returns what it emits.
func fixtureJob(env *weir.Environment, src *numbers) *weir.Collected[string] {
	in := weir.FromSource(env, src, weir.ForMonotonousTimestamps[int64](), "numbers").UID("numbers").SetParallelism(1)
	sums := weir.Process(weir.KeyBy(in, func(v int64) int64 { return v % 5 }), &sumAtEnd{}).UID("sums")
	return weir.Collect(sums)
}

// fixtureWant is what a run over the numbers below n emits, sorted.
func fixtureWant(n int64) []string {
	var sums [5]int64
	for v := range n {
		sums[v%5] += v
	}
	var out []string
	for k, s := range sums {
		out = append(out, fmt.Sprintf("%d=%d", k, s))
	}
	slices.Sort(out)
	return out
}

// collectedSorted returns what c gathered, sorted.
func collectedSorted(c *weir.Collected[string]) []string {
	var out []string
	for _, r := range c.Records() {
		out = append(out, r.Value)
	}
	slices.Sort(out)
	return out
}
