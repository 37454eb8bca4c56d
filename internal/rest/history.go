package rest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"
)

// The history server (`weir history DIR`), as Flink's HistoryServer: it
// serves the archives that servers with Options.ArchiveDir wrote (one
// file per ended job, archive.go), read-only, at the paths the job's
// server answered them: /jobs/overview merges the archives' overviews,
// /jobs and /overview are drawn from it, /config says web-history, and
// the dashboard at / shows an archived job as it was at its end. The
// directory is read again when a request comes at least a second after
// the last reading, so that archives written meanwhile appear.
//
// The archives hold what a request with the job server's token saw (key
// values, exceptions' texts): a history server with a token asks it of
// every request but the dashboard's own files and /healthz, and one on
// an address that is not loopback must have one.

// DefaultHistoryAddr is `weir history`'s default address (port 8082, as
// Flink's HistoryServer).
const DefaultHistoryAddr = "127.0.0.1:8082"

// ListenHistory starts a history server on addr serving the archives in
// dir. Only Token, Logger, Version, Hosts and the limits of opts apply.
func ListenHistory(addr, dir string, opts Options) (*Server, error) {
	st, err := os.Stat(dir)
	if err != nil {
		return nil, fmt.Errorf("rest: history: %w", err)
	}
	if !st.IsDir() {
		return nil, fmt.Errorf("rest: history: %s is not a directory", dir)
	}
	opts.SampleEvery = -1
	a := &archives{dir: dir, files: map[string]*archived{}}
	return listen(addr, opts, func(s *Server) http.Handler { return s.checkRequest(v1(s.historyHandler(a))) })
}

// archives are the archive files of a directory, read.
type archives struct {
	dir  string
	mu   sync.Mutex
	read time.Time
	// files are by file name (the job's ID).
	files map[string]*archived
}

// archived is one archive file.
type archived struct {
	mod      time.Time
	size     int64
	paths    map[string]string
	overview []json.RawMessage // its /jobs/overview's jobs
}

// refresh reads the directory again if it was read more than a second
// ago: new and changed archives, and forgets removed ones.
func (a *archives) refresh(log func(msg string, args ...any)) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if time.Since(a.read) < time.Second {
		return
	}
	a.read = time.Now()
	ents, err := os.ReadDir(a.dir)
	if err != nil {
		log("history: cannot read the archive directory", "dir", a.dir, "err", err)
		return
	}
	seen := map[string]bool{}
	for _, de := range ents {
		name := de.Name()
		if de.IsDir() || strings.HasPrefix(name, ".") {
			continue
		}
		info, err := de.Info()
		if err != nil {
			continue
		}
		seen[name] = true
		if f := a.files[name]; f != nil && f.mod.Equal(info.ModTime()) && f.size == info.Size() {
			continue
		}
		f, err := readArchive(filepath.Join(a.dir, name))
		if err != nil {
			log("history: skipping a file that is not a job archive", "file", name, "err", err)
			delete(a.files, name)
			continue
		}
		f.mod, f.size = info.ModTime(), info.Size()
		a.files[name] = f
	}
	for name := range a.files {
		if !seen[name] {
			delete(a.files, name)
		}
	}
}

// readArchive reads one archive file.
func readArchive(path string) (*archived, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var file archiveFile
	if err := json.Unmarshal(data, &file); err != nil {
		return nil, err
	}
	if len(file.Archive) == 0 {
		return nil, fmt.Errorf("no \"archive\" entries")
	}
	f := &archived{paths: map[string]string{}}
	for _, p := range file.Archive {
		if !strings.HasPrefix(p.Path, "/") || !json.Valid([]byte(p.JSON)) {
			return nil, fmt.Errorf("bad entry for path %q", p.Path)
		}
		f.paths[p.Path] = p.JSON
		if p.Path == "/jobs/overview" {
			var o struct {
				Jobs []json.RawMessage `json:"jobs"`
			}
			if err := json.Unmarshal([]byte(p.JSON), &o); err != nil {
				return nil, fmt.Errorf("/jobs/overview: %w", err)
			}
			f.overview = o.Jobs
		}
	}
	return f, nil
}

// overviewJob is what the history server reads of a job's overview.
type overviewJob struct {
	JID     string `json:"jid"`
	Name    string `json:"name"`
	State   string `json:"state"`
	EndTime int64  `json:"end-time"`
}

// snapshot returns the archived jobs' overviews, the last ended first,
// and a lookup of the archived paths.
func (a *archives) snapshot() ([]json.RawMessage, func(path string) (string, bool)) {
	a.mu.Lock()
	defer a.mu.Unlock()
	type job struct {
		raw json.RawMessage
		o   overviewJob
	}
	var jobs []job
	files := make([]*archived, 0, len(a.files))
	for _, f := range a.files {
		files = append(files, f)
		for _, raw := range f.overview {
			var o overviewJob
			json.Unmarshal(raw, &o)
			jobs = append(jobs, job{raw, o})
		}
	}
	sort.Slice(jobs, func(i, j int) bool {
		if jobs[i].o.EndTime != jobs[j].o.EndTime {
			return jobs[i].o.EndTime > jobs[j].o.EndTime
		}
		return jobs[i].o.JID < jobs[j].o.JID
	})
	out := make([]json.RawMessage, len(jobs))
	for i, j := range jobs {
		out[i] = j.raw
	}
	return out, func(path string) (string, bool) {
		for _, f := range files {
			if js, ok := f.paths[path]; ok {
				return js, true
			}
		}
		return "", false
	}
}

// historyHandler serves the archives read-only.
func (s *Server) historyHandler(a *archives) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p := r.URL.Path
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			writeError(w, http.StatusMethodNotAllowed, "the history server is read-only")
			return
		}
		switch {
		case p == "/":
			serveAsset(w, "index.html")
			return
		case strings.HasPrefix(p, "/web/"):
			serveAsset(w, strings.TrimPrefix(p, "/web/"))
			return
		case p == "/healthz":
			writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
			return
		}
		if !s.authorized(r) {
			w.Header().Set("WWW-Authenticate", `Bearer realm="weir"`)
			writeError(w, http.StatusUnauthorized, "this history server needs its token (Authorization: Bearer TOKEN)")
			return
		}
		a.refresh(s.log.Warn)
		jobs, lookup := a.snapshot()
		switch p {
		case "/config":
			now := time.Now()
			name, offset := now.Zone()
			writeJSON(w, http.StatusOK, map[string]any{
				"refresh-interval": 10000, "timezone-name": name, "timezone-offset": offset * 1000,
				"flink-version": s.opts.Version, "flink-revision": "weir",
				"features": map[string]bool{"web-submit": false, "web-cancel": false, "web-rescale": false, "web-history": true},
			})
		case "/jobs/overview":
			writeJSON(w, http.StatusOK, map[string]any{"jobs": jobs})
		case "/jobs":
			type idStatus struct {
				ID     string `json:"id"`
				Status string `json:"status"`
				Name   string `json:"name"`
			}
			out := []idStatus{}
			for _, raw := range jobs {
				var o overviewJob
				json.Unmarshal(raw, &o)
				out = append(out, idStatus{o.JID, o.State, o.Name})
			}
			writeJSON(w, http.StatusOK, map[string]any{"jobs": out})
		case "/overview":
			o := clusterOverview{FlinkVersion: s.opts.Version, FlinkCommit: "weir"}
			for _, raw := range jobs {
				var j overviewJob
				json.Unmarshal(raw, &j)
				switch j.State {
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
		default:
			js, ok := lookup(p)
			if !ok {
				writeError(w, http.StatusNotFound, "Not found: "+p+" is in no archive")
				return
			}
			w.Header().Set("Content-Type", "application/json; charset=utf-8")
			w.Header().Set("X-Content-Type-Options", "nosniff")
			w.Write([]byte(js))
		}
	})
}
