package connector_test

import (
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/weirstream/weir/connector"
	"github.com/weirstream/weir/internal/keygroup"
)

// pendingInternal lists the internal imports a connector package still
// has for a reason outside the connector API, by package directory and
// imported path. Keep it empty.
var pendingInternal = map[string]string{}

// TestConnectorsUsePublicAPI fails if a connector package (this one,
// connector/kafka, connector/file, connector/socket, any other under
// connector/) imports a package of Weir's internal/ tree outside its
// tests: connectors are written against the public connector API alone.
func TestConnectorsUsePublicAPI(t *testing.T) {
	dirs := []string{"."}
	entries, err := os.ReadDir(".")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if e.IsDir() && !strings.HasPrefix(e.Name(), ".") && e.Name() != "testdata" {
			dirs = append(dirs, e.Name())
		}
	}
	checked := 0
	for _, dir := range dirs {
		files, _ := filepath.Glob(filepath.Join(dir, "*.go"))
		for _, f := range files {
			if strings.HasSuffix(f, "_test.go") {
				continue
			}
			checked++
			af, err := parser.ParseFile(token.NewFileSet(), f, nil, parser.ImportsOnly)
			if err != nil {
				t.Fatal(err)
			}
			for _, imp := range af.Imports {
				path, _ := strconv.Unquote(imp.Path.Value)
				rest, ok := strings.CutPrefix(path, "github.com/weirstream/weir/")
				if !ok || !(rest == "internal" || strings.HasPrefix(rest, "internal/")) {
					continue
				}
				if _, ok := pendingInternal[filepath.Base(dir)+" "+rest]; ok {
					continue
				}
				t.Errorf("%s imports %s: connectors may use only public packages", f, path)
			}
		}
	}
	if checked < 6 {
		t.Fatalf("checked only %d files; run from connector/", checked)
	}
}

func TestStringHashCodeIsKeyGroupHash(t *testing.T) {
	for _, s := range []string{"", "a", "orders", "héllo", "日本語", "\U0001F600x", "\xff\xfe", "topic-7"} {
		if got, want := connector.StringHashCode(s), keygroup.HashString(s); got != want {
			t.Errorf("StringHashCode(%q) = %d, keygroup.HashString = %d", s, got, want)
		}
	}
}
