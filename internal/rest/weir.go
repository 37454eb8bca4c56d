package rest

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/weirstream/weir/internal/doctor"
	"github.com/weirstream/weir/internal/monitor"
)

// Weir's own resources, under /weir/ (and Prometheus at /metrics). The
// snapshots, history and doctor findings show key values and exceptions'
// texts only to requests allowed the details (Server.details); others get
// them redacted:
//
//	GET /weir/jobs/{jobid}/snapshot    the job's monitor.Snapshot now
//	GET /weir/jobs/{jobid}/history     the sampled snapshots (?since=ms: newer ones only)
//	GET /weir/jobs/{jobid}/doctor      doctor findings over the sampled history
//	GET /weir/jobs/{jobid}/cluster     a cluster member's tasks (monitor.Cluster); 404 for a job of one process
//	                                   (also at /jobs/{jobid}/cluster, next to Flink's resources)
//	GET /weir/jobs/{jobid}/vertices/{vertexid}/subtasks/{subtaskindex}/record?seconds=S&limit=N
//	                                   capture one subtask's inputs as a scenario file (write action)

func (s *Server) routeWeir(mux *http.ServeMux) {
	mux.Handle("GET /metrics", s.prometheusHandler())
	mux.HandleFunc("GET /weir/jobs/{jobid}/snapshot", s.withJob(func(w http.ResponseWriter, r *http.Request, e *entry) {
		writeJSON(w, http.StatusOK, s.view(r, e.job.Snapshot()))
	}))
	mux.HandleFunc("GET /weir/jobs/{jobid}/history", s.withJob(s.history))
	mux.HandleFunc("GET /weir/jobs/{jobid}/cluster", s.withJob(s.cluster))
	mux.HandleFunc("GET /jobs/{jobid}/cluster", s.withJob(s.cluster))
	mux.HandleFunc("GET /weir/jobs/{jobid}/doctor", s.withJob(s.doctor))
	mux.HandleFunc("GET /weir/jobs/{jobid}/vertices/{vertexid}/subtasks/{subtaskindex}/record", s.guarded(s.withJob(s.record)))
}

func (s *Server) cluster(w http.ResponseWriter, r *http.Request, e *entry) {
	c := e.job.Snapshot().Cluster
	if c == nil {
		writeError(w, http.StatusNotFound, "job "+e.name+" is not a cluster member (weir.WithKafkaCluster)")
		return
	}
	writeJSON(w, http.StatusOK, c)
}

func (s *Server) history(w http.ResponseWriter, r *http.Request, e *entry) {
	since, _ := strconv.ParseInt(r.URL.Query().Get("since"), 10, 64)
	out := []*monitor.Snapshot{}
	for _, h := range e.history() {
		if h.Timestamp > since {
			out = append(out, s.view(r, h))
		}
	}
	writeJSON(w, http.StatusOK, out)
}

func (s *Server) doctor(w http.ResponseWriter, r *http.Request, e *entry) {
	h := e.history()
	if n, err := strconv.Atoi(r.URL.Query().Get("samples")); err == nil && n > 1 && n < len(h) {
		h = h[len(h)-n:]
	}
	snap := e.job.Snapshot()
	if len(h) == 0 || h[len(h)-1].Timestamp < snap.Timestamp {
		h = append(h, snap)
	}
	if !s.details(r) {
		for i := range h {
			h[i] = h[i].Redact()
		}
	}
	findings := doctor.Analyze(h, doctor.Options{})
	writeJSON(w, http.StatusOK, map[string]any{"samples": len(h), "findings": findings})
}

func (s *Server) record(w http.ResponseWriter, r *http.Request, e *entry) {
	rec, ok := e.job.(Recorder)
	if !ok {
		writeError(w, http.StatusNotImplemented, "this job cannot capture operator inputs")
		return
	}
	sub, err := strconv.Atoi(r.PathValue("subtaskindex"))
	if err != nil || sub < 0 {
		writeError(w, http.StatusBadRequest, "bad subtask index "+r.PathValue("subtaskindex"))
		return
	}
	d := 30 * time.Second
	if q := r.URL.Query().Get("seconds"); q != "" {
		f, err := strconv.ParseFloat(q, 64)
		if err != nil || f <= 0 || f > 3600 {
			writeError(w, http.StatusBadRequest, fmt.Sprintf("seconds must be in (0, 3600], got %q", q))
			return
		}
		d = time.Duration(f * float64(time.Second))
	}
	limit, _ := strconv.Atoi(r.URL.Query().Get("limit"))
	r = longRequest(w, r, d)
	ctx, cancel := context.WithTimeout(r.Context(), d)
	defer cancel()
	stop := context.AfterFunc(s.ctx, cancel)
	defer stop()
	s.log.Info("capturing operator inputs", "job", e.name, "vertex", r.PathValue("vertexid"), "subtask", sub, "for", d, "remote", r.RemoteAddr)
	data, err := rec.Record(ctx, r.PathValue("vertexid"), sub, max(limit, 0))
	if err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Write(data)
}
