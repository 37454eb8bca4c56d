package savepoint_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"strings"
	"testing"
)

// TestExportedNamesDocumented: every exported name of the package has a
// doc comment.
func TestExportedNamesDocumented(t *testing.T) {
	fset := token.NewFileSet()
	pkgs, err := parser.ParseDir(fset, ".", func(fi fs.FileInfo) bool {
		return !strings.HasSuffix(fi.Name(), "_test.go")
	}, parser.ParseComments)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, pkg := range pkgs {
		for _, f := range pkg.Files {
			for _, d := range f.Decls {
				switch d := d.(type) {
				case *ast.FuncDecl:
					if d.Name.IsExported() && (d.Recv == nil || exportedRecv(d.Recv.List[0].Type)) {
						n++
						if d.Doc == nil {
							t.Errorf("%s: func %s has no doc comment", fset.Position(d.Pos()), d.Name.Name)
						}
					}
				case *ast.GenDecl:
					for _, s := range d.Specs {
						var names []*ast.Ident
						var doc *ast.CommentGroup
						switch s := s.(type) {
						case *ast.TypeSpec:
							names, doc = []*ast.Ident{s.Name}, s.Doc
							if st, ok := s.Type.(*ast.StructType); ok && s.Name.IsExported() {
								for _, fl := range st.Fields.List {
									for _, fn := range fl.Names {
										if fn.IsExported() && fl.Doc == nil && fl.Comment == nil {
											t.Errorf("%s: field %s.%s has no doc comment", fset.Position(fn.Pos()), s.Name.Name, fn.Name)
										}
									}
								}
							}
						case *ast.ValueSpec:
							names, doc = s.Names, s.Doc
						}
						if doc == nil {
							doc = d.Doc
						}
						for _, id := range names {
							if id.IsExported() {
								n++
								if doc == nil {
									t.Errorf("%s: %s has no doc comment", fset.Position(id.Pos()), id.Name)
								}
							}
						}
					}
				}
			}
		}
	}
	if n < 20 {
		t.Fatalf("found only %d exported names", n)
	}
}

// exportedRecv reports whether a method's receiver type is exported.
func exportedRecv(t ast.Expr) bool {
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
			return true
		}
	}
}

// TestOperationsSnippet: the snippet of docs/operations.md's section on
// the state processor API is Example's code (between "doc:begin" and
// "doc:end"), so it compiles and runs.
func TestOperationsSnippet(t *testing.T) {
	ex, err := os.ReadFile("example_test.go")
	if err != nil {
		t.Fatal(err)
	}
	src := string(ex)
	b, e := strings.Index(src, "// doc:begin\n"), strings.Index(src, "\t// doc:end")
	if b < 0 || e < b {
		t.Fatal("no doc:begin/doc:end in example_test.go")
	}
	var want []string
	for _, l := range strings.Split(strings.TrimRight(src[b+len("// doc:begin\n"):e], "\n"), "\n") {
		want = append(want, strings.TrimPrefix(l, "\t"))
	}
	doc, err := os.ReadFile("../docs/checkpoints.md")
	if err != nil {
		t.Fatal(err)
	}
	const title = "## Reading and writing savepoints (state processor API)\n"
	_, sec, ok := strings.Cut(string(doc), title)
	if !ok {
		t.Fatalf("docs/checkpoints.md has no section %q", strings.TrimSpace(title))
	}
	_, code, ok := strings.Cut(sec, "```go")
	_, code, _ = strings.Cut(code, "\n") // after "```go" or "```go fragment"
	if !ok {
		t.Fatal("the section has no Go snippet")
	}
	code, _, _ = strings.Cut(code, "```")
	if got := strings.TrimRight(code, "\n"); got != strings.Join(want, "\n") {
		t.Errorf("the snippet of docs/checkpoints.md differs from Example's code:\n%s\n--- want ---\n%s", got, strings.Join(want, "\n"))
	}
}
