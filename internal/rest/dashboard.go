package rest

import (
	"embed"
	"io/fs"
	"mime"
	"net/http"
	"path"
)

// The web dashboard: plain HTML, JavaScript and SVG embedded in the
// binary (no CDN, no build step), served at / and /web/<file>. Only the
// embedded files are served, looked up by exact name: no path reaches
// the file system.

//go:embed web
var webFS embed.FS

// assets maps a file name to its content.
var assets = func() map[string][]byte {
	m := map[string][]byte{}
	entries, err := fs.ReadDir(webFS, "web")
	if err != nil {
		panic(err)
	}
	for _, e := range entries {
		if e.IsDir() {
			continue
		}
		data, err := webFS.ReadFile("web/" + e.Name())
		if err != nil {
			panic(err)
		}
		m[e.Name()] = data
	}
	return m
}()

func (s *Server) routeDashboard(mux *http.ServeMux) {
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, r *http.Request) { serveAsset(w, "index.html") })
	mux.HandleFunc("GET /web/{file}", func(w http.ResponseWriter, r *http.Request) { serveAsset(w, r.PathValue("file")) })
}

func serveAsset(w http.ResponseWriter, name string) {
	data, ok := assets[name]
	if !ok {
		writeError(w, http.StatusNotFound, "Not found: /web/"+name)
		return
	}
	ct := mime.TypeByExtension(path.Ext(name))
	if ct == "" {
		ct = "application/octet-stream"
	}
	w.Header().Set("Content-Type", ct)
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.Header().Set("Content-Security-Policy", "default-src 'self'; img-src 'self' data:; style-src 'self'; script-src 'self'; connect-src 'self'")
	w.Write(data)
}
