package rest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/weirstream/weir/internal/monitor"
)

// Ended jobs. When a job ends, Finish freezes its entry: the server
// keeps answering for it (status, exceptions, checkpoints, the final
// metrics, its sampled history) from the snapshot taken at its end, as
// Flink's dispatcher keeps finished jobs in its job store, until the
// server closes or Options.KeepFinished newer ended jobs push it out.
// Savepoints of an ended job fail; cancelling it does nothing.
//
// With Options.ArchiveDir, Finish also writes the job's archive: one
// file named by the job's ID holding the JSON answers of its REST paths,
// in the layout of Flink's job archives (jobmanager.archive.fs.dir):
//
//	{"archive": [{"path": "/jobs/overview", "json": "{...}"}, ...]}
//
// `weir history DIR` serves these files (ListenHistory).

// DefaultKeepFinished is the number of ended jobs a server keeps showing
// by default.
const DefaultKeepFinished = 32

// ErrEnded is the error of a savepoint or input capture asked of a job
// that has ended.
var ErrEnded = errors.New("the job has ended")

// ending wraps a registered job: live until freeze, then answering from
// its final snapshot.
type ending struct {
	Job
	final atomic.Pointer[monitor.Snapshot]
	at    atomic.Int64 // when it ended (Unix nanoseconds); 0 while live
}

// endingRecorder is an ending whose job can capture its inputs.
type endingRecorder struct {
	*ending
	rec Recorder
}

// jobAs returns the job j wraps (Register's *ending or *endingRecorder)
// as a T, for the optional interfaces a job may implement (Checkpointer,
// SavepointDirer, Recorder): the wrappers hide them.
func jobAs[T any](j Job) (T, bool) {
	switch w := j.(type) {
	case *ending:
		j = w.Job
	case *endingRecorder:
		j = w.Job
	}
	t, ok := j.(T)
	return t, ok
}

// wrapEnding wraps j for Register, keeping it a Recorder if it is one.
func wrapEnding(j Job) (Job, *ending) {
	e := &ending{Job: j}
	if r, ok := j.(Recorder); ok {
		return &endingRecorder{ending: e, rec: r}, e
	}
	return e, e
}

// Snapshot returns the job's final snapshot once it has ended.
func (j *ending) Snapshot() *monitor.Snapshot {
	if f := j.final.Load(); f != nil {
		return f
	}
	return j.Job.Snapshot()
}

// Savepoint fails once the job has ended.
func (j *ending) Savepoint(ctx context.Context, dir string, stop bool) (string, error) {
	if f := j.final.Load(); f != nil {
		return "", fmt.Errorf("%w (%s): no savepoint can be taken", ErrEnded, f.Job.Status)
	}
	return j.Job.Savepoint(ctx, dir, stop)
}

// Cancel cancels a live job; an ended one stays as it ended.
func (j *ending) Cancel() {
	if !j.ended() {
		j.Job.Cancel()
	}
}

// SavepointDir returns the wrapped job's default savepoint directory.
func (j *ending) SavepointDir() string {
	if d, ok := j.Job.(SavepointDirer); ok {
		return d.SavepointDir()
	}
	return ""
}

// Record captures a live job's inputs.
func (j *endingRecorder) Record(ctx context.Context, vertex string, subtask int, limit int) ([]byte, error) {
	if j.ended() {
		return nil, ErrEnded
	}
	return j.rec.Record(ctx, vertex, subtask, limit)
}

func (j *ending) ended() bool { return j.at.Load() != 0 }

// freeze makes snap the job's final state.
func (j *ending) freeze(snap *monitor.Snapshot) {
	j.final.Store(snap)
	j.at.Store(time.Now().UnixNano())
}

// after reports whether j is to be shown before o under a shared name: a
// live job before an ended one, a later end before an earlier.
func (j *ending) after(o *ending) bool {
	a, b := j.at.Load(), o.at.Load()
	switch {
	case a == 0:
		return b != 0
	case b == 0:
		return false
	}
	return a > b
}

// Finish freezes the job registered under id, which has ended: the
// server shows its final state from now on, writes its archive if
// Options.ArchiveDir is set, and forgets the oldest ended jobs beyond
// Options.KeepFinished. It returns the archive's path ("" without one).
func (s *Server) Finish(id string) (string, error) {
	s.mu.Lock()
	e := s.jobs[id]
	s.mu.Unlock()
	if e == nil || e.end.ended() {
		return "", nil
	}
	snap := e.end.Job.Snapshot()
	e.add(snap, s.opts.History)
	e.end.freeze(snap)
	var path string
	var err error
	if s.opts.ArchiveDir != "" {
		if path, err = s.archive(e); err == nil {
			s.log.Info("job archived", "job", e.name, "id", e.id, "archive", path)
		}
	}
	s.dropEnded(orDefault(s.opts.KeepFinished, DefaultKeepFinished))
	return path, err
}

// dropEnded forgets the oldest ended jobs beyond keep, with their
// savepoint operations.
func (s *Server) dropEnded(keep int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var ended []*entry
	for _, e := range s.jobs {
		if e.end.ended() {
			ended = append(ended, e)
		}
	}
	if len(ended) <= keep {
		return
	}
	sort.Slice(ended, func(a, b int) bool { return ended[a].end.at.Load() < ended[b].end.at.Load() })
	for _, e := range ended[:len(ended)-keep] {
		delete(s.jobs, e.id)
		for k := range s.ops {
			if strings.HasPrefix(k, e.id+"/") {
				delete(s.ops, k)
			}
		}
	}
}

// archivedJSON is one REST answer in an archive.
type archivedJSON struct {
	Path string `json:"path"`
	JSON string `json:"json"`
}

// archiveFile is the layout of an archive file.
type archiveFile struct {
	Archive []archivedJSON `json:"archive"`
}

// archivePaths are the GET requests whose answers an archive holds, for a
// job and its final snapshot, keyed by the path they are served at.
func archivePaths(id string, snap *monitor.Snapshot) [][2]string {
	base := "/jobs/" + id
	var out [][2]string
	add := func(p string) { out = append(out, [2]string{p, p}) }
	for _, p := range []string{"/jobs/overview", base, base + "/plan", base + "/config", base + "/exceptions",
		base + "/status", base + "/accumulators", base + "/execution-result", base + "/checkpoints",
		base + "/checkpoints/config", base + "/cluster", "/weir/jobs/" + id + "/snapshot", "/weir/jobs/" + id + "/history",
		"/weir/jobs/" + id + "/cluster"} {
		add(p)
	}
	// The dashboard asks the doctor about the last 30 samples.
	out = append(out, [2]string{"/weir/jobs/" + id + "/doctor", "/weir/jobs/" + id + "/doctor?samples=30"})
	for _, v := range snap.Vertices {
		vb := base + "/vertices/" + v.ID
		for _, p := range []string{"", "/subtasktimes", "/taskmanagers", "/accumulators", "/subtasks/accumulators", "/watermarks", "/backpressure"} {
			add(vb + p)
		}
		for i := range v.Subtasks {
			add(vb + "/subtasks/" + strconv.Itoa(i))
		}
	}
	for _, c := range snap.Checkpoints.History {
		cb := base + "/checkpoints/details/" + strconv.FormatInt(c.ID, 10)
		add(cb)
		for _, v := range snap.Vertices {
			add(cb + "/subtasks/" + v.ID)
		}
	}
	return out
}

// archive writes e's archive into Options.ArchiveDir and returns its
// path. It holds the answers a request with the server's token gets; a
// path the server does not answer with 200 is left out.
func (s *Server) archive(e *entry) (string, error) {
	snap := e.job.Snapshot()
	h := s.srv.Handler
	var file archiveFile
	for _, p := range archivePaths(e.id, snap) {
		r := httptest.NewRequest(http.MethodGet, p[1], nil)
		r.Host = s.Addr()
		if s.opts.Token != "" {
			r.Header.Set("Authorization", "Bearer "+s.opts.Token)
		}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		if w.Code != http.StatusOK {
			continue
		}
		body := strings.TrimSpace(w.Body.String())
		if p[0] == "/jobs/overview" {
			body = onlyJob(body, e.id)
		}
		file.Archive = append(file.Archive, archivedJSON{Path: p[0], JSON: body})
	}
	data, err := json.Marshal(file)
	if err != nil {
		return "", err
	}
	return writeArchive(s.opts.ArchiveDir, e.id, data)
}

// onlyJob keeps the job id's line of a /jobs/overview answer.
func onlyJob(body, id string) string {
	var o struct {
		Jobs []json.RawMessage `json:"jobs"`
	}
	if json.Unmarshal([]byte(body), &o) != nil {
		return body
	}
	keep := []json.RawMessage{}
	for _, j := range o.Jobs {
		var d struct {
			JID string `json:"jid"`
		}
		if json.Unmarshal(j, &d) == nil && d.JID == id {
			keep = append(keep, j)
		}
	}
	out, _ := json.Marshal(map[string]any{"jobs": keep})
	return string(out)
}

// writeArchive writes data as dir/name, atomically: a reader sees the
// whole file or none.
func writeArchive(dir, name string, data []byte) (string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("rest: archive: %w", err)
	}
	tmp, err := os.CreateTemp(dir, "."+name+".*")
	if err != nil {
		return "", fmt.Errorf("rest: archive: %w", err)
	}
	_, err = tmp.Write(data)
	err = errors.Join(err, tmp.Close())
	path := filepath.Join(dir, name)
	if err == nil {
		err = os.Rename(tmp.Name(), path)
	}
	if err != nil {
		os.Remove(tmp.Name())
		return "", fmt.Errorf("rest: archive: %w", err)
	}
	return path, nil
}

// FinishEnded finishes (Finish) every registered job whose snapshot says
// it has ended but that was not finished yet: a program about to exit
// calls it, through the plugin's Close, so that a job whose end has not
// reached the server yet is archived too.
func (s *Server) FinishEnded() error {
	var errs []error
	for _, e := range s.entries() {
		if e.end.ended() {
			continue
		}
		switch e.end.Job.Snapshot().Job.State {
		case "FINISHED", "CANCELED", "FAILED":
			if _, err := s.Finish(e.id); err != nil {
				errs = append(errs, err)
			}
		}
	}
	return errors.Join(errs...)
}
