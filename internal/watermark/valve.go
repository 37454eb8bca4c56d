package watermark

// Valve is Flink's StatusWatermarkValve: it merges the watermarks and
// watermark statuses of the input channels of one input gate into one output
// watermark and one output status.
//
// Per channel it keeps a watermark (initially Min), a status (initially
// active) and an "aligned" flag (initially true). The output watermark is the
// minimum over the aligned channels; it starts at Min and is strictly
// increasing. An idle channel is not aligned. A channel that becomes active
// again with a watermark below the last output stays unaligned, so it does not
// hold the output back, until its watermark catches up with the last output.
// When every channel is idle the valve flushes the maximum watermark over all
// channels (if the channel that went idle last was holding the output) and
// turns idle; while idle it ignores watermarks.
//
// The aligned channels are kept in a min-heap, so a watermark costs
// O(log channels). A Valve never allocates after NewValve.
type Valve struct {
	chans  []valveChannel
	heap   []int // indices of the aligned channels, a min-heap by watermark
	last   int64 // last output watermark
	idle   bool  // last output status
	active int   // number of active channels
}

type valveChannel struct {
	wm   int64
	idle bool
	pos  int // position in Valve.heap, or -1 when not aligned
}

// NewValve returns a valve over the given number of input channels (at least
// one), all active, aligned and at watermark Min. Its output watermark is Min
// and its output status active.
func NewValve(channels int) *Valve {
	if channels < 1 {
		panic("watermark: NewValve needs at least one channel")
	}
	v := &Valve{
		chans:  make([]valveChannel, channels),
		heap:   make([]int, 0, channels),
		last:   Min,
		active: channels,
	}
	for i := range v.chans {
		v.chans[i] = valveChannel{wm: Min, pos: -1}
		v.push(i)
	}
	return v
}

// ChannelState returns channel ch's watermark and whether it is idle.
func (v *Valve) ChannelState(ch int) (wm int64, idle bool) {
	return v.chans[ch].wm, v.chans[ch].idle
}

// Channels returns the number of input channels.
func (v *Valve) Channels() int { return len(v.chans) }

// Output returns the last watermark the valve emitted (Min initially).
func (v *Valve) Output() int64 { return v.last }

// Idle reports the last status the valve emitted: true once every channel is
// idle, false (active) initially and once any channel is active again.
func (v *Valve) Idle() bool { return v.idle }

// Watermark feeds watermark wm from channel ch into the valve and appends what
// the valve emits (at most one watermark) to out, returning the extended slice.
//
// The watermark is ignored if the valve or channel ch is idle, or if it does
// not advance the channel's watermark. Otherwise the channel's watermark is
// raised, an unaligned channel that has caught up with the last output becomes
// aligned, and the minimum over the aligned channels is emitted if it is above
// the last output.
func (v *Valve) Watermark(ch int, wm int64, out []Event) []Event {
	c := &v.chans[ch]
	if v.idle || c.idle || wm <= c.wm {
		return out
	}
	c.wm = wm
	if c.pos >= 0 {
		v.fix(c.pos)
	} else if wm >= v.last {
		v.push(ch)
	}
	return v.emitMin(out)
}

// Status feeds a watermark status from channel ch into the valve (idle true =
// IDLE, false = ACTIVE) and appends what the valve emits to out, returning the
// extended slice. A status that does not change the channel's status is
// ignored.
//
// IDLE: the channel stops being aligned. If no channel is active any more, the
// valve emits the maximum watermark over all channels if the channel held the
// last output and the maximum is above it (a flush), then emits status IDLE.
// Otherwise, if the channel held the last output, the minimum over the
// remaining aligned channels is emitted if it is above the last output.
//
// ACTIVE: the channel becomes aligned only if its watermark is at least the
// last output. If the valve was idle, it emits status ACTIVE. No watermark is
// emitted.
func (v *Valve) Status(ch int, idle bool, out []Event) []Event {
	c := &v.chans[ch]
	if idle {
		if c.idle {
			return out
		}
		c.idle = true
		v.active--
		if c.pos >= 0 {
			v.remove(c.pos)
		}
		if v.active == 0 {
			if c.wm == v.last {
				max := int64(Min)
				for i := range v.chans {
					if w := v.chans[i].wm; w > max {
						max = w
					}
				}
				if max > v.last {
					v.last = max
					out = append(out, Event{Watermark: max})
				}
			}
			v.idle = true
			return append(out, Event{IsStatus: true, Idle: true})
		}
		if c.wm == v.last {
			out = v.emitMin(out)
		}
		return out
	}
	if !c.idle {
		return out
	}
	c.idle = false
	v.active++
	if c.wm >= v.last {
		v.push(ch)
	}
	if v.idle {
		v.idle = false
		out = append(out, Event{IsStatus: true})
	}
	return out
}

// emitMin emits the minimum over the aligned channels if it is above the last
// output.
func (v *Valve) emitMin(out []Event) []Event {
	if len(v.heap) == 0 {
		return out
	}
	if m := v.chans[v.heap[0]].wm; m > v.last {
		v.last = m
		out = append(out, Event{Watermark: m})
	}
	return out
}

// The heap below is container/heap specialised to channel indices, so that it
// neither boxes nor allocates.

func (v *Valve) less(i, j int) bool { return v.chans[v.heap[i]].wm < v.chans[v.heap[j]].wm }

func (v *Valve) swap(i, j int) {
	h := v.heap
	h[i], h[j] = h[j], h[i]
	v.chans[h[i]].pos = i
	v.chans[h[j]].pos = j
}

func (v *Valve) up(j int) {
	for j > 0 {
		i := (j - 1) / 2
		if !v.less(j, i) {
			break
		}
		v.swap(i, j)
		j = i
	}
}

func (v *Valve) down(i0 int) bool {
	n := len(v.heap)
	i := i0
	for {
		j1 := 2*i + 1
		if j1 >= n {
			break
		}
		j := j1
		if j2 := j1 + 1; j2 < n && v.less(j2, j1) {
			j = j2
		}
		if !v.less(j, i) {
			break
		}
		v.swap(i, j)
		i = j
	}
	return i > i0
}

func (v *Valve) push(ch int) {
	v.chans[ch].pos = len(v.heap)
	v.heap = append(v.heap, ch)
	v.up(len(v.heap) - 1)
}

func (v *Valve) remove(i int) {
	n := len(v.heap) - 1
	ch := v.heap[i]
	if i != n {
		v.swap(i, n)
	}
	v.heap = v.heap[:n]
	v.chans[ch].pos = -1
	if i != n {
		if !v.down(i) {
			v.up(i)
		}
	}
}

func (v *Valve) fix(i int) {
	if !v.down(i) {
		v.up(i)
	}
}

// ValveState is everything a Valve holds, for checkpoints: a valve whose
// channels are other processes (a cluster's upstream tasks) restores it so
// that its output after a restore is exactly what it was.
type ValveState struct {
	Channels []ValveChannel
	Last     int64
	Idle     bool
}

// ValveChannel is one channel of a ValveState.
type ValveChannel struct {
	Watermark int64
	Idle      bool
	Aligned   bool
}

// State returns the valve's state.
func (v *Valve) State() ValveState {
	s := ValveState{Channels: make([]ValveChannel, len(v.chans)), Last: v.last, Idle: v.idle}
	for i, c := range v.chans {
		s.Channels[i] = ValveChannel{Watermark: c.wm, Idle: c.idle, Aligned: c.pos >= 0}
	}
	return s
}

// RestoreValve returns a valve in state s (as State returned it).
func RestoreValve(s ValveState) *Valve {
	v := NewValve(len(s.Channels))
	v.heap = v.heap[:0]
	v.last, v.idle, v.active = s.Last, s.Idle, 0
	for i, c := range s.Channels {
		v.chans[i] = valveChannel{wm: c.Watermark, idle: c.Idle, pos: -1}
		if !c.Idle {
			v.active++
		}
		if c.Aligned {
			v.push(i)
		}
	}
	return v
}
