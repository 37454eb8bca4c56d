package rest_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/rest"
)

// triggerCheckpoint takes a checkpoint through Flink's REST trigger (POST
// /jobs/:jobid/checkpoints, then GET .../checkpoints/:triggerid until
// COMPLETED) and returns its id.
func triggerCheckpoint(t *testing.T, base, jid string) int64 {
	t.Helper()
	code, body := send(t, "POST", base+"/jobs/"+jid+"/checkpoints", "", `{"checkpointType": "CONFIGURED"}`, "Content-Type: application/json")
	var trig struct {
		RequestID string `json:"request-id"`
	}
	if code != 202 || json.Unmarshal([]byte(body), &trig) != nil || trig.RequestID == "" {
		t.Fatalf("POST checkpoints: %d %s", code, body)
	}
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		code, body := send(t, "GET", base+"/jobs/"+jid+"/checkpoints/"+trig.RequestID, "", "")
		var st struct {
			Status    struct{ ID string }
			Operation struct {
				CheckpointID int64 `json:"checkpointId"`
				FailureCause any   `json:"failureCause"`
			}
		}
		if code != 200 || json.Unmarshal([]byte(body), &st) != nil {
			t.Fatalf("checkpoint status: %d %s", code, body)
		}
		if st.Status.ID == "COMPLETED" {
			if st.Operation.FailureCause != nil || st.Operation.CheckpointID <= 0 {
				t.Fatalf("checkpoint status: %s", body)
			}
			return st.Operation.CheckpointID
		}
		if time.Now().After(deadline) {
			t.Fatalf("checkpoint still in progress: %s", body)
		}
	}
}

// flinkWebDir returns the web/ folder of Flink's flink-runtime-web jar:
// $WEIR_FLINK_WEB (scripts/test.sh sets it from scripts/flink-web.sh), or
// the folder scripts/flink-web.sh extracts into .cache; "" if neither
// holds index.html.
func flinkWebDir() string {
	for _, dir := range []string{os.Getenv("WEIR_FLINK_WEB"), filepath.Join("..", ".cache", "flink-web", "2.2.1", "web")} {
		if dir == "" {
			continue
		}
		if _, err := os.Stat(filepath.Join(dir, "index.html")); err == nil {
			abs, err := filepath.Abs(dir)
			if err == nil {
				return abs
			}
		}
	}
	return ""
}

// browser returns the path of a Chromium binary, or "".
func browser() string {
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	return ""
}

// need skips the test without a service, or fails it under
// WEIR_REQUIRE_SERVICES=1 (scripts/test.sh).
func need(t *testing.T, ok bool, what string) {
	t.Helper()
	if ok {
		return
	}
	if os.Getenv("WEIR_REQUIRE_SERVICES") == "1" {
		t.Fatalf("%s (scripts/test.sh provides it)", what)
	}
	t.Skipf("%s (scripts/test.sh provides it)", what)
}

// TestFlinkWebUIInBrowser serves Apache Flink's own web UI (the files of
// flink-runtime-web 2.2.1, scripts/flink-web.sh) from a Weir job's REST
// server (rest.WithFlinkUI) and opens each of its pages in a headless
// Chromium: the overview, running jobs, the job graph, a vertex's
// details, subtasks, task managers, watermarks, backpressure, metrics
// and flame graph, the checkpoints (history, summary, configuration and
// one checkpoint's details), the exceptions, the timeline, the task
// manager's and the job manager's pages; it checks that each shows the
// job's names, counts and a checkpoint id, and that no REST call the UI
// made failed. It saves a screenshot of each page into
// $WEIR_SCREENSHOT_DIR, or the test's temporary directory. Without a
// browser or the UI's files it skips, unless WEIR_REQUIRE_SERVICES=1,
// where it fails.
func TestFlinkWebUIInBrowser(t *testing.T) {
	bin := browser()
	need(t, bin != "", "no Chromium found (apt-get install chromium)")
	web := flinkWebDir()
	need(t, web != "", "Flink's web UI is not downloaded (scripts/flink-web.sh; WEIR_FLINK_WEB)")
	out := os.Getenv("WEIR_SCREENSHOT_DIR")
	if out == "" {
		out = t.TempDir()
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		t.Fatal(err)
	}

	// A keyed job with checkpoints every 200 ms and a map that fails
	// once (an exception in the history, a restart).
	srv := rest.New("127.0.0.1:0", rest.WithFlinkUI(web), rest.WithOpenDetails())
	t.Cleanup(func() { srv.Close() })
	env := weir.NewEnvironment(weir.WithParallelism(2), weir.WithPlugin(srv),
		weir.WithRestartStrategy(weir.FixedDelayRestart(3, 0)), weir.WithAutoWatermarkInterval(50*time.Millisecond))
	// Checkpoints only on request (POST /jobs/:jobid/checkpoints), so
	// that their ids stay in the history the UI shows.
	env.EnableCheckpointing(time.Hour, weir.DefaultSavepointDir(t.TempDir()))
	var failed atomic.Bool
	strategy := weir.ForBoundedOutOfOrderness[int64](0).WithTimestampAssigner(func(v int64, _ int64) int64 { return 1_000_000 + v })
	src := weir.Generate(env, -1, 2000, func(i int64) int64 { return i }, strategy).Name("numbers").SetParallelism(1)
	squares := weir.Map(src, func(v int64) int64 {
		if v > 200 && failed.CompareAndSwap(false, true) {
			panic("injected failure for the exceptions page")
		}
		// Some CPU work for the on-CPU flame graph.
		x := v
		for range 20_000 {
			x = x*6364136223846793005 + 1442695040888963407
		}
		return v*v + x&1
	}).Name("squares")
	sums := weir.Sum(weir.KeyBy(squares, func(v int64) int64 { return v % 7 }), func(v int64) int64 { return v }, func(p *int64, v int64) { *p = v }).Name("sums")
	weir.Discard(sums)
	h := run(t, env, "flink-ui-demo")
	base := "http://" + srv.Addr()
	jid := h.ID()

	// Wait for the restart, then take two checkpoints through Flink's
	// REST trigger.
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		code, body := send(t, "GET", base+"/jobs/"+jid+"/status", "", "")
		if code == 200 && failed.Load() && strings.Contains(body, "RUNNING") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the job did not restart: %d %s", code, body)
		}
	}
	var cpID int64
	for range 2 {
		cpID = triggerCheckpoint(t, base, jid)
	}
	var detail struct {
		Vertices []struct {
			ID   string `json:"id"`
			Name string `json:"name"`
		} `json:"vertices"`
	}
	if code, body := send(t, "GET", base+"/jobs/"+jid, "", ""); code != 200 || json.Unmarshal([]byte(body), &detail) != nil {
		t.Fatalf("job details: %d %s", code, body)
	}
	vid := map[string]string{}
	for _, v := range detail.Vertices {
		vid[v.Name] = v.ID
	}
	t.Logf("vertices %v, checkpoint %d", vid, cpID)

	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(bin), chromedp.UserDataDir(t.TempDir()), chromedp.WindowSize(1400, 1000),
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
	current := "" // the page open, for the console's errors
	messages := chromedp.Console(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for m, err := range messages {
			if err != nil {
				return
			}
			// Leaving the exceptions page, Flink's UI (ng-zorro's
			// nz-code-editor) sometimes resizes the Monaco editor of the
			// stack trace it has just destroyed: its own bug, whatever
			// the data; every other error counts.
			if strings.Contains(m.String(), "Cannot read properties of null (reading 'layout')") {
				continue
			}
			if m.Type == chromedp.ConsoleError || m.Type == chromedp.ConsoleException {
				mu.Lock()
				problems = append(problems, current+": "+m.String()+" "+m.URL)
				mu.Unlock()
			}
		}
	}()
	defer func() { cancel(); <-done }()

	ui := base + "/flink/#"
	t0 := time.Now()
	shot := func(name string) {
		t.Helper()
		png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
		if err != nil {
			t.Fatalf("screenshot %s: %v", name, err)
		}
		if err := os.WriteFile(filepath.Join(out, name+".png"), png, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	text := func() string {
		s, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`document.body.innerText`))
		return strings.ReplaceAll(s, "\u00a0", " ")
	}
	// page opens path and waits until the page's text holds every want.
	page := func(name, path string, want ...string) {
		t.Helper()
		mu.Lock()
		current = name
		mu.Unlock()
		if err := chromedp.Do(ctx, chromedp.Navigate(ui+path)); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		var missing []string
		for end := time.Now().Add(15 * time.Second); ; {
			s := text()
			missing = missing[:0]
			for _, w := range want {
				if !strings.Contains(s, w) {
					missing = append(missing, w)
				}
			}
			if len(missing) == 0 || time.Now().After(end) {
				break
			}
			time.Sleep(100 * time.Millisecond)
		}
		shot(name)
		t.Logf("%s: %v", name, time.Since(t0))
		if len(missing) > 0 {
			t.Errorf("%s (%s): %q not shown; the page says:\n%s", name, path, missing, text())
		}
	}
	click := func(what, xpath string) {
		t.Helper()
		if err := chromedp.Do(ctx, chromedp.Click(xpath)); err != nil {
			t.Fatalf("clicking %s: %v", what, err)
		}
	}
	poll := func(what, expr string) {
		t.Helper()
		if _, err := chromedp.Run(ctx, chromedp.Poll[bool](expr, chromedp.WithPollingInterval(100*time.Millisecond), chromedp.WithPollingTimeout(20*time.Second))); err != nil {
			t.Fatalf("waiting for %s: %v\n%s", what, err, text())
		}
	}
	job := "/job/running/" + jid
	sq := job + "/overview/" + vid["squares"]
	page("overview", "/overview", "flink-ui-demo", "Available Task Slots", "Running Job")
	// Keep every request's timing (default: 250), to check them at the end.
	if _, err := chromedp.Run(ctx, chromedp.Evaluate[any](`performance.setResourceTimingBufferSize(1000000)`)); err != nil {
		t.Fatal(err)
	}
	page("running-jobs", "/job/running", "flink-ui-demo", "RUNNING")
	page("job-graph", job+"/overview", "flink-ui-demo", "numbers", "squares", "sums")
	poll("the job graph's three nodes in view", `(() => { const ns = [...document.querySelectorAll("flink-dagre g.node")];
		return ns.length === 3 && ns.every(n => { const r = n.getBoundingClientRect(); return r.width > 0 && r.top > 0 && r.bottom < innerHeight; }); })()`)
	shot("job-graph")
	page("vertex-detail", sq+"/detail", "squares", "Records Received")
	page("vertex-subtasks", sq+"/subtasks", "squares", "RUNNING", "localhost")
	page("vertex-taskmanagers", sq+"/taskmanagers", "squares", "localhost")
	// rows is the cells' texts of the tables' rows on the page.
	rows := `[...document.querySelectorAll("tbody tr")].map(r => [...r.querySelectorAll("td")].map(td => td.innerText.trim()))`
	page("vertex-watermarks", sq+"/watermarks", "squares", "Watermark")
	poll("each subtask's watermark", `(() => { const rs = `+rows+`.filter(c => c.length === 3 && /^[0-9]+$/.test(c[0])); return rs.length === 2 && rs.every(c => +c[1] > 1000000); })()`)
	shot("vertex-watermarks")
	page("vertex-backpressure", sq+"/backpressure", "squares", "Backpressure Status")
	poll("each subtask's backpressure level", `(() => { const rs = `+rows+`; return rs.filter(c => c.some(x => /^(OK|LOW|HIGH)$/.test(x))).length >= 2; })()`)
	shot("vertex-backpressure")
	page("vertex-metrics", sq+"/metrics", "squares", "Add Metric")
	// Each type of flame graph: Flink's UI first shows that it waits
	// for samples (this server's first request of that type), then the
	// graph, with a frame each type must have: the map's own function
	// on CPU, parked goroutines off CPU, the task loop in all.
	page("vertex-flamegraph", sq+"/flamegraph", "squares", "On-CPU", "Off-CPU", "Mixed")
	for i, c := range []struct{ typ, frame string }{
		{"On-CPU", "TestFlinkWebUIInBrowser"}, {"Off-CPU", "runtime.gopark"}, {"Mixed", "engine.(*Task).Run"},
	} {
		// On-CPU is the type the page asked for when it opened.
		if i > 0 {
			click(c.typ, `(//label[normalize-space()="`+c.typ+`"])[1]`)
			poll("the "+c.typ+" flame graph's wait for samples", `document.body.innerText.includes("waiting for the first samples")`)
		}
		poll("the "+c.typ+" flame graph with "+c.frame, fmt.Sprintf(`document.body.innerText.includes("Measurement:") && document.querySelectorAll("flink-flame-graph svg g").length > 3 && document.querySelector("flink-flame-graph svg").textContent.includes(%q)`, c.frame))
		shot("vertex-flamegraph-" + c.typ)
	}
	page("checkpoints", job+"/checkpoints", "Checkpoint Counts", "Completed: 2", fmt.Sprintf("ID: %d", cpID))
	click("a checkpoint's first operator", `(//flink-job-checkpoints-detail//*[contains(@class,"ant-table-row-expand-icon")])[1]`)
	poll("the subtasks of a checkpoint", `document.body.innerText.includes("Sync Duration") && document.body.innerText.includes("Async Duration")`)
	shot("checkpoint-details")
	click("the checkpoint history", `(//div[contains(@class,"ant-tabs-tab") and normalize-space()="History"])[1]`)
	poll("checkpoints "+fmt.Sprint(cpID-1)+" and "+fmt.Sprint(cpID)+" in the history", fmt.Sprintf(`[...document.querySelectorAll("flink-job-checkpoints tr td:nth-child(2)")].map(td => td.innerText.trim()).filter(s => s === "%d" || s === "%d").length === 2`, cpID-1, cpID))
	shot("checkpoint-history")
	page("exceptions", job+"/exceptions", "injected failure for the exceptions page")
	page("timeline", job+"/timeline", "Vertex TimeLine")
	poll("the timeline chart", `document.querySelector("flink-job-timeline canvas") !== null`)
	page("task-managers", "/task-manager", "weir")
	page("task-manager-metrics", "/task-manager/weir/metrics", "JVM Heap")
	page("job-manager-config", "/job-manager/config", "rest.address")
	page("job-manager-metrics", "/job-manager/metrics", "Heap")

	// Every REST call the UI made answered.
	failedCalls, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](`performance.getEntriesByType("resource").filter(e => e.responseStatus >= 400).map(e => e.responseStatus + " " + e.name)`))
	if err != nil {
		t.Fatal(err)
	}
	if len(failedCalls) > 0 {
		t.Errorf("REST calls of Flink's UI that failed: %v", failedCalls)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(problems) > 0 {
		t.Errorf("console errors: %v", problems)
	}
	t.Logf("screenshots in %s", out)
}
