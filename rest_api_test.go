package weir_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/rest"
)

// restEvent is an event of the REST tests' jobs.
type restEvent struct {
	Key int64
	TS  int64
}

// startJoinJob runs, until cancelled, an interval join of two unbounded
// generated streams (the second with a 30 s watermark lag) behind a REST
// server, with checkpoints every 50 ms.
func startJoinJob(t *testing.T, opts ...weir.Option) (*weir.JobHandle, string) {
	t.Helper()
	srv := rest.New("127.0.0.1:0")
	t.Cleanup(func() { srv.Close() })
	env := weir.NewEnvironment(append([]weir.Option{weir.WithParallelism(2), weir.WithPlugin(srv),
		weir.WithAutoWatermarkInterval(10 * time.Millisecond), weir.WithKeySampling(16)}, opts...)...)
	env.EnableCheckpointing(50*time.Millisecond, weir.DefaultSavepointDir(t.TempDir()))
	strategy := weir.ForBoundedOutOfOrderness[restEvent](0).WithTimestampAssigner(func(e restEvent, _ int64) int64 { return e.TS })
	orders := weir.Generate(env, -1, 20_000, func(i int64) restEvent { return restEvent{Key: i % 50, TS: 1_000_000 + i} }, strategy).Name("orders")
	payments := weir.Generate(env, -1, 20_000, func(i int64) restEvent { return restEvent{Key: i % 50, TS: 970_000 + i} }, strategy).Name("payments")
	key := func(e restEvent) int64 { return e.Key }
	joined := weir.IntervalJoinFunc(weir.KeyBy(orders, key), weir.KeyBy(payments, key), weir.Between(0, 10*time.Millisecond),
		func(l, r restEvent, _ weir.JoinContext, out weir.Collector[int64]) error {
			out.Collect(l.Key)
			return nil
		}).Name("join").UID("join")
	weir.Discard(joined)
	h, err := env.ExecuteAsync(context.Background(), "rest-e2e")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Cancel(); h.Wait() })
	return h, "http://" + srv.Addr()
}

func httpJSON(t *testing.T, method, url, body string, v any) int {
	t.Helper()
	req, _ := http.NewRequest(method, url, strings.NewReader(body))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	if v != nil {
		if err := json.Unmarshal(data, v); err != nil {
			t.Fatalf("%s %s: %v in %.200s", method, url, err, data)
		}
	}
	return resp.StatusCode
}

// eventually polls f until it returns "" (done), failing with its last
// answer after 20 s.
func eventually(t *testing.T, f func() string) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		why := f()
		if why == "" {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal(why)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestRESTAgainstRunningJob reads a running job through Flink's REST
// paths, takes a savepoint and cancels it.
func TestRESTAgainstRunningJob(t *testing.T) {
	h, base := startJoinJob(t)
	jid := h.ID()
	if len(jid) != 32 {
		t.Fatalf("job id %q", jid)
	}
	var details struct {
		JID      string `json:"jid"`
		State    string `json:"state"`
		Vertices []struct {
			ID, Name    string
			Parallelism int
			Metrics     map[string]any
		}
	}
	eventually(t, func() string {
		httpJSON(t, "GET", base+"/jobs/"+jid, "", &details)
		if details.State != "RUNNING" || len(details.Vertices) != 3 {
			return fmt.Sprintf("details %+v", details)
		}
		return ""
	})
	var join string
	for _, v := range details.Vertices {
		if strings.HasPrefix(v.Name, "join") {
			join = v.ID
		}
	}
	if join == "" {
		t.Fatalf("no join vertex in %+v", details.Vertices)
	}
	// Both inputs' watermarks, 30 s apart.
	eventually(t, func() string {
		var wms []map[string]string
		httpJSON(t, "GET", base+"/jobs/"+jid+"/vertices/"+join+"/watermarks?inputs=true", "", &wms)
		got := map[string]string{}
		for _, m := range wms {
			got[m["id"]] = m["value"]
		}
		var w1, w2 int64
		fmt.Sscan(got["0.currentInput1Watermark"], &w1)
		fmt.Sscan(got["0.currentInput2Watermark"], &w2)
		if w1 < 1_000_000 || w1-w2 < 29_000 || got["0.currentInputWatermark"] != got["0.currentInput2Watermark"] {
			return fmt.Sprintf("watermarks %v", got)
		}
		return ""
	})
	var vm []map[string]string
	eventually(t, func() string {
		httpJSON(t, "GET", base+"/jobs/"+jid+"/vertices/"+join+"/metrics?get=0.numRecordsIn,0.join.stateEntries,0.join.sampledProbes", "", &vm)
		if len(vm) != 3 || vm[0]["value"] == "0" || vm[1]["value"] == "0" || vm[2]["value"] == "0" {
			return fmt.Sprintf("vertex metrics %v", vm)
		}
		return ""
	})
	// A completed checkpoint with the join's subtasks' alignment figures.
	var cid int64
	eventually(t, func() string {
		var cs struct {
			Counts struct{ Completed int64 }
			Latest struct {
				Completed *struct{ ID int64 } `json:"completed"`
			}
		}
		httpJSON(t, "GET", base+"/jobs/"+jid+"/checkpoints", "", &cs)
		if cs.Counts.Completed == 0 || cs.Latest.Completed == nil {
			return fmt.Sprintf("checkpoints %+v", cs)
		}
		cid = cs.Latest.Completed.ID
		return ""
	})
	var sub struct {
		NumSubtasks int `json:"num_subtasks"`
		Subtasks    []struct {
			Status    string
			StateSize int64 `json:"state_size"`
			Alignment struct{ Duration int64 }
			LastInput int `json:"weir-last-input"`
		}
	}
	if code := httpJSON(t, "GET", fmt.Sprintf("%s/jobs/%s/checkpoints/details/%d/subtasks/%s", base, jid, cid, join), "", &sub); code != 200 ||
		sub.NumSubtasks != 2 || sub.Subtasks[0].Status != "completed" || sub.Subtasks[0].LastInput < 0 {
		t.Fatalf("checkpoint %d of the join: %d %+v", cid, code, sub)
	}
	// Prometheus.
	resp, err := http.Get(base + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	prom, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	labels := strings.NewReplacer("{job}", `job_id="`+jid+`",job_name="rest-e2e"`, "{join}", `vertex="join -> Discard",vertex_id="`+join+`"`)
	for _, want := range []string{
		`weir_records_in_total{{job},subtask="0",{join}}`,
		`weir_input_watermark_seconds{input="2",{job},subtask="1",{join}}`,
		`weir_input_watermark_lag_seconds{input="1"`,
		`weir_state_entries{{job},operator="join",subtask="0",{join}}`,
		`weir_busy_ratio{`, `weir_checkpoints_completed_total{{job}}`, `weir_checkpoint_alignment_seconds{{job},subtask="0",{join}}`,
		`weir_source_split_watermark_seconds{{job},operator="orders"`, "# TYPE weir_records_out_total counter",
	} {
		if want = labels.Replace(want); !strings.Contains(string(prom), want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
	// A savepoint through Flink's asynchronous API.
	var trig map[string]string
	if code := httpJSON(t, "POST", base+"/jobs/"+jid+"/savepoints", `{"cancel-job": false}`, &trig); code != 202 {
		t.Fatalf("trigger: %d %v", code, trig)
	}
	eventually(t, func() string {
		var st struct {
			Status    struct{ ID string }
			Operation struct{ Location string }
		}
		httpJSON(t, "GET", base+"/jobs/"+jid+"/savepoints/"+trig["request-id"], "", &st)
		if st.Status.ID != "COMPLETED" || !strings.Contains(st.Operation.Location, "savepoint-") {
			return fmt.Sprintf("savepoint status %+v", st)
		}
		return ""
	})
	if code := httpJSON(t, "PATCH", base+"/jobs/"+jid+"?mode=cancel", "", nil); code != 202 {
		t.Fatalf("cancel: %d", code)
	}
	<-h.Done()
}

// flameNode is the JSON of a flame graph node.
type flameNode struct {
	Name     string
	Value    int64
	Children []*flameNode
}

// has reports whether a frame whose name contains s is in the tree.
func (n *flameNode) has(s string) bool {
	if strings.Contains(n.Name, s) {
		return true
	}
	for _, c := range n.Children {
		if c.has(s) {
			return true
		}
	}
	return false
}

// TestFlameGraphPerVertex profiles the join job's CPU and checks that a
// vertex's flame graph holds the samples of its own goroutines only
// (pprof labels weir_vertex and weir_subtask): the join's has the
// interval join's frames, the orders source's has samples and no join
// frame, and a subtask the vertex does not have gets no sample.
func TestFlameGraphPerVertex(t *testing.T) {
	h, base := startJoinJob(t)
	jid := h.ID()
	var details struct {
		Vertices []struct{ ID, Name string }
	}
	vertex := map[string]string{}
	eventually(t, func() string {
		httpJSON(t, "GET", base+"/jobs/"+jid, "", &details)
		for _, v := range details.Vertices {
			vertex[strings.Fields(v.Name)[0]] = v.ID
		}
		if vertex["join"] == "" || vertex["orders"] == "" {
			return fmt.Sprintf("vertices %+v", details.Vertices)
		}
		return ""
	})
	flame := func(vid, query string) *flameNode {
		var fg struct{ Data *flameNode }
		if code := httpJSON(t, "GET", base+"/jobs/"+jid+"/vertices/"+vid+"/flamegraph?seconds=1"+query, "", &fg); code != 200 || fg.Data == nil {
			t.Fatalf("flame graph of %s: %d", vid, code)
		}
		return fg.Data
	}
	// CPU samples come at 100 Hz: retry a few profiles until each vertex
	// has some (the machine may be loaded).
	eventually(t, func() string {
		j := flame(vertex["join"], "")
		if j.Value == 0 || !j.has("intervaljoin.") {
			return fmt.Sprintf("join flame graph: %d samples, interval join frames %v", j.Value, j.has("intervaljoin."))
		}
		return ""
	})
	eventually(t, func() string {
		o := flame(vertex["orders"], "")
		if o.has("intervaljoin.") {
			t.Fatal("the orders source's flame graph has the join's frames")
		}
		if o.Value == 0 {
			return "orders flame graph: no samples"
		}
		return ""
	})
	if n := flame(vertex["join"], "&subtask=7"); n.Value != 0 {
		t.Errorf("subtask 7 of a 2-subtask vertex has %d samples", n.Value)
	}
}

// customStore is a CheckpointStore of the user's own.
type customStore struct{ weir.CheckpointStore }

// TestRESTCheckpointStorageName: the checkpoint configuration names the
// storage as Flink does (checkpoint_storage), not by a Go type of Weir's.
func TestRESTCheckpointStorageName(t *testing.T) {
	for _, c := range []struct {
		opt  weir.CheckpointOption
		want string
	}{
		{weir.CheckpointStoreIn(weir.NewMemoryCheckpointStore()), "JobManagerCheckpointStorage"},
		{weir.CheckpointStorage(t.TempDir()), "FileSystemCheckpointStorage"},
		{weir.CheckpointStoreIn(customStore{weir.NewMemoryCheckpointStore()}), "weir_test.customStore"},
	} {
		srv := rest.New("127.0.0.1:0")
		t.Cleanup(func() { srv.Close() })
		env := weir.NewEnvironment(weir.WithParallelism(1), weir.WithPlugin(srv), weir.WithCheckpointing(time.Hour, c.opt))
		weir.Discard(weir.Generate(env, -1, 1000, func(i int64) int64 { return i }, weir.NoWatermarks[int64]()))
		h, err := env.ExecuteAsync(context.Background(), "storage-name")
		if err != nil {
			t.Fatal(err)
		}
		var cfg map[string]any
		httpJSON(t, "GET", "http://"+srv.Addr()+"/jobs/"+h.ID()+"/checkpoints/config", "", &cfg)
		h.Cancel()
		h.Wait()
		if cfg["checkpoint_storage"] != c.want {
			t.Errorf("checkpoint_storage = %v, want %s", cfg["checkpoint_storage"], c.want)
		}
	}
}

// TestRESTRestartStrategyName: /jobs/:id/config names the restart strategy
// as Flink's restart-strategy option does, not by a Go type of Weir's.
func TestRESTRestartStrategyName(t *testing.T) {
	for _, c := range []struct {
		opt  []weir.Option
		want string
	}{
		{nil, "none"},
		{[]weir.Option{weir.WithRestartStrategy(weir.FixedDelayRestart(3, time.Second))}, "fixed-delay"},
		{[]weir.Option{weir.WithRestartStrategy(weir.ExponentialDelayRestart(time.Second, time.Minute, 3))}, "exponential-delay"},
	} {
		srv := rest.New("127.0.0.1:0")
		t.Cleanup(func() { srv.Close() })
		env := weir.NewEnvironment(append([]weir.Option{weir.WithParallelism(1), weir.WithPlugin(srv)}, c.opt...)...)
		weir.Discard(weir.Generate(env, -1, 1000, func(i int64) int64 { return i }, weir.NoWatermarks[int64]()))
		h, err := env.ExecuteAsync(context.Background(), "restart-name")
		if err != nil {
			t.Fatal(err)
		}
		var cfg struct {
			Exec map[string]any `json:"execution-config"`
		}
		httpJSON(t, "GET", "http://"+srv.Addr()+"/jobs/"+h.ID()+"/config", "", &cfg)
		h.Cancel()
		h.Wait()
		if got := cfg.Exec["restart-strategy"]; got != c.want {
			t.Errorf("restart-strategy = %v, want %s", got, c.want)
		}
	}
}
