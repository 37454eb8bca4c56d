// Command footprint is the smallest useful Weir program: the dependency
// footprint test builds it to check what importing the root package costs.
package main

import (
	"context"
	"log"
	"strings"

	"github.com/weirstream/weir"
)

type count struct {
	Word string
	N    int
}

func main() {
	env := weir.NewEnvironment()
	words := weir.FlatMap(weir.FromSlice(env, []string{"to be or not to be"}),
		func(line string, out weir.Collector[string]) error {
			for _, w := range strings.Fields(line) {
				out.Collect(w)
			}
			return nil
		})
	counts := weir.Map(words, func(w string) count { return count{w, 1} })
	sums := weir.Sum(weir.KeyBy(counts, func(c count) string { return c.Word }),
		func(c count) int { return c.N }, func(c *count, n int) { c.N = n })
	weir.Print(sums)
	if err := env.Execute(context.Background(), "footprint"); err != nil {
		log.Fatal(err)
	}
}
