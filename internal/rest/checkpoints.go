package rest

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"sort"
	"strconv"

	"github.com/weirstream/weir/internal/monitor"
)

// Flink's checkpoint statistics resources (CheckpointingStatistics,
// CheckpointStatistics, TaskCheckpointStatisticsWithSubtaskDetails,
// CheckpointConfigInfo).

func (s *Server) routeCheckpoints(mux *http.ServeMux) {
	mux.HandleFunc("GET /jobs/{jobid}/checkpoints", s.withJob(s.checkpoints))
	mux.HandleFunc("GET /jobs/{jobid}/checkpoints/config", s.withJob(s.checkpointConfig))
	mux.HandleFunc("GET /jobs/{jobid}/checkpoints/details/{checkpointid}", s.withJob(s.checkpointDetails))
	mux.HandleFunc("GET /jobs/{jobid}/checkpoints/details/{checkpointid}/subtasks/{vertexid}", s.withJob(s.checkpointSubtasks))
	mux.HandleFunc("POST /jobs/{jobid}/checkpoints", s.guarded(s.withJob(s.triggerCheckpoint)))
	mux.HandleFunc("GET /jobs/{jobid}/checkpoints/{triggerid}", s.withJob(s.checkpointStatus))
}

// Checkpointer is implemented by jobs that take a checkpoint on request
// (Flink 1.19's POST /jobs/:jobid/checkpoints).
type Checkpointer interface {
	// TriggerCheckpoint starts a checkpoint now (once none is in flight)
	// and returns its id.
	TriggerCheckpoint(ctx context.Context) (int64, error)
}

// triggerCheckpoint is Flink's CheckpointTriggerHandler: body
// {"checkpointType", "triggerId"} (both optional), answer 202
// {"request-id"}. Weir takes checkpoints of the kind the job configured
// only: a checkpointType other than CONFIGURED is refused.
func (s *Server) triggerCheckpoint(w http.ResponseWriter, r *http.Request, e *entry) {
	_, data, ok := readBody(w, r)
	if !ok {
		return
	}
	var req struct {
		Type      string `json:"checkpointType"`
		TriggerID string `json:"triggerId"`
	}
	if err := json.Unmarshal(data, &req); len(data) > 0 && err != nil {
		writeError(w, http.StatusBadRequest, "Request did not match expected format CheckpointTriggerRequestBody: "+err.Error())
		return
	}
	if req.Type != "" && req.Type != "CONFIGURED" {
		writeError(w, http.StatusBadRequest, fmt.Sprintf("checkpoint type %q is not supported: Weir takes checkpoints of the kind the job configured (CONFIGURED)", req.Type))
		return
	}
	cp, ok := jobAs[Checkpointer](e.job)
	if !ok || e.job.Snapshot().Job.Checkpointing == nil {
		writeError(w, http.StatusBadRequest, "Checkpointing is not enabled for this job ("+e.id+").")
		return
	}
	s.runOperation(w, "checkpoint/"+e.id+"/", req.TriggerID, func(id string) {
		s.log.Info("checkpoint requested", "job", e.name, "trigger", id, "remote", r.RemoteAddr)
	}, func(op *operation) {
		op.checkpoint, op.err = cp.TriggerCheckpoint(s.ctx)
	})
}

// checkpointStatus is Flink's CheckpointStatusHandler: IN_PROGRESS until
// the checkpoint the request started has completed or failed, then
// COMPLETED with {"checkpointId"} and, if it failed, a failureCause.
func (s *Server) checkpointStatus(w http.ResponseWriter, r *http.Request, e *entry) {
	s.mu.Lock()
	op := s.ops["checkpoint/"+e.id+"/"+r.PathValue("triggerid")]
	s.mu.Unlock()
	if op == nil {
		writeError(w, http.StatusNotFound, "There is no checkpoint operation with trigger id "+r.PathValue("triggerid")+" for job "+e.id+".")
		return
	}
	inProgress := map[string]any{"status": map[string]string{"id": "IN_PROGRESS"}}
	select {
	case <-op.done:
	default:
		writeJSON(w, http.StatusOK, inProgress)
		return
	}
	failure := func(msg string) map[string]string {
		return map[string]string{"class": "org.apache.flink.runtime.checkpoint.CheckpointException", "stack-trace": msg, "serialized-throwable": ""}
	}
	info := map[string]any{}
	if op.err != nil {
		info["failureCause"] = failure(op.err.Error())
	} else {
		info["checkpointId"] = op.checkpoint
		cs := e.job.Snapshot().Checkpoints
		found := false
		for _, c := range cs.History {
			if c.ID != op.checkpoint {
				continue
			}
			found = true
			switch c.Status {
			case "IN_PROGRESS":
				writeJSON(w, http.StatusOK, inProgress)
				return
			case "FAILED":
				info["failureCause"] = failure(c.Failure)
			}
		}
		if !found && (cs.Completed == nil || cs.Completed.ID < op.checkpoint) {
			info["failureCause"] = failure(fmt.Sprintf("checkpoint %d is no longer in the checkpoint history and no later one completed", op.checkpoint))
		}
	}
	writeJSON(w, http.StatusOK, map[string]any{"status": map[string]string{"id": "COMPLETED"}, "operation": info})
}

// statsSummary is Flink's StatsSummaryDto.
type statsSummary struct {
	Min  int64   `json:"min"`
	Max  int64   `json:"max"`
	Avg  int64   `json:"avg"`
	P50  float64 `json:"p50"`
	P90  float64 `json:"p90"`
	P95  float64 `json:"p95"`
	P99  float64 `json:"p99"`
	P999 float64 `json:"p999"`
}

func summarize(xs []int64) statsSummary {
	if len(xs) == 0 {
		return statsSummary{}
	}
	s := append([]int64(nil), xs...)
	sort.Slice(s, func(a, b int) bool { return s[a] < s[b] })
	var sum int64
	for _, x := range s {
		sum += x
	}
	q := func(p float64) float64 {
		// Flink's Histogram quantile: linear between closest ranks.
		pos := p * float64(len(s)+1)
		switch {
		case pos < 1:
			return float64(s[0])
		case pos >= float64(len(s)):
			return float64(s[len(s)-1])
		}
		lo := s[int(pos)-1]
		hi := s[int(pos)]
		return float64(lo) + (pos-math.Floor(pos))*float64(hi-lo)
	}
	return statsSummary{Min: s[0], Max: s[len(s)-1], Avg: sum / int64(len(s)), P50: q(0.5), P90: q(0.9), P95: q(0.95), P99: q(0.99), P999: q(0.999)}
}

func checkpointType(c monitor.Checkpoint) string {
	switch {
	case c.Savepoint:
		return "SAVEPOINT"
	case c.Unaligned:
		return "UNALIGNED_CHECKPOINT"
	}
	return "CHECKPOINT"
}

func endToEnd(c monitor.Checkpoint) int64 {
	end := c.LatestAck
	if c.Status != "IN_PROGRESS" && c.EndTimestamp > 0 && c.Status == "FAILED" {
		end = c.EndTimestamp
	}
	return max(end-c.TriggerTimestamp, 0)
}

// taskStats is TaskCheckpointStatistics of one vertex.
func taskStats(c monitor.Checkpoint, vid string) map[string]any {
	subs := c.Vertices[vid]
	var acked int
	var size, persisted, latest int64
	for _, st := range subs {
		if st.Acked {
			acked++
			size += st.StateSize
			persisted += st.InFlight
			latest = max(latest, st.AckTimestamp)
		}
	}
	status := c.Status
	if status == "IN_PROGRESS" && acked == len(subs) {
		status = "COMPLETED"
	}
	return map[string]any{
		"id": c.ID, "status": status, "latest_ack_timestamp": latest, "checkpointed_size": size, "state_size": size,
		"end_to_end_duration": max(latest-c.TriggerTimestamp, 0), "alignment_buffered": 0, "processed_data": 0,
		"persisted_data": persisted, "num_subtasks": len(subs), "num_acknowledged_subtasks": acked,
	}
}

// checkpointStatistics is Flink's CheckpointStatistics (completed, failed
// or in progress), with per-vertex task statistics when tasks is set.
func checkpointStatistics(c monitor.Checkpoint, tasks bool) map[string]any {
	var acked, total int
	for _, subs := range c.Vertices {
		for _, st := range subs {
			total++
			if st.Acked {
				acked++
			}
		}
	}
	class := map[string]string{"COMPLETED": "completed", "FAILED": "failed"}[c.Status]
	if class == "" {
		class = "in_progress"
	}
	m := map[string]any{
		"className": class, "id": c.ID, "status": c.Status, "is_savepoint": c.Savepoint, "savepointFormat": nil,
		"trigger_timestamp": c.TriggerTimestamp, "latest_ack_timestamp": c.LatestAck, "state_size": c.StateSize,
		"checkpointed_size": c.StateSize, "end_to_end_duration": endToEnd(c), "alignment_buffered": 0,
		"processed_data": 0, "persisted_data": c.InFlight, "num_subtasks": total, "num_acknowledged_subtasks": acked,
		"checkpoint_type": checkpointType(c),
	}
	if c.Savepoint {
		m["savepointFormat"] = "CANONICAL"
	}
	switch c.Status {
	case "COMPLETED":
		m["external_path"] = c.ExternalPath
		m["discarded"] = false
	case "FAILED":
		m["failure_timestamp"] = c.EndTimestamp
		m["failure_message"] = c.Failure
	}
	if tasks {
		ts := map[string]any{}
		for vid := range c.Vertices {
			ts[vid] = taskStats(c, vid)
		}
		m["tasks"] = ts
	} else {
		m["tasks"] = map[string]any{}
	}
	return m
}

func (s *Server) checkpoints(w http.ResponseWriter, r *http.Request, e *entry) {
	cs := e.job.Snapshot().Checkpoints
	history := []any{}
	var sizes, durations, persisted []int64
	for _, c := range cs.History {
		history = append(history, checkpointStatistics(c, false))
		if c.Status == "COMPLETED" {
			sizes = append(sizes, c.StateSize)
			durations = append(durations, endToEnd(c))
			persisted = append(persisted, c.InFlight)
		}
	}
	latest := map[string]any{"completed": nil, "savepoint": nil, "failed": nil, "restored": nil}
	if c := cs.Completed; c != nil {
		latest["completed"] = checkpointStatistics(*c, false)
	}
	if c := cs.Savepoint; c != nil {
		latest["savepoint"] = checkpointStatistics(*c, false)
	}
	if c := cs.Failed; c != nil {
		latest["failed"] = checkpointStatistics(*c, false)
	}
	if r := cs.Restored; r != nil {
		latest["restored"] = r
	}
	zero := summarize(nil)
	writeJSON(w, http.StatusOK, map[string]any{
		"counts": cs.Counts,
		"summary": map[string]any{
			"checkpointed_size": summarize(sizes), "state_size": summarize(sizes), "end_to_end_duration": summarize(durations),
			"alignment_buffered": zero, "processed_data": zero, "persisted_data": summarize(persisted),
		},
		"latest":  latest,
		"history": history,
	})
}

func (s *Server) checkpointConfig(w http.ResponseWriter, r *http.Request, e *entry) {
	c := e.job.Snapshot().Job.Checkpointing
	if c == nil {
		writeError(w, http.StatusNotFound, "Checkpointing is not enabled for this job ("+e.id+").")
		return
	}
	mode := "AT_LEAST_ONCE"
	if c.ExactlyOnce {
		mode = "EXACTLY_ONCE"
	}
	writeJSON(w, http.StatusOK, map[string]any{
		"mode": mode, "interval": c.IntervalMs, "timeout": c.TimeoutMs, "min_pause": c.MinPauseMs, "max_concurrent": 1,
		"externalization": map[string]bool{"enabled": c.Storage != "memory", "delete_on_cancellation": false},
		"state_backend":   c.StateBackend, "checkpoint_storage": c.Storage, "unaligned_checkpoints": c.Unaligned,
		"tolerable_failed_checkpoints": c.Tolerable, "aligned_checkpoint_timeout": c.AlignedTimeout,
		"checkpoints_after_tasks_finish": true, "state_changelog_enabled": false,
		"changelog_periodic_materialization_interval": 0, "changelog_storage": "",
	})
}

// findCheckpoint returns checkpoint {checkpointid} of the job's history.
func findCheckpoint(w http.ResponseWriter, r *http.Request, e *entry) (monitor.Checkpoint, *monitor.Snapshot, bool) {
	snap := e.job.Snapshot()
	id, err := strconv.ParseInt(r.PathValue("checkpointid"), 10, 64)
	if err != nil {
		writeError(w, http.StatusBadRequest, fmt.Sprintf("bad checkpoint id %q", r.PathValue("checkpointid")))
		return monitor.Checkpoint{}, nil, false
	}
	for _, c := range snap.Checkpoints.History {
		if c.ID == id {
			return c, snap, true
		}
	}
	writeError(w, http.StatusNotFound, fmt.Sprintf("Could not find checkpointing statistics for checkpoint %d.", id))
	return monitor.Checkpoint{}, nil, false
}

func (s *Server) checkpointDetails(w http.ResponseWriter, r *http.Request, e *entry) {
	if c, _, ok := findCheckpoint(w, r, e); ok {
		writeJSON(w, http.StatusOK, checkpointStatistics(c, true))
	}
}

func (s *Server) checkpointSubtasks(w http.ResponseWriter, r *http.Request, e *entry) {
	c, snap, ok := findCheckpoint(w, r, e)
	if !ok {
		return
	}
	v := snap.Vertex(r.PathValue("vertexid"))
	if v == nil || c.Vertices[v.ID] == nil {
		writeError(w, http.StatusNotFound, fmt.Sprintf("There is no checkpoint statistics for task %s.", r.PathValue("vertexid")))
		return
	}
	body := taskStats(c, v.ID)
	var sizes, e2e, syncs, asyncs, aligns, delays, persisted []int64
	subs := []any{}
	for _, st := range c.Vertices[v.ID] {
		if !st.Acked {
			subs = append(subs, map[string]any{"index": st.Subtask, "status": "pending_or_failed", "className": "pending"})
			continue
		}
		d := max(st.AckTimestamp-c.TriggerTimestamp, 0)
		sizes, e2e = append(sizes, st.StateSize), append(e2e, d)
		syncs, asyncs = append(syncs, st.SyncMs), append(asyncs, st.AsyncMs)
		aligns, delays, persisted = append(aligns, st.AlignmentMs), append(delays, st.StartDelayMs), append(persisted, st.InFlight)
		subs = append(subs, map[string]any{
			"index": st.Subtask, "status": "completed", "className": "completed", "ack_timestamp": st.AckTimestamp,
			"end_to_end_duration": d, "state_size": st.StateSize, "checkpointed_size": st.StateSize,
			"checkpoint":  map[string]int64{"sync": st.SyncMs, "async": st.AsyncMs},
			"alignment":   map[string]int64{"buffered": 0, "processed": 0, "persisted": st.InFlight, "duration": st.AlignmentMs},
			"start_delay": st.StartDelayMs, "unaligned_checkpoint": st.Unaligned, "aborted": false,
			// Weir: the head's input and channel whose barrier came last.
			"weir-last-input": st.LastInput, "weir-last-channel": st.LastChannel, "weir-operator-sizes": st.OperatorSizes,
		})
	}
	zero := summarize(nil)
	body["summary"] = map[string]any{
		"checkpointed_size": summarize(sizes), "state_size": summarize(sizes), "end_to_end_duration": summarize(e2e),
		"checkpoint_duration": map[string]any{"sync": summarize(syncs), "async": summarize(asyncs)},
		"alignment":           map[string]any{"buffered": zero, "processed": zero, "persisted": summarize(persisted), "duration": summarize(aligns)},
		"start_delay":         summarize(delays),
	}
	body["subtasks"] = subs
	writeJSON(w, http.StatusOK, body)
}
