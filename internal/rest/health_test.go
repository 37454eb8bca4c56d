package rest

import (
	"net/http"
	"testing"
)

// TestHealthAndReadiness: /healthz answers while the server runs;
// /readyz is ready only while every registered job is RUNNING, and not
// ready with no job at all, naming each job's status.
func TestHealthAndReadiness(t *testing.T) {
	s, job, base := start(t, Options{})
	var h map[string]any
	getJSON(t, base+"/healthz", http.StatusOK, &h)
	expect(t, "healthz status", h["status"], "ok")

	var r map[string]any
	getJSON(t, base+"/readyz", http.StatusOK, &r)
	expect(t, "ready status", r["status"], "ready")
	expect(t, "ready job state", field(t, r, "jobs", 0, "state"), "RUNNING")
	expect(t, "ready job name", field(t, r, "jobs", 0, "name"), "orders-join")

	for _, st := range []string{"RESTARTING", "FAILED", "FINISHED", "CANCELED"} {
		job.mu.Lock()
		job.state = st
		job.mu.Unlock()
		getJSON(t, base+"/readyz", http.StatusServiceUnavailable, &r)
		expect(t, st+": status", r["status"], "not ready")
		expect(t, st+": job state", field(t, r, "jobs", 0, "state"), st)
	}

	job.mu.Lock()
	job.state = ""
	job.mu.Unlock()
	getJSON(t, base+"/readyz", http.StatusOK, &r)
	s.Unregister(jobID)
	getJSON(t, base+"/readyz", http.StatusServiceUnavailable, &r)
	expect(t, "no job: status", r["status"], "not ready")
	getJSON(t, base+"/healthz", http.StatusOK, &h)
}

// TestFlinkSmallResources: /jobs/:jid/status, /jobs/:jid/accumulators and
// Flink's /v1 prefix.
func TestFlinkSmallResources(t *testing.T) {
	_, job, base := start(t, Options{})
	var st map[string]any
	getJSON(t, base+"/jobs/"+jobID+"/status", http.StatusOK, &st)
	expect(t, "status", st["status"], "RUNNING")
	job.mu.Lock()
	job.state = "FAILED"
	job.mu.Unlock()
	getJSON(t, base+"/v1/jobs/"+jobID+"/status", http.StatusOK, &st)
	expect(t, "status through /v1", st["status"], "FAILED")

	var acc map[string]any
	getJSON(t, base+"/jobs/"+jobID+"/accumulators", http.StatusOK, &acc)
	if a, ok := acc["job-accumulators"].([]any); !ok || len(a) != 0 {
		t.Errorf("job-accumulators = %v, want []", acc["job-accumulators"])
	}
	var overview map[string]any
	getJSON(t, base+"/v1/jobs/overview", http.StatusOK, &overview)
	expect(t, "/v1/jobs/overview jid", field(t, overview, "jobs", 0, "jid"), jobID)
	var nf map[string]any
	getJSON(t, base+"/v1/jobs/"+jobID+"/nonesuch", http.StatusNotFound, &nf)
}
