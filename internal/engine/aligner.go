package engine

import (
	"fmt"
	"time"
)

// chanKey names one input channel of a task: its gate and channel index.
type chanKey struct{ gate, ch int }

// Aligner aligns checkpoint barriers over every input channel of a task, as
// Flink's SingleCheckpointBarrierHandler (exactly-once) and
// CheckpointBarrierTracker (at-least-once) do.
//
// Aligned (exactly-once): a channel that delivered barrier n is not read
// again (its batches are held, keeping their credits, so the producer is
// back-pressured) until barrier n has arrived on every channel that has not
// ended; then the task snapshots its operators and forwards the barrier,
// and the held batches are processed in order.
//
// At-least-once: nothing is blocked; the snapshot is taken when the last
// channel delivers the barrier.
//
// Unaligned (exactly-once with AlignerConfig.Unaligned): on the first
// barrier n the task snapshots at once and forwards the barrier; nothing is
// blocked, and every record and watermark that then arrives on a channel
// that has not yet delivered barrier n is processed and recorded as channel
// state (see channel_state.go) until that channel's barrier (or end)
// arrives; then the task acknowledges the checkpoint with the recorded
// channel state. With an aligned-checkpoint timeout d > 0 a checkpoint
// starts aligned and switches to unaligned when alignment has lasted d,
// measured from the checkpoint's start at the source (the barrier's
// timestamp, Flink's BarrierAlignmentUtil.getTimerDelay), on the task's
// processing-time clock; a barrier that arrives already older than d starts
// unaligned. At the switch the snapshot is taken, the barrier forwarded,
// the held batches (data after the barrier) processed, and the channels
// still without the barrier recorded. d = 0 is unaligned from the start.
//
// In every mode a barrier of a newer checkpoint aborts an unfinished one
// (an unaligned one is then never acknowledged), and stale barriers are
// ignored. An unaligned checkpoint whose channel state cannot be encoded is
// declined (AlignerConfig.Decline) and the job goes on. Savepoint barriers
// (Barrier.Unalignable false) are always aligned.
type Aligner struct {
	cfg      AlignerConfig
	channels []chanKey
	gates    []channelStateGate
	ended    map[chanKey]bool
	seen     map[chanKey]bool
	held     map[chanKey][]message
	current  int64
	cur      Barrier // the current checkpoint's barrier
	unalign  bool    // the current checkpoint runs unaligned
	lastDone int64
	timing   alignTiming // the current checkpoint's, for metrics
	done     alignTiming // the last finished checkpoint's
}

// alignTiming is what a task's checkpoint statistics take from the
// aligner: when the first barrier came (and how long after the
// checkpoint started), when alignment ended (the snapshot: the last
// barrier, or the switch to unaligned), and which channel's barrier came
// last.
type alignTiming struct {
	id          int64
	first       time.Time
	end         time.Time
	startDelay  int64 // ms on the task's clock
	lastGate    int
	lastChannel int
	unaligned   bool
}

// AlignerConfig configures an Aligner.
type AlignerConfig struct {
	ExactlyOnce bool
	// Unaligned enables unaligned checkpoints (ExactlyOnce only).
	Unaligned bool
	// AlignedTimeout is how long an unaligned-enabled checkpoint stays
	// aligned before switching; 0 starts unaligned.
	AlignedTimeout time.Duration
	// Time is the processing-time service that measures the timeout.
	Time ProcessingTimeService
	// Snapshot takes the task's snapshot for the barrier's checkpoint.
	Snapshot func(b Barrier) error
	// Forward sends the barrier downstream. May be nil.
	Forward func(b Barrier) error
	// Complete acknowledges checkpoint id with the recorded channel state
	// (one entry per gate; nil for an aligned checkpoint). May be nil. An
	// aligned checkpoint is acknowledged before its barrier is forwarded;
	// an unaligned one forwards at the snapshot and is acknowledged when
	// its channel state is complete.
	Complete func(id int64, channels []GateChannelState) error
	// Abort is told that a newer barrier cut checkpoint id short. May be nil.
	Abort func(id int64)
	// Decline reports that checkpoint id failed at this task (its channel
	// state could not be stored). May be nil.
	Decline func(id int64, err error)
}

// NewAligner returns an aligned (or at-least-once) aligner that calls
// onAligned(id) once barrier id has arrived on every live channel, and
// onAbort(id) when a newer barrier cuts an alignment short.
func NewAligner(exactlyOnce bool, onAligned func(id int64) error, onAbort func(id int64)) *Aligner {
	return NewAlignerWith(AlignerConfig{
		ExactlyOnce: exactlyOnce,
		Snapshot:    func(b Barrier) error { return onAligned(b.ID) },
		Abort:       onAbort,
	})
}

// NewAlignerWith returns an aligner with the given configuration.
func NewAlignerWith(cfg AlignerConfig) *Aligner {
	if !cfg.ExactlyOnce {
		cfg.Unaligned = false
	}
	return &Aligner{
		cfg: cfg, current: -1, lastDone: -1,
		ended: map[chanKey]bool{}, seen: map[chanKey]bool{}, held: map[chanKey][]message{},
	}
}

func (a *Aligner) addChannels(gate, n int) {
	for ch := range n {
		a.channels = append(a.channels, chanKey{gate, ch})
	}
}

func (a *Aligner) addGate(index int, g channelStateGate) {
	for len(a.gates) <= index {
		a.gates = append(a.gates, nil)
	}
	a.gates[index] = g
}

// Current returns the checkpoint being aligned, or -1.
func (a *Aligner) Current() int64 { return a.current }

// Unaligned reports whether the current checkpoint runs unaligned (its
// snapshot is taken and its channel state is being recorded).
func (a *Aligner) Unaligned() bool { return a.current >= 0 && a.unalign }

func (a *Aligner) blocked(gate, ch int) bool {
	return a.cfg.ExactlyOnce && a.current >= 0 && !a.unalign && a.seen[chanKey{gate, ch}]
}

// recording reports whether elements arriving on a channel belong to the
// channel state of the current unaligned checkpoint.
func (a *Aligner) recording(gate, ch int) bool {
	if !a.unalign || a.current < 0 {
		return false
	}
	k := chanKey{gate, ch}
	return !a.seen[k] && !a.ended[k]
}

func (a *Aligner) hold(gate, ch int, m message) {
	k := chanKey{gate, ch}
	a.held[k] = append(a.held[k], m)
}

// Held returns the number of batches held back by an alignment.
func (a *Aligner) Held() int {
	n := 0
	for _, q := range a.held {
		n += len(q)
	}
	return n
}

func (a *Aligner) now() int64 {
	if a.cfg.Time == nil {
		return 0
	}
	return a.cfg.Time.Now()
}

// barrier handles a barrier from a channel and reports whether the channel
// is now blocked.
func (a *Aligner) barrier(gate, ch int, b Barrier) (bool, error) {
	k, id := chanKey{gate, ch}, b.ID
	aborted := false
	switch {
	case a.current >= 0 && id < a.current:
		return false, nil // stale: an aborted or older checkpoint
	case a.current >= 0 && id > a.current:
		// The held batches are released only once the new checkpoint has
		// started: they may hold its barriers, and their data comes
		// before them.
		a.abort()
		aborted = true
	case a.current < 0 && id <= a.lastDone:
		return false, nil
	}
	first := a.current < 0
	if first {
		a.current, a.cur, a.unalign = id, b, false
		a.timing = alignTiming{id: id, first: time.Now(), startDelay: max(a.now()-b.Timestamp, 0)}
	}
	if a.seen[k] {
		return false, fmt.Errorf("checkpoint %d: two barriers on channel %d of input %d", id, ch, gate+1)
	}
	a.seen[k] = true
	a.timing.lastGate, a.timing.lastChannel = gate, ch
	if first && a.cfg.Unaligned && b.Unalignable {
		d := a.cfg.AlignedTimeout.Milliseconds()
		if d <= 0 || a.now()-b.Timestamp >= d {
			return false, a.toUnaligned(id)
		}
		if a.cfg.Time != nil {
			a.cfg.Time.Schedule(b.Timestamp+d, func(int64) error { return a.alignmentTimeout(id) })
		}
	}
	if a.complete() {
		return false, a.finish()
	}
	if aborted {
		if err := a.release(); err != nil {
			return false, err
		}
	}
	return a.blocked(gate, ch), nil
}

// alignmentTimeout switches checkpoint id to unaligned if it is still
// aligning.
func (a *Aligner) alignmentTimeout(id int64) error {
	if a.current != id || a.unalign {
		return nil
	}
	return a.toUnaligned(id)
}

// toUnaligned takes the snapshot of the current checkpoint now, forwards
// its barrier, starts recording the channels without the barrier and
// processes the batches alignment held.
func (a *Aligner) toUnaligned(id int64) error {
	a.unalign = true
	a.timing.end, a.timing.unaligned = time.Now(), true
	if err := a.cfg.Snapshot(a.cur); err != nil {
		return err
	}
	if err := a.forward(a.cur); err != nil {
		return err
	}
	if err := a.release(); err != nil {
		return err
	}
	if a.current == id && a.complete() {
		return a.finish()
	}
	return nil
}

// channelEnded handles the end of a channel: it no longer takes part in
// alignments.
func (a *Aligner) channelEnded(gate, ch int) error {
	a.ended[chanKey{gate, ch}] = true
	if a.current >= 0 && a.complete() {
		return a.finish()
	}
	return nil
}

func (a *Aligner) complete() bool {
	for _, k := range a.channels {
		if !a.ended[k] && !a.seen[k] {
			return false
		}
	}
	return true
}

// finish ends the current checkpoint: an aligned one snapshots now and
// processes the held batches; an unaligned one (snapshot taken already)
// hands over its channel state.
func (a *Aligner) finish() error {
	id, b, unaligned := a.current, a.cur, a.unalign
	a.lastDone = id
	if !unaligned {
		a.timing.end = time.Now()
	}
	a.done = a.timing
	var chans []GateChannelState
	if unaligned {
		chans = make([]GateChannelState, len(a.gates))
		for i, g := range a.gates {
			if g != nil {
				chans[i] = g.takeChannelState()
			}
		}
	}
	a.reset()
	if !unaligned {
		if err := a.cfg.Snapshot(b); err != nil {
			return err
		}
	}
	if a.cfg.Complete != nil {
		if err := a.cfg.Complete(id, chans); err != nil {
			return err
		}
	}
	if !unaligned {
		if err := a.forward(b); err != nil {
			return err
		}
	}
	return a.release()
}

func (a *Aligner) forward(b Barrier) error {
	if a.cfg.Forward == nil {
		return nil
	}
	return a.cfg.Forward(b)
}

// decline fails the current unaligned checkpoint: its recording stops and
// is dropped, it is reported as declined (Flink declines a checkpoint whose
// channel state cannot be written), and its later barriers are ignored.
// The job goes on; whether it may is the coordinator's decision
// (tolerable checkpoint failures).
func (a *Aligner) decline(err error) {
	id := a.current
	for _, g := range a.gates {
		if g != nil {
			g.dropChannelState()
		}
	}
	a.lastDone = id
	a.reset()
	if a.cfg.Decline != nil {
		a.cfg.Decline(id, err)
	}
}

// abort gives up the current checkpoint for a newer one; the caller
// releases the held batches.
func (a *Aligner) abort() {
	old := a.current
	for _, g := range a.gates {
		if g != nil {
			g.dropChannelState()
		}
	}
	a.reset()
	if a.cfg.Abort != nil {
		a.cfg.Abort(old)
	}
}

func (a *Aligner) reset() {
	a.current = -1
	a.unalign = false
	clear(a.seen)
}

// release processes the held batches, channel by channel in arrival order;
// a batch that meets the next barrier blocks its channel again and keeps
// the rest of that channel's batches held behind it.
func (a *Aligner) release() error {
	for _, k := range a.channels {
		q := a.held[k]
		if len(q) == 0 {
			continue
		}
		a.held[k] = nil
		for i, m := range q {
			if a.blocked(k.gate, k.ch) {
				a.held[k] = append(a.held[k], q[i:]...)
				break
			}
			if err := m.process(); err != nil {
				return err
			}
		}
	}
	return nil
}
