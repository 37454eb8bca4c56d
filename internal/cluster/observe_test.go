package cluster_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/internal/cluster"
	"github.com/weirstream/weir/internal/kafkatest"
	"github.com/weirstream/weir/internal/monitor"
	"github.com/weirstream/weir/rest"
)

func getJSON(t *testing.T, url string, v any) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %s: %s", url, resp.Status, body)
	}
	if v == nil {
		return
	}
	if err := json.Unmarshal(body, v); err != nil {
		t.Fatalf("GET %s: %v: %s", url, err, body)
	}
}

// TestClusterObservability runs the job as two instances in this
// process, each with its REST server: after the input is consumed, the
// instances' REST APIs and metrics show disjoint sets of owned tasks that
// cover the job, each running with a committed checkpoint, and cluster
// status lists the same owners, every task's committed checkpoint and
// input positions: the source tasks' at the end of their partitions (as
// many records as were produced, lag 0), the repartition readers' at most
// a transaction marker per upstream task before the end.
func TestClusterObservability(t *testing.T) {
	broker := kafkatest.Broker(t)
	cl, adm := clients(t, broker)
	const parts = 4
	s := jobSpec{Broker: broker, Job: unique(t, "job"), In: unique(t, "in"), Out: unique(t, "out"),
		Checkpoints: t.TempDir(), SessionMS: 6000, Join: true}
	createTopic(t, adm, s.In, parts)
	createTopic(t, adm, s.Out, 1)
	evs, want := produceEnded(t, cl, s.In, rand.New(rand.NewPCG(7, 8)), parts, 400, 10)
	out := readOutput(t, broker, s.Out)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var handles []*weir.JobHandle
	var servers []rest.Server // each instance's REST server
	for i := 0; i < 2; i++ {
		s.REST = rest.New("127.0.0.1:0")
		servers = append(servers, s.REST)
		h, err := buildJob(s).ExecuteAsync(ctx, s.Job)
		if err != nil {
			t.Fatal(err)
		}
		handles = append(handles, h)
	}
	defer func() {
		cancel()
		for _, h := range handles {
			if err := h.Wait(); err != nil && ctx.Err() == nil {
				t.Error(err)
			}
		}
		for _, srv := range servers {
			srv.Close()
		}
	}()
	got := out.wait(t, count(want), 2*time.Minute)
	all := []string{"s1-0", "s1-1", "s1-2", "s1-3", "s3-0", "s3-1", "s3-2", "s3-3"}
	// Wait until both instances own tasks that cover the job, each
	// running and committed, then for every task to commit 2 more
	// checkpoints (positions at rest).
	views := func() []*monitor.Cluster {
		var cs []*monitor.Cluster
		for i, h := range handles {
			var c monitor.Cluster
			getJSON(t, "http://"+servers[i].Addr()+"/jobs/"+h.ID()+"/cluster", &c)
			cs = append(cs, &c)
		}
		return cs
	}
	settled := func(cs []*monitor.Cluster) bool {
		var ids []string
		for _, c := range cs {
			if len(c.Tasks) == 0 || c.Member == "" {
				return false
			}
			for _, ct := range c.Tasks {
				if ct.State != cluster.TaskRunning || ct.CommittedCheckpoint == 0 {
					return false
				}
				ids = append(ids, ct.ID)
			}
		}
		sort.Strings(ids)
		return slices.Equal(ids, all)
	}
	deadline := time.Now().Add(2 * time.Minute)
	for !settled(views()) {
		if time.Now().After(deadline) {
			t.Fatalf("the instances' REST APIs do not show every task owned once and running: %+v", views())
		}
		time.Sleep(100 * time.Millisecond)
	}
	waitCheckpoints(t, adm, s.Job, 2)
	cs := views()
	if !settled(cs) {
		t.Fatalf("the tasks moved after settling: %+v", cs)
	}
	st, err := cluster.Status(ctx, []string{broker}, s.Job)
	if err != nil {
		t.Fatal(err)
	}
	owner := map[string]string{}
	rest := map[string]monitor.ClusterTask{}
	for _, c := range cs {
		for _, ct := range c.Tasks {
			owner[ct.ID], rest[ct.ID] = c.Member, ct
		}
	}
	for _, ts := range st {
		if ts.Member == "" || !strings.HasSuffix(ts.Member, owner[ts.Task]) {
			t.Errorf("status: task %s owned by %q, the REST APIs say %q", ts.Task, ts.Member, owner[ts.Task])
		}
		if ts.Checkpoint < rest[ts.Task].CommittedCheckpoint {
			t.Errorf("status: task %s committed checkpoint %d, before the %d its instance reported", ts.Task, ts.Checkpoint, rest[ts.Task].CommittedCheckpoint)
		}
		if ts.Lag < 0 || len(ts.Inputs) == 0 {
			t.Errorf("status: task %s has no input positions: %+v", ts.Task, ts)
			continue
		}
		var p int
		fmt.Sscanf(ts.Task[strings.IndexByte(ts.Task, '-')+1:], "%d", &p)
		source := strings.HasPrefix(ts.Task, "s1-")
		for _, in := range ts.Inputs {
			switch {
			case source && (in.Topic != s.In || int(in.Partition) != p || in.Committed != int64(len(evs[p])) || in.Lag != 0):
				t.Errorf("status: source task %s input %+v, want %s:%d at %d (every record produced) with lag 0", ts.Task, in, s.In, p, len(evs[p]))
			case !source && (!strings.HasSuffix(in.Topic, "-repartition") || int(in.Partition) != p || in.Lag > parts || in.Committed <= 0):
				// Transaction markers take offsets: the last transaction
				// of each upstream task may end in one after the last
				// record read.
				t.Errorf("status: task %s input %+v, want its repartition partition %d read to the end (at most a transaction marker per upstream task after)", ts.Task, in, p)
			}
		}
		if want := 1; source && len(ts.Inputs) != want {
			t.Errorf("status: source task %s has inputs %+v", ts.Task, ts.Inputs)
		}
		if want := 3; !source && len(ts.Inputs) != want { // the window's and the join's two
			t.Errorf("status: task %s has inputs %+v, want the window's and the join's repartition topics", ts.Task, ts.Inputs)
		}
		// The instance reports the same positions for the same checkpoint.
		if r := rest[ts.Task]; r.CommittedCheckpoint == ts.Checkpoint {
			for i, in := range ts.Inputs {
				if i >= len(r.Inputs) || r.Inputs[i].Offset != in.Committed {
					t.Errorf("task %s checkpoint %d: REST positions %+v, status %+v", ts.Task, ts.Checkpoint, r.Inputs, ts.Inputs)
					break
				}
			}
		}
	}
	// Flink's vertex resource lists the owned tasks as its subtasks, and
	// the metrics name each owned task.
	for i, h := range handles {
		var job struct {
			Vertices []struct{ ID, Name string } `json:"vertices"`
		}
		base := "http://" + servers[i].Addr()
		getJSON(t, base+"/jobs/"+h.ID(), &job)
		var subtasks []string
		for _, v := range job.Vertices {
			var vd struct {
				Parallelism int `json:"parallelism"`
				Subtasks    []struct {
					Subtask int    `json:"subtask"`
					Task    string `json:"weir-task"`
					TM      string `json:"taskmanager-id"`
				} `json:"subtasks"`
			}
			getJSON(t, base+"/jobs/"+h.ID()+"/vertices/"+v.ID, &vd)
			if vd.Parallelism != parts {
				t.Errorf("instance %d vertex %s: parallelism %d, want the stage's %d tasks", i, v.Name, vd.Parallelism, parts)
			}
			for _, sub := range vd.Subtasks {
				if owner[sub.Task] != cs[i].Member || sub.TM != cs[i].Member || !strings.HasSuffix(sub.Task, fmt.Sprintf("-%d", sub.Subtask)) {
					t.Errorf("instance %d vertex %s: subtask %+v is not a task it owns", i, v.Name, sub)
				}
				subtasks = append(subtasks, sub.Task)
			}
		}
		for _, ct := range cs[i].Tasks {
			if !slices.Contains(subtasks, ct.ID) {
				t.Errorf("instance %d: owned task %s is no vertex's subtask", i, ct.ID)
			}
		}
		resp, err := http.Get(base + "/metrics")
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		for _, ct := range cs[i].Tasks {
			if line := fmt.Sprintf(`weir_cluster_task_owned{job_id=%q,job_name=%q,member=%q,partition="%d",stage=%q,task=%q} 1`, h.ID(), s.Job, cs[i].Member, ct.Partition, ct.Stage, ct.ID); !strings.Contains(string(body), line) {
				t.Errorf("instance %d: /metrics lacks %s", i, line)
			}
		}
	}
	if d := diff(got, want); d != "" {
		t.Fatalf("committed output differs:\n%s", d)
	}
}

// produceEnded produces the events of inputs followed by an end event per
// partition, and returns them and the job's expected output (window sums
// and join pairs).
func produceEnded(t *testing.T, cl *kgo.Client, topic string, r *rand.Rand, parts, n, users int) ([][]ev, map[string]int) {
	t.Helper()
	evs, want := inputs(r, parts, n, users)
	joinWant(evs, want)
	for p := range evs {
		evs[p] = append(evs[p], ev{User: endUser, Amount: 1, TS: 1 << 40})
	}
	produceEvents(t, cl, topic, evs)
	return evs, want
}
