package rest

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"regexp"

	"github.com/weirstream/weir/internal/checkpoint/store"
	"github.com/weirstream/weir/internal/control"
)

// Write actions: Flink's asynchronous savepoint trigger and status
// (/jobs/:jobid/savepoints, /jobs/:jobid/savepoints/:triggerid), stop with
// savepoint (/jobs/:jobid/stop, status at the same place), cancel (PATCH
// /jobs/:jobid), and the synchronous savepoint request of the legacy
// control endpoint (internal/control: the same path with a body
// {"dir", "stop"}), which `weir savepoint` sends. A target a request names
// must lie under the job's default savepoint directory or one of
// Options.SavepointRoots (Server.savepointTarget): 403 otherwise.

func (s *Server) routeSavepoints(mux *http.ServeMux) {
	mux.HandleFunc("POST /jobs/{jobid}/savepoints", s.guarded(s.withJob(s.triggerSavepoint)))
	mux.HandleFunc("GET /jobs/{jobid}/savepoints/{triggerid}", s.withJob(s.savepointStatus))
	mux.HandleFunc("POST /jobs/{jobid}/stop", s.guarded(s.withJob(s.stopWithSavepoint)))
}

// operation is an asynchronous savepoint, or a manual checkpoint
// (checkpoints.go: the id of the checkpoint it started).
type operation struct {
	done       chan struct{}
	location   string
	err        error
	checkpoint int64
}

var triggerIDPattern = regexp.MustCompile(`^[0-9a-f]{32}$`)

func newTriggerID() string {
	var b [16]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// readBody reads at most 1 MiB of a request body as JSON fields.
func readBody(w http.ResponseWriter, r *http.Request) (map[string]json.RawMessage, []byte, bool) {
	data, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	if err != nil {
		writeError(w, http.StatusBadRequest, "reading the request body: "+err.Error())
		return nil, nil, false
	}
	fields := map[string]json.RawMessage{}
	if len(bytes.TrimSpace(data)) > 0 {
		if err := json.Unmarshal(data, &fields); err != nil {
			writeError(w, http.StatusBadRequest, "Request did not match expected format: "+err.Error())
			return nil, nil, false
		}
	}
	return fields, data, true
}

func (s *Server) triggerSavepoint(w http.ResponseWriter, r *http.Request, e *entry) {
	fields, data, ok := readBody(w, r)
	if !ok {
		return
	}
	_, legacyDir := fields["dir"]
	_, legacyStop := fields["stop"]
	if legacyDir || legacyStop {
		s.legacySavepoint(w, r, e, data)
		return
	}
	var req struct {
		Target    string `json:"target-directory"`
		Cancel    bool   `json:"cancel-job"`
		TriggerID string `json:"triggerId"`
		Format    string `json:"formatType"`
	}
	if err := json.Unmarshal(data, &req); len(data) > 0 && err != nil {
		writeError(w, http.StatusBadRequest, "Request did not match expected format SavepointTriggerRequestBody: "+err.Error())
		return
	}
	if req.Format != "" && req.Format != "CANONICAL" {
		writeError(w, http.StatusBadRequest, fmt.Sprintf("savepoint format %q is not supported: Weir writes canonical savepoints", req.Format))
		return
	}
	target, err := s.savepointTarget(e, req.Target)
	if err != nil {
		writeError(w, http.StatusForbidden, err.Error())
		return
	}
	s.startOperation(w, r, e, req.TriggerID, target, false, req.Cancel)
}

func (s *Server) stopWithSavepoint(w http.ResponseWriter, r *http.Request, e *entry) {
	_, data, ok := readBody(w, r)
	if !ok {
		return
	}
	var req struct {
		Target    string `json:"targetDirectory"`
		Drain     bool   `json:"drain"`
		TriggerID string `json:"triggerId"`
		Format    string `json:"formatType"`
	}
	if err := json.Unmarshal(data, &req); len(data) > 0 && err != nil {
		writeError(w, http.StatusBadRequest, "Request did not match expected format StopWithSavepointRequestBody: "+err.Error())
		return
	}
	if req.Drain {
		writeError(w, http.StatusBadRequest, "stop with drain is not supported: Weir stops without emitting the maximum watermark (pending timers stay in the savepoint)")
		return
	}
	target, err := s.savepointTarget(e, req.Target)
	if err != nil {
		writeError(w, http.StatusForbidden, err.Error())
		return
	}
	s.startOperation(w, r, e, req.TriggerID, target, true, false)
}

// startOperation starts an asynchronous savepoint and answers 202 with its
// trigger id.
func (s *Server) startOperation(w http.ResponseWriter, r *http.Request, e *entry, id, dir string, stop, cancel bool) {
	s.runOperation(w, e.id+"/", id, func(id string) {
		s.log.Info("savepoint requested", "job", e.name, "dir", dir, "stop", stop, "cancel", cancel, "trigger", id, "remote", r.RemoteAddr)
	}, func(op *operation) {
		op.location, op.err = e.job.Savepoint(s.ctx, dir, stop)
		if op.err == nil && cancel {
			e.job.Cancel()
		}
	})
}

// runOperation starts an asynchronous operation (Flink's trigger and
// status pattern) under trigger id (a new one if empty) in s.ops at
// prefix+id, logs its start, runs do on its own goroutine and answers
// 202 with the request id; a malformed or taken id is refused.
func (s *Server) runOperation(w http.ResponseWriter, prefix, id string, logStart func(id string), do func(*operation)) {
	if id == "" {
		id = newTriggerID()
	} else if !triggerIDPattern.MatchString(id) {
		writeError(w, http.StatusBadRequest, "triggerId must be 32 hexadecimal digits")
		return
	}
	key := prefix + id
	op := &operation{done: make(chan struct{})}
	s.mu.Lock()
	if _, dup := s.ops[key]; dup {
		s.mu.Unlock()
		writeError(w, http.StatusConflict, "an operation with trigger id "+id+" exists")
		return
	}
	s.ops[key] = op
	s.mu.Unlock()
	logStart(id)
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		defer close(op.done)
		do(op)
	}()
	writeJSON(w, http.StatusAccepted, map[string]string{"request-id": id})
}

func (s *Server) savepointStatus(w http.ResponseWriter, r *http.Request, e *entry) {
	s.mu.Lock()
	op := s.ops[e.id+"/"+r.PathValue("triggerid")]
	s.mu.Unlock()
	if op == nil {
		writeError(w, http.StatusNotFound, "There is no savepoint operation with trigger id "+r.PathValue("triggerid")+" for job "+e.id+".")
		return
	}
	select {
	case <-op.done:
	default:
		writeJSON(w, http.StatusOK, map[string]any{"status": map[string]string{"id": "IN_PROGRESS"}})
		return
	}
	operation := map[string]any{}
	if op.err != nil {
		operation["failure-cause"] = map[string]string{
			"class": "org.apache.flink.util.FlinkException", "stack-trace": op.err.Error(), "serialized-throwable": "",
		}
	} else {
		operation["location"] = op.location
	}
	writeJSON(w, http.StatusOK, map[string]any{"status": map[string]string{"id": "COMPLETED"}, "operation": operation})
}

// legacySavepoint answers the control endpoint's synchronous request.
func (s *Server) legacySavepoint(w http.ResponseWriter, r *http.Request, e *entry, data []byte) {
	var req control.SavepointRequest
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil {
		writeJSON(w, http.StatusBadRequest, control.ErrorBody{Error: "bad request body: " + err.Error()})
		return
	}
	dir, err := s.savepointTarget(e, req.Dir)
	if err != nil {
		writeJSON(w, http.StatusForbidden, control.ErrorBody{Error: err.Error()})
		return
	}
	s.log.Info("savepoint requested", "job", e.name, "dir", dir, "stop", req.Stop, "remote", r.RemoteAddr)
	// The answer waits for the savepoint, which the job's checkpoint
	// timeout bounds.
	r = longRequest(w, r, 0)
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	go func() {
		select {
		case <-s.ctx.Done():
			cancel()
		case <-ctx.Done():
		}
	}()
	path, err := e.job.Savepoint(ctx, dir, req.Stop)
	switch {
	case errors.Is(err, control.ErrNoTarget), errors.Is(err, store.ErrNoStorage):
		writeJSON(w, http.StatusBadRequest, control.ErrorBody{Error: err.Error()})
	case err != nil:
		writeJSON(w, http.StatusInternalServerError, control.ErrorBody{Error: err.Error()})
	default:
		writeJSON(w, http.StatusOK, control.SavepointResponse{Path: path})
	}
}

func (s *Server) cancel(w http.ResponseWriter, r *http.Request, e *entry) {
	switch mode := r.URL.Query().Get("mode"); mode {
	case "", "cancel", "CANCEL":
	default:
		writeError(w, http.StatusBadRequest, fmt.Sprintf("termination mode %q is not supported: use cancel, or stop with a savepoint (POST /jobs/:jobid/stop)", mode))
		return
	}
	s.log.Info("job cancellation requested", "job", e.name, "remote", r.RemoteAddr)
	e.job.Cancel()
	writeJSON(w, http.StatusAccepted, map[string]any{})
}
