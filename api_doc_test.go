package weir_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"strings"
	"testing"
	"unsafe"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/internal/engine"
)

// TestPublicAPIDocumented: in the packages a user reads (weir, window,
// state), every exported name has a doc comment, and no exported type is
// an alias (whose fields and methods go doc would not show: the type must
// be defined where it is documented) but of a type of package connector.
func TestPublicAPIDocumented(t *testing.T) {
	for _, dir := range []string{".", "window", "state"} {
		fset := token.NewFileSet()
		pkgs, err := parser.ParseDir(fset, dir, func(fi fs.FileInfo) bool {
			return !strings.HasSuffix(fi.Name(), "_test.go")
		}, parser.ParseComments)
		if err != nil {
			t.Fatal(err)
		}
		for _, pkg := range pkgs {
			for name, f := range pkg.Files {
				checkFileDocs(t, fset, name, f)
			}
		}
	}
}

// aliasOfConnector reports whether an alias names a type of package
// connector, which defines and documents it: the root's Record and
// two-phase-commit sink are the connector API's, one type for both.
func aliasOfConnector(e ast.Expr) bool {
	switch x := e.(type) {
	case *ast.IndexExpr:
		return aliasOfConnector(x.X)
	case *ast.IndexListExpr:
		return aliasOfConnector(x.X)
	case *ast.SelectorExpr:
		id, ok := x.X.(*ast.Ident)
		return ok && id.Name == "connector"
	}
	return false
}

func checkFileDocs(t *testing.T, fset *token.FileSet, name string, f *ast.File) {
	t.Helper()
	undocumented := func(what string, pos token.Pos) {
		t.Errorf("%s: exported %s has no doc comment", fset.Position(pos), what)
	}
	for _, d := range f.Decls {
		switch d := d.(type) {
		case *ast.FuncDecl:
			if !d.Name.IsExported() || d.Doc != nil {
				continue
			}
			if d.Recv != nil && !exportedRecv(d.Recv) {
				continue
			}
			undocumented("func "+d.Name.Name, d.Pos())
		case *ast.GenDecl:
			for _, s := range d.Specs {
				switch s := s.(type) {
				case *ast.TypeSpec:
					if !s.Name.IsExported() {
						continue
					}
					if s.Assign != 0 && !aliasOfConnector(s.Type) {
						t.Errorf("%s: exported type %s is an alias; define it here so go doc shows its fields and methods", fset.Position(s.Pos()), s.Name.Name)
					}
					if s.Doc == nil && d.Doc == nil {
						undocumented("type "+s.Name.Name, s.Pos())
					}
				case *ast.ValueSpec:
					for _, n := range s.Names {
						if n.IsExported() && s.Doc == nil && d.Doc == nil {
							undocumented(n.Name, n.Pos())
						}
					}
				}
			}
		}
	}
}

// exportedRecv reports whether a method's receiver type is exported.
func exportedRecv(r *ast.FieldList) bool {
	if len(r.List) == 0 {
		return false
	}
	t := r.List[0].Type
	for {
		switch x := t.(type) {
		case *ast.StarExpr:
			t = x.X
		case *ast.IndexExpr:
			t = x.X
		case *ast.IndexListExpr:
			t = x.X
		case *ast.Ident:
			return x.IsExported()
		default:
			return false
		}
	}
}

// TestRecordLayout: Record and the runtime's record type share one layout,
// which the source adapter relies on to hand a reader the runtime's buffer
// without copying (source_api.go).
func TestRecordLayout(t *testing.T) {
	var r weir.Record[[3]int16]
	var rr engine.Record[[3]int16]
	if unsafe.Sizeof(r) != unsafe.Sizeof(rr) || unsafe.Offsetof(r.TS) != unsafe.Offsetof(rr.TS) || unsafe.Alignof(r) != unsafe.Alignof(rr) {
		t.Fatal("Record's layout differs from the runtime's record type")
	}
	_ = engine.Record[int](weir.Record[int]{}) // identical underlying types, or this does not compile
}
