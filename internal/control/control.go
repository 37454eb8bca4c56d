// Package control is Weir's minimal HTTP control endpoint: a running
// job's process serves it (weir.WithControlAddress) and `weir savepoint`
// calls it.
//
//	GET  /jobs                        {"jobs": [{"name": "...", "status": "running"}]}
//	POST /jobs/{name}/savepoints      {"dir": "/savepoints", "stop": false}
//	                                  -> 200 {"path": "/savepoints/savepoint-7"}
//
// An empty or missing "dir" asks for the job's default savepoint
// directory. Errors are {"error": "..."} with status 400 (bad request
// body, or no dir and no default), 404 (no such job) or 500 (the savepoint
// failed); a wrong method gets the router's plain 405.
package control

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"sort"
	"sync"
	"time"
)

// Job is a job the endpoint controls.
type Job interface {
	// Name is the job's name, its path segment.
	Name() string
	// Status describes the job: "running", "finished", "failed", ...
	Status() string
	// Savepoint takes a savepoint into dir, or the job's default
	// directory if dir is "" (and stops the job if stop), and returns its
	// path.
	Savepoint(ctx context.Context, dir string, stop bool) (string, error)
}

// ErrNoTarget is what a Job's Savepoint returns (wrapped) when asked for a
// savepoint without a directory and it has no default one; the endpoint
// answers 400.
var ErrNoTarget = errors.New("no savepoint directory given, and the job has no default savepoint directory")

// SavepointRequest is the body of POST /jobs/{name}/savepoints.
type SavepointRequest struct {
	Dir  string `json:"dir"`
	Stop bool   `json:"stop"`
}

// SavepointResponse is the body of a successful savepoint request.
type SavepointResponse struct {
	Path string `json:"path"`
}

// JobInfo is one entry of GET /jobs.
type JobInfo struct {
	Name   string `json:"name"`
	Status string `json:"status"`
}

type errorBody struct {
	Error string `json:"error"`
}

// Server serves the control endpoint for the jobs registered with it.
type Server struct {
	srv  *http.Server
	ln   net.Listener
	log  *slog.Logger
	done chan struct{}

	mu   sync.Mutex
	jobs map[string]Job
}

// Listen starts a server on addr ("127.0.0.1:0" picks a free port).
func Listen(addr string, log *slog.Logger) (*Server, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("control endpoint: %w", err)
	}
	if log == nil {
		log = slog.Default()
	}
	s := &Server{ln: ln, log: log, done: make(chan struct{}), jobs: map[string]Job{}}
	s.srv = &http.Server{Handler: s.Handler(), ReadHeaderTimeout: 10 * time.Second}
	go func() {
		defer close(s.done)
		if err := s.srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error("control endpoint stopped", "err", err)
		}
	}()
	return s, nil
}

// Addr returns the address the server listens on.
func (s *Server) Addr() string { return s.ln.Addr().String() }

// Register makes j reachable under its name.
func (s *Server) Register(j Job) {
	s.mu.Lock()
	s.jobs[j.Name()] = j
	s.mu.Unlock()
}

// Close stops the server after the requests in progress have been
// answered (waiting at most timeout), and waits for it to end.
func (s *Server) Close(timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	err := s.srv.Shutdown(ctx)
	if err != nil {
		err = errors.Join(err, s.srv.Close())
	}
	<-s.done
	return err
}

func (s *Server) job(name string) (Job, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	j, ok := s.jobs[name]
	return j, ok
}

// Handler returns the endpoint's HTTP handler.
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /jobs", func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		var out struct {
			Jobs []JobInfo `json:"jobs"`
		}
		for _, j := range s.jobs {
			out.Jobs = append(out.Jobs, JobInfo{j.Name(), j.Status()})
		}
		s.mu.Unlock()
		sort.Slice(out.Jobs, func(a, b int) bool { return out.Jobs[a].Name < out.Jobs[b].Name })
		writeJSON(w, http.StatusOK, out)
	})
	mux.HandleFunc("POST /jobs/{name}/savepoints", func(w http.ResponseWriter, r *http.Request) {
		name := r.PathValue("name")
		j, ok := s.job(name)
		if !ok {
			writeJSON(w, http.StatusNotFound, errorBody{fmt.Sprintf("no job named %q", name)})
			return
		}
		var req SavepointRequest
		dec := json.NewDecoder(io.LimitReader(r.Body, 1<<20))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&req); err != nil {
			writeJSON(w, http.StatusBadRequest, errorBody{"bad request body: " + err.Error()})
			return
		}
		s.log.Info("savepoint requested", "job", name, "dir", req.Dir, "stop", req.Stop, "remote", r.RemoteAddr)
		path, err := j.Savepoint(r.Context(), req.Dir, req.Stop)
		if errors.Is(err, ErrNoTarget) {
			writeJSON(w, http.StatusBadRequest, errorBody{err.Error()})
			return
		}
		if err != nil {
			writeJSON(w, http.StatusInternalServerError, errorBody{err.Error()})
			return
		}
		writeJSON(w, http.StatusOK, SavepointResponse{Path: path})
	})
	return mux
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	json.NewEncoder(w).Encode(v)
}

// StatusError is a non-200 answer of the endpoint.
type StatusError struct {
	Code    int
	Message string
}

// Error implements error.
func (e *StatusError) Error() string {
	return fmt.Sprintf("control endpoint answered %d %s: %s", e.Code, http.StatusText(e.Code), e.Message)
}

// TriggerSavepoint asks the endpoint at addr (host:port or an http:// URL)
// for a savepoint of job into dir, stopping the job if stop, and returns
// the savepoint's path. A nil client means http.DefaultClient.
func TriggerSavepoint(ctx context.Context, client *http.Client, addr, job, dir string, stop bool) (string, error) {
	if client == nil {
		client = http.DefaultClient
	}
	body, err := json.Marshal(SavepointRequest{Dir: dir, Stop: stop})
	if err != nil {
		return "", err
	}
	base := addr
	if u, err := url.Parse(addr); err != nil || u.Scheme == "" || u.Host == "" {
		base = "http://" + addr
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, base+"/jobs/"+url.PathEscape(job)+"/savepoints", bytes.NewReader(body))
	if err != nil {
		return "", err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return "", err
	}
	if resp.StatusCode != http.StatusOK {
		var eb errorBody
		if json.Unmarshal(data, &eb) != nil || eb.Error == "" {
			eb.Error = string(data)
		}
		return "", &StatusError{Code: resp.StatusCode, Message: eb.Error}
	}
	var out SavepointResponse
	if err := json.Unmarshal(data, &out); err != nil {
		return "", fmt.Errorf("control endpoint: bad answer %q: %w", data, err)
	}
	return out.Path, nil
}
