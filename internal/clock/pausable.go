package clock

// Relative is a clock that is only read: time in milliseconds that never
// goes back. Every Clock is one; Pausable is one that can stop.
type Relative interface {
	NowMillis() int64
}

// Pausable is Flink's PausableRelativeClock: it reads its base clock minus
// the time it spent paused, so that a duration measured on it leaves out
// the stretches when the thing it times could not make progress (a source
// split that watermark alignment paused, a task blocked on backpressure).
// Pauses nest: the clock runs again when every Pause has been matched by
// a Resume. A Pausable may be the base of another, which then also stops
// while its base does.
//
// A Pausable is not safe for concurrent use: the task goroutine that owns
// it pauses, resumes and reads it.
type Pausable struct {
	base   Relative
	pauses int
	since  int64 // base reading at the outermost Pause
	hidden int64 // total paused time before the current pause
}

// NewPausable returns a running clock over base.
func NewPausable(base Relative) *Pausable { return &Pausable{base: base} }

// NowMillis returns the base time minus the time spent paused; while
// paused it stands still.
func (p *Pausable) NowMillis() int64 {
	if p.pauses > 0 {
		return p.since - p.hidden
	}
	return p.base.NowMillis() - p.hidden
}

// Pause stops the clock until the matching Resume.
func (p *Pausable) Pause() {
	if p.pauses == 0 {
		p.since = p.base.NowMillis()
	}
	p.pauses++
}

// Resume undoes one Pause; the clock runs again after the last one. A
// Resume without a Pause does nothing.
func (p *Pausable) Resume() {
	if p.pauses == 0 {
		return
	}
	p.pauses--
	if p.pauses == 0 {
		if d := p.base.NowMillis() - p.since; d > 0 {
			p.hidden += d
		}
	}
}

// Paused reports whether the clock stands still.
func (p *Pausable) Paused() bool { return p.pauses > 0 }
