package watermark

// Multiplexer is Flink's WatermarkOutputMultiplexer: it combines the
// watermarks and idleness of several outputs, one per source split inside
// one source subtask, into updates of one underlying Output (typically an
// Emitter, which drops non-advancing watermarks).
//
// Each registered split has a partial watermark (initially Min) and an idle
// flag (initially false); emitting a watermark on a split's output clears its
// idle flag. The combined watermark is the minimum over the splits that are
// not idle and never decreases. Combining ("update") works as in Flink
// 2.2's CombinedWatermarkStatus: with no splits registered nothing happens;
// if the minimum over the non-idle splits is above the combined watermark,
// the combined watermark rises and is emitted to the underlying output; if
// every split is idle, the combined watermark rises to the highest split
// watermark (FLINK-38454), is emitted if it rose, and the underlying output
// is then marked idle. The underlying output is never marked active by the
// multiplexer: it turns active with its next advancing watermark.
//
// Each split has two outputs, as in Flink:
//
//   - the immediate output (Register): a watermark above the split's previous
//     one and above the combined watermark, and every MarkIdle and
//     MarkActive, combine at once. Flink's sources use it for watermarks
//     generated on events.
//   - the deferred output (Deferred): updates only the split's state;
//     OnPeriodicEmit combines. Flink's sources use it for periodic emission:
//     every split's generator emits to its deferred output, then
//     OnPeriodicEmit combines once. This matters: with immediate outputs a
//     periodic tick can emit intermediate watermarks, or a watermark just
//     before every split turns idle, that Flink would not emit.
//
// Unregister (a finished or released split) does not combine by itself; the
// next update does.
type Multiplexer struct {
	under    Output
	byID     map[string]*split
	splits   []*split
	combined int64
	idle     bool
}

type split struct {
	wm   int64
	idle bool
	imm  immediateOutput
	def  deferredOutput
}

// NewMultiplexer returns a multiplexer with no splits that emits combined
// updates to underlying.
func NewMultiplexer(underlying Output) *Multiplexer {
	if underlying == nil {
		panic("watermark: NewMultiplexer needs an underlying output")
	}
	return &Multiplexer{under: underlying, byID: make(map[string]*split), combined: Min}
}

// Register adds a split, active at watermark Min, and returns its immediate
// output. It panics if the split is already registered.
func (m *Multiplexer) Register(id string) Output {
	if _, ok := m.byID[id]; ok {
		panic("watermark: split " + id + " is already registered")
	}
	s := &split{wm: Min}
	s.imm = immediateOutput{m: m, s: s}
	s.def = deferredOutput{s: s}
	m.byID[id] = s
	m.splits = append(m.splits, s)
	return &s.imm
}

// Immediate returns the immediate output of a registered split (the same one
// Register returned). It panics if the split is not registered.
func (m *Multiplexer) Immediate(id string) Output { return &m.lookup(id).imm }

// Deferred returns the deferred output of a registered split: its updates are
// combined only by OnPeriodicEmit. It panics if the split is not registered.
func (m *Multiplexer) Deferred(id string) Output { return &m.lookup(id).def }

// Unregister removes a split, so it no longer holds the combined watermark
// back. It does nothing if the split is not registered. It does not combine;
// the next update (any immediate output call or OnPeriodicEmit) does. Outputs
// of a removed split still accept calls but no longer count.
func (m *Multiplexer) Unregister(id string) {
	s, ok := m.byID[id]
	if !ok {
		return
	}
	delete(m.byID, id)
	for i, x := range m.splits {
		if x == s {
			copy(m.splits[i:], m.splits[i+1:])
			m.splits[len(m.splits)-1] = nil
			m.splits = m.splits[:len(m.splits)-1]
			break
		}
	}
}

// OnPeriodicEmit combines all split states, including deferred updates, and
// possibly updates the underlying output.
func (m *Multiplexer) OnPeriodicEmit() { m.update() }

// Combined returns the combined watermark (Min initially).
func (m *Multiplexer) Combined() int64 { return m.combined }

// Idle reports whether every split was idle at the last combination.
func (m *Multiplexer) Idle() bool { return m.idle }

// SplitState returns a registered split's watermark and idleness (Min
// and false for an unknown split).
func (m *Multiplexer) SplitState(id string) (wm int64, idle bool) {
	s, ok := m.byID[id]
	if !ok {
		return Min, false
	}
	return s.wm, s.idle
}

// Splits returns the number of registered splits.
func (m *Multiplexer) Splits() int { return len(m.splits) }

func (m *Multiplexer) lookup(id string) *split {
	s, ok := m.byID[id]
	if !ok {
		panic("watermark: no split registered under id " + id)
	}
	return s
}

func (m *Multiplexer) update() {
	if m.combine() {
		m.under.EmitWatermark(m.combined)
	}
	if m.idle {
		m.under.MarkIdle()
	}
}

// combine is CombinedWatermarkStatus.updateCombinedWatermark: it reports
// whether the combined watermark rose, and recomputes Idle unless there are
// no splits. When every split is idle the combined watermark first rises
// to the highest split watermark (Flink 2.2, FLINK-38454), and update then
// marks the output idle after emitting it.
func (m *Multiplexer) combine() bool {
	if len(m.splits) == 0 {
		return false
	}
	var p partials
	for _, s := range m.splits {
		p.add(s.wm, s.idle)
	}
	var advanced bool
	m.idle, advanced = p.combine(&m.combined)
	return advanced
}

// setWatermark is PartialWatermark.setWatermark: it clears the idle flag and
// reports whether wm advanced the split's watermark.
func (s *split) setWatermark(wm int64) bool {
	s.idle = false
	if wm > s.wm {
		s.wm = wm
		return true
	}
	return false
}

type immediateOutput struct {
	m *Multiplexer
	s *split
}

func (o *immediateOutput) EmitWatermark(wm int64) {
	if o.s.setWatermark(wm) && wm > o.m.combined {
		o.m.update()
	}
}

func (o *immediateOutput) MarkIdle() {
	o.s.idle = true
	o.m.update()
}

func (o *immediateOutput) MarkActive() {
	o.s.idle = false
	o.m.update()
}

type deferredOutput struct{ s *split }

func (o *deferredOutput) EmitWatermark(wm int64) { o.s.setWatermark(wm) }
func (o *deferredOutput) MarkIdle()              { o.s.idle = true }
func (o *deferredOutput) MarkActive()            { o.s.idle = false }
