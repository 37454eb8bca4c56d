package runtime

import "fmt"

// chanKey names one input channel of a task: its gate and channel index.
type chanKey struct{ gate, ch int }

// Aligner aligns checkpoint barriers over every input channel of a task, as
// Flink's SingleCheckpointBarrierHandler (exactly-once) and
// CheckpointBarrierTracker (at-least-once) do. In exactly-once mode a
// channel that delivered barrier n is not read again (its batches are held,
// keeping their credits, so the producer is back-pressured) until barrier n
// has arrived on every channel that has not ended; then the task snapshots
// its operators and forwards the barrier, and the held batches are
// processed in order. In at-least-once mode nothing is blocked. A barrier of
// a newer checkpoint aborts an unfinished alignment; stale barriers are
// ignored.
type Aligner struct {
	exactlyOnce bool
	channels    []chanKey
	ended       map[chanKey]bool
	seen        map[chanKey]bool
	held        map[chanKey][]message
	current     int64
	lastDone    int64
	onAligned   func(id int64) error
	onAbort     func(id int64)
}

// NewAligner returns an aligner that calls onAligned(id) once barrier id has
// arrived on every live channel, and onAbort(id) when a newer barrier cuts
// an alignment short.
func NewAligner(exactlyOnce bool, onAligned func(id int64) error, onAbort func(id int64)) *Aligner {
	return &Aligner{
		exactlyOnce: exactlyOnce, current: -1, lastDone: -1,
		ended: map[chanKey]bool{}, seen: map[chanKey]bool{}, held: map[chanKey][]message{},
		onAligned: onAligned, onAbort: onAbort,
	}
}

func (a *Aligner) addChannels(gate, n int) {
	for ch := range n {
		a.channels = append(a.channels, chanKey{gate, ch})
	}
}

// Current returns the checkpoint being aligned, or -1.
func (a *Aligner) Current() int64 { return a.current }

func (a *Aligner) blocked(gate, ch int) bool {
	return a.exactlyOnce && a.current >= 0 && a.seen[chanKey{gate, ch}]
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

// barrier handles barrier id from a channel and reports whether the channel
// is now blocked.
func (a *Aligner) barrier(gate, ch int, id int64) (bool, error) {
	k := chanKey{gate, ch}
	switch {
	case a.current >= 0 && id < a.current:
		return false, nil // stale: an aborted or older checkpoint
	case a.current >= 0 && id > a.current:
		old := a.current
		a.reset()
		if a.onAbort != nil {
			a.onAbort(old)
		}
		if err := a.release(); err != nil {
			return false, err
		}
	case a.current < 0 && id <= a.lastDone:
		return false, nil
	}
	if a.current < 0 {
		a.current = id
	}
	if a.seen[k] {
		return false, fmt.Errorf("checkpoint %d: two barriers on channel %d of input %d", id, ch, gate+1)
	}
	a.seen[k] = true
	if a.complete() {
		return false, a.finish()
	}
	return a.exactlyOnce, nil
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

func (a *Aligner) finish() error {
	id := a.current
	a.lastDone = id
	a.reset()
	if err := a.onAligned(id); err != nil {
		return err
	}
	return a.release()
}

func (a *Aligner) reset() {
	a.current = -1
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
