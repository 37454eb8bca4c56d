// Package jobtest runs jobs in tests outside the root package (the
// connectors'), with safety-net timeouts that only catch hangs.
package jobtest

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/weirstream/weir"
)

// Run executes env's job, failing the test if it has not ended after 30 s.
func Run(t testing.TB, env *weir.Environment) error {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	err := env.Execute(ctx, t.Name())
	if ctx.Err() != nil {
		t.Fatalf("job did not end in time: %v", err)
	}
	return err
}

// MustRun executes env's job and fails the test on error.
func MustRun(t testing.TB, env *weir.Environment) {
	t.Helper()
	if err := Run(t, env); err != nil {
		t.Fatal(err)
	}
}

// Quiet drops the job's log (for jobs meant to fail).
func Quiet() weir.Option { return weir.WithLogger(slog.New(slog.DiscardHandler)) }

// Recv waits for a value on ch; it fails the test if the job ends first or
// nothing arrives within 10 s.
func Recv[T any](t testing.TB, h *weir.JobHandle, ch <-chan T) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-h.Done():
		select {
		case v := <-ch:
			return v
		default:
		}
		t.Fatalf("job ended while waiting: %v", h.Wait())
	case <-time.After(10 * time.Second):
		t.Fatalf("timed out waiting")
	}
	panic("unreachable")
}

// Wait waits for the job to end, cancelling it and failing the test after
// 10 s.
func Wait(t testing.TB, h *weir.JobHandle) error {
	t.Helper()
	select {
	case <-h.Done():
		return h.Wait()
	case <-time.After(10 * time.Second):
		h.Cancel()
		<-h.Done()
		t.Fatalf("job did not end")
	}
	return nil
}
