package weir_test

// The shape of the public API, as issue 31 set it: what importing the root
// package costs, that no exported name exposes an internal type, and that
// the root stays the job author's API.

import (
	"bytes"
	"encoding/json"
	"fmt"
	"go/importer"
	"go/token"
	"go/types"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

const module = "github.com/weirstream/weir"

// Limits of the smallest program (testdata/footprint: FromSlice, FlatMap,
// Map, KeyBy, Sum, Print).
const (
	maxFootprintPackages = 200
	maxFootprintBytes    = 12 << 20
	// maxRootLines ratchets the root's size down: issue 31 aims at 5,000
	// non-test lines; v0.2.0 moved the interval join, two-phase commit,
	// the harness, the REST server and the backends out (11,375 -> 9,245),
	// then the tasks of every operator, job planning, failover, checkpoint
	// storage and the monitor model (-> 5,875), then the keyed operators'
	// key, state and timers, the memory checkpoint store and AsyncRetry
	// (-> 5,768), then the metrics API to package metrics (-> 5,407),
	// then the keyed operators' disk state and snapshots, the windows',
	// async I/O's and two-phase commit's assembly and the checkpoint
	// settings' checks (-> 4,949). What is left is the API, its doc
	// comments and the contexts that implement it. Never raise it.
	maxRootLines = 5000
)

// heavy are the dependencies a program pays for only when it imports the
// package that needs them.
var heavy = []string{
	"github.com/cockroachdb/pebble",
	"github.com/minio/",
	"github.com/twmb/franz-go",
	"github.com/prometheus/",
	"github.com/getsentry/",
	"github.com/google/pprof",
}

func goCmd(t *testing.T, args ...string) []byte {
	t.Helper()
	cmd := exec.Command("go", args...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
	}
	return out
}

// TestFootprint builds the smallest program and checks its dependencies and
// binary size.
func TestFootprint(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a binary")
	}
	deps := strings.Fields(string(goCmd(t, "list", "-deps", "./testdata/footprint")))
	var bad []string
	for _, d := range deps {
		for _, h := range heavy {
			if strings.HasPrefix(d, h) {
				bad = append(bad, d)
			}
		}
	}
	if len(bad) > 0 {
		t.Errorf("importing the root package links %d packages it should not: %s", len(bad), strings.Join(bad, " "))
	}
	if len(deps) > maxFootprintPackages {
		t.Errorf("the smallest program builds from %d packages (standard library included), want at most %d", len(deps), maxFootprintPackages)
	}
	bin := filepath.Join(t.TempDir(), "footprint")
	goCmd(t, "build", "-o", bin, "./testdata/footprint")
	fi, err := os.Stat(bin)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Size() > maxFootprintBytes {
		t.Errorf("the smallest program is %.1f MB, want at most %.1f MB", float64(fi.Size())/(1<<20), float64(maxFootprintBytes)/(1<<20))
	}
	t.Logf("footprint: %d packages, %.1f MB", len(deps), float64(fi.Size())/(1<<20))
}

// TestRootSize keeps the root package the job author's API: engines live
// below internal/.
func TestRootSize(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	lines := 0
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		lines += bytes.Count(b, []byte{'\n'})
	}
	if lines > maxRootLines {
		t.Errorf("the root package has %d non-test lines, want at most %d (the goal is 5,000): move engines below internal/", lines, maxRootLines)
	}
	t.Logf("root package: %d non-test lines", lines)
}

type listedPackage struct {
	ImportPath string
	Export     string
	Name       string
}

// publicPackages lists the module's importable non-internal library
// packages, and the export data of everything they depend on.
func publicPackages(t *testing.T) (public []string, export map[string]string) {
	out := goCmd(t, "list", "-export", "-deps", "-json=ImportPath,Export,Name", "./...")
	export = map[string]string{}
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var p listedPackage
		if err := dec.Decode(&p); err == io.EOF {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		export[p.ImportPath] = p.Export
		if p.Name == "main" || !strings.HasPrefix(p.ImportPath, module) || isInternal(p.ImportPath) {
			continue
		}
		public = append(public, p.ImportPath)
	}
	sort.Strings(public)
	return public, export
}

func isInternal(path string) bool {
	return strings.HasPrefix(path, module) &&
		(strings.Contains(path, "/internal/") || strings.HasSuffix(path, "/internal"))
}

// TestNoInternalTypesInAPI checks, with go/types, that no exported
// identifier of a public package has a type from an internal package in
// its signature: functions, methods, struct fields, interface methods,
// type parameters' constraints, variables, constants and aliases.
func TestNoInternalTypesInAPI(t *testing.T) {
	if testing.Short() {
		t.Skip("builds export data of the module")
	}
	public, export := publicPackages(t)
	fset := token.NewFileSet()
	imp := importer.ForCompiler(fset, "gc", func(path string) (io.ReadCloser, error) {
		f, ok := export[path]
		if !ok || f == "" {
			return nil, fmt.Errorf("no export data for %s", path)
		}
		return os.Open(f)
	})
	var found []string
	for _, path := range public {
		pkg, err := imp.Import(path)
		if err != nil {
			t.Fatalf("import %s: %v", path, err)
		}
		c := &apiChecker{pkg: pkg, seen: map[types.Type]bool{}}
		scope := pkg.Scope()
		for _, name := range scope.Names() {
			obj := scope.Lookup(name)
			if !obj.Exported() {
				continue
			}
			c.where = pkg.Path() + "." + name
			c.object(obj)
		}
		found = append(found, c.found...)
	}
	sort.Strings(found)
	for _, f := range found {
		t.Error(f)
	}
	if len(found) > 0 {
		t.Errorf("%d exported identifiers expose internal types", len(found))
	}
}

type apiChecker struct {
	pkg   *types.Package
	where string
	seen  map[types.Type]bool
	found []string
}

func (c *apiChecker) object(obj types.Object) {
	switch o := obj.(type) {
	case *types.TypeName:
		if o.IsAlias() {
			c.typ(types.Unalias(o.Type()))
			return
		}
		named, ok := o.Type().(*types.Named)
		if !ok {
			c.typ(o.Type())
			return
		}
		c.typeParams(named.TypeParams())
		c.underlying(named.Underlying())
		for i := 0; i < named.NumMethods(); i++ {
			m := named.Method(i)
			if m.Exported() {
				where := c.where
				c.where += "." + m.Name()
				c.typ(m.Type())
				c.where = where
			}
		}
	default:
		c.typ(obj.Type())
	}
}

func (c *apiChecker) typeParams(tps *types.TypeParamList) {
	for i := 0; i < tps.Len(); i++ {
		c.typ(tps.At(i).Constraint())
	}
}

// underlying checks the exported parts of a type declared by a public
// package.
func (c *apiChecker) underlying(u types.Type) {
	switch u := u.(type) {
	case *types.Struct:
		for i := 0; i < u.NumFields(); i++ {
			if f := u.Field(i); f.Exported() {
				c.typ(f.Type())
			}
		}
	case *types.Interface:
		for i := 0; i < u.NumExplicitMethods(); i++ {
			if m := u.ExplicitMethod(i); m.Exported() {
				c.typ(m.Type())
			}
		}
		for i := 0; i < u.NumEmbeddeds(); i++ {
			c.typ(u.EmbeddedType(i))
		}
	default:
		c.typ(u)
	}
}

func (c *apiChecker) typ(t types.Type) {
	if t == nil || c.seen[t] {
		return
	}
	c.seen[t] = true
	defer delete(c.seen, t)
	switch t := t.(type) {
	case *types.Alias:
		c.typ(types.Unalias(t))
	case *types.Named:
		if p := t.Obj().Pkg(); p != nil && isInternal(p.Path()) {
			c.found = append(c.found, fmt.Sprintf("%s exposes %s.%s", c.where, p.Path(), t.Obj().Name()))
			return
		}
		args := t.TypeArgs()
		for i := 0; i < args.Len(); i++ {
			c.typ(args.At(i))
		}
		// A named type of this package that is unexported is part of
		// the signature as it is: look inside it.
		if p := t.Obj().Pkg(); p == c.pkg && !t.Obj().Exported() {
			c.underlying(t.Underlying())
		}
	case *types.Pointer:
		c.typ(t.Elem())
	case *types.Slice:
		c.typ(t.Elem())
	case *types.Array:
		c.typ(t.Elem())
	case *types.Map:
		c.typ(t.Key())
		c.typ(t.Elem())
	case *types.Chan:
		c.typ(t.Elem())
	case *types.Signature:
		c.typeParams(t.TypeParams())
		for i := 0; i < t.Params().Len(); i++ {
			c.typ(t.Params().At(i).Type())
		}
		for i := 0; i < t.Results().Len(); i++ {
			c.typ(t.Results().At(i).Type())
		}
	case *types.Struct, *types.Interface:
		c.underlying(t)
	case *types.Union:
		for i := 0; i < t.Len(); i++ {
			c.typ(t.Term(i).Type())
		}
	case *types.TypeParam:
		// checked through its list
	}
}
