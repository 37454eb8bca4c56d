// Package control is the client side of Weir's job control endpoint: the
// synchronous savepoint request that `weir savepoint` sends to a job's
// REST server (internal/rest serves it, plugged with
// weir.WithPlugin(rest.New(addr))), and the types of its bodies.
//
//	GET  /jobs                        {"jobs": [{"id": "...", "status": "RUNNING", "name": "..."}]}
//	POST /jobs/{name}/savepoints      {"dir": "/savepoints", "stop": false}
//	                                  -> 200 {"path": "/savepoints/savepoint-7"}
//
// An empty or missing "dir" asks for the job's default savepoint
// directory. Errors are {"error": "..."} with status 400 (bad request
// body, or no dir and no default), 404 (no such job) or 500 (the savepoint
// failed). {name} may be the job's name or its id.
package control

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"

	"github.com/weirstream/weir/internal/hooks"
)

// ErrNoTarget is what a Job's Savepoint returns (wrapped) when asked for a
// savepoint without a directory and it has no default one; the endpoint
// answers 400.
var ErrNoTarget = hooks.ErrNoSavepointTarget

// SavepointRequest is the body of POST /jobs/{name}/savepoints.
type SavepointRequest struct {
	Dir  string `json:"dir"`
	Stop bool   `json:"stop"`
}

// SavepointResponse is the body of a successful savepoint request.
type SavepointResponse struct {
	Path string `json:"path"`
}

// ErrorBody is the body of an error answer.
type ErrorBody struct {
	Error string `json:"error"`
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
		var eb ErrorBody
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
