package weir_test

// The docs cannot rot: TestDocsCompile compiles every Go block of
// README.md and docs/*.md against the code of this module, and
// TestDocsLinks checks that every relative link resolves.
//
// A ```go block is one of:
//   - a whole file: its first line that is not a comment is a package
//     clause; it is compiled as a package of its own;
//   - a fragment: the info string is "go fragment". If it parses as
//     top-level declarations it is added as they are to its page's
//     package, else it is wrapped as the body of a function (every
//     variable it declares at its top level is then used, so that a
//     fragment may leave one unused). Its imports are inferred from the
//     package names it uses (docImports); a fragment may use names that
//     another fragment of the same page or a setup comment declares.
//
// A setup comment, invisible when the page is rendered, declares what a
// page's fragments use without showing it:
//
//	<!-- go setup
//	type Click struct{ User string; At int64 }
//	-->
//
// Any other ```go block (no package clause, no marker) fails the test.

import (
	"bufio"
	"bytes"
	"fmt"
	"go/ast"
	"go/format"
	"go/parser"
	"go/scanner"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
)

// docImports maps the package names a fragment may use to their import
// paths.
var docImports = map[string]string{
	"weir":         "github.com/weirstream/weir",
	"window":       "github.com/weirstream/weir/window",
	"state":        "github.com/weirstream/weir/state",
	"kafka":        "github.com/weirstream/weir/connector/kafka",
	"registry":     "github.com/weirstream/weir/connector/kafka/registry",
	"file":         "github.com/weirstream/weir/connector/file",
	"socket":       "github.com/weirstream/weir/connector/socket",
	"connector":    "github.com/weirstream/weir/connector",
	"s3":           "github.com/weirstream/weir/storage/s3",
	"kafkacluster": "github.com/weirstream/weir/kafkacluster",
	"rest":         "github.com/weirstream/weir/rest",
	"pebble":       "github.com/weirstream/weir/state/pebble",
	"weirtest":     "github.com/weirstream/weir/weirtest",
	"context":      "context",
	"errors":       "errors",
	"fmt":          "fmt",
	"io":           "io",
	"log":          "log",
	"maps":         "maps",
	"os":           "os",
	"regexp":       "regexp",
	"savepoint":    "github.com/weirstream/weir/savepoint",
	"signal":       "os/signal",
	"slog":         "log/slog",
	"strings":      "strings",
	"syscall":      "syscall",
	"testing":      "testing",
	"time":         "time",
}

// docBlock is one ```go block or setup comment of a markdown file.
type docBlock struct {
	file string // markdown file, relative to the repository root
	line int    // line of the opening fence
	kind string // "file", "fragment" or "setup"
	code string
}

// docFiles returns README.md and docs/*.md.
func docFiles(t *testing.T) []string {
	t.Helper()
	files, err := filepath.Glob("docs/*.md")
	if err != nil {
		t.Fatal(err)
	}
	return append([]string{"README.md"}, files...)
}

var packageClause = regexp.MustCompile(`^package [A-Za-z_][A-Za-z0-9_]*\s*$`)

// isWholeFile reports whether code's first line that is not a comment or
// blank is a package clause.
func isWholeFile(code string) bool {
	inBlock := false
	for _, l := range strings.Split(code, "\n") {
		l = strings.TrimSpace(l)
		switch {
		case inBlock:
			if strings.Contains(l, "*/") {
				inBlock = false
			}
		case l == "" || strings.HasPrefix(l, "//"):
		case strings.HasPrefix(l, "/*"):
			inBlock = !strings.Contains(l, "*/")
		default:
			return packageClause.MatchString(l)
		}
	}
	return false
}

// extractBlocks returns the Go blocks and setup comments of a markdown
// file. Blocks of other languages are skipped.
func extractBlocks(t *testing.T, name string) []docBlock {
	t.Helper()
	data, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	var (
		blocks []docBlock
		cur    *docBlock
		fence  string
		body   []string
	)
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(nil, 1<<20)
	for n := 1; sc.Scan(); n++ {
		l := sc.Text()
		trimmed := strings.TrimSpace(l)
		switch {
		case cur == nil && fence == "" && strings.HasPrefix(trimmed, "```"):
			fence = trimmed[:strings.LastIndex(trimmed, "`")+1]
			info := strings.Fields(strings.TrimPrefix(trimmed, fence))
			if len(info) > 0 && info[0] == "go" {
				kind := ""
				if len(info) > 1 && info[1] == "fragment" {
					kind = "fragment"
				}
				cur = &docBlock{file: name, line: n, kind: kind}
			}
			body = nil
		case fence != "" && strings.HasPrefix(trimmed, fence) && strings.TrimLeft(trimmed, "`") == "":
			if cur != nil {
				cur.code = strings.Join(body, "\n") + "\n"
				if cur.kind == "" && isWholeFile(cur.code) {
					cur.kind = "file"
				}
				blocks = append(blocks, *cur)
			}
			cur, fence = nil, ""
		case fence != "":
			body = append(body, l)
		case trimmed == "<!-- go setup":
			cur = &docBlock{file: name, line: n, kind: "setup"}
			body = nil
		case cur != nil && cur.kind == "setup":
			if trimmed == "-->" {
				cur.code = strings.Join(body, "\n") + "\n"
				blocks = append(blocks, *cur)
				cur = nil
			} else {
				body = append(body, l)
			}
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if cur != nil || fence != "" {
		t.Errorf("%s: a code block or setup comment is not closed", name)
	}
	return blocks
}

// usedImports returns the import block for the package names code uses:
// identifiers of docImports followed by a dot, outside comments and
// strings.
func usedImports(code string) string {
	fset := token.NewFileSet()
	var sc scanner.Scanner
	sc.Init(fset.AddFile("", -1, len(code)), []byte(code), nil, 0)
	used := map[string]bool{}
	prev, prevLit, before := token.ILLEGAL, "", token.ILLEGAL
	for {
		_, tok, lit := sc.Scan()
		if tok == token.EOF {
			break
		}
		if tok == token.PERIOD && prev == token.IDENT && before != token.PERIOD {
			if _, ok := docImports[prevLit]; ok {
				used[docImports[prevLit]] = true
			}
		}
		before, prev, prevLit = prev, tok, lit
	}
	if len(used) == 0 {
		return ""
	}
	var paths []string
	for p := range used {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	return "import (\n\t\"" + strings.Join(paths, "\"\n\t\"") + "\"\n)\n"
}

// fragmentFile turns a fragment or setup block into a Go file of package
// pkg, with a comment mapping it back to the markdown.
func fragmentFile(t *testing.T, b docBlock, pkg string) string {
	t.Helper()
	head := fmt.Sprintf("// %s:%d\n\npackage %s\n\n%s\n", b.file, b.line, pkg, usedImports(b.code))
	if _, err := parser.ParseFile(token.NewFileSet(), "", "package p\n"+b.code, 0); err == nil {
		return head + b.code
	}
	// Statements: wrap them into a function and use every variable they
	// declare at their top level.
	src := "package p\nfunc _() {\n" + b.code + "\n}\n"
	f, err := parser.ParseFile(token.NewFileSet(), "", src, 0)
	if err != nil {
		t.Errorf("%s:%d: the fragment is neither declarations nor statements: %v", b.file, b.line, err)
		return head
	}
	var uses []string
	for _, st := range f.Decls[0].(*ast.FuncDecl).Body.List {
		var names []*ast.Ident
		switch s := st.(type) {
		case *ast.AssignStmt:
			if s.Tok == token.DEFINE {
				for _, e := range s.Lhs {
					if id, ok := e.(*ast.Ident); ok {
						names = append(names, id)
					}
				}
			}
		case *ast.DeclStmt:
			if g, ok := s.Decl.(*ast.GenDecl); ok && g.Tok == token.VAR {
				for _, sp := range g.Specs {
					names = append(names, sp.(*ast.ValueSpec).Names...)
				}
			}
		}
		for _, id := range names {
			if id.Name != "_" {
				uses = append(uses, "\t_ = "+id.Name+"\n")
			}
		}
	}
	return head + "func _() {\n" + b.code + strings.Join(uses, "") + "}\n"
}

// TestDocsCompile compiles every Go block of README.md and docs/*.md.
func TestDocsCompile(t *testing.T) {
	if testing.Short() {
		t.Skip("compiles the docs' code with the go command")
	}
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command")
	}
	// The packages live in a directory of this module, so that they
	// compile against this code; its name starts with "_", so that
	// ./... patterns do not see it.
	root, err := os.MkdirTemp(".", "_doctest")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(root) })

	var dirs []string
	where := map[string]string{} // generated file -> markdown place
	write := func(dir, name, src string, b docBlock) {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		if out, err := format.Source([]byte(src)); err == nil {
			src = string(out)
		}
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
		where[filepath.ToSlash(filepath.Clean(p))] = fmt.Sprintf("%s:%d", b.file, b.line)
	}
	blocks := 0
	for _, md := range docFiles(t) {
		page := strings.TrimSuffix(filepath.Base(md), ".md")
		page = strings.ToLower(regexp.MustCompile(`[^A-Za-z0-9]+`).ReplaceAllString(page, "_"))
		fragDir := filepath.Join(root, page)
		fragments := false
		for i, b := range extractBlocks(t, md) {
			blocks++
			switch b.kind {
			case "file":
				dir := filepath.Join(root, fmt.Sprintf("%s_%d", page, i))
				write(dir, "main.go", fmt.Sprintf("// %s:%d\n\n%s", b.file, b.line, b.code), b)
				dirs = append(dirs, dir)
			case "fragment", "setup":
				write(fragDir, fmt.Sprintf("block%d.go", i), fragmentFile(t, b, "doc"), b)
				fragments = true
			default:
				t.Errorf("%s:%d: a ```go block with no package clause must be marked ```go fragment", b.file, b.line)
			}
		}
		if fragments {
			dirs = append(dirs, fragDir)
		}
	}
	if len(dirs) == 0 {
		t.Fatal("no Go blocks found")
	}
	args := []string{"vet"}
	for _, d := range dirs {
		args = append(args, "./"+filepath.ToSlash(d))
	}
	cmd := exec.Command(goTool, args...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		// Name the markdown file and line of each error's block.
		msg := string(out)
		for gen, md := range where {
			msg = strings.ReplaceAll(msg, gen, gen+" ("+md+")")
		}
		t.Fatalf("go vet of the docs' Go blocks: %v\n%s", err, msg)
	}
	t.Logf("%d blocks in %d packages compile", blocks, len(dirs))
}

var (
	mdLink    = regexp.MustCompile(`!?\[[^\]]*\]\(([^)\s]+)(?:\s+"[^"]*")?\)`)
	mdHeading = regexp.MustCompile(`^#{1,6}\s+(.*?)\s*#*\s*$`)
	// inlineCode is a code span, whose brackets are no link.
	inlineCode = regexp.MustCompile("`[^`]*`")
)

// anchors returns the anchors GitHub gives the headings of a markdown
// file.
func anchors(t *testing.T, name string) map[string]bool {
	t.Helper()
	data, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]int{}
	out := map[string]bool{}
	inFence := false
	for _, l := range strings.Split(string(data), "\n") {
		if strings.HasPrefix(strings.TrimSpace(l), "```") {
			inFence = !inFence
			continue
		}
		m := mdHeading.FindStringSubmatch(l)
		if inFence || m == nil {
			continue
		}
		var b strings.Builder
		for _, r := range strings.ToLower(m[1]) {
			switch {
			case r == ' ' || r == '-':
				b.WriteRune('-')
			case r == '_' || r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r > 127:
				b.WriteRune(r)
			}
		}
		a := b.String()
		if n := seen[a]; n > 0 {
			out[fmt.Sprintf("%s-%d", a, n)] = true
		} else {
			out[a] = true
		}
		seen[a]++
	}
	return out
}

// TestDocsLinks checks that every relative link of README.md and
// docs/*.md names a file or directory of the repository (and, for a
// markdown file, one of its headings after a #), and that no page points
// outside the repository.
func TestDocsLinks(t *testing.T) {
	abs, err := filepath.Abs(".")
	if err != nil {
		t.Fatal(err)
	}
	for _, md := range docFiles(t) {
		data, err := os.ReadFile(md)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(data), "../shared") {
			t.Errorf("%s points to ../shared, outside the repository", md)
		}
		inFence, inComment := false, false
		for i, l := range strings.Split(string(data), "\n") {
			trimmed := strings.TrimSpace(l)
			switch {
			case inComment:
				inComment = !strings.Contains(l, "-->")
				continue
			case strings.HasPrefix(trimmed, "```"):
				inFence = !inFence
			case !inFence && strings.HasPrefix(trimmed, "<!--") && !strings.Contains(l, "-->"):
				inComment = true
				continue
			}
			if inFence {
				continue
			}
			for _, m := range mdLink.FindAllStringSubmatch(inlineCode.ReplaceAllString(l, ""), -1) {
				target := m[1]
				if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
					continue
				}
				path, anchor, _ := strings.Cut(target, "#")
				resolved := md
				if path != "" {
					resolved = filepath.Join(filepath.Dir(md), filepath.FromSlash(path))
				}
				full, err := filepath.Abs(resolved)
				if err != nil {
					t.Fatal(err)
				}
				if full != abs && !strings.HasPrefix(full, abs+string(filepath.Separator)) {
					t.Errorf("%s:%d: %s points outside the repository", md, i+1, target)
					continue
				}
				if _, err := os.Stat(resolved); err != nil {
					t.Errorf("%s:%d: broken link %s: %v", md, i+1, target, err)
					continue
				}
				if anchor != "" && strings.HasSuffix(resolved, ".md") && !anchors(t, resolved)[anchor] {
					t.Errorf("%s:%d: %s has no heading #%s", md, i+1, path, anchor)
				}
			}
		}
	}
}
