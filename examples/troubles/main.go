// Command troubles runs a small job that shows one of the failures `weir
// doctor` names (or something it notes as by design), behind the REST
// server and its dashboard, until interrupted:
//
//	go run ./examples/troubles -failure watermark-gap    # then open http://127.0.0.1:8081/
//	go run ./cmd/weir doctor --url http://127.0.0.1:8081 # in another terminal
//
// -failure is one of watermark-gap (a join's second input a minute
// behind), alignment (a slow stage delays the barriers on one input),
// state-growth (per-key state whose cleanup timers never fire), hot-key
// (nine records in ten on one key), inverted-bounds (an interval join with
// its bounds the wrong way round), checkpoint-timeout (a slow sink
// back-pressures the source and aligned checkpoints expire), state-bytes
// (fifty keys' lists appended to without TTL), crash-loop (a record fails
// the job in every attempt), late-hot-key (a key turns hot after 3 s),
// gap-by-design (a watermark gap the declared bounds make), watermark-alignment
// (alignment holds a source back) and healthy.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"time"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/examples/troubles/trouble"
	"github.com/weirstream/weir/rest"
)

func main() {
	failure := flag.String("failure", "watermark-gap", "the failure to show: "+strings.Join(trouble.Failures, ", "))
	addr := flag.String("rest", "127.0.0.1:8081", "the REST server's address")
	rate := flag.Float64("rate", 0, "records per second per source (0: the failure's default)")
	flag.Parse()
	srv := rest.New(*addr)
	opts := append([]weir.Option{weir.WithPlugin(srv), weir.WithParallelism(2)}, trouble.EnvOptions(*failure)...)
	env := weir.NewEnvironment(opts...)
	if *failure == "alignment" || *failure == "healthy" {
		env.EnableCheckpointing(time.Second)
	}
	if err := trouble.Build(env, *failure, trouble.Options{Rate: *rate}); err != nil {
		fmt.Fprintln(os.Stderr, "troubles:", err)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	h, err := env.ExecuteAsync(ctx, "troubles-"+*failure)
	if err != nil {
		fmt.Fprintln(os.Stderr, "troubles:", err)
		os.Exit(1)
	}
	fmt.Printf("job %s (%s) running; dashboard at http://%s/ — Ctrl-C to stop\n", h.Name(), h.ID(), srv.Addr())
	if err := h.Wait(); err != nil && ctx.Err() == nil {
		fmt.Fprintln(os.Stderr, "troubles:", err)
		os.Exit(1)
	}
}
