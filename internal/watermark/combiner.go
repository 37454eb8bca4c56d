package watermark

// Combiner is Flink's IndexedCombinedWatermarkStatus as used by
// AbstractStreamOperator.processWatermark1/2 and processWatermarkStatus1/2: it
// combines the watermarks and statuses of the N inputs of a multi-input
// operator (each input usually fed by its own Valve).
//
// Each input has a partial watermark (initially Min) and an idle flag
// (initially false). After every update the combined watermark is computed
// over the inputs that are not idle: if the minimum over the non-idle inputs
// is above the combined watermark, the combined watermark rises to it. If
// every input is idle the combiner is idle and, as in Flink 2.2
// (FLINK-38454), the combined watermark rises to the highest partial
// watermark of all inputs (1.20-2.1 kept it where it was): once nothing holds
// it back, the inputs' watermarks are flushed, whatever the order in which
// they went idle. The combined watermark therefore never decreases.
//
// The runtime drives it like Flink's AbstractStreamOperator does. For a
// watermark on input i:
//
//	if c.Watermark(i, wm) { operator.processWatermark(c.Combined()) }
//
// and for a status on input i:
//
//	wasIdle := c.Idle()
//	if c.Status(i, idle) { operator.processWatermark(c.Combined()) }
//	if wasIdle != c.Idle() { output.emitStatus(c.Idle()) }
//
// A watermark that processWatermark forwards while the operator's output has
// announced IDLE is dropped by the output (RecordWriterOutput), so the
// combined watermark can rise (and fire timers) without being seen
// downstream.
type Combiner struct {
	inputs   []combinerInput
	combined int64
	idle     bool
}

type combinerInput struct {
	wm   int64
	idle bool
}

// NewCombiner returns a combiner over the given number of inputs (at least
// one), all active at watermark Min. The combined watermark is Min and the
// combiner is not idle.
func NewCombiner(inputs int) *Combiner {
	if inputs < 1 {
		panic("watermark: NewCombiner needs at least one input")
	}
	c := &Combiner{inputs: make([]combinerInput, inputs), combined: Min}
	for i := range c.inputs {
		c.inputs[i].wm = Min
	}
	return c
}

// Watermark records watermark wm on input (0-based): the input becomes active
// and its partial watermark becomes max(old, wm). It reports whether the
// combined watermark rose.
func (c *Combiner) Watermark(input int, wm int64) (advanced bool) {
	in := &c.inputs[input]
	in.idle = false
	if wm > in.wm {
		in.wm = wm
	}
	return c.update()
}

// Status sets the idle flag of input (0-based). It reports whether the
// combined watermark rose; marking an input idle can release a watermark it
// held back. Whether the combined status changed is read from Idle.
func (c *Combiner) Status(input int, idle bool) (advanced bool) {
	c.inputs[input].idle = idle
	return c.update()
}

// Combined returns the combined watermark (Min initially).
func (c *Combiner) Combined() int64 { return c.combined }

// Idle reports whether every input is idle.
func (c *Combiner) Idle() bool { return c.idle }

// Inputs returns the number of inputs.
func (c *Combiner) Inputs() int { return len(c.inputs) }

func (c *Combiner) update() bool {
	var p partials
	for i := range c.inputs {
		p.add(c.inputs[i].wm, c.inputs[i].idle)
	}
	var advanced bool
	c.idle, advanced = p.combine(&c.combined)
	return advanced
}

// partials folds the partial watermarks of inputs (or splits) as Flink
// 2.2's CombinedWatermarkStatus.updateCombinedWatermark does.
type partials struct {
	active    bool  // some partial is not idle
	minActive int64 // the minimum over the partials that are not idle
	maxIdle   bool  // some partial is idle
	maxOfIdle int64 // the maximum over the idle partials
}

func (p *partials) add(wm int64, idle bool) {
	switch {
	case idle && (!p.maxIdle || wm > p.maxOfIdle):
		p.maxIdle, p.maxOfIdle = true, wm
	case !idle && (!p.active || wm < p.minActive):
		p.active, p.minActive = true, wm
	}
}

// combine raises *combined to the candidate if it is higher and reports
// whether every partial is idle and whether the combined watermark rose.
// With a partial that is not idle the candidate is the minimum over those;
// with all idle it is the maximum over all of them (FLINK-38454: once
// nothing holds the watermark back it is flushed, whatever the order in
// which the partials went idle; 1.20-2.1 kept it where it was).
func (p *partials) combine(combined *int64) (allIdle, advanced bool) {
	candidate, ok := p.minActive, p.active
	if !p.active {
		candidate, ok = p.maxOfIdle, p.maxIdle
	}
	if ok && candidate > *combined {
		*combined = candidate
		return !p.active, true
	}
	return !p.active, false
}
