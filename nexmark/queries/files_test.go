package queries

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/nexmark"
)

func TestQ10(t *testing.T) {
	// 80 s of event time per generator: bids in two minutes of each
	// generator's timeline.
	cfg := nexmark.Config{Events: 16_000, Rate: 200, Seed: 3}
	s := generate(cfg, testParallelism)
	want := map[string][]string{}
	for _, b := range s.bids {
		at := time.UnixMilli(b.DateTime).UTC()
		dir := filepath.Join("dt="+at.Format("2006-01-02"), "hm="+at.Format("15:04"))
		want[dir] = append(want[dir], fmt.Sprintf("%d,%d,%d,%s,%s", b.Auction, b.Bidder, b.Price, at.Format("2006-01-02 15:04:05.000"), b.Extra))
	}
	if len(want) < 2 {
		t.Fatalf("%d partitions", len(want))
	}
	out := t.TempDir()
	env := weir.NewEnvironment(weir.WithParallelism(testParallelism))
	Q10(nexmark.Events(env, cfg), out)
	if err := env.Execute(context.Background(), "q10"); err != nil {
		t.Fatal(err)
	}
	got := map[string][]string{}
	err := filepath.WalkDir(out, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(out, filepath.Dir(path))
		if strings.HasPrefix(d.Name(), ".") {
			return fmt.Errorf("uncommitted file %s in %s", d.Name(), rel)
		}
		data, err := os.ReadFile(path)
		got[rel] = append(got[rel], strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")...)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	for dir, lines := range want {
		slices.Sort(lines)
		slices.Sort(got[dir])
		if !slices.Equal(got[dir], lines) {
			t.Errorf("partition %s: %d lines, want %d", dir, len(got[dir]), len(lines))
		}
	}
	if len(got) != len(want) {
		t.Errorf("%d partitions, want %d", len(got), len(want))
	}
	if n, err := CommittedRows(out); err != nil || n != int64(len(s.bids)) {
		t.Errorf("CommittedRows = %d, %v; want %d", n, err, len(s.bids))
	}
}

func TestQ13(t *testing.T) {
	s := generate(smallConfig, testParallelism)
	dir := t.TempDir()
	full := filepath.Join(dir, "side_input.txt")
	if err := WriteSideInput(full, SideInputRows); err != nil {
		t.Fatal(err)
	}
	// A side input with only the even keys: bids on odd ones find no row.
	var even strings.Builder
	for k := 0; k < SideInputRows; k += 2 {
		fmt.Fprintf(&even, "%d,v%d\n", k, k)
	}
	half := filepath.Join(dir, "even.txt")
	if err := os.WriteFile(half, []byte(even.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	var wantFull, wantHalf []Q13Result
	for _, b := range s.bids {
		k := b.Auction % 10_000
		wantFull = append(wantFull, Q13Result{b.Auction, b.Bidder, b.Price, b.DateTime, strconv.FormatInt(k, 10)})
		if k%2 == 0 {
			wantHalf = append(wantHalf, Q13Result{b.Auction, b.Bidder, b.Price, b.DateTime, "v" + strconv.FormatInt(k, 10)})
		}
	}
	for _, c := range []struct {
		path string
		want []Q13Result
	}{{full, wantFull}, {half, wantHalf}} {
		got := run(t, smallConfig, func(ev weir.DataStream[nexmark.Event]) weir.DataStream[Q13Result] { return Q13(ev, c.path) })
		sameMultiset(t, "q13 "+filepath.Base(c.path), got, c.want)
	}
	// A bad side input fails the job with the file and line.
	bad := filepath.Join(dir, "bad.txt")
	os.WriteFile(bad, []byte("1,a\nx\n"), 0o644)
	env := weir.NewEnvironment(weir.WithParallelism(1))
	weir.Discard(Q13(nexmark.Events(env, nexmark.Config{Events: 100}), bad))
	if err := env.Execute(context.Background(), "q13"); err == nil || !strings.Contains(err.Error(), "bad.txt line 2") {
		t.Fatalf("bad side input: %v", err)
	}
}
