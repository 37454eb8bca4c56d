// Command wordcount-socket counts words in text read from a TCP socket and
// prints a running count per word each time the word appears.
//
// Start a text server, then the job, and type lines into the server:
//
//	nc -lk 9999
//	go run ./examples/wordcount-socket -port 9999
//
// The job reads newline-delimited text with socket.TextStream, splits it
// into lowercase words (FlatMap), keys by word and counts in ValueState in
// a KeyedProcessFunction. It ends when the server closes the connection
// (after -retries reconnects) or on Ctrl-C. With parallelism above 1 every
// printed line starts with the printing subtask, "N> ", as in Flink.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime"
	"strings"
	"time"
	"unicode"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/connector/socket"
	"github.com/weirstream/weir/state"
)

// WordCount is the running count of a word.
type WordCount struct {
	Word  string
	Count int64
}

// String formats the count as "word: n".
func (w WordCount) String() string { return fmt.Sprintf("%s: %d", w.Word, w.Count) }

// Counter counts the records of each key in ValueState and emits the new
// count with every record.
type Counter struct {
	count state.ValueState[int64]
}

// Open gets the count state.
func (c *Counter) Open(ctx weir.KeyedRuntimeContext[string]) (err error) {
	c.count, err = weir.GetValueState(ctx, state.Value[int64]("count"))
	return err
}

// ProcessElement increments the word's count and emits it.
func (c *Counter) ProcessElement(word string, ctx weir.KeyedContext[string], out weir.Collector[WordCount]) error {
	n, _ := c.count.Value()
	n++
	c.count.Update(n)
	out.Collect(WordCount{Word: ctx.CurrentKey(), Count: n})
	return nil
}

// OnTimer is not used: the counter registers no timers.
func (c *Counter) OnTimer(int64, weir.OnTimerContext[string], weir.Collector[WordCount]) error {
	return nil
}

// Words splits a line into lowercase words: runs of letters and digits.
func Words(line string, out weir.Collector[string]) error {
	for _, w := range strings.FieldsFunc(line, func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) }) {
		out.Collect(strings.ToLower(w))
	}
	return nil
}

// Build adds the word count of the text served at host:port to env and
// returns the stream of running counts.
func Build(env *weir.Environment, host string, port int, opts socket.Options) weir.DataStream[WordCount] {
	lines := socket.TextStream(env, host, port, opts)
	words := weir.FlatMap(lines, Words).Name("split")
	return weir.Process(weir.KeyBy(words, func(w string) string { return w }),
		&Counter{}).Name("count")
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "wordcount-socket:", err)
		os.Exit(1)
	}
}

// run parses the flags and runs the job, printing to stdout.
func run(ctx context.Context, args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("wordcount-socket", flag.ContinueOnError)
	host := fs.String("host", "localhost", "host of the text server")
	port := fs.Int("port", 9999, "port of the text server")
	retries := fs.Int("retries", 0, "reconnects after the server closes the connection (-1: forever)")
	delay := fs.Duration("retry-delay", 500*time.Millisecond, "pause before a reconnect")
	p := fs.Int("parallelism", runtime.NumCPU(), "parallelism of the counting and printing")
	if err := fs.Parse(args); err != nil {
		return err
	}
	env := weir.NewEnvironment(weir.WithParallelism(*p), weir.WithStdout(stdout))
	weir.Print(Build(env, *host, *port, socket.Options{MaxRetries: *retries, RetryDelay: *delay}))
	err := env.Execute(ctx, "wordcount-socket")
	if errors.Is(err, context.Canceled) {
		return nil // interrupted
	}
	return err
}
