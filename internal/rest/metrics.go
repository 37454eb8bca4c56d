package rest

import (
	"math"
	"net/http"
	"sort"
	"strconv"
	"strings"

	"github.com/weirstream/weir/internal/monitor"
)

// Flink's metrics queries: /jobs/:jobid/metrics,
// /jobs/:jobid/vertices/:vertexid/metrics (ids "<subtask>.<metric>" and
// "<subtask>.<operator>.<metric>"), .../subtasks/metrics (aggregated over
// subtasks) and .../subtasks/:subtaskindex/metrics. Without ?get= they list
// the available metric ids; with it they return the values, as strings
// (aggregates as numbers), of the ids that exist.

func (s *Server) routeMetrics(mux *http.ServeMux) {
	mux.HandleFunc("GET /jobs/{jobid}/metrics", s.withJob(s.jobMetrics))
	mux.HandleFunc("GET /jobs/{jobid}/vertices/{vertexid}/metrics", s.withVertex(s.vertexMetrics))
	mux.HandleFunc("GET /jobs/{jobid}/vertices/{vertexid}/subtasks/metrics", s.withVertex(s.aggregatedMetrics))
	mux.HandleFunc("GET /jobs/{jobid}/vertices/{vertexid}/subtasks/{subtaskindex}/metrics", s.withVertex(s.subtaskMetrics))
}

func fmtInt(x int64) string { return strconv.FormatInt(x, 10) }

func fmtFloat(x float64) string { return strconv.FormatFloat(x, 'f', -1, 64) }

// subtaskMetricMap returns a subtask's metrics by id (without the
// "<subtask>." prefix).
func subtaskMetricMap(snap *monitor.Snapshot, v *monitor.Vertex, st monitor.Subtask, rt monitor.Rate) map[string]string {
	m := map[string]string{
		"numRecordsIn": fmtInt(st.RecordsIn), "numRecordsOut": fmtInt(st.RecordsOut),
		"numBytesIn": fmtInt(st.BytesIn), "numBytesOut": fmtInt(st.BytesOut),
		"numRecordsInPerSecond": fmtFloat(rt.RecordsInPerSec), "numRecordsOutPerSecond": fmtFloat(rt.RecordsOutPerSec),
		"numBytesInPerSecond": fmtFloat(rt.BytesInPerSec), "numBytesOutPerSecond": fmtFloat(rt.BytesOutPerSec),
		"busyTimeMsPerSecond": fmtFloat(rt.BusyMsPerSec), "idleTimeMsPerSecond": fmtFloat(rt.IdleMsPerSec),
		"backPressuredTimeMsPerSecond": fmtFloat(rt.BackPressuredMs),
		"accumulatedBusyTime":          fmtInt(st.BusyNanos / 1e6), "accumulatedIdleTime": fmtInt(st.IdleNanos / 1e6),
		"accumulatedBackpressuredTime": fmtInt(st.BackPressuredNanos / 1e6),
		"isBackPressured":              strconv.FormatBool(rt.BackPressuredMs > 0),
		"currentInputWatermark":        fmtInt(combinedWatermark(st)),
		"numberOfCheckpoints":          fmtInt(st.Checkpoints),
	}
	if st.OutputWatermark != nil {
		m["currentOutputWatermark"] = fmtInt(*st.OutputWatermark)
	}
	if c := snap.Checkpoints.Completed; c != nil {
		for _, sc := range c.Vertices[v.ID] {
			if sc.Subtask == st.Index && sc.Acked {
				m["checkpointStartDelayNanos"] = fmtInt(sc.StartDelayMs * 1e6)
				m["checkpointAlignmentTime"] = fmtInt(sc.AlignmentMs * 1e6)
			}
		}
	}
	for i, op := range st.Operators {
		p := op.Name + "."
		m[p+"numRecordsIn"] = fmtInt(op.RecordsIn)
		m[p+"numRecordsOut"] = fmtInt(op.RecordsOut)
		m[p+"numLateRecordsDropped"] = fmtInt(op.LateRecordsDropped)
		if i == 0 && len(st.InputWatermarks) > 0 {
			m[p+"currentInputWatermark"] = fmtInt(combinedWatermark(st))
			if len(st.InputWatermarks) == 2 {
				m[p+"currentInput1Watermark"] = fmtInt(st.InputWatermarks[0])
				m[p+"currentInput2Watermark"] = fmtInt(st.InputWatermarks[1])
			}
		}
		if op.Keyed {
			m[p+"stateEntries"] = fmtInt(op.StateEntries)
			m[p+"timers"] = fmtInt(op.Timers)
		}
		for _, sp := range op.Splits {
			q := p + "split." + sp.ID + "."
			m[q+"numRecordsIn"] = fmtInt(sp.Records)
			m[q+"watermark"] = fmtInt(sp.Watermark)
			m[q+"idle"] = strconv.FormatBool(sp.Idle)
			m[q+"paused"] = strconv.FormatBool(sp.Paused)
		}
		for _, g := range op.Gauges {
			m[p+g.Scope()+g.Name] = fmtFloat(g.Value)
		}
		for _, u := range op.User {
			userMetricIDs(m, p+u.Name, u)
		}
		if j := op.Join; j != nil {
			m[p+"sampledProbes"] = fmtInt(j.Probes)
			m[p+"sampledMatches"] = fmtInt(j.Matched)
			m[p+"sampledMirroredMatches"] = fmtInt(j.MirroredMatched)
		}
	}
	return m
}

// jobMetricMap returns the job-level metrics.
func jobMetricMap(snap *monitor.Snapshot) map[string]string {
	cs := snap.Checkpoints
	m := map[string]string{
		"numberOfCompletedCheckpoints":  fmtInt(cs.Counts.Completed),
		"numberOfFailedCheckpoints":     fmtInt(cs.Counts.Failed),
		"numberOfInProgressCheckpoints": fmtInt(cs.Counts.InProgress),
		"totalNumberOfCheckpoints":      fmtInt(cs.Counts.Total),
		"uptime":                        fmtInt(max(duration(snap.Job, snap.Timestamp), 0)),
		"downtime":                      "0",
		"numRestarts":                   strconv.Itoa(snap.Job.Restarts),
		"fullRestarts":                  strconv.Itoa(snap.Job.Restarts),
	}
	if c := cs.Completed; c != nil {
		m["lastCheckpointDuration"] = fmtInt(endToEnd(*c))
		m["lastCheckpointSize"] = fmtInt(c.StateSize)
		m["lastCheckpointFullSize"] = fmtInt(c.StateSize)
		m["lastCheckpointExternalPath"] = c.ExternalPath
		m["lastCompletedCheckpointId"] = fmtInt(c.ID)
	}
	if r := cs.Restored; r != nil {
		m["lastCheckpointRestoreTimestamp"] = fmtInt(r.Timestamp)
	}
	return m
}

// answer writes the metrics of m that ?get= asks for, or the ids of m.
func answer(w http.ResponseWriter, r *http.Request, m map[string]string) {
	get := r.URL.Query().Get("get")
	out := []map[string]string{}
	if get == "" {
		ids := make([]string, 0, len(m))
		for id := range m {
			ids = append(ids, id)
		}
		sort.Strings(ids)
		for _, id := range ids {
			out = append(out, map[string]string{"id": id})
		}
		writeJSON(w, http.StatusOK, out)
		return
	}
	for _, id := range strings.Split(get, ",") {
		if v, ok := m[id]; ok {
			out = append(out, map[string]string{"id": id, "value": v})
		}
	}
	writeJSON(w, http.StatusOK, out)
}

func (s *Server) jobMetrics(w http.ResponseWriter, r *http.Request, e *entry) {
	answer(w, r, jobMetricMap(e.job.Snapshot()))
}

func rateOf(rates map[string][]monitor.Rate, v *monitor.Vertex, i int) monitor.Rate {
	if i < len(rates[v.ID]) {
		return rates[v.ID][i]
	}
	return monitor.Rate{}
}

func (s *Server) vertexMetrics(w http.ResponseWriter, r *http.Request, e *entry, snap *monitor.Snapshot, rates map[string][]monitor.Rate, v *monitor.Vertex) {
	all := map[string]string{}
	for i, st := range v.Subtasks {
		for id, val := range subtaskMetricMap(snap, v, st, rateOf(rates, v, i)) {
			all[strconv.Itoa(st.Index)+"."+id] = val
		}
	}
	answer(w, r, all)
}

func (s *Server) subtaskMetrics(w http.ResponseWriter, r *http.Request, e *entry, snap *monitor.Snapshot, rates map[string][]monitor.Rate, v *monitor.Vertex) {
	i, err := strconv.Atoi(r.PathValue("subtaskindex"))
	if err != nil || i < 0 || i >= len(v.Subtasks) {
		writeError(w, http.StatusNotFound, "Subtask "+r.PathValue("subtaskindex")+" not found")
		return
	}
	answer(w, r, subtaskMetricMap(snap, v, v.Subtasks[i], rateOf(rates, v, i)))
}

// parseSubtasks parses Flink's ?subtasks= filter ("0,2-3"); nil: all.
func parseSubtasks(q string) map[int]bool {
	if q == "" {
		return nil
	}
	set := map[int]bool{}
	for _, part := range strings.Split(q, ",") {
		lo, hi, isRange := strings.Cut(part, "-")
		a, err1 := strconv.Atoi(strings.TrimSpace(lo))
		b := a
		var err2 error
		if isRange {
			b, err2 = strconv.Atoi(strings.TrimSpace(hi))
		}
		if err1 != nil || err2 != nil {
			continue
		}
		for i := a; i <= b; i++ {
			set[i] = true
		}
	}
	return set
}

func (s *Server) aggregatedMetrics(w http.ResponseWriter, r *http.Request, e *entry, snap *monitor.Snapshot, rates map[string][]monitor.Rate, v *monitor.Vertex) {
	filter := parseSubtasks(r.URL.Query().Get("subtasks"))
	values := map[string][]float64{}
	for i, st := range v.Subtasks {
		if filter != nil && !filter[st.Index] {
			continue
		}
		for id, val := range subtaskMetricMap(snap, v, st, rateOf(rates, v, i)) {
			if x, err := strconv.ParseFloat(val, 64); err == nil {
				values[id] = append(values[id], x)
			}
		}
	}
	get := r.URL.Query().Get("get")
	if get == "" {
		ids := make([]string, 0, len(values))
		for id := range values {
			ids = append(ids, id)
		}
		sort.Strings(ids)
		out := []map[string]string{}
		for _, id := range ids {
			out = append(out, map[string]string{"id": id})
		}
		writeJSON(w, http.StatusOK, out)
		return
	}
	aggs := []string{"min", "max", "avg", "sum", "skew"}
	if a := r.URL.Query().Get("agg"); a != "" {
		aggs = strings.Split(strings.ToLower(a), ",")
	}
	out := []map[string]any{}
	for _, id := range strings.Split(get, ",") {
		xs, ok := values[id]
		if !ok {
			continue
		}
		lo, hi, sum := math.Inf(1), math.Inf(-1), 0.0
		for _, x := range xs {
			lo, hi, sum = min(lo, x), max(hi, x), sum+x
		}
		avg := sum / float64(len(xs))
		res := map[string]any{"id": id}
		for _, a := range aggs {
			switch a {
			case "min":
				res["min"] = lo
			case "max":
				res["max"] = hi
			case "avg":
				res["avg"] = avg
			case "sum":
				res["sum"] = sum
			case "skew":
				// Flink 1.18+: (max - avg) / max in percent.
				sk := 0.0
				if hi > 0 {
					sk = 100 * (hi - avg) / hi
				}
				res["skew"] = sk
			}
		}
		out = append(out, res)
	}
	writeJSON(w, http.StatusOK, out)
}

// userMetricIDs adds a user metric's ids under prefix p: its name, or for
// a histogram its name with Flink's suffixes (_count, _min, ..., _p999).
func userMetricIDs(m map[string]string, p string, u monitor.UserMetric) {
	h := u.Histogram
	if h == nil {
		if u.Kind == "counter" {
			m[p] = fmtInt(int64(u.Value))
		} else {
			m[p] = fmtFloat(u.Value)
		}
		return
	}
	m[p+"_count"] = fmtInt(h.Count)
	m[p+"_min"] = fmtInt(h.Min)
	m[p+"_max"] = fmtInt(h.Max)
	m[p+"_mean"] = fmtFloat(h.Mean)
	m[p+"_stddev"] = fmtFloat(h.StdDev)
	m[p+"_median"] = fmtFloat(h.P50)
	m[p+"_p75"] = fmtFloat(h.P75)
	m[p+"_p90"] = fmtFloat(h.P90)
	m[p+"_p95"] = fmtFloat(h.P95)
	m[p+"_p98"] = fmtFloat(h.P98)
	m[p+"_p99"] = fmtFloat(h.P99)
	m[p+"_p999"] = fmtFloat(h.P999)
}
