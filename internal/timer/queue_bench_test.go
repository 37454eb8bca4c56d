package timer

import (
	"math/rand/v2"
	"syscall"
	"testing"
)

// cpuNanos is the process's user and system CPU time: on a shared machine
// the benchmarks report CPU time per operation beside the wall time.
func cpuNanos() int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}

// The three patterns of the stateful Nexmark queries, with timers per
// subtask in the numbers those queries reach between two watermarks
// (engine-only runs: about 10-40 s of event time pass per watermark).

type benchWindow struct{ Start, End int64 }

// fireUntil polls every timer up to wm, as a watermark does, calling fire
// (if not nil) with each.
func fireUntil[N comparable](q *Queue[int64, N], wm int64, fire func(Timer[int64, N])) {
	for {
		t, ok := q.Peek()
		if !ok || t.Timestamp > wm {
			return
		}
		q.Poll()
		if fire != nil {
			fire(t)
		}
	}
}

// BenchmarkQueueBulk is q4/q6/q9's pattern: each auction registers a timer
// at its own expiry (distinct timestamps), a watermark fires the due ones
// in bulk, and each fired timer registers one more (the closed marker's
// retention).
func BenchmarkQueueBulk(b *testing.B) {
	const perRound = 16384
	rng := rand.New(rand.NewPCG(1, 2))
	var q Queue[int64, struct{}]
	var key, wm int64
	n := 0
	cpu0 := cpuNanos()
	for b.Loop() {
		for range perRound {
			key++
			q.Add(Timer[int64, struct{}]{Timestamp: wm + 1 + rng.Int64N(20000), Key: key})
		}
		wm += 10000
		fireUntil(&q, wm, func(t Timer[int64, struct{}]) {
			if t.Key > 0 {
				q.Add(Timer[int64, struct{}]{Timestamp: t.Timestamp + 5000, Key: -t.Key})
			}
		})
		n += perRound
	}
	b.ReportMetric(float64(cpuNanos()-cpu0)/float64(n), "cpu-ns/timer")
}

// BenchmarkQueueMove is q11's pattern: every element of a session moves
// its session's timer (a delete of the old end and an add of the new one),
// and watermarks fire the sessions that ended.
func BenchmarkQueueMove(b *testing.B) {
	const sessions, perRound = 20000, 50000
	rng := rand.New(rand.NewPCG(3, 4))
	var q Queue[int64, benchWindow]
	ends := make([]benchWindow, sessions)
	var now, wm int64
	n := 0
	cpu0 := cpuNanos()
	for b.Loop() {
		for range perRound {
			now++
			k := rng.Int64N(sessions)
			w := ends[k]
			if w.End > wm {
				q.Delete(w.End-1, k, w)
			} else {
				w.Start = now
			}
			w.End = now + 10000
			ends[k] = w
			q.Add(Timer[int64, benchWindow]{Timestamp: w.End - 1, Key: k, Namespace: w})
		}
		wm = now - 5000
		fireUntil(&q, wm, nil)
		n += perRound
	}
	b.ReportMetric(float64(cpuNanos()-cpu0)/float64(n), "cpu-ns/element")
}

// BenchmarkQueueShared is the tumbling-window pattern: many keys register
// a timer at the same window end, and each watermark fires a window.
func BenchmarkQueueShared(b *testing.B) {
	const keys = 20000
	var q Queue[int64, benchWindow]
	var w int64
	n := 0
	cpu0 := cpuNanos()
	for b.Loop() {
		win := benchWindow{Start: w * 10000, End: (w + 1) * 10000}
		for k := range int64(keys) {
			q.Add(Timer[int64, benchWindow]{Timestamp: win.End - 1, Key: k, Namespace: win})
		}
		if w > 0 {
			fireUntil(&q, win.Start-1, nil)
		}
		w++
		n += keys
	}
	b.ReportMetric(float64(cpuNanos()-cpu0)/float64(n), "cpu-ns/timer")
}

// BenchmarkQueueRefire is the sliced windows' pattern (q5): one timer per
// key, and each fired timer registers the key's next one, a slide later,
// which a watermark that jumps several slides fires in the same drain.
func BenchmarkQueueRefire(b *testing.B) {
	const keys = 10000
	var q Queue[int64, struct{}]
	rng := rand.New(rand.NewPCG(5, 6))
	for k := range int64(keys) {
		q.Add(Timer[int64, struct{}]{Timestamp: rng.Int64N(2000), Key: k})
	}
	var wm int64
	n := 0
	cpu0 := cpuNanos()
	for b.Loop() {
		wm += 10000
		fireUntil(&q, wm, func(t Timer[int64, struct{}]) {
			q.Add(Timer[int64, struct{}]{Timestamp: t.Timestamp + 2000, Key: t.Key})
			n++
		})
	}
	b.ReportMetric(float64(cpuNanos()-cpu0)/float64(n), "cpu-ns/timer")
}
