package main

import (
	"debug/elf"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestDockerfileBuild checks deploy/Dockerfile without docker (this
// machine has none): it is multi-stage, its last stage runs as a non-root
// user, and the go build line it runs, run here from the repository's
// root with the same arguments, builds a statically linked binary of this
// job.
func TestDockerfileBuild(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("..", "Dockerfile"))
	if err != nil {
		t.Fatal(err)
	}
	df := string(data)
	if n := len(regexp.MustCompile(`(?m)^FROM `).FindAllString(df, -1)); n < 2 {
		t.Fatalf("%d stages, want a build stage and a runtime stage", n)
	}
	last := df[strings.LastIndex(df, "\nFROM "):]
	if !regexp.MustCompile(`(?m)^USER 65532(:65532)?$`).MatchString(last) || !strings.Contains(last, "COPY --from=build /out/job /job") {
		t.Fatalf("the runtime stage does not run /job as the non-root user 65532:\n%s", last)
	}
	args := map[string]string{}
	for _, m := range regexp.MustCompile(`(?m)^ARG (\w+)=(\S+)$`).FindAllStringSubmatch(df, -1) {
		args[m[1]] = m[2]
	}
	m := regexp.MustCompile(`(?m)^RUN (CGO_ENABLED=0 go build .*)$`).FindStringSubmatch(df)
	if m == nil {
		t.Fatal("no RUN CGO_ENABLED=0 go build line")
	}
	out := filepath.Join(t.TempDir(), "job")
	line := strings.Replace(m[1], "/out/job", out, 1)
	line = regexp.MustCompile(`\$\{(\w+)\}`).ReplaceAllStringFunc(line, func(v string) string {
		val, ok := args[v[2:len(v)-1]]
		if !ok {
			t.Fatalf("%s has no default (ARG)", v)
		}
		return val
	})
	t.Logf("running %s", line)
	cmd := exec.Command("sh", "-c", line)
	cmd.Dir = filepath.Join("..", "..") // the build context: the repository's root
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%s: %v\n%s", line, err, b)
	}
	f, err := elf.Open(out)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP || p.Type == elf.PT_DYNAMIC {
			t.Fatalf("the binary is dynamically linked (%v): it would not run in a distroless static image", p.Type)
		}
	}
}
