package rest

import (
	"fmt"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/weirstream/weir/internal/monitor"
)

// Flink's REST API, v1: the monitoring resources. Field names are those of
// flink-runtime's rest.messages classes (JobDetailsInfo, JobVertexDetailsInfo,
// IOMetricsInfo, JobVertexBackPressureInfo, ...). Weir runs a job in one
// process, so there is one "task manager" and a vertex's subtasks all run
// on it.

func (s *Server) routeFlink(mux *http.ServeMux) {
	mux.HandleFunc("GET /overview", s.overview)
	mux.HandleFunc("GET /config", s.dashboardConfig)
	mux.HandleFunc("GET /jobs", s.jobIDs)
	mux.HandleFunc("GET /jobs/overview", s.jobsOverview)
	mux.HandleFunc("GET /jobs/{jobid}", s.withJob(s.jobDetails))
	mux.HandleFunc("PATCH /jobs/{jobid}", s.guarded(s.withJob(s.cancel)))
	mux.HandleFunc("GET /jobs/{jobid}/yarn-cancel", s.guarded(s.withJob(s.yarnCancel)))
	mux.HandleFunc("GET /jobs/{jobid}/plan", s.withJob(s.plan))
	mux.HandleFunc("GET /jobs/{jobid}/config", s.withJob(s.jobConfig))
	mux.HandleFunc("GET /jobs/{jobid}/exceptions", s.withJob(s.exceptions))
	mux.HandleFunc("GET /jobs/{jobid}/status", s.withJob(func(w http.ResponseWriter, r *http.Request, e *entry) {
		writeJSON(w, http.StatusOK, map[string]string{"status": e.job.Snapshot().Job.State})
	}))
	// Weir has no accumulators: Flink's empty answer.
	mux.HandleFunc("GET /jobs/{jobid}/accumulators", s.withJob(func(w http.ResponseWriter, r *http.Request, e *entry) {
		writeJSON(w, http.StatusOK, map[string]any{"job-accumulators": []any{}, "user-task-accumulators": []any{}, "serialized-user-task-accumulators": map[string]any{}})
	}))
	mux.HandleFunc("GET /jobs/{jobid}/vertices/{vertexid}", s.withVertex(s.vertexDetails))
	mux.HandleFunc("GET /jobs/{jobid}/vertices/{vertexid}/watermarks", s.withVertex(s.watermarks))
	mux.HandleFunc("GET /jobs/{jobid}/vertices/{vertexid}/backpressure", s.withVertex(s.backpressure))
	s.routeSubtasks(mux)
	s.routeCluster(mux)
	s.routeCheckpoints(mux)
	s.routeMetrics(mux)
	s.routeSavepoints(mux)
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, http.StatusNotFound, "Not found: "+r.URL.Path)
	})
}

// yarnCancel is Flink's GET /jobs/:jobid/yarn-cancel, which Flink's web
// UI sends for its cancel button. A GET that changes the job is open to
// any page the operator opens (an image's address suffices), so it is
// served only to a request the browser marks as coming from this server's
// own pages (Sec-Fetch-Site: same-origin); other clients use PATCH
// /jobs/:jobid.
func (s *Server) yarnCancel(w http.ResponseWriter, r *http.Request, e *entry) {
	if r.Header.Get("Sec-Fetch-Site") != "same-origin" {
		writeError(w, http.StatusForbidden, "GET /jobs/:jobid/yarn-cancel is served to this server's own pages only (Sec-Fetch-Site: same-origin): use PATCH /jobs/:jobid")
		return
	}
	s.cancel(w, r, e)
}

func millis(t time.Time) int64 { return t.UnixMilli() }

type clusterOverview struct {
	TaskManagers   int    `json:"taskmanagers"`
	SlotsTotal     int    `json:"slots-total"`
	SlotsAvailable int    `json:"slots-available"`
	JobsRunning    int    `json:"jobs-running"`
	JobsFinished   int    `json:"jobs-finished"`
	JobsCancelled  int    `json:"jobs-cancelled"`
	JobsFailed     int    `json:"jobs-failed"`
	FlinkVersion   string `json:"flink-version"`
	FlinkCommit    string `json:"flink-commit"`
}

func (s *Server) overview(w http.ResponseWriter, r *http.Request) {
	o := clusterOverview{TaskManagers: 1, FlinkVersion: s.opts.Version, FlinkCommit: "weir"}
	for _, e := range s.entries() {
		snap := e.job.Snapshot()
		for _, v := range snap.Vertices {
			o.SlotsTotal += v.Parallelism
		}
		switch snap.Job.State {
		case "FINISHED":
			o.JobsFinished++
		case "CANCELED":
			o.JobsCancelled++
		case "FAILED":
			o.JobsFailed++
		default:
			o.JobsRunning++
		}
	}
	writeJSON(w, http.StatusOK, o)
}

func (s *Server) dashboardConfig(w http.ResponseWriter, r *http.Request) {
	now := time.Now()
	name, offset := now.Zone()
	writeJSON(w, http.StatusOK, map[string]any{
		"refresh-interval": 1000,
		"timezone-name":    name,
		"timezone-offset":  offset * 1000,
		"flink-version":    s.opts.Version,
		"flink-revision":   "weir",
		"features": map[string]bool{
			"web-submit": false, "web-cancel": true, "web-rescale": false, "web-history": false,
		},
	})
}

func (s *Server) jobIDs(w http.ResponseWriter, r *http.Request) {
	type idStatus struct {
		ID     string `json:"id"`
		Status string `json:"status"`
		Name   string `json:"name"`
	}
	out := struct {
		Jobs []idStatus `json:"jobs"`
	}{Jobs: []idStatus{}}
	for _, e := range s.entries() {
		snap := e.job.Snapshot()
		out.Jobs = append(out.Jobs, idStatus{snap.Job.ID, snap.Job.State, snap.Job.Name})
	}
	writeJSON(w, http.StatusOK, out)
}

// executionStates are Flink's ExecutionState names, the keys of a "tasks"
// or "status-counts" object.
var executionStates = []string{"CREATED", "SCHEDULED", "DEPLOYING", "RUNNING", "FINISHED", "CANCELING", "CANCELED", "FAILED", "RECONCILING", "INITIALIZING"}

func stateCounts(statuses ...string) map[string]int {
	m := map[string]int{}
	for _, st := range executionStates {
		m[st] = 0
	}
	for _, st := range statuses {
		m[st]++
	}
	return m
}

func duration(j monitor.Job, now int64) int64 {
	if j.EndTime > 0 {
		return j.EndTime - j.StartTime
	}
	return now - j.StartTime
}

func (s *Server) jobsOverview(w http.ResponseWriter, r *http.Request) {
	type jobDetails struct {
		JID              string         `json:"jid"`
		Name             string         `json:"name"`
		StartTime        int64          `json:"start-time"`
		EndTime          int64          `json:"end-time"`
		Duration         int64          `json:"duration"`
		State            string         `json:"state"`
		LastModification int64          `json:"last-modification"`
		Tasks            map[string]int `json:"tasks"`
	}
	out := struct {
		Jobs []jobDetails `json:"jobs"`
	}{Jobs: []jobDetails{}}
	for _, e := range s.entries() {
		snap := e.job.Snapshot()
		var sts []string
		for _, v := range snap.Vertices {
			for _, st := range v.Subtasks {
				sts = append(sts, st.Status)
			}
		}
		// The overview's task counts are keyed by the states' lower-case
		// names, as Flink's JobDetails writes them (a job's vertices in
		// /jobs/:jid keep the upper-case names).
		tasks := map[string]int{"total": len(sts), "pending": 0}
		for st, n := range stateCounts(sts...) {
			tasks[strings.ToLower(st)] = n
		}
		out.Jobs = append(out.Jobs, jobDetails{
			JID: snap.Job.ID, Name: snap.Job.Name, StartTime: snap.Job.StartTime, EndTime: snap.Job.EndTime,
			Duration: duration(snap.Job, snap.Timestamp), State: snap.Job.State, LastModification: snap.Timestamp, Tasks: tasks,
		})
	}
	writeJSON(w, http.StatusOK, out)
}

// ioMetrics is Flink's IOMetricsInfo.
type ioMetrics struct {
	ReadBytes              int64   `json:"read-bytes"`
	ReadBytesComplete      bool    `json:"read-bytes-complete"`
	WriteBytes             int64   `json:"write-bytes"`
	WriteBytesComplete     bool    `json:"write-bytes-complete"`
	ReadRecords            int64   `json:"read-records"`
	ReadRecordsComplete    bool    `json:"read-records-complete"`
	WriteRecords           int64   `json:"write-records"`
	WriteRecordsComplete   bool    `json:"write-records-complete"`
	AccumulatedBackpressed int64   `json:"accumulated-backpressured-time"`
	AccumulatedIdle        int64   `json:"accumulated-idle-time"`
	AccumulatedBusy        float64 `json:"accumulated-busy-time"`
}

func subtaskIO(st monitor.Subtask) ioMetrics {
	return ioMetrics{
		ReadBytes: st.BytesIn, WriteBytes: st.BytesOut, ReadRecords: st.RecordsIn, WriteRecords: st.RecordsOut,
		ReadBytesComplete: true, WriteBytesComplete: true, ReadRecordsComplete: true, WriteRecordsComplete: true,
		AccumulatedBackpressed: st.BackPressuredNanos / 1e6, AccumulatedIdle: st.IdleNanos / 1e6,
		AccumulatedBusy: float64(st.BusyNanos) / 1e6,
	}
}

func vertexIO(v monitor.Vertex) ioMetrics {
	var m ioMetrics
	for _, st := range v.Subtasks {
		x := subtaskIO(st)
		m.ReadBytes += x.ReadBytes
		m.WriteBytes += x.WriteBytes
		m.ReadRecords += x.ReadRecords
		m.WriteRecords += x.WriteRecords
		m.AccumulatedBackpressed += x.AccumulatedBackpressed
		m.AccumulatedIdle += x.AccumulatedIdle
		m.AccumulatedBusy += x.AccumulatedBusy
	}
	m.ReadBytesComplete, m.WriteBytesComplete, m.ReadRecordsComplete, m.WriteRecordsComplete = true, true, true, true
	return m
}

// vertexStatus is a vertex's aggregate execution state, as Flink's
// ExecutionJobVertex.getAggregateJobVertexState.
func vertexStatus(v monitor.Vertex) string {
	counts := map[string]int{}
	for _, st := range v.Subtasks {
		counts[st.Status]++
	}
	for _, st := range []string{"FAILED", "CANCELING", "CANCELED", "RUNNING"} {
		if counts[st] > 0 {
			return st
		}
	}
	if counts["FINISHED"] == len(v.Subtasks) {
		return "FINISHED"
	}
	return "CREATED"
}

type jobVertexInfo struct {
	ID             string         `json:"id"`
	Name           string         `json:"name"`
	MaxParallelism int            `json:"maxParallelism"`
	Parallelism    int            `json:"parallelism"`
	Status         string         `json:"status"`
	StartTime      int64          `json:"start-time"`
	EndTime        int64          `json:"end-time"`
	Duration       int64          `json:"duration"`
	Tasks          map[string]int `json:"tasks"`
	Metrics        ioMetrics      `json:"metrics"`
}

func (s *Server) jobDetails(w http.ResponseWriter, r *http.Request, e *entry) {
	snap := e.job.Snapshot()
	j := snap.Job
	var vs []jobVertexInfo
	var all []string
	for _, v := range snap.Vertices {
		var sts []string
		for _, st := range v.Subtasks {
			sts = append(sts, st.Status)
		}
		all = append(all, vertexStatus(v))
		vs = append(vs, jobVertexInfo{
			ID: v.ID, Name: v.Name, MaxParallelism: j.MaxParallelism, Parallelism: v.Parallelism,
			Status: vertexStatus(v), StartTime: j.StartTime, EndTime: j.EndTime, Duration: duration(j, snap.Timestamp),
			Tasks: stateCounts(sts...), Metrics: vertexIO(v),
		})
	}
	timestamps := map[string]int64{}
	for _, st := range []string{"INITIALIZING", "CREATED", "RUNNING", "FAILING", "FAILED", "CANCELLING", "CANCELED", "FINISHED", "RESTARTING", "SUSPENDED", "RECONCILING"} {
		timestamps[st] = 0
	}
	timestamps["INITIALIZING"], timestamps["CREATED"], timestamps["RUNNING"] = j.StartTime, j.StartTime, j.StartTime
	if j.EndTime > 0 {
		timestamps[j.State] = j.EndTime
	}
	writeJSON(w, http.StatusOK, map[string]any{
		"jid": j.ID, "name": j.Name, "isStoppable": false, "state": j.State, "job-type": "STREAMING",
		// Weir's status tells a job stopped with a savepoint (FINISHED in
		// Flink's state) from one whose input ended.
		"weir-status": j.Status, "savepoint-path": j.Savepoint,
		"start-time": j.StartTime, "end-time": j.EndTime, "duration": duration(j, snap.Timestamp),
		"maxParallelism": j.MaxParallelism, "now": snap.Timestamp, "timestamps": timestamps,
		"vertices": vs, "status-counts": stateCounts(all...), "plan": planOf(snap), "pending-operators": 0,
	})
}

type planInput struct {
	Num          int    `json:"num"`
	ID           string `json:"id"`
	ShipStrategy string `json:"ship_strategy"`
	Exchange     string `json:"exchange"`
}

type planNode struct {
	ID                  string      `json:"id"`
	Parallelism         int         `json:"parallelism"`
	Operator            string      `json:"operator"`
	OperatorStrategy    string      `json:"operator_strategy"`
	Description         string      `json:"description"`
	Inputs              []planInput `json:"inputs,omitempty"`
	OptimizerProperties struct{}    `json:"optimizer_properties"`
}

// planOf is Flink's JobPlanInfo.Plan (JsonPlanGenerator): a node per vertex
// with its inputs.
func planOf(snap *monitor.Snapshot) map[string]any {
	nodes := []planNode{}
	for _, v := range snap.Vertices {
		n := planNode{ID: v.ID, Parallelism: v.Parallelism, Description: v.Name}
		for i, in := range v.Inputs {
			n.Inputs = append(n.Inputs, planInput{Num: i, ID: in.From, ShipStrategy: in.ShipStrategy, Exchange: "pipelined_bounded"})
		}
		nodes = append(nodes, n)
	}
	return map[string]any{"jid": snap.Job.ID, "name": snap.Job.Name, "type": "STREAMING", "nodes": nodes}
}

func (s *Server) plan(w http.ResponseWriter, r *http.Request, e *entry) {
	writeJSON(w, http.StatusOK, map[string]any{"plan": planOf(e.job.Snapshot())})
}

func (s *Server) jobConfig(w http.ResponseWriter, r *http.Request, e *entry) {
	j := e.job.Snapshot().Job
	user := map[string]string{}
	for k, v := range j.Config {
		user[k] = v
	}
	writeJSON(w, http.StatusOK, map[string]any{
		"jid": j.ID, "name": j.Name,
		"execution-config": map[string]any{
			"execution-mode": "PIPELINED", "restart-strategy": j.Config["restart-strategy"],
			"job-parallelism": j.Parallelism, "object-reuse-mode": false, "user-config": user,
		},
	})
}

func (s *Server) vertexDetails(w http.ResponseWriter, r *http.Request, e *entry, snap *monitor.Snapshot, rates map[string][]monitor.Rate, v *monitor.Vertex) {
	subs := []subtaskInfo{}
	for i := range v.Subtasks {
		subs = append(subs, subtaskDetails(snap, rates, v, i))
	}
	writeJSON(w, http.StatusOK, map[string]any{
		"id": v.ID, "name": v.Name, "parallelism": v.Parallelism, "maxParallelism": snap.Job.MaxParallelism,
		"now": snap.Timestamp, "subtasks": subs, "aggregated": aggregated(subs),
	})
}

// metric is Flink's Metric: an id and a value, as a string.
type metric struct {
	ID    string `json:"id"`
	Value string `json:"value"`
}

// watermarks is JobVertexWatermarksHandler: each subtask's
// currentInputWatermark (the minimum over its non-idle inputs, as Flink's
// task gauge), and nothing else, as Flink's web UI reads every entry as
// one subtask's. With ?inputs=true (Weir) also, for a two-input head,
// currentInput1Watermark and currentInput2Watermark (Flink's operator
// gauges), each input's idle flag (input<N>Idle) and the output
// watermark (currentOutputWatermark).
func (s *Server) watermarks(w http.ResponseWriter, r *http.Request, e *entry, snap *monitor.Snapshot, rates map[string][]monitor.Rate, v *monitor.Vertex) {
	out := []metric{}
	inputs := r.URL.Query().Get("inputs") == "true"
	for _, st := range v.Subtasks {
		p := strconv.Itoa(st.Index) + "."
		out = append(out, metric{p + "currentInputWatermark", strconv.FormatInt(combinedWatermark(st), 10)})
		if !inputs {
			continue
		}
		if len(st.InputWatermarks) == 2 {
			for i, wm := range st.InputWatermarks {
				out = append(out, metric{fmt.Sprintf("%scurrentInput%dWatermark", p, i+1), strconv.FormatInt(wm, 10)})
			}
		}
		for i, idle := range st.InputIdle {
			out = append(out, metric{fmt.Sprintf("%sinput%dIdle", p, i+1), strconv.FormatBool(idle)})
		}
		if st.OutputWatermark != nil {
			out = append(out, metric{p + "currentOutputWatermark", strconv.FormatInt(*st.OutputWatermark, 10)})
		}
	}
	writeJSON(w, http.StatusOK, out)
}

// combinedWatermark is the minimum of a subtask's non-idle input
// watermarks (the highest if all are idle, as Flink 2.2's combiner).
func combinedWatermark(st monitor.Subtask) int64 {
	if len(st.InputWatermarks) == 0 {
		return monitor.MinWatermark
	}
	lo, hi, any := int64(0), int64(monitor.MinWatermark), false
	for i, wm := range st.InputWatermarks {
		hi = max(hi, wm)
		if i < len(st.InputIdle) && st.InputIdle[i] {
			continue
		}
		if !any || wm < lo {
			lo, any = wm, true
		}
	}
	if !any {
		return hi
	}
	return lo
}

// backPressureLevel is Flink's: ok up to 10%, low up to 50%, high above.
func backPressureLevel(ratio float64) string {
	switch {
	case ratio <= 0.10:
		return "ok"
	case ratio <= 0.5:
		return "low"
	}
	return "high"
}

func (s *Server) backpressure(w http.ResponseWriter, r *http.Request, e *entry, snap *monitor.Snapshot, rates map[string][]monitor.Rate, v *monitor.Vertex) {
	type subtaskBP struct {
		Subtask       int     `json:"subtask"`
		AttemptNumber int     `json:"attempt-number"`
		Level         string  `json:"backpressure-level"`
		Ratio         float64 `json:"ratio"`
		IdleRatio     float64 `json:"idleRatio"`
		BusyRatio     float64 `json:"busyRatio"`
	}
	subs := []subtaskBP{}
	worst := 0.0
	for i, st := range v.Subtasks {
		var rt monitor.Rate
		if i < len(rates[v.ID]) {
			rt = rates[v.ID][i]
		}
		ratio := rt.BackPressuredMs / 1000
		worst = max(worst, ratio)
		subs = append(subs, subtaskBP{Subtask: st.Index, AttemptNumber: snap.Job.Restarts, Level: backPressureLevel(ratio),
			Ratio: ratio, IdleRatio: rt.IdleMsPerSec / 1000, BusyRatio: rt.BusyMsPerSec / 1000})
	}
	writeJSON(w, http.StatusOK, map[string]any{
		"status": "ok", "backpressure-level": backPressureLevel(worst), "end-timestamp": snap.Timestamp, "subtasks": subs,
	})
}

func (s *Server) exceptions(w http.ResponseWriter, r *http.Request, e *entry) {
	snap := s.view(r, e.job.Snapshot())
	max := len(snap.Exceptions)
	if n, err := strconv.Atoi(r.URL.Query().Get("maxExceptions")); err == nil && n >= 0 && n < max {
		max = n
	}
	type exceptionInfo struct {
		ExceptionName        string            `json:"exceptionName"`
		Stacktrace           string            `json:"stacktrace"`
		Timestamp            int64             `json:"timestamp"`
		TaskName             string            `json:"taskName"`
		Endpoint             string            `json:"endpoint"`
		TaskManagerID        string            `json:"taskManagerId"`
		FailureLabels        map[string]string `json:"failureLabels"`
		ConcurrentExceptions []exceptionInfo   `json:"concurrentExceptions"`
	}
	entries := []exceptionInfo{}
	// Newest first, as Flink's exception history.
	exc := append([]monitor.Exception(nil), snap.Exceptions...)
	sort.SliceStable(exc, func(a, b int) bool { return exc[a].Timestamp > exc[b].Timestamp })
	for _, x := range exc[:max] {
		task := x.Task
		if task != "" {
			task = fmt.Sprintf("%s (%d/%d)", x.Task, x.Subtask+1, subtaskCount(snap, x.Task))
		}
		entries = append(entries, exceptionInfo{
			ExceptionName: x.Name, Stacktrace: x.Message + "\n" + x.Stacktrace, Timestamp: x.Timestamp, TaskName: task,
			Endpoint: "localhost", TaskManagerID: "weir", FailureLabels: map[string]string{}, ConcurrentExceptions: []exceptionInfo{},
		})
	}
	body := map[string]any{"exceptionHistory": map[string]any{"entries": entries, "truncated": max < len(snap.Exceptions)}}
	// The fields Flink deprecated in 1.13 and removed in 2.0, for older scripts.
	if len(exc) > 0 {
		body["root-exception"] = exc[0].Message + "\n" + exc[0].Stacktrace
		body["timestamp"] = exc[0].Timestamp
	}
	body["all-exceptions"] = []any{}
	body["truncated"] = false
	writeJSON(w, http.StatusOK, body)
}

func subtaskCount(snap *monitor.Snapshot, task string) int {
	for _, v := range snap.Vertices {
		if v.Name == task {
			return v.Parallelism
		}
		for _, op := range v.Operators {
			if op.Name == task {
				return v.Parallelism
			}
		}
	}
	return 1
}
