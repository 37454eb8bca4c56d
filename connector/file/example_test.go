package file_test

import (
	"context"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/connector/file"
)

// ReadTextFile reads every file of a directory, one split per file; Sink
// writes part files that appear under their final names only when the
// checkpoint covering them completes (or the bounded job ends), so a
// restarted job neither loses nor repeats lines.
func ExampleSink() {
	dir, err := os.MkdirTemp("", "weir-file-example-")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	in, out := filepath.Join(dir, "in"), filepath.Join(dir, "out")
	if err := os.MkdirAll(in, 0o755); err != nil {
		log.Fatal(err)
	}
	for name, text := range map[string]string{"a.txt": "apple\nbanana\n", "b.txt": "cherry\n"} {
		if err := os.WriteFile(filepath.Join(in, name), []byte(text), 0o644); err != nil {
			log.Fatal(err)
		}
	}

	env := weir.NewEnvironment(weir.WithParallelism(2))
	env.EnableCheckpointing(time.Second)
	lines := file.ReadTextFile(env, in)
	file.Sink(weir.Map(lines, strings.ToUpper), out, func(s string) []byte { return []byte(s) }).UID("upper-files")
	if err := env.Execute(context.Background(), "upper"); err != nil {
		log.Fatal(err)
	}
	got, err := file.ReadCommittedLines(out)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(len(got), "lines committed")
	// Output:
	// 3 lines committed
}
