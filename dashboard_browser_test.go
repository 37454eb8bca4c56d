package weir_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// chromium returns the path of a Chromium binary, or "" if there is none.
func chromium() string {
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	return ""
}

// TestDashboardInBrowser loads the dashboard of a running two-input job in
// a real headless Chromium: the page must load without console errors,
// draw the job's vertices and a watermark chart with both inputs of the
// join, and show the doctor's finding about the gap between them. It
// writes screenshots to $WEIR_SCREENSHOT_DIR (docs/img for the README) or
// a temporary directory. Without a browser it skips, unless the test
// command runs it (WEIR_REQUIRE_SERVICES=1), where it fails. It runs once:
// not under the race detector.
func TestDashboardInBrowser(t *testing.T) {
	if raceEnabled {
		t.Skip("the browser test runs once, without the race detector (scripts/test.sh runs it in its first pass)")
	}
	bin := chromium()
	if bin == "" {
		if os.Getenv("WEIR_REQUIRE_SERVICES") == "1" {
			t.Fatal("no Chromium found (apt-get install chromium); scripts/test.sh installs it")
		}
		t.Skip("no Chromium found; scripts/test.sh installs it")
	}
	_, base := startJoinJob(t)
	out := os.Getenv("WEIR_SCREENSHOT_DIR")
	if out == "" {
		out = t.TempDir()
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		t.Fatal(err)
	}
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(bin), chromedp.UserDataDir(t.TempDir()), chromedp.WindowSize(1400, 1800),
		chromedp.Flag("headless", true), chromedp.Flag("no-sandbox", true), chromedp.Flag("disable-gpu", true),
		chromedp.Flag("disable-quic", true), chromedp.Flag("no-first-run", true), chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true), chromedp.Flag("disable-sync", true), chromedp.Flag("disable-dev-shm-usage", true),
	}
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	defer cancelAlloc()
	ctx, cancel := chromedp.NewContext(actx)
	defer cancel()
	ctx, cancelTimeout := context.WithTimeout(ctx, 90*time.Second)
	defer cancelTimeout()

	var mu sync.Mutex
	var problems []string
	messages := chromedp.Console(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for m, err := range messages {
			if err != nil {
				return
			}
			if m.Type == chromedp.ConsoleError || m.Type == chromedp.ConsoleException {
				mu.Lock()
				problems = append(problems, m.String()+" "+m.URL)
				mu.Unlock()
			}
		}
	}()
	defer func() { cancel(); <-done }()
	poll := func(what, expr string) {
		t.Helper()
		if _, err := chromedp.Run(ctx, chromedp.Poll[bool](expr, chromedp.WithPollingInterval(100*time.Millisecond))); err != nil {
			mu.Lock()
			defer mu.Unlock()
			t.Fatalf("dashboard: waiting for %s: %v (console: %v)", what, err, problems)
		}
	}
	if err := chromedp.Do(ctx, chromedp.Navigate(base+"/"), chromedp.WaitVisible(chromedp.CSS("#graph g.vertex"))); err != nil {
		t.Fatalf("dashboard: %v", err)
	}
	poll("the job's three vertices", `document.querySelectorAll("#graph g.vertex").length === 3`)
	poll("a watermark chart of both inputs with their gap", `document.querySelectorAll("#wm-chart polyline.series").length === 2 && document.querySelector("#wm-chart polygon.gap") !== null`)
	poll("the doctor's watermark-gap finding", `document.querySelector('#doctor .finding[data-kind="watermark-gap"]') !== null`)
	poll("the checkpoint history", `document.querySelectorAll("#checkpoints tr").length > 1`)
	title, err := chromedp.Run(ctx, chromedp.Title())
	if err != nil || !strings.HasPrefix(title, "Weir") {
		t.Fatalf("title %q, %v", title, err)
	}
	shot := func(name string) {
		t.Helper()
		png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
		if err != nil {
			t.Fatalf("screenshot %s: %v", name, err)
		}
		if err := os.WriteFile(filepath.Join(out, name), png, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// Let the charts gather a few more samples.
	poll("a few samples", `document.querySelector("#wm-chart polyline.series").getAttribute("points").split(" ").length >= 6`)
	shot("dashboard.png")
	// The flame graph of the join vertex (profiled for 2 s).
	if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS("#flame-button"))); err != nil {
		t.Fatal(err)
	}
	poll("the flame graph", `document.querySelector("#flame-status").textContent.includes("samples")`)
	if err := chromedp.Do(ctx, chromedp.ScrollIntoView(chromedp.CSS("#flame"))); err != nil {
		t.Fatal(err)
	}
	shot("dashboard-flamegraph.png")
	mu.Lock()
	defer mu.Unlock()
	if len(problems) > 0 {
		t.Fatalf("console errors: %s", fmt.Sprint(problems))
	}
	t.Logf("screenshots in %s", out)
}
