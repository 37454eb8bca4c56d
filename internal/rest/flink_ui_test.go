package rest

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"runtime/pprof"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"
)

// The resources Flink's web UI reads besides the job's (flink_cluster.go,
// flink_subtasks.go, the manual checkpoint trigger, the flame graph types)
// and the serving of the UI's files (flinkui.go). The field names are
// those of flink-runtime's message classes (TaskManagerInfo,
// TaskManagerDetailsInfo, TaskManagerMetricsInfo, EnvironmentInfo,
// SubtaskExecutionAttemptDetailsInfo, SubtasksTimesInfo,
// AggregatedTaskDetailsInfo, JobVertexTaskManagersInfo,
// JobExecutionResultResponseBody, CheckpointInfo, VertexFlameGraph).

// keys returns the keys of a decoded JSON object, sorted.
func keys(t *testing.T, v any) []string {
	t.Helper()
	m, ok := v.(map[string]any)
	if !ok {
		t.Fatalf("not an object: %v", v)
	}
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// sameKeys fails unless object v has exactly the keys want.
func sameKeys(t *testing.T, what string, v any, want ...string) {
	t.Helper()
	sort.Strings(want)
	if got := keys(t, v); !slices.Equal(got, want) {
		t.Errorf("%s has fields %v, want Flink's %v", what, got, want)
	}
}

func num(t *testing.T, v any) int64 {
	t.Helper()
	n, err := strconv.ParseInt(string(v.(json.Number)), 10, 64)
	if err != nil {
		t.Fatalf("%v is not an integer", v)
	}
	return n
}

var (
	resourceProfileFields = []string{"cpuCores", "taskHeapMemory", "taskOffHeapMemory", "managedMemory", "networkMemory", "extendedResources"}
	taskManagerInfoFields = []string{"id", "path", "dataPort", "jmxPort", "timeSinceLastHeartbeat", "slotsNumber", "freeSlots",
		"assignedTasks", "totalResource", "freeResource", "hardware", "memoryConfiguration"}
	statisticsFields = []string{"min", "max", "avg", "sum", "median", "p25", "p75", "p95"}
)

func TestTaskManagers(t *testing.T) {
	_, _, base := start(t, Options{})
	var list map[string]any
	getJSON(t, base+"/taskmanagers", 200, &list)
	sameKeys(t, "TaskManagersInfo", list, "taskmanagers")
	tm := field(t, list, "taskmanagers", 0)
	// blocked is left out when false (JsonInclude NON_DEFAULT).
	sameKeys(t, "TaskManagerInfo", tm, taskManagerInfoFields...)
	expect(t, "id", field(t, tm, "id"), "weir")
	expect(t, "slotsNumber", field(t, tm, "slotsNumber"), 4)
	expect(t, "freeSlots", field(t, tm, "freeSlots"), 0)
	sameKeys(t, "totalResource", field(t, tm, "totalResource"), resourceProfileFields...)
	sameKeys(t, "hardware", field(t, tm, "hardware"), "cpuCores", "physicalMemory", "freeMemory", "managedMemory")
	sameKeys(t, "memoryConfiguration", field(t, tm, "memoryConfiguration"), "frameworkHeap", "taskHeap", "frameworkOffHeap",
		"taskOffHeap", "networkMemory", "managedMemory", "jvmMetaspace", "jvmOverhead", "totalFlinkMemory", "totalProcessMemory")
	if num(t, field(t, tm, "memoryConfiguration", "taskHeap")) <= 0 {
		t.Error("taskHeap is not the Go heap's size")
	}

	var d map[string]any
	getJSON(t, base+"/taskmanagers/weir", 200, &d)
	sameKeys(t, "TaskManagerDetailsInfo", d, append([]string{"allocatedSlots", "metrics"}, taskManagerInfoFields...)...)
	if slots := field(t, d, "allocatedSlots").([]any); len(slots) != 4 {
		t.Errorf("allocatedSlots: %v, want the job's 4 subtasks", slots)
	}
	expect(t, "allocatedSlots[0].jobId", field(t, d, "allocatedSlots", 0, "jobId"), jobID)
	m := field(t, d, "metrics")
	sameKeys(t, "TaskManagerMetricsInfo", m, "heapUsed", "heapCommitted", "heapMax", "nonHeapUsed", "nonHeapCommitted", "nonHeapMax",
		"directCount", "directUsed", "directMax", "mappedCount", "mappedUsed", "mappedMax", "memorySegmentsAvailable", "memorySegmentsTotal",
		"nettyShuffleMemorySegmentsAvailable", "nettyShuffleMemorySegmentsUsed", "nettyShuffleMemorySegmentsTotal",
		"nettyShuffleMemoryAvailable", "nettyShuffleMemoryUsed", "nettyShuffleMemoryTotal", "garbageCollectors")
	if used, max := num(t, field(t, m, "heapUsed")), num(t, field(t, m, "heapMax")); used <= 0 || used > max {
		t.Errorf("heapUsed %d, heapMax %d", used, max)
	}
	sameKeys(t, "GarbageCollectorInfo", field(t, m, "garbageCollectors", 0), "name", "count", "time")
	expect(t, "garbage collector", field(t, m, "garbageCollectors", 0, "name"), "Go")
	if code, _ := do(t, "GET", base+"/taskmanagers/other", "", ""); code != 404 {
		t.Errorf("another task manager: %d, want 404", code)
	}

	var ms []map[string]any
	getJSON(t, base+"/taskmanagers/weir/metrics?get=Status.JVM.Memory.Heap.Used,Status.JVM.GarbageCollector.Go.Count,nope", 200, &ms)
	if len(ms) != 2 || ms[0]["id"] != "Status.JVM.Memory.Heap.Used" {
		t.Fatalf("task manager metrics: %v", ms)
	}
	if n, err := strconv.ParseInt(ms[0]["value"].(string), 10, 64); err != nil || n <= 0 {
		t.Errorf("Status.JVM.Memory.Heap.Used = %v", ms[0]["value"])
	}
	var agg []map[string]any
	getJSON(t, base+"/taskmanagers/metrics?get=taskSlotsTotal", 200, &agg)
	if len(agg) != 1 || agg[0]["sum"] != json.Number("4") || agg[0]["max"] != json.Number("4") {
		t.Errorf("aggregated task manager metrics: %v", agg)
	}
}

func TestJobManager(t *testing.T) {
	s, _, base := start(t, Options{Token: "tok"})
	var cfg []map[string]any
	getJSON(t, base+"/jobmanager/config", 200, &cfg)
	byKey := map[string]any{}
	for i, e := range cfg {
		sameKeys(t, "ConfigurationInfoEntry", e, "key", "value")
		byKey[e["key"].(string)] = e["value"]
		if i > 0 && cfg[i-1]["key"].(string) > e["key"].(string) {
			t.Errorf("the configuration is not sorted by key at %v", e["key"])
		}
	}
	expect(t, "rest.port", byKey["rest.port"], port(s.Addr()))
	expect(t, "taskmanager.numberOfTaskSlots", byKey["taskmanager.numberOfTaskSlots"], "4")

	var env map[string]any
	getJSON(t, base+"/jobmanager/environment", 200, &env)
	sameKeys(t, "EnvironmentInfo", env, "jvm", "classpath")
	sameKeys(t, "JVMInfo", field(t, env, "jvm"), "version", "arch", "options")
	if v := field(t, env, "jvm", "version").(string); !strings.HasPrefix(v, "go") {
		t.Errorf("jvm.version %q is not Go's", v)
	}
	getJSON(t, base+"/jobs/"+jobID+"/jobmanager/environment", 200, &env)

	var ids []map[string]any
	getJSON(t, base+"/jobmanager/metrics", 200, &ids)
	var names []string
	for _, m := range ids {
		names = append(names, m["id"].(string))
	}
	for _, want := range []string{"Status.JVM.Memory.Heap.Used", "Status.JVM.Memory.NonHeap.Committed", "Status.JVM.GarbageCollector.Go.Count", "Status.JVM.GarbageCollector.Go.Time", "Status.JVM.Threads.Count"} {
		if !slices.Contains(names, want) {
			t.Errorf("/jobmanager/metrics lacks %s: %v", want, names)
		}
	}
	var logs map[string]any
	getJSON(t, base+"/jobmanager/logs", 200, &logs)
	expect(t, "logs", field(t, logs, "logs"), "[]")

	// The thread dump (goroutines' stacks) needs the token, as profiles.
	if code, _ := do(t, "GET", base+"/jobmanager/thread-dump", "", ""); code != 401 {
		t.Errorf("thread dump without the token: %d, want 401", code)
	}
	code, data := do(t, "GET", base+"/jobmanager/thread-dump", "tok", "")
	var dump map[string]any
	if code != 200 || json.Unmarshal(data, &dump) != nil {
		t.Fatalf("thread dump: %d %s", code, data)
	}
	th := field(t, dump, "threadInfos", 0)
	sameKeys(t, "ThreadInfo", th, "threadName", "stringifiedThreadInfo")
	if !strings.Contains(string(data), "TestJobManager") {
		t.Error("the thread dump lacks this test's goroutine")
	}
}

func TestSubtaskResources(t *testing.T) {
	_, _, base := start(t, Options{})
	v := base + "/jobs/" + jobID + "/vertices/" + joinID
	// The fake's join: 2 subtasks, 1800 records in each (n = 2).
	var d map[string]any
	getJSON(t, v, 200, &d)
	agg := field(t, d, "aggregated")
	sameKeys(t, "AggregatedTaskDetailsInfo", agg, "metrics", "status-duration")
	sameKeys(t, "aggregated.metrics", field(t, agg, "metrics"), "read-bytes", "write-bytes", "read-records", "write-records",
		"accumulated-backpressured-time", "accumulated-idle-time", "accumulated-busy-time")
	sameKeys(t, "aggregated.status-duration", field(t, agg, "status-duration"), statusDurationStates...)
	rr := field(t, agg, "metrics", "read-records")
	sameKeys(t, "MetricsStatistics", rr, statisticsFields...)
	expect(t, "read-records.sum", field(t, rr, "sum"), 3600)
	expect(t, "read-records.min", field(t, rr, "min"), 1800)
	expect(t, "read-records.median", field(t, rr, "median"), 1800)
	expect(t, "status-duration.RUNNING.max", field(t, agg, "status-duration", "RUNNING", "max"), 2000)

	subtaskFields := []string{"subtask", "status", "attempt", "endpoint", "start-time", "end-time", "duration", "metrics",
		"taskmanager-id", "status-duration", "weir-rates"}
	var st map[string]any
	getJSON(t, v+"/subtasks/1", 200, &st)
	sameKeys(t, "SubtaskExecutionAttemptDetailsInfo", st, subtaskFields...)
	expect(t, "subtask", field(t, st, "subtask"), 1)
	expect(t, "read-records", field(t, st, "metrics", "read-records"), 1800)
	sameKeys(t, "status-duration", field(t, st, "status-duration"), statusDurationStates...)
	getJSON(t, v+"/subtasks/1/attempts/0", 200, &st)
	expect(t, "attempt", field(t, st, "attempt"), 0)
	for _, p := range []string{"/subtasks/2", "/subtasks/x", "/subtasks/1/attempts/1"} {
		if code, _ := do(t, "GET", v+p, "", ""); code != 404 {
			t.Errorf("GET %s: %d, want 404", p, code)
		}
	}

	var times map[string]any
	getJSON(t, v+"/subtasktimes", 200, &times)
	sameKeys(t, "SubtasksTimesInfo", times, "id", "name", "now", "subtasks")
	tt := field(t, times, "subtasks", 0)
	sameKeys(t, "SubtaskTimeInfo", tt, "subtask", "endpoint", "host", "duration", "timestamps")
	sameKeys(t, "timestamps", field(t, tt, "timestamps"), executionStates...)
	expect(t, "timestamps.RUNNING", field(t, tt, "timestamps", "RUNNING"), 1_700_000_000_000)
	expect(t, "timestamps.FINISHED", field(t, tt, "timestamps", "FINISHED"), 0)
	expect(t, "duration", field(t, tt, "duration"), 2000)

	var tms map[string]any
	getJSON(t, v+"/taskmanagers", 200, &tms)
	sameKeys(t, "JobVertexTaskManagersInfo", tms, "id", "name", "now", "taskmanagers")
	tm := field(t, tms, "taskmanagers", 0)
	sameKeys(t, "JobVertexTaskManagerInfo", tm, "endpoint", "host", "status", "start-time", "end-time", "duration", "metrics",
		"status-counts", "taskmanager-id", "aggregated")
	expect(t, "status-counts.RUNNING", field(t, tm, "status-counts", "RUNNING"), 2)
	expect(t, "metrics.read-records", field(t, tm, "metrics", "read-records"), 3600)

	var acc map[string]any
	getJSON(t, v+"/accumulators", 200, &acc)
	sameKeys(t, "JobVertexAccumulatorsInfo", acc, "id", "user-accumulators")
	var accs map[string]any
	getJSON(t, v+"/subtasks/accumulators", 200, &accs)
	sameKeys(t, "SubtasksAllAccumulatorsInfo", accs, "id", "parallelism", "subtasks")
	var req map[string]any
	getJSON(t, base+"/jobs/"+jobID+"/resource-requirements", 200, &req)
	expect(t, "join's upper bound", field(t, req, joinID, "parallelism", "upperBound"), 2)
}

func TestExecutionResult(t *testing.T) {
	_, job, base := start(t, Options{OpenDetails: true})
	var r map[string]any
	getJSON(t, base+"/jobs/"+jobID+"/execution-result", 200, &r)
	sameKeys(t, "JobExecutionResultResponseBody (running)", r, "status")
	expect(t, "status", field(t, r, "status", "id"), "IN_PROGRESS")
	for _, c := range []struct{ state, app string }{{"FINISHED", "SUCCEEDED"}, {"CANCELED", "CANCELED"}, {"FAILED", "FAILED"}} {
		job.mu.Lock()
		job.state = c.state
		job.mu.Unlock()
		getJSON(t, base+"/jobs/"+jobID+"/execution-result", 200, &r)
		expect(t, "status", field(t, r, "status", "id"), "COMPLETED")
		res := field(t, r, "job-execution-result")
		want := []string{"id", "application-status", "accumulator-results", "net-runtime"}
		if c.state == "FAILED" {
			want = append(want, "failure-cause")
			if s := field(t, res, "failure-cause", "stack-trace").(string); !strings.Contains(s, "boom") {
				t.Errorf("failure-cause: %q", s)
			}
		}
		sameKeys(t, "JobResult", res, want...)
		expect(t, "application-status", field(t, res, "application-status"), c.app)
		expect(t, "id", field(t, res, "id"), jobID)
	}
}

// checkpointingJob is the fake job that takes manual checkpoints: each
// request starts the checkpoint id next.
type checkpointingJob struct {
	*fakeJob
	next int64
}

func (j *checkpointingJob) TriggerCheckpoint(ctx context.Context) (int64, error) { return j.next, nil }

func TestManualCheckpoint(t *testing.T) {
	s, err := Listen("127.0.0.1:0", Options{SampleEvery: -1, Token: "tok"})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close(5 * time.Second)
	base := "http://" + s.Addr() + "/jobs/" + jobID + "/checkpoints"
	job := &checkpointingJob{fakeJob: &fakeJob{calls: 2}}
	s.Register(job)
	trigger := func(body string) (int, map[string]any) {
		t.Helper()
		code, data := req(t, "POST", base, "", body, "Authorization: Bearer tok", "Content-Type: application/json")
		var m map[string]any
		json.Unmarshal([]byte(data), &m)
		return code, m
	}
	status := func(id string) map[string]any {
		t.Helper()
		for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(5 * time.Millisecond) {
			var m map[string]any
			getJSON(t, base+"/"+id, 200, &m)
			if field(t, m, "status", "id") == "COMPLETED" || time.Now().After(deadline) {
				return m
			}
		}
	}
	if code, _ := req(t, "POST", base, "", "{}", "Content-Type: application/json"); code != 401 {
		t.Errorf("a trigger without the token: %d, want 401", code)
	}
	if code, _ := trigger(`{"checkpointType": "FULL"}`); code != 400 {
		t.Errorf("checkpointType FULL: %d, want 400 (Weir takes the configured kind)", code)
	}
	// The fake's history: checkpoint 3 completed, 4 failed.
	job.next = 3
	code, m := trigger(`{"checkpointType": "CONFIGURED", "triggerId": "00000000000000000000000000000003"}`)
	if code != 202 {
		t.Fatalf("trigger: %d %v", code, m)
	}
	sameKeys(t, "TriggerResponse", m, "request-id")
	st := status("00000000000000000000000000000003")
	sameKeys(t, "AsynchronousOperationResult", st, "status", "operation")
	sameKeys(t, "CheckpointInfo", field(t, st, "operation"), "checkpointId")
	expect(t, "checkpointId", field(t, st, "operation", "checkpointId"), 3)

	job.next = 4
	_, m = trigger("")
	st = status(m["request-id"].(string))
	sameKeys(t, "CheckpointInfo (failed)", field(t, st, "operation"), "checkpointId", "failureCause")
	if s := field(t, st, "operation", "failureCause", "stack-trace").(string); !strings.Contains(s, "expired") {
		t.Errorf("failureCause: %q", s)
	}
	if code, _ := do(t, "GET", base+"/0123456789abcdef0123456789abcdee", "", ""); code != 404 {
		t.Errorf("an unknown trigger id: %d, want 404", code)
	}
	// A job that takes no manual checkpoints.
	s2, _, base2 := start(t, Options{})
	_ = s2
	if code, _ := req(t, "POST", base2+"/jobs/"+jobID+"/checkpoints", "", "{}", "Content-Type: application/json"); code != 400 {
		t.Errorf("a job without manual checkpoints: %d, want 400", code)
	}
}

// parkedInVertex parks a goroutine labelled as a subtask of vertex uid
// until stop is closed.
func parkedInVertex(uid string, stop chan struct{}, started chan struct{}) {
	pprof.Do(context.Background(), pprof.Labels(LabelVertex, uid, LabelSubtask, "0"), func(context.Context) {
		close(started)
		<-stop
	})
}

func TestFlameGraphTypes(t *testing.T) {
	_, _, base := start(t, Options{})
	stop, started := make(chan struct{}), make(chan struct{})
	defer close(stop)
	go parkedInVertex("join", stop, started)
	<-started
	fg := base + "/jobs/" + jobID + "/vertices/" + joinID + "/flamegraph"
	var contains func(n map[string]any, name string) bool
	contains = func(n map[string]any, name string) bool {
		if n["name"] == name {
			return true
		}
		for _, c := range n["children"].([]any) {
			if contains(c.(map[string]any), name) {
				return true
			}
		}
		return false
	}
	for _, c := range []struct {
		typ    string
		parked bool
	}{{"FULL", true}, {"off_cpu", true}, {"ON_CPU", false}} {
		var g map[string]any
		getJSON(t, fg+"?seconds=0.3&subtaskindex=0&type="+c.typ, 200, &g)
		sameKeys(t, "VertexFlameGraph", g, "endTimestamp", "data")
		root := field(t, g, "data").(map[string]any)
		if got := contains(root, "github.com/weirstream/weir/internal/rest.parkedInVertex.func1") && contains(root, "runtime.gopark"); got != c.parked {
			t.Errorf("%s flame graph shows the parked goroutine: %v, want %v", c.typ, got, c.parked)
		}
		if c.parked && num(t, root["value"]) < 2 {
			t.Errorf("%s flame graph: %v samples, want one per goroutine profile", c.typ, root["value"])
		}
	}
	// Another subtask's goroutines are left out.
	var g map[string]any
	getJSON(t, fg+"?seconds=0.1&subtaskindex=1&type=FULL", 200, &g)
	expect(t, "subtask 1's samples", field(t, g, "data", "value"), 0)
	if code, _ := do(t, "GET", fg+"?seconds=0.1&type=WALL", "", ""); code != 400 {
		t.Errorf("type WALL: %d, want 400", code)
	}
	// Without ?seconds=, as Flink's UI: at once Flink's "waiting" (-3, no
	// data), then the graph sampled in the background.
	var waiting map[string]any
	getJSON(t, fg+"?type=OFF_CPU", 200, &waiting)
	sameKeys(t, "waiting VertexFlameGraph", waiting, "endTimestamp")
	expect(t, "endTimestamp", waiting["endTimestamp"], -3)
	for deadline := time.Now().Add(15 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		g = nil
		getJSON(t, fg+"?type=OFF_CPU", 200, &g)
		if num(t, g["endTimestamp"]) > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no flame graph sampled in the background: %v", g)
		}
	}
	if !contains(field(t, g, "data").(map[string]any), "github.com/weirstream/weir/internal/rest.parkedInVertex.func1") {
		t.Errorf("the background OFF_CPU graph lacks the parked goroutine: %v", g)
	}
}

func TestYarnCancel(t *testing.T) {
	_, job, base := start(t, Options{})
	u := base + "/jobs/" + jobID + "/yarn-cancel"
	for _, site := range []string{"", "cross-site", "same-site", "none"} {
		var h []string
		if site != "" {
			h = append(h, "Sec-Fetch-Site: "+site)
		}
		if code, _ := req(t, "GET", u, "", "", h...); code != 403 {
			t.Errorf("yarn-cancel with Sec-Fetch-Site %q: %d, want 403", site, code)
		}
	}
	if job.cancelled {
		t.Fatal("a GET from outside this server's pages cancelled the job")
	}
	if code, body := req(t, "GET", u, "", "", "Sec-Fetch-Site: same-origin"); code != 202 || !job.cancelled {
		t.Fatalf("yarn-cancel from the server's own page: %d %s, cancelled %v", code, body, job.cancelled)
	}
}

func TestServeFlinkUI(t *testing.T) {
	dir, outside := t.TempDir(), t.TempDir()
	os.WriteFile(filepath.Join(dir, "index.html"), []byte("<title>Apache Flink Web Dashboard</title>"), 0o644)
	os.MkdirAll(filepath.Join(dir, "assets"), 0o755)
	os.WriteFile(filepath.Join(dir, "main.js"), []byte("console.log('flink')"), 0o644)
	os.WriteFile(filepath.Join(outside, "secret.txt"), []byte("do not serve"), 0o644)
	if err := os.Symlink(filepath.Join(outside, "secret.txt"), filepath.Join(dir, "link.txt")); err != nil {
		t.Fatal(err)
	}
	if _, err := Listen("127.0.0.1:0", Options{FlinkUI: outside}); err == nil || !strings.Contains(err.Error(), "index.html") {
		t.Fatalf("a folder without index.html: %v", err)
	}
	s, _, base := start(t, Options{FlinkUI: dir, Token: "tok"})
	_ = s
	if code, body := req(t, "GET", base+"/flink", "", ""); code != 302 && code != 200 {
		t.Errorf("/flink: %d %s", code, body)
	}
	for path, want := range map[string]string{
		"/flink/":                  "Apache Flink Web Dashboard",
		"/flink/main.js":           "console.log",
		"/flink/overview":          `"taskmanagers":1`,
		"/flink/v1/overview":       `"taskmanagers":1`,
		"/flink/jobs/" + jobID:     `"name":"orders-join"`,
		"/flink/taskmanagers/weir": `"allocatedSlots"`,
		"/":                        "<title>Weir", // Weir's dashboard stays
	} {
		code, body := req(t, "GET", base+path, "", "")
		if code != 200 || !strings.Contains(body, want) {
			t.Errorf("GET %s: %d %.100q, want %q", path, code, body, want)
		}
	}
	code, _ := req(t, "GET", base+"/flink/main.js", "", "")
	resp, err := client.Get(base + "/flink/main.js")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); code != 200 || !strings.Contains(ct, "javascript") {
		t.Errorf("main.js served as %q", ct)
	}
	for _, p := range []string{"/flink/link.txt", "/flink/../" + filepath.Base(outside) + "/secret.txt", "/flink/%2e%2e/secret.txt", "/flink/assets/../../secret.txt", "/flink/assets"} {
		if code, body := req(t, "GET", base+p, "", ""); strings.Contains(body, "do not serve") || code == 200 {
			t.Errorf("GET %s: %d %.80q", p, code, body)
		}
	}
	// Writes under /flink/ reach the API, with its guards.
	if code, _ := req(t, "PATCH", base+"/flink/jobs/"+jobID, "", ""); code != 401 {
		t.Errorf("PATCH /flink/jobs/:jobid without the token: %d, want 401", code)
	}
}
