package monitor

// Rate is one subtask's rates between two snapshots: records and bytes
// per second, and Flink's busy, idle and back-pressured milliseconds per
// second (which add up to about 1000).
type Rate struct {
	RecordsInPerSec  float64 `json:"records-in-per-second"`
	RecordsOutPerSec float64 `json:"records-out-per-second"`
	BytesInPerSec    float64 `json:"bytes-in-per-second"`
	BytesOutPerSec   float64 `json:"bytes-out-per-second"`
	BusyMsPerSec     float64 `json:"busy-ms-per-second"`
	IdleMsPerSec     float64 `json:"idle-ms-per-second"`
	BackPressuredMs  float64 `json:"backpressured-ms-per-second"`
	// InputRecordsPerSec is per input of the head operator.
	InputRecordsPerSec []float64 `json:"input-records-per-second"`
}

// Rates computes every subtask's rates from an older and a newer
// snapshot of the same job, by vertex ID and subtask index. A subtask
// missing from older (or a nil older) gets zero rates.
func Rates(older, newer *Snapshot) map[string][]Rate {
	out := map[string][]Rate{}
	if newer == nil {
		return out
	}
	secs := 0.0
	if older != nil {
		secs = float64(newer.Timestamp-older.Timestamp) / 1000
	}
	for _, v := range newer.Vertices {
		rs := make([]Rate, len(v.Subtasks))
		var ov *Vertex
		if older != nil && secs > 0 {
			ov = older.Vertex(v.ID)
		}
		for i, s := range v.Subtasks {
			if ov == nil || i >= len(ov.Subtasks) {
				continue
			}
			o := ov.Subtasks[i]
			r := &rs[i]
			per := func(a, b int64) float64 { return max(float64(b-a), 0) / secs }
			r.RecordsInPerSec = per(o.RecordsIn, s.RecordsIn)
			r.RecordsOutPerSec = per(o.RecordsOut, s.RecordsOut)
			r.BytesInPerSec = per(o.BytesIn, s.BytesIn)
			r.BytesOutPerSec = per(o.BytesOut, s.BytesOut)
			busy := float64(s.BusyNanos - o.BusyNanos)
			idle := float64(s.IdleNanos - o.IdleNanos)
			bp := float64(s.BackPressuredNanos - o.BackPressuredNanos)
			if total := busy + idle + bp; total > 0 {
				// Scaled to the measured time, so the three add up to 1000.
				r.BusyMsPerSec = clamp(1000 * busy / total)
				r.IdleMsPerSec = clamp(1000 * idle / total)
				r.BackPressuredMs = clamp(1000 * bp / total)
			}
			for j := range s.InputRecords {
				var prev int64
				if j < len(o.InputRecords) {
					prev = o.InputRecords[j]
				}
				r.InputRecordsPerSec = append(r.InputRecordsPerSec, per(prev, s.InputRecords[j]))
			}
		}
		out[v.ID] = rs
	}
	return out
}

func clamp(x float64) float64 { return min(max(x, 0), 1000) }
