package weir_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"log/slog"
	"os"
	"sync"
	"time"

	"github.com/weirstream/weir"
)

// A job stopped with a savepoint does not look finished: Wait returns a
// *StoppedError (errors.Is ErrStopped) and Result the status and path.
func ExampleJobHandle_Result() {
	dir, err := os.MkdirTemp("", "weir-example-")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	env := weir.NewEnvironment(weir.WithParallelism(1), weir.WithLogger(slog.New(slog.DiscardHandler)))
	env.EnableCheckpointing(time.Hour)
	started := make(chan struct{})
	var once sync.Once
	nums := weir.Generate(env, -1, 1000, func(i int64) int64 { return i }, weir.NoWatermarks[int64]())
	weir.SinkFunc(nums, func(int64) error { once.Do(func() { close(started) }); return nil })
	h, err := env.ExecuteAsync(context.Background(), "numbers")
	if err != nil {
		log.Fatal(err)
	}
	<-started
	path, err := h.StopWithSavepoint(context.Background(), dir)
	if err != nil {
		log.Fatal(err)
	}
	res := h.Result()
	fmt.Println(res.Status, res.Savepoint == path)
	err = h.Wait()
	var stopped *weir.StoppedError
	fmt.Println(errors.Is(err, weir.ErrStopped), errors.As(err, &stopped) && stopped.Savepoint == path)
	// Output:
	// STOPPED_WITH_SAVEPOINT true
	// true true
}
