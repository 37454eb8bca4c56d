package runtime

import (
	"context"
	"log/slog"
	"time"

	"github.com/weirstream/weir/internal/clock"
)

// CheckpointConfig configures the checkpoint coordinator of a plan.
type CheckpointConfig struct {
	Interval    time.Duration
	Timeout     time.Duration
	MinPause    time.Duration
	ExactlyOnce bool
	// FirstID is the id after which new checkpoints are numbered (the id
	// of the checkpoint the job was restored from).
	FirstID int64
	// Persist stores a checkpoint once every task has acknowledged it; only
	// then is it complete.
	Persist func(ctx context.Context, id int64, acks []TaskAck) error
	// OnComplete, if set, is told of every completed checkpoint.
	OnComplete func(id int64)
	Logger     *slog.Logger
}

// coordinator triggers checkpoints at the sources, collects the tasks'
// acknowledgements, persists complete checkpoints and notifies the tasks.
// At most one checkpoint is in flight.
type coordinator struct {
	cfg   CheckpointConfig
	clk   clock.Clock
	tasks []*Task
	acks  chan TaskAck
	log   *slog.Logger
}

func (c *coordinator) run(ctx context.Context) {
	var (
		next     = c.cfg.FirstID
		inFlight int64 // 0: none
		started  int64
		lastEnd  = c.clk.NowMillis()
		got      []TaskAck
		tick     = make(chan struct{}, 1)
	)
	interval := max(c.cfg.Interval.Milliseconds(), 1)
	arm := func(at int64) func() bool {
		return c.clk.AfterFunc(at, func() {
			select {
			case tick <- struct{}{}:
			default:
			}
		})
	}
	stop := arm(c.clk.NowMillis() + interval)
	defer func() { stop() }()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick:
			now := c.clk.NowMillis()
			if inFlight != 0 && c.cfg.Timeout > 0 && now-started >= c.cfg.Timeout.Milliseconds() {
				c.log.Warn("checkpoint expired before completing", "checkpoint", inFlight, "acknowledged", len(got), "tasks", len(c.tasks))
				inFlight, got, lastEnd = 0, nil, now
			}
			if inFlight == 0 && now-lastEnd >= c.cfg.MinPause.Milliseconds() && c.allRunning() {
				next++
				inFlight, started, got = next, now, nil
				for _, t := range c.tasks {
					if t.IsSource() && !t.Trigger(next) {
						c.log.Warn("checkpoint not triggered: a source is busy", "checkpoint", next)
						inFlight = 0
						break
					}
				}
			}
			stop = arm(now + interval)
		case a := <-c.acks:
			if a.ID != inFlight {
				continue
			}
			got = append(got, a)
			if len(got) < len(c.tasks) {
				continue
			}
			id := inFlight
			inFlight = 0
			lastEnd = c.clk.NowMillis()
			if c.cfg.Persist != nil {
				if err := c.cfg.Persist(ctx, id, got); err != nil {
					c.log.Warn("checkpoint could not be stored", "checkpoint", id, "err", err)
					continue
				}
			}
			for _, t := range c.tasks {
				if !t.Finished() && !t.Notify(id) {
					c.log.Warn("checkpoint completion not delivered: inbox full", "checkpoint", id, "task", t.Name, "subtask", t.Subtask)
				}
			}
			if c.cfg.OnComplete != nil {
				c.cfg.OnComplete(id)
			}
		}
	}
}

func (c *coordinator) allRunning() bool {
	for _, t := range c.tasks {
		if t.Finished() {
			return false
		}
	}
	return true
}
