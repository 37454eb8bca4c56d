package rest

import (
	"fmt"
	"net/http"
	"slices"
	"sort"
	"strconv"

	"github.com/weirstream/weir/internal/monitor"
)

// Flink's subtask resources: one subtask's current attempt
// (SubtaskExecutionAttemptDetailsInfo, also as .../attempts/:attempt),
// the subtasks' state timestamps (SubtasksTimesInfo), a vertex's subtasks
// by task manager (JobVertexTaskManagersInfo), the accumulators (Weir has
// none: Flink's empty answers), a job's execution result
// (JobExecutionResultResponseBody) and its resource requirements.
// Weir starts every subtask of a job at once, so their CREATED ...
// RUNNING timestamps are the job's start (on a cluster member, the
// task's assignment, restore and start times).

func (s *Server) routeSubtasks(mux *http.ServeMux) {
	mux.HandleFunc("GET /jobs/{jobid}/vertices/{vertexid}/subtasks/{subtaskindex}", s.withVertex(s.subtask))
	mux.HandleFunc("GET /jobs/{jobid}/vertices/{vertexid}/subtasks/{subtaskindex}/attempts/{attempt}", s.withVertex(s.subtask))
	mux.HandleFunc("GET /jobs/{jobid}/vertices/{vertexid}/subtasktimes", s.withVertex(s.subtaskTimes))
	mux.HandleFunc("GET /jobs/{jobid}/vertices/{vertexid}/taskmanagers", s.withVertex(s.vertexTaskManagers))
	mux.HandleFunc("GET /jobs/{jobid}/vertices/{vertexid}/accumulators", s.withVertex(func(w http.ResponseWriter, r *http.Request, e *entry, snap *monitor.Snapshot, rates map[string][]monitor.Rate, v *monitor.Vertex) {
		writeJSON(w, http.StatusOK, map[string]any{"id": v.ID, "user-accumulators": []any{}})
	}))
	mux.HandleFunc("GET /jobs/{jobid}/vertices/{vertexid}/subtasks/accumulators", s.withVertex(func(w http.ResponseWriter, r *http.Request, e *entry, snap *monitor.Snapshot, rates map[string][]monitor.Rate, v *monitor.Vertex) {
		subs := []map[string]any{}
		for i := range v.Subtasks {
			d := subtaskDetails(snap, rates, v, i)
			subs = append(subs, map[string]any{"subtask": d.Subtask, "attempt": d.Attempt, "endpoint": d.Endpoint, "host": d.Endpoint, "user-accumulators": []any{}})
		}
		writeJSON(w, http.StatusOK, map[string]any{"id": v.ID, "parallelism": v.Parallelism, "subtasks": subs})
	}))
	mux.HandleFunc("GET /jobs/{jobid}/execution-result", s.withJob(s.executionResult))
	mux.HandleFunc("GET /jobs/{jobid}/resource-requirements", s.withJob(func(w http.ResponseWriter, r *http.Request, e *entry) {
		out := map[string]any{}
		for _, v := range e.job.Snapshot().Vertices {
			out[v.ID] = map[string]any{"parallelism": map[string]int{"lowerBound": v.Parallelism, "upperBound": v.Parallelism}}
		}
		writeJSON(w, http.StatusOK, out)
	}))
}

// subtaskInfo is Flink's SubtaskExecutionAttemptDetailsInfo.
type subtaskInfo struct {
	Subtask        int              `json:"subtask"`
	Status         string           `json:"status"`
	Attempt        int              `json:"attempt"`
	Endpoint       string           `json:"endpoint"`
	StartTime      int64            `json:"start-time"`
	EndTime        int64            `json:"end-time"`
	Duration       int64            `json:"duration"`
	Metrics        ioMetrics        `json:"metrics"`
	TaskManagerID  string           `json:"taskmanager-id"`
	StatusDuration map[string]int64 `json:"status-duration"`
	// Weir: the rates of the last sampling interval.
	Rates monitor.Rate `json:"weir-rates"`
	// Weir, on a cluster member: the task (stage x partition) the
	// subtask is; taskmanager-id is then the instance's group member.
	Task string `json:"weir-task,omitempty"`

	// timestamps are the times it entered each execution state (0: not).
	timestamps map[string]int64
}

// statusDurationStates are the states of Flink's status-duration.
var statusDurationStates = []string{"CREATED", "SCHEDULED", "DEPLOYING", "INITIALIZING", "RUNNING"}

// subtaskDetails describes subtask i of v.
func subtaskDetails(snap *monitor.Snapshot, rates map[string][]monitor.Rate, v *monitor.Vertex, i int) subtaskInfo {
	j := snap.Job
	st := v.Subtasks[i]
	d := subtaskInfo{
		Subtask: st.Index, Status: st.Status, Attempt: j.Restarts, Endpoint: "localhost",
		StartTime: j.StartTime, EndTime: j.EndTime, Duration: duration(j, snap.Timestamp),
		Metrics: subtaskIO(st), TaskManagerID: "weir", Rates: rateOf(rates, v, i),
		timestamps: map[string]int64{},
	}
	for _, state := range executionStates {
		d.timestamps[state] = 0
	}
	created, initializing, running := j.StartTime, j.StartTime, j.StartTime
	if c := snap.Cluster; c != nil {
		d.TaskManagerID = c.Member
		for _, t := range c.Tasks {
			if t.Partition == st.Index && slices.Contains(t.Vertices, v.ID) {
				d.Task, d.Attempt = t.ID, t.Attempt-1
				created, initializing, running = t.AssignedAt, t.RestoredAt, t.RunningAt
				d.StartTime = t.AssignedAt
				d.Duration = snap.Timestamp - t.AssignedAt
			}
		}
	}
	d.timestamps["CREATED"], d.timestamps["SCHEDULED"], d.timestamps["DEPLOYING"] = created, created, created
	d.timestamps["INITIALIZING"], d.timestamps["RUNNING"] = initializing, running
	switch st.Status {
	case "FINISHED", "CANCELED", "FAILED":
		end := j.EndTime
		if end <= 0 {
			end = snap.Timestamp
		}
		d.timestamps[st.Status] = end
	}
	d.StatusDuration = map[string]int64{}
	for _, state := range statusDurationStates {
		d.StatusDuration[state] = 0
	}
	if running > 0 {
		end := snap.Timestamp
		if t := d.timestamps[st.Status]; st.Status != "RUNNING" && t > 0 {
			end = t
		}
		d.StatusDuration["RUNNING"] = max(end-running, 0)
		if initializing > 0 {
			d.StatusDuration["INITIALIZING"] = max(running-initializing, 0)
		}
		if created > 0 && initializing > 0 {
			d.StatusDuration["DEPLOYING"] = max(initializing-created, 0)
		}
	}
	return d
}

// statistics is Flink's AggregatedTaskDetailsInfo.MetricsStatistics: min,
// max, avg (integer), sum and the 25th, 50th (median), 75th and 95th
// percentiles (Apache Commons Math's default estimate), 0 without values.
func statistics(xs []int64) map[string]int64 {
	out := map[string]int64{"min": 0, "max": 0, "avg": 0, "sum": 0, "median": 0, "p25": 0, "p75": 0, "p95": 0}
	if len(xs) == 0 {
		return out
	}
	s := summarize(xs)
	var sum int64
	for _, x := range xs {
		sum += x
	}
	sorted := append([]int64(nil), xs...)
	sort.Slice(sorted, func(a, b int) bool { return sorted[a] < sorted[b] })
	pct := func(p float64) int64 {
		pos := p / 100 * float64(len(sorted)+1)
		switch {
		case pos < 1:
			return sorted[0]
		case pos >= float64(len(sorted)):
			return sorted[len(sorted)-1]
		}
		lo, hi := sorted[int(pos)-1], sorted[int(pos)]
		return int64(float64(lo) + (pos-float64(int(pos)))*float64(hi-lo))
	}
	out["min"], out["max"], out["avg"], out["sum"] = s.Min, s.Max, s.Avg, sum
	out["median"], out["p25"], out["p75"], out["p95"] = pct(50), pct(25), pct(75), pct(95)
	return out
}

// aggregated is Flink's AggregatedTaskDetailsInfo of subtasks: their IO
// metrics and status durations, each as statistics.
func aggregated(subs []subtaskInfo) map[string]any {
	cols := map[string][]int64{}
	durs := map[string][]int64{}
	for _, d := range subs {
		m := d.Metrics
		cols["read-bytes"] = append(cols["read-bytes"], m.ReadBytes)
		cols["write-bytes"] = append(cols["write-bytes"], m.WriteBytes)
		cols["read-records"] = append(cols["read-records"], m.ReadRecords)
		cols["write-records"] = append(cols["write-records"], m.WriteRecords)
		cols["accumulated-backpressured-time"] = append(cols["accumulated-backpressured-time"], m.AccumulatedBackpressed)
		cols["accumulated-idle-time"] = append(cols["accumulated-idle-time"], m.AccumulatedIdle)
		cols["accumulated-busy-time"] = append(cols["accumulated-busy-time"], int64(m.AccumulatedBusy))
		for _, st := range statusDurationStates {
			durs[st] = append(durs[st], d.StatusDuration[st])
		}
	}
	metrics := map[string]any{}
	for _, name := range []string{"read-bytes", "write-bytes", "read-records", "write-records", "accumulated-backpressured-time", "accumulated-idle-time", "accumulated-busy-time"} {
		metrics[name] = statistics(cols[name])
	}
	status := map[string]any{}
	for _, st := range statusDurationStates {
		status[st] = statistics(durs[st])
	}
	return map[string]any{"metrics": metrics, "status-duration": status}
}

func (s *Server) subtask(w http.ResponseWriter, r *http.Request, e *entry, snap *monitor.Snapshot, rates map[string][]monitor.Rate, v *monitor.Vertex) {
	i, err := strconv.Atoi(r.PathValue("subtaskindex"))
	if err != nil || i < 0 || i >= len(v.Subtasks) {
		writeError(w, http.StatusNotFound, fmt.Sprintf("Invalid subtask index for vertex %s: %s", v.ID, r.PathValue("subtaskindex")))
		return
	}
	d := subtaskDetails(snap, rates, v, i)
	if a := r.PathValue("attempt"); a != "" {
		// Weir keeps only the current attempt of a subtask.
		if n, err := strconv.Atoi(a); err != nil || n != d.Attempt {
			writeError(w, http.StatusNotFound, fmt.Sprintf("Attempt %s of subtask %d not found: Weir keeps only the current attempt (%d)", a, i, d.Attempt))
			return
		}
	}
	writeJSON(w, http.StatusOK, d)
}

func (s *Server) subtaskTimes(w http.ResponseWriter, r *http.Request, e *entry, snap *monitor.Snapshot, rates map[string][]monitor.Rate, v *monitor.Vertex) {
	type subtaskTime struct {
		Subtask  int    `json:"subtask"`
		Endpoint string `json:"endpoint"`
		// Host is Flink 1.x's name for the endpoint, which Flink's web
		// UI's timeline still reads.
		Host       string           `json:"host"`
		Duration   int64            `json:"duration"`
		Timestamps map[string]int64 `json:"timestamps"`
	}
	subs := []subtaskTime{}
	for i := range v.Subtasks {
		d := subtaskDetails(snap, rates, v, i)
		// Flink's SubtasksTimesHandler: from CREATED to the terminal
		// state's time, or to now.
		end := snap.Timestamp
		if t := d.timestamps[d.Status]; d.Status != "RUNNING" && t > 0 {
			end = t
		}
		dur := int64(-1)
		if c := d.timestamps["CREATED"]; c > 0 {
			dur = end - c
		}
		subs = append(subs, subtaskTime{Subtask: d.Subtask, Endpoint: d.Endpoint, Host: d.Endpoint, Duration: dur, Timestamps: d.timestamps})
	}
	writeJSON(w, http.StatusOK, map[string]any{"id": v.ID, "name": v.Name, "now": snap.Timestamp, "subtasks": subs})
}

func (s *Server) vertexTaskManagers(w http.ResponseWriter, r *http.Request, e *entry, snap *monitor.Snapshot, rates map[string][]monitor.Rate, v *monitor.Vertex) {
	// One task manager runs every subtask.
	subs := []subtaskInfo{}
	var statuses []string
	for i := range v.Subtasks {
		d := subtaskDetails(snap, rates, v, i)
		subs = append(subs, d)
		statuses = append(statuses, d.Status)
	}
	tms := []map[string]any{}
	if len(subs) > 0 {
		j := snap.Job
		tms = append(tms, map[string]any{
			"endpoint": subs[0].Endpoint, "host": subs[0].Endpoint, "status": vertexStatus(*v),
			"start-time": j.StartTime, "end-time": j.EndTime, "duration": duration(j, snap.Timestamp),
			"metrics": vertexIO(*v), "status-counts": stateCounts(statuses...), "taskmanager-id": subs[0].TaskManagerID,
			"aggregated": aggregated(subs),
		})
	}
	writeJSON(w, http.StatusOK, map[string]any{"id": v.ID, "name": v.Name, "now": snap.Timestamp, "taskmanagers": tms})
}

// applicationStatus is Flink's ApplicationStatus of a job's final state.
func applicationStatus(state string) string {
	switch state {
	case "FINISHED":
		return "SUCCEEDED"
	case "FAILED":
		return "FAILED"
	case "CANCELED":
		return "CANCELED"
	}
	return "UNKNOWN"
}

// executionResult is Flink's JobExecutionResultResponseBody: IN_PROGRESS
// while the job runs, then its JobResult (id, application-status,
// accumulator-results, net-runtime and, for a failed job, failure-cause
// with the root exception's class and stack trace; Weir has no Java
// serialized throwable to give).
func (s *Server) executionResult(w http.ResponseWriter, r *http.Request, e *entry) {
	snap := s.view(r, e.job.Snapshot())
	j := snap.Job
	if applicationStatus(j.State) == "UNKNOWN" {
		writeJSON(w, http.StatusOK, map[string]any{"status": map[string]string{"id": "IN_PROGRESS"}})
		return
	}
	res := map[string]any{
		"id": j.ID, "application-status": applicationStatus(j.State), "accumulator-results": map[string]any{},
		"net-runtime": duration(j, snap.Timestamp),
	}
	if j.State == "FAILED" && len(snap.Exceptions) > 0 {
		x := snap.Exceptions[len(snap.Exceptions)-1]
		for _, y := range snap.Exceptions {
			if y.Timestamp >= x.Timestamp {
				x = y
			}
		}
		res["failure-cause"] = map[string]string{"class": x.Name, "stack-trace": x.Message + "\n" + x.Stacktrace}
	}
	writeJSON(w, http.StatusOK, map[string]any{"status": map[string]string{"id": "COMPLETED"}, "job-execution-result": res})
}
