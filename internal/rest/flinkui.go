package rest

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"mime"
	"net/http"
	"os"
	"path"
	"strings"
)

// Apache Flink's own web UI, served from a directory the operator gives
// (Options.FlinkUI: the web/ folder of org.apache.flink:flink-runtime-web,
// which scripts/flink-web.sh downloads; Weir ships none of its files).
// The UI is an Angular application whose REST base URL is "." (its
// ConfigService), relative to the page: served at /flink/, it asks for
// /flink/config, /flink/jobs/overview, ... So under FlinkUIPrefix a path
// names a file of the directory if there is one, and the REST API
// otherwise (the prefix removed). Files are read through an os.Root: no
// path, symbolic link or ".." leaves the directory.

// FlinkUIPrefix is the path Flink's web UI is served under.
const FlinkUIPrefix = "/flink/"

// flinkUI serves the UI of root under FlinkUIPrefix and the API (api)
// for the other paths there, and everything else with api.
func flinkUI(root *os.Root, api http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == strings.TrimSuffix(FlinkUIPrefix, "/") {
			http.Redirect(w, r, FlinkUIPrefix, http.StatusFound)
			return
		}
		rest, ok := strings.CutPrefix(r.URL.Path, FlinkUIPrefix)
		if !ok {
			api.ServeHTTP(w, r)
			return
		}
		name := rest
		if name == "" {
			name = "index.html"
		}
		if (r.Method == http.MethodGet || r.Method == http.MethodHead) && serveUIFile(w, r, root, name) {
			return
		}
		r = r.Clone(r.Context())
		r.URL.Path, r.URL.RawPath = "/"+rest, ""
		api.ServeHTTP(w, r)
	})
}

// serveUIFile serves the regular file name of root and reports whether
// there was one.
func serveUIFile(w http.ResponseWriter, r *http.Request, root *os.Root, name string) bool {
	name = path.Clean(name)
	if !fs.ValidPath(name) || name == "." {
		return false
	}
	f, err := root.Open(name)
	if err != nil {
		return false
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil || !st.Mode().IsRegular() {
		return false
	}
	if ct := mime.TypeByExtension(path.Ext(name)); ct != "" {
		w.Header().Set("Content-Type", ct)
	}
	w.Header().Set("X-Content-Type-Options", "nosniff")
	http.ServeContent(w, r, name, st.ModTime(), io.ReadSeeker(f))
	return true
}

// openFlinkUI opens dir, which must hold Flink's index.html.
func openFlinkUI(dir string) (*os.Root, error) {
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, fmt.Errorf("rest: Flink's web UI: %w", err)
	}
	if _, err := root.Stat("index.html"); err != nil {
		root.Close()
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("rest: Flink's web UI: %s has no index.html (give the web/ folder of flink-runtime-web: scripts/flink-web.sh)", dir)
		}
		return nil, fmt.Errorf("rest: Flink's web UI: %w", err)
	}
	return root, nil
}
