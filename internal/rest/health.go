package rest

import (
	"net/http"
	"sort"
)

// Liveness and readiness, for process supervisors and Kubernetes probes.
// Both are open (no token) and answer in JSON:
//
//	GET /healthz   200 while the server answers: the process is alive
//	GET /readyz    200 when at least one job runs and every job that has
//	               not ended is RUNNING (Flink's job status); 503
//	               otherwise, naming each job and its status (a job that is
//	               restoring or restarting is not ready, and a server whose
//	               jobs have all ended, showing them (Finish), is not)

func (s *Server) routeHealth(mux *http.ServeMux) {
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
	})
	mux.HandleFunc("GET /readyz", s.ready)
}

// jobReadiness is one job's line in /readyz.
type jobReadiness struct {
	ID    string `json:"id"`
	Name  string `json:"name"`
	State string `json:"state"`
}

func (s *Server) ready(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	entries := make([]*entry, 0, len(s.jobs))
	for _, e := range s.jobs {
		entries = append(entries, e)
	}
	s.mu.Unlock()
	sort.Slice(entries, func(i, j int) bool { return entries[i].id < entries[j].id })
	jobs := make([]jobReadiness, 0, len(entries))
	ready, live := true, 0
	for _, e := range entries {
		st := e.job.Snapshot().Job.State
		jobs = append(jobs, jobReadiness{ID: e.id, Name: e.name, State: st})
		if !e.end.ended() { // the ended jobs a server keeps showing do not count
			live++
			ready = ready && st == "RUNNING"
		}
	}
	ready = ready && live > 0
	code, status := http.StatusOK, "ready"
	if !ready {
		code, status = http.StatusServiceUnavailable, "not ready"
	}
	writeJSON(w, code, map[string]any{"status": status, "jobs": jobs})
}
