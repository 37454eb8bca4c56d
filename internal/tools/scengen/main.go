// Command scengen writes random scenario files (internal/scenario/gen), one
// per seed, without expected outputs: scripts/flink-oracle.sh then adds
// what Apache Flink emits. See docs/scenario-format.md#generated-scenarios.
//
//	go run ./internal/tools/scengen -seed 1 -n 2400 -o DIR   # DIR/<shape>-<seed>.scn for seeds 1..2400
//	go run ./internal/tools/scengen -seed 17 -n 1            # seed 17 to stdout
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"

	"github.com/weirstream/weir/internal/scenario/gen"
)

func main() {
	seed := flag.Uint64("seed", 1, "the first seed")
	n := flag.Int("n", 1, "the number of files (seeds seed, seed+1, ...)")
	dir := flag.String("o", "", "the output folder (default: print to stdout)")
	flag.Parse()
	if flag.NArg() > 0 || *n < 1 {
		flag.Usage()
		os.Exit(2)
	}
	if *dir != "" {
		if err := os.MkdirAll(*dir, 0o755); err != nil {
			fmt.Fprintln(os.Stderr, "scengen:", err)
			os.Exit(1)
		}
	}
	for i := 0; i < *n; i++ {
		f := gen.Generate(*seed + uint64(i))
		if *dir == "" {
			fmt.Print(f.Text)
			continue
		}
		if err := os.WriteFile(filepath.Join(*dir, f.Name()), []byte(f.Text), 0o644); err != nil {
			fmt.Fprintln(os.Stderr, "scengen:", err)
			os.Exit(1)
		}
	}
}
