package rest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/weirstream/weir/internal/control"
	"github.com/weirstream/weir/internal/monitor"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

const jobID = "0123456789abcdef0123456789abcdef"

// fakeJob serves a snapshot whose counters advance by a second's worth
// at each tick, and records the actions asked of it.
type fakeJob struct {
	mu        sync.Mutex
	calls     int64
	cancelled bool
	sp        []string
	spErr     error
	block     chan struct{}
	state     string // the job's status ("": RUNNING)
}

var (
	srcID  = monitor.VertexID("orders")
	srcID2 = monitor.VertexID("payments")
	joinID = monitor.VertexID("join")
)

// tick advances the fake's counters by one second's worth.
func (f *fakeJob) tick() {
	f.mu.Lock()
	f.calls++
	f.mu.Unlock()
}

func (f *fakeJob) Snapshot() *monitor.Snapshot {
	f.mu.Lock()
	n, state := f.calls, f.state
	f.mu.Unlock()
	if state == "" {
		state = "RUNNING"
	}
	wm := func(x int64) int64 { return 1_000_000 + x }
	src := func(id, uid, name string) monitor.Vertex {
		v := monitor.Vertex{ID: id, UID: uid, Name: name, Parallelism: 1, Operators: []monitor.Operator{{Name: name, UID: uid, Kind: "source"}}}
		v.Subtasks = []monitor.Subtask{{Index: 0, Status: "RUNNING", RecordsOut: 1000 * n, BytesOut: 16000 * n, BusyNanos: 5e8 * n, IdleNanos: 5e8 * n,
			Operators: []monitor.OpMetric{{Name: name, UID: uid, RecordsOut: 1000 * n, Splits: []monitor.Split{{ID: "p0", Records: 1000 * n, Watermark: wm(n * 1000)}},
				Gauges: []monitor.Gauge{{Name: "kafka_consumer_lag", Labels: map[string]string{"topic": "orders", "partition": "0"}, Value: 42}}}}}}
		return v
	}
	join := monitor.Vertex{ID: joinID, UID: "join", Name: "join", Parallelism: 2,
		Operators: []monitor.Operator{{Name: "join", UID: "join", Kind: "two-input"}},
		Inputs:    []monitor.Input{{From: srcID, Input: 0, ShipStrategy: "HASH"}, {From: srcID2, Input: 1, ShipStrategy: "HASH"}},
		KeySkew:   []monitor.KeySkew{{Every: 1024, Sampled: 100, Keys: []monitor.HotKey{{Key: "k1", Count: 80, Subtask: 1}}}},
	}
	for i := range 2 {
		join.Subtasks = append(join.Subtasks, monitor.Subtask{Index: i, Status: "RUNNING", RecordsIn: 900 * n, BytesIn: 14400 * n,
			BusyNanos: 2e8 * n, IdleNanos: 6e8 * n, BackPressuredNanos: 2e8 * n,
			InputWatermarks: []int64{wm(n * 1000), wm(0)}, InputIdle: []bool{false, i == 1}, InputRecords: []int64{600 * n, 300 * n},
			Operators: []monitor.OpMetric{{Name: "join", UID: "join", RecordsIn: 900 * n, RecordsOut: 10 * n, Keyed: true, StateEntries: 50 * n, Timers: 7,
				Join: &monitor.JoinSample{Lower: 0, Upper: 5000, Probes: 100, Matched: 3, MirroredMatched: 80}}}})
	}
	cp := monitor.Checkpoint{ID: 3, Status: "COMPLETED", TriggerTimestamp: 5000, LatestAck: 5400, EndTimestamp: 5400, StateSize: 3000,
		ExternalPath: "/cp/chk-3", Vertices: map[string][]monitor.SubtaskCheckpoint{
			srcID:  {{Subtask: 0, Acked: true, AckTimestamp: 5100, StateSize: 1000, SyncMs: 1, LastInput: -1, LastChannel: -1}},
			srcID2: {{Subtask: 0, Acked: true, AckTimestamp: 5100, StateSize: 1000, SyncMs: 1, LastInput: -1, LastChannel: -1}},
			joinID: {{Subtask: 0, Acked: true, AckTimestamp: 5400, StateSize: 600, StartDelayMs: 20, AlignmentMs: 300, SyncMs: 2, AsyncMs: 30, LastInput: 1, LastChannel: 0},
				{Subtask: 1, Acked: true, AckTimestamp: 5300, StateSize: 400, StartDelayMs: 10, AlignmentMs: 100, SyncMs: 2, AsyncMs: 20, LastInput: 0, LastChannel: 0}},
		}}
	failed := monitor.Checkpoint{ID: 4, Status: "FAILED", TriggerTimestamp: 9000, EndTimestamp: 19000, Failure: "checkpoint 4 expired",
		Vertices: map[string][]monitor.SubtaskCheckpoint{srcID: {{Subtask: 0}}, srcID2: {{Subtask: 0}}, joinID: {{Subtask: 0}, {Subtask: 1}}}}
	return &monitor.Snapshot{
		Timestamp: 1_700_000_000_000 + 1000*n,
		Job: monitor.Job{ID: jobID, Name: "orders-join", State: state, StartTime: 1_700_000_000_000, EndTime: -1, MaxParallelism: 128, Parallelism: 2,
			Checkpointing: &monitor.CheckpointConfig{ExactlyOnce: true, IntervalMs: 1000, TimeoutMs: 60000, Storage: "dir", StateBackend: "hashmap"},
			Config:        map[string]string{"parallelism.default": "2"}},
		Vertices: []monitor.Vertex{src(srcID, "orders", "orders"), src(srcID2, "payments", "payments"), join},
		Checkpoints: monitor.Checkpoints{Counts: monitor.CheckpointCounts{Total: 4, Completed: 3, Failed: 1},
			History: []monitor.Checkpoint{failed, cp}, Completed: &cp, Failed: &failed},
		Exceptions: []monitor.Exception{{Name: "*errors.errorString", Message: `operator "join" (subtask 1): boom`, Stacktrace: "goroutine 7", Timestamp: 1_700_000_001_000, Task: "join", Subtask: 1, Restarted: true}},
	}
}

func (f *fakeJob) Savepoint(ctx context.Context, dir string, stop bool) (string, error) {
	if f.block != nil {
		select {
		case <-f.block:
		case <-ctx.Done():
			return "", ctx.Err()
		}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.sp = append(f.sp, fmt.Sprintf("%s stop=%v", dir, stop))
	if f.spErr != nil {
		return "", f.spErr
	}
	if dir == "" {
		return "", fmt.Errorf("fake: %w", control.ErrNoTarget)
	}
	return dir + "/savepoint-5", nil
}

func (f *fakeJob) Cancel() {
	f.mu.Lock()
	f.cancelled = true
	f.mu.Unlock()
}

func start(t *testing.T, opts Options) (*Server, *fakeJob, string) {
	t.Helper()
	if opts.SampleEvery == 0 {
		opts.SampleEvery = -1
	}
	s, err := Listen("127.0.0.1:0", opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close(5 * time.Second) })
	job := &fakeJob{calls: 1}
	s.Register(job)
	job.tick()
	s.Sample()
	return s, job, "http://" + s.Addr()
}

var client = &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}

func do(t *testing.T, method, url, token, body string) (int, []byte) {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, data
}

// getJSON GETs url and decodes its JSON into v, failing unless the status
// is want.
func getJSON(t *testing.T, url string, want int, v any) {
	t.Helper()
	code, data := do(t, "GET", url, "", "")
	if code != want {
		t.Fatalf("GET %s: %d %s", url, code, data)
	}
	dec := json.NewDecoder(strings.NewReader(string(data)))
	dec.UseNumber()
	if err := dec.Decode(v); err != nil {
		t.Fatalf("GET %s: %v in %s", url, err, data)
	}
}

// field walks a decoded JSON value by a path of keys and indexes.
func field(t *testing.T, v any, path ...any) any {
	t.Helper()
	for _, p := range path {
		switch k := p.(type) {
		case string:
			m, ok := v.(map[string]any)
			if !ok {
				t.Fatalf("at %q: not an object: %v", k, v)
			}
			if v, ok = m[k]; !ok {
				t.Fatalf("no field %q in %v", k, m)
			}
		case int:
			a, ok := v.([]any)
			if !ok || k >= len(a) {
				t.Fatalf("at [%d]: not an array that long: %v", k, v)
			}
			v = a[k]
		}
	}
	return v
}

func expect(t *testing.T, what string, got, want any) {
	t.Helper()
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("%s = %v, want %v", what, got, want)
	}
}

func TestClusterResources(t *testing.T) {
	_, _, base := start(t, Options{})
	var ov map[string]any
	getJSON(t, base+"/overview", 200, &ov)
	expect(t, "taskmanagers", ov["taskmanagers"], 1)
	expect(t, "jobs-running", ov["jobs-running"], 1)
	expect(t, "slots-total", ov["slots-total"], 4)
	for _, k := range []string{"slots-available", "jobs-finished", "jobs-cancelled", "jobs-failed", "flink-version", "flink-commit"} {
		field(t, ov, k)
	}
	var cfg map[string]any
	getJSON(t, base+"/config", 200, &cfg)
	expect(t, "refresh-interval", cfg["refresh-interval"], 1000)
	expect(t, "web-cancel", field(t, cfg, "features", "web-cancel"), true)
	expect(t, "web-submit", field(t, cfg, "features", "web-submit"), false)
	field(t, cfg, "timezone-name")

	var jobs map[string]any
	getJSON(t, base+"/jobs", 200, &jobs)
	expect(t, "jobs[0].id", field(t, jobs, "jobs", 0, "id"), jobID)
	expect(t, "jobs[0].status", field(t, jobs, "jobs", 0, "status"), "RUNNING")
	var overview map[string]any
	getJSON(t, base+"/jobs/overview", 200, &overview)
	j := field(t, overview, "jobs", 0)
	expect(t, "jid", field(t, j, "jid"), jobID)
	expect(t, "name", field(t, j, "name"), "orders-join")
	expect(t, "state", field(t, j, "state"), "RUNNING")
	expect(t, "tasks.total", field(t, j, "tasks", "total"), 4)
	expect(t, "tasks.running", field(t, j, "tasks", "running"), 4)
	expect(t, "tasks.finished", field(t, j, "tasks", "finished"), 0)
	if _, upper := field(t, j, "tasks").(map[string]any)["RUNNING"]; upper {
		t.Error("the overview's task counts have upper-case keys; Flink's are lower-case")
	}
	for _, k := range []string{"start-time", "end-time", "duration", "last-modification"} {
		field(t, j, k)
	}
}

func TestJobDetailsAndPlan(t *testing.T) {
	_, _, base := start(t, Options{})
	var d map[string]any
	getJSON(t, base+"/jobs/"+jobID, 200, &d)
	expect(t, "jid", d["jid"], jobID)
	expect(t, "state", d["state"], "RUNNING")
	expect(t, "maxParallelism", d["maxParallelism"], 128)
	expect(t, "job-type", d["job-type"], "STREAMING")
	expect(t, "timestamps.RUNNING", field(t, d, "timestamps", "RUNNING"), 1_700_000_000_000)
	expect(t, "status-counts.RUNNING", field(t, d, "status-counts", "RUNNING"), 3)
	v := field(t, d, "vertices", 2)
	expect(t, "vertex id", field(t, v, "id"), joinID)
	expect(t, "vertex parallelism", field(t, v, "parallelism"), 2)
	expect(t, "vertex status", field(t, v, "status"), "RUNNING")
	expect(t, "read-records", field(t, v, "metrics", "read-records"), 2*900*2) // two subtasks, second snapshot
	expect(t, "read-records-complete", field(t, v, "metrics", "read-records-complete"), true)
	for _, k := range []string{"read-bytes", "write-bytes", "write-records", "accumulated-backpressured-time", "accumulated-idle-time", "accumulated-busy-time"} {
		field(t, v, "metrics", k)
	}
	expect(t, "plan node inputs", field(t, d, "plan", "nodes", 2, "inputs", 1, "ship_strategy"), "HASH")
	// By name, as the legacy control endpoint addressed jobs.
	getJSON(t, base+"/jobs/orders-join", 200, &d)

	var plan map[string]any
	getJSON(t, base+"/jobs/"+jobID+"/plan", 200, &plan)
	expect(t, "plan.jid", field(t, plan, "plan", "jid"), jobID)
	expect(t, "plan.type", field(t, plan, "plan", "type"), "STREAMING")
	n := field(t, plan, "plan", "nodes", 2)
	expect(t, "node id", field(t, n, "id"), joinID)
	expect(t, "node description", field(t, n, "description"), "join")
	expect(t, "input id", field(t, n, "inputs", 0, "id"), srcID)
	expect(t, "input num", field(t, n, "inputs", 1, "num"), 1)
	expect(t, "exchange", field(t, n, "inputs", 0, "exchange"), "pipelined_bounded")
	field(t, n, "operator_strategy")
	field(t, n, "optimizer_properties")

	var cfg map[string]any
	getJSON(t, base+"/jobs/"+jobID+"/config", 200, &cfg)
	expect(t, "job-parallelism", field(t, cfg, "execution-config", "job-parallelism"), 2)

	var nf map[string]any
	getJSON(t, base+"/jobs/ffffffffffffffffffffffffffffffff", 404, &nf)
	expect(t, "errors", field(t, nf, "errors", 0), "Job ffffffffffffffffffffffffffffffff not found")
}

func TestVertexResources(t *testing.T) {
	_, _, base := start(t, Options{})
	vurl := base + "/jobs/" + jobID + "/vertices/" + joinID
	var v map[string]any
	getJSON(t, vurl, 200, &v)
	expect(t, "id", v["id"], joinID)
	expect(t, "name", v["name"], "join")
	expect(t, "maxParallelism", v["maxParallelism"], 128)
	st := field(t, v, "subtasks", 1)
	expect(t, "subtask", field(t, st, "subtask"), 1)
	expect(t, "status", field(t, st, "status"), "RUNNING")
	expect(t, "read-records", field(t, st, "metrics", "read-records"), 1800)
	expect(t, "write-bytes", field(t, st, "metrics", "write-bytes"), 0)
	// One second between the snapshots: 900 records/s, 200 busy ms/s.
	expect(t, "records-in/s", field(t, st, "weir-rates", "records-in-per-second"), 900)
	expect(t, "busy ms/s", field(t, st, "weir-rates", "busy-ms-per-second"), 200)
	for _, k := range []string{"attempt", "start-time", "end-time", "duration", "taskmanager-id", "status-duration"} {
		field(t, st, k)
	}

	// Flink's answer: each subtask's currentInputWatermark only (Flink's
	// web UI takes every entry for one subtask's).
	var flinkWms []map[string]string
	getJSON(t, vurl+"/watermarks", 200, &flinkWms)
	if len(flinkWms) != 2 || flinkWms[0]["id"] != "0.currentInputWatermark" || flinkWms[1]["id"] != "1.currentInputWatermark" {
		t.Errorf("watermarks: %v, want only the subtasks' currentInputWatermark", flinkWms)
	}
	var wms []map[string]string
	getJSON(t, vurl+"/watermarks?inputs=true", 200, &wms)
	got := map[string]string{}
	for _, m := range wms {
		got[m["id"]] = m["value"]
	}
	// Snapshot 2: input 1 at 1002000, input 2 at 1000000; subtask 1's
	// input 2 is idle, so its combined watermark is input 1's.
	expect(t, "0.currentInputWatermark", got["0.currentInputWatermark"], "1000000")
	expect(t, "1.currentInputWatermark", got["1.currentInputWatermark"], "1002000")
	expect(t, "0.currentInput1Watermark", got["0.currentInput1Watermark"], "1002000")
	expect(t, "0.currentInput2Watermark", got["0.currentInput2Watermark"], "1000000")
	expect(t, "1.input2Idle", got["1.input2Idle"], "true")

	var bp map[string]any
	getJSON(t, vurl+"/backpressure", 200, &bp)
	expect(t, "status", bp["status"], "ok")
	expect(t, "level", bp["backpressure-level"], "low") // 200 ms/s
	expect(t, "ratio", field(t, bp, "subtasks", 0, "ratio"), 0.2)
	expect(t, "busyRatio", field(t, bp, "subtasks", 0, "busyRatio"), 0.2)
	expect(t, "idleRatio", field(t, bp, "subtasks", 0, "idleRatio"), 0.6)
	expect(t, "subtask level", field(t, bp, "subtasks", 0, "backpressure-level"), "low")
	field(t, bp, "end-timestamp")

	var nf map[string]any
	getJSON(t, base+"/jobs/"+jobID+"/vertices/nope", 404, &nf)
	field(t, nf, "errors")
}

func TestMetricsQueries(t *testing.T) {
	_, _, base := start(t, Options{})
	values := func(url string) map[string]string {
		var ms []map[string]string
		getJSON(t, url, 200, &ms)
		out := map[string]string{}
		for _, m := range ms {
			out[m["id"]] = m["value"]
		}
		return out
	}
	job := values(base + "/jobs/" + jobID + "/metrics?get=numberOfCompletedCheckpoints,lastCheckpointSize,numRestarts,nope")
	expect(t, "job metrics", fmt.Sprint(job), "map[lastCheckpointSize:3000 numRestarts:0 numberOfCompletedCheckpoints:3]")
	ids := values(base + "/jobs/" + jobID + "/metrics")
	if _, ok := ids["uptime"]; !ok {
		t.Errorf("metric ids %v lack uptime", ids)
	}
	vurl := base + "/jobs/" + jobID + "/vertices/" + joinID
	vm := values(vurl + "/metrics?get=0.numRecordsIn,1.busyTimeMsPerSecond,0.join.stateEntries,0.join.currentInput2Watermark,0.join.numLateRecordsDropped")
	expect(t, "vertex metrics", fmt.Sprint(vm), "map[0.join.currentInput2Watermark:1000000 0.join.numLateRecordsDropped:0 0.join.stateEntries:100 0.numRecordsIn:1800 1.busyTimeMsPerSecond:200]")
	sm := values(vurl + "/subtasks/1/metrics?get=numRecordsInPerSecond,backPressuredTimeMsPerSecond,checkpointStartDelayNanos")
	expect(t, "subtask metrics", fmt.Sprint(sm), "map[backPressuredTimeMsPerSecond:200 checkpointStartDelayNanos:10000000 numRecordsInPerSecond:900]")
	src := values(base + "/jobs/" + jobID + "/vertices/" + srcID + "/subtasks/0/metrics?get=orders.partition.0.topic.orders.kafka_consumer_lag,orders.split.p0.watermark")
	expect(t, "source gauges", fmt.Sprint(src), "map[orders.partition.0.topic.orders.kafka_consumer_lag:42 orders.split.p0.watermark:1002000]")

	var agg []map[string]any
	getJSON(t, vurl+"/subtasks/metrics?get=numRecordsIn,join.stateEntries&agg=min,max,sum", 200, &agg)
	expect(t, "aggregated", fmt.Sprint(agg), "[map[id:numRecordsIn max:1800 min:1800 sum:3600] map[id:join.stateEntries max:100 min:100 sum:200]]")
	getJSON(t, vurl+"/subtasks/metrics?get=numRecordsIn&subtasks=1", 200, &agg)
	expect(t, "filtered sum", agg[0]["sum"], 1800)
	expect(t, "skew", agg[0]["skew"], 0)
	var nf map[string]any
	getJSON(t, vurl+"/subtasks/7/metrics", 404, &nf)
}

func TestCheckpointResources(t *testing.T) {
	_, _, base := start(t, Options{})
	var cs map[string]any
	getJSON(t, base+"/jobs/"+jobID+"/checkpoints", 200, &cs)
	expect(t, "counts", fmt.Sprint(cs["counts"]), "map[completed:3 failed:1 in_progress:0 restored:0 total:4]")
	expect(t, "latest.completed.id", field(t, cs, "latest", "completed", "id"), 3)
	expect(t, "latest.completed.className", field(t, cs, "latest", "completed", "className"), "completed")
	expect(t, "latest.completed.external_path", field(t, cs, "latest", "completed", "external_path"), "/cp/chk-3")
	expect(t, "latest.completed.end_to_end_duration", field(t, cs, "latest", "completed", "end_to_end_duration"), 400)
	expect(t, "latest.failed.failure_message", field(t, cs, "latest", "failed", "failure_message"), "checkpoint 4 expired")
	expect(t, "latest.savepoint", field(t, cs, "latest", "savepoint"), nil)
	expect(t, "history[0].status", field(t, cs, "history", 0, "status"), "FAILED")
	expect(t, "history[1].num_acknowledged_subtasks", field(t, cs, "history", 1, "num_acknowledged_subtasks"), 4)
	expect(t, "history[1].checkpoint_type", field(t, cs, "history", 1, "checkpoint_type"), "CHECKPOINT")
	expect(t, "summary.state_size.max", field(t, cs, "summary", "state_size", "max"), 3000)
	field(t, cs, "summary", "end_to_end_duration", "p99")

	var d map[string]any
	getJSON(t, base+"/jobs/"+jobID+"/checkpoints/details/3", 200, &d)
	expect(t, "details.state_size", d["state_size"], 3000)
	jt := field(t, d, "tasks", joinID)
	expect(t, "task.state_size", field(t, jt, "state_size"), 1000)
	expect(t, "task.end_to_end_duration", field(t, jt, "end_to_end_duration"), 400)
	expect(t, "task.num_subtasks", field(t, jt, "num_subtasks"), 2)

	var sd map[string]any
	getJSON(t, base+"/jobs/"+jobID+"/checkpoints/details/3/subtasks/"+joinID, 200, &sd)
	s0 := field(t, sd, "subtasks", 0)
	expect(t, "index", field(t, s0, "index"), 0)
	expect(t, "status", field(t, s0, "status"), "completed")
	expect(t, "alignment.duration", field(t, s0, "alignment", "duration"), 300)
	expect(t, "checkpoint.sync", field(t, s0, "checkpoint", "sync"), 2)
	expect(t, "checkpoint.async", field(t, s0, "checkpoint", "async"), 30)
	expect(t, "start_delay", field(t, s0, "start_delay"), 20)
	expect(t, "state_size", field(t, s0, "state_size"), 600)
	expect(t, "weir-last-input", field(t, s0, "weir-last-input"), 1)
	expect(t, "summary.alignment.duration.max", field(t, sd, "summary", "alignment", "duration", "max"), 300)
	expect(t, "summary.start_delay.min", field(t, sd, "summary", "start_delay", "min"), 10)

	var fd map[string]any
	getJSON(t, base+"/jobs/"+jobID+"/checkpoints/details/4/subtasks/"+joinID, 200, &fd)
	expect(t, "pending subtask", field(t, fd, "subtasks", 1, "status"), "pending_or_failed")

	var cc map[string]any
	getJSON(t, base+"/jobs/"+jobID+"/checkpoints/config", 200, &cc)
	expect(t, "mode", cc["mode"], "EXACTLY_ONCE")
	expect(t, "interval", cc["interval"], 1000)
	var nf map[string]any
	getJSON(t, base+"/jobs/"+jobID+"/checkpoints/details/99", 404, &nf)
}

func TestExceptions(t *testing.T) {
	_, _, base := start(t, Options{OpenDetails: true})
	var ex map[string]any
	getJSON(t, base+"/jobs/"+jobID+"/exceptions", 200, &ex)
	e := field(t, ex, "exceptionHistory", "entries", 0)
	expect(t, "exceptionName", field(t, e, "exceptionName"), "*errors.errorString")
	expect(t, "taskName", field(t, e, "taskName"), "join (2/2)")
	expect(t, "timestamp", field(t, e, "timestamp"), 1_700_000_001_000)
	if !strings.Contains(field(t, e, "stacktrace").(string), "boom") {
		t.Errorf("stacktrace %v", field(t, e, "stacktrace"))
	}
	expect(t, "truncated", field(t, ex, "exceptionHistory", "truncated"), false)
	field(t, e, "concurrentExceptions")
	getJSON(t, base+"/jobs/"+jobID+"/exceptions?maxExceptions=0", 200, &ex)
	expect(t, "truncated", field(t, ex, "exceptionHistory", "truncated"), true)
}

func TestSavepointsStopCancel(t *testing.T) {
	_, job, base := start(t, Options{SavepointRoots: []string{"/sp", "/stop"}})
	job.block = make(chan struct{})
	code, data := do(t, "POST", base+"/jobs/"+jobID+"/savepoints", "", `{"target-directory": "/sp", "cancel-job": false}`)
	var trig map[string]string
	json.Unmarshal(data, &trig)
	if code != 202 || len(trig["request-id"]) != 32 {
		t.Fatalf("trigger: %d %s", code, data)
	}
	var st map[string]any
	getJSON(t, base+"/jobs/"+jobID+"/savepoints/"+trig["request-id"], 200, &st)
	expect(t, "in progress", field(t, st, "status", "id"), "IN_PROGRESS")
	close(job.block)
	poll := func(id string) map[string]any {
		for range 500 {
			getJSON(t, base+"/jobs/"+jobID+"/savepoints/"+id, 200, &st)
			if field(t, st, "status", "id") == "COMPLETED" {
				return st
			}
			time.Sleep(10 * time.Millisecond)
		}
		t.Fatalf("savepoint %s never completed", id)
		return nil
	}
	st = poll(trig["request-id"])
	expect(t, "location", field(t, st, "operation", "location"), "/sp/savepoint-5")

	// Stop with savepoint, with the caller's trigger id; drain is refused.
	id := strings.Repeat("ab", 16)
	code, data = do(t, "POST", base+"/jobs/"+jobID+"/stop", "", `{"targetDirectory": "/stop", "triggerId": "`+id+`"}`)
	if code != 202 || !strings.Contains(string(data), id) {
		t.Fatalf("stop: %d %s", code, data)
	}
	poll(id)
	if code, _ := do(t, "POST", base+"/jobs/"+jobID+"/stop", "", `{"drain": true}`); code != 400 {
		t.Fatalf("stop with drain: %d", code)
	}
	// A failing savepoint reports its cause.
	job.spErr = errors.New("disk full")
	_, data = do(t, "POST", base+"/jobs/"+jobID+"/savepoints", "", `{"target-directory": "/sp"}`)
	json.Unmarshal(data, &trig)
	st = poll(trig["request-id"])
	if !strings.Contains(fmt.Sprint(field(t, st, "operation", "failure-cause", "stack-trace")), "disk full") {
		t.Fatalf("failure cause: %v", st)
	}
	job.spErr = nil
	expect(t, "savepoints asked", fmt.Sprint(job.sp), "[/sp stop=false /stop stop=true /sp stop=false]")

	if code, data := do(t, "PATCH", base+"/jobs/"+jobID+"?mode=stop", "", ""); code != 400 {
		t.Fatalf("PATCH mode=stop: %d %s", code, data)
	}
	if code, data := do(t, "PATCH", base+"/jobs/"+jobID+"?mode=cancel", "", ""); code != 202 || string(data) != "{}\n" || !job.cancelled {
		t.Fatalf("cancel: %d %q %v", code, data, job.cancelled)
	}
}

// TestLegacyControl is the control endpoint's protocol (internal/control),
// which `weir savepoint` speaks, against the REST server.
func TestLegacyControl(t *testing.T) {
	s, job, _ := start(t, Options{SavepointRoots: []string{"/sp", "/sp2"}})
	ctx := context.Background()
	path, err := control.TriggerSavepoint(ctx, client, s.Addr(), "orders-join", "/sp", true)
	if err != nil || path != "/sp/savepoint-5" {
		t.Fatalf("path %q, err %v", path, err)
	}
	if _, err := control.TriggerSavepoint(ctx, client, "http://"+s.Addr(), jobID, "/sp2", false); err != nil {
		t.Fatal(err)
	}
	var se *control.StatusError
	_, err = control.TriggerSavepoint(ctx, client, s.Addr(), "other", "/sp", false)
	if !errors.As(err, &se) || se.Code != http.StatusNotFound {
		t.Fatalf("unknown job: %v", err)
	}
	_, err = control.TriggerSavepoint(ctx, client, s.Addr(), "orders-join", "", false)
	if !errors.As(err, &se) || se.Code != http.StatusBadRequest || !strings.Contains(se.Message, "no savepoint directory") {
		t.Fatalf("no dir: %v", err)
	}
	job.spErr = errors.New("boom")
	_, err = control.TriggerSavepoint(ctx, client, s.Addr(), "orders-join", "/sp", false)
	if !errors.As(err, &se) || se.Code != http.StatusInternalServerError || !strings.Contains(se.Message, "boom") {
		t.Fatalf("failure: %v", err)
	}
	expect(t, "asked", fmt.Sprint(job.sp), "[/sp stop=true /sp2 stop=false  stop=false /sp stop=false]")
}

func TestTokenAndLoopback(t *testing.T) {
	if _, err := Listen("0.0.0.0:0", Options{}); err == nil || !strings.Contains(err.Error(), "not a loopback address") {
		t.Fatalf("a non-loopback address without a token: %v", err)
	}
	for _, a := range []string{"127.0.0.1:0", "[::1]:0", "localhost:0", "127.3.4.5:0"} {
		if !Loopback(a) {
			t.Errorf("%s is loopback", a)
		}
	}
	_, job, base := start(t, Options{Token: "s3cret"})
	for _, c := range []struct{ method, path, body string }{
		{"POST", "/jobs/" + jobID + "/savepoints", `{"target-directory": "/x"}`},
		{"POST", "/jobs/" + jobID + "/savepoints", `{"dir": "/x"}`},
		{"POST", "/jobs/" + jobID + "/stop", `{}`},
		{"PATCH", "/jobs/" + jobID, ""},
		{"GET", "/debug/pprof/", ""},
		{"GET", "/debug/pprof/heap", ""},
		{"GET", "/jobs/" + jobID + "/vertices/" + joinID + "/flamegraph?seconds=0.01", ""},
	} {
		for _, tok := range []string{"", "wrong"} {
			if code, _ := do(t, c.method, base+c.path, tok, c.body); code != http.StatusUnauthorized {
				t.Errorf("%s %s with token %q: %d, want 401", c.method, c.path, tok, code)
			}
		}
	}
	if len(job.sp) != 0 || job.cancelled {
		t.Fatalf("unauthorized requests acted: %v %v", job.sp, job.cancelled)
	}
	if code, _ := do(t, "GET", base+"/debug/pprof/heap", "s3cret", ""); code != 200 {
		t.Fatalf("pprof with the token: %d", code)
	}
	if code, _ := do(t, "PATCH", base+"/jobs/"+jobID, "s3cret", ""); code != 202 || !job.cancelled {
		t.Fatalf("cancel with the token: %d", code)
	}
	// Monitoring stays open.
	if code, _ := do(t, "GET", base+"/jobs/"+jobID, "", ""); code != 200 {
		t.Fatalf("job details without a token: %d", code)
	}
}

// TestNoUploadNoFiles checks what Flink's CVE-2020-17518 (a path in an
// upload's file name) and CVE-2020-17519 (an encoded path in
// /jobmanager/logs/) were about: there is no upload endpoint, and no
// request path reaches the file system, however encoded.
func TestNoUploadNoFiles(t *testing.T) {
	_, _, base := start(t, Options{})
	dir := t.TempDir()
	secret := filepath.Join(dir, "secret.txt")
	os.WriteFile(secret, []byte("do not serve"), 0o600)
	rel := strings.Repeat("..%2f", 12) + strings.TrimPrefix(secret, "/")
	for _, p := range []string{
		"/jobmanager/logs/..%252f..%252f..%252f..%252f..%252f..%252f..%252f..%252f" + strings.ReplaceAll(strings.TrimPrefix(secret, "/"), "/", "%252f"),
		"/jobmanager/logs/" + rel,
		"/web/" + rel,
		"/web/..%2fdashboard.go",
		"/web/../dashboard.go",
		"/../../../../../../.." + secret,
		"/" + rel,
		"/web/%2e%2e/%2e%2e" + secret,
		"/web/app.js/../../" + secret,
	} {
		code, data := do(t, "GET", base+p, "", "")
		if strings.Contains(string(data), "do not serve") || strings.Contains(string(data), "package rest") || code == 200 && !strings.Contains(p, "app.js") {
			t.Errorf("GET %s: %d %.80q", p, code, data)
		}
	}
	// Flink's upload endpoint does not exist; a multipart POST with a
	// traversing file name writes nothing.
	target := filepath.Join(dir, "uploaded.jar")
	body := "--b\r\nContent-Disposition: form-data; name=\"jarfile\"; filename=\"../../../../../../.." + target + "\"\r\n\r\nPK\r\n--b--\r\n"
	for _, p := range []string{"/jars/upload", "/jobs", "/web/upload"} {
		req, _ := http.NewRequest("POST", base+p, strings.NewReader(body))
		req.Header.Set("Content-Type", "multipart/form-data; boundary=b")
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode < 400 {
			t.Errorf("POST %s: %d", p, resp.StatusCode)
		}
	}
	if _, err := os.Stat(target); !os.IsNotExist(err) {
		t.Fatalf("an upload wrote %s", target)
	}
	// The embedded assets are served.
	if code, data := do(t, "GET", base+"/", "", ""); code != 200 || !strings.Contains(string(data), "<title>Weir") {
		t.Fatalf("GET /: %d %.80q", code, data)
	}
}

func TestWeirResources(t *testing.T) {
	s, job, base := start(t, Options{OpenDetails: true})
	job.tick()
	s.Sample()
	var snap monitor.Snapshot
	getJSON(t, base+"/weir/jobs/"+jobID+"/snapshot", 200, &snap)
	if snap.Job.ID != jobID || len(snap.Vertices) != 3 || snap.Vertices[2].KeySkew[0].Keys[0].Key != "k1" {
		t.Fatalf("snapshot: %+v", snap)
	}
	var hist []monitor.Snapshot
	getJSON(t, base+"/weir/jobs/"+jobID+"/history", 200, &hist)
	if len(hist) != 3 {
		t.Fatalf("history of %d samples", len(hist))
	}
	getJSON(t, fmt.Sprintf("%s/weir/jobs/%s/history?since=%d", base, jobID, hist[1].Timestamp), 200, &hist)
	if len(hist) != 1 {
		t.Fatalf("history since: %d samples", len(hist))
	}
	var doc struct {
		Samples  int
		Findings []struct{ Kind string }
	}
	getJSON(t, base+"/weir/jobs/"+jobID+"/doctor", 200, &doc)
	kinds := map[string]bool{}
	for _, f := range doc.Findings {
		kinds[f.Kind] = true
	}
	if !kinds["inverted-bounds"] {
		t.Fatalf("doctor: %+v", doc)
	}
}

func TestPrometheus(t *testing.T) {
	_, _, base := start(t, Options{})
	code, data := do(t, "GET", base+"/metrics", "", "")
	if code != 200 {
		t.Fatalf("/metrics: %d", code)
	}
	text := string(data)
	// Every series has the job's id and name; per-vertex ones the
	// vertex's id besides its name.
	labels := strings.NewReplacer("{job}", `job_id="`+jobID+`",job_name="orders-join"`,
		"{join}", `vertex="join",vertex_id="`+joinID+`"`, "{orders}", `vertex="orders",vertex_id="`+srcID+`"`)
	for _, want := range []string{
		"# TYPE weir_records_in_total counter",
		`weir_records_in_total{{job},subtask="1",{join}} 1800`,
		`weir_busy_seconds_total{{job},subtask="0",{join}} 0.4`,
		`weir_backpressured_ratio{{job},subtask="0",{join}} 0.2`,
		`weir_input_watermark_seconds{input="2",{job},subtask="0",{join}} 1000`,
		`weir_input_idle{input="2",{job},subtask="1",{join}} 1`,
		`weir_state_entries{{job},operator="join",subtask="0",{join}} 100`,
		`weir_timers{{job},operator="join",subtask="1",{join}} 7`,
		`weir_kafka_consumer_lag{{job},operator="orders",partition="0",subtask="0",topic="orders",{orders}} 42`,
		`weir_source_split_watermark_seconds{{job},operator="orders",split="p0",subtask="0",{orders}} 1002`,
		`weir_checkpoints_completed_total{{job}} 3`,
		`weir_last_checkpoint_size_bytes{{job}} 3000`,
		`weir_checkpoint_alignment_seconds{{job},subtask="0",{join}} 0.3`,
		`weir_join_sampled_mirrored_matches_total{{job},operator="join",subtask="0",{join}} 80`,
		"go_goroutines",
	} {
		if want = labels.Replace(want); !strings.Contains(text, want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
}
