package cluster_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"math/rand/v2"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"go.uber.org/goleak"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/connector/kafka"
	"github.com/weirstream/weir/internal/cluster"
	"github.com/weirstream/weir/internal/kafkatest"
	"github.com/weirstream/weir/kafkacluster"
	"github.com/weirstream/weir/rest"
	"github.com/weirstream/weir/window"
)

// A test binary started with WEIR_CLUSTER_MEMBER=1 is one instance of the
// test job (memberMain), until it is killed.
func TestMain(m *testing.M) {
	if os.Getenv("WEIR_CLUSTER_MEMBER") == "1" {
		os.Exit(memberMain())
	}
	goleak.VerifyTestMain(m)
}

// ev is an input event: a user's amount at a time. Win is set by the job.
type ev struct {
	User   string `json:"user"`
	Amount int64  `json:"amount"`
	TS     int64  `json:"ts"`
	Win    int64  `json:"win,omitempty"`
}

// endUser marks a partition's last event, far in event time: it moves
// every window before it to fire.
const endUser = "~end"

const winSize = 100

// jobSpec is what an instance needs to build the job.
type jobSpec struct {
	Broker, Job, In, Out, Checkpoints string
	SessionMS                         int64
	IdleMS                            int64 // WithIdleness, if not 0
	// Join adds an interval join of the events with themselves (same
	// user, same time) to the output.
	Join bool
	// Forward, "listen=target", makes the member forward TCP connections
	// to listen to target before it starts (TestClusterFailoverHosts: the
	// broker's address inside a network namespace).
	Forward string
	// REST, if set, serves the instance's REST API.
	REST rest.Server `json:"-"`
	// Q5 runs q5Job over that many events instead (Single: in the
	// single-process engine at Parallelism).
	Q5          int64
	Single      bool
	Parallelism int
	// CAFile, if set, makes Broker the test broker's TLS and SASL
	// listener (kafkatest.SecureBroker), reached by SCRAM-SHA-512 by the
	// cluster, the source and the sink.
	CAFile string
}

// security is the TLS and SASL of s (none without CAFile).
func (s jobSpec) security() kafka.Security {
	if s.CAFile == "" {
		return kafka.Security{}
	}
	sec, err := kafka.SecurityFromProperties(map[string]string{"security.protocol": "SASL_SSL",
		"sasl.mechanism": "SCRAM-SHA-512", "sasl.username": "weir", "sasl.password": "weir-secret", "ssl.ca.location": s.CAFile})
	if err != nil {
		panic(err)
	}
	return sec
}

func joinLine(a, b ev) string { return fmt.Sprintf("j %s %d %d %d", a.User, a.TS, a.Amount, b.Amount) }

// joinWant adds the interval join's expected output to want.
func joinWant(evs [][]ev, want map[string]int) {
	at := map[[2]any][]ev{}
	for _, es := range evs {
		for _, e := range es {
			if e.User != endUser {
				k := [2]any{e.User, e.TS}
				at[k] = append(at[k], e)
			}
		}
	}
	for _, group := range at {
		for _, a := range group {
			for _, b := range group {
				want[joinLine(a, b)]++
			}
		}
	}
}

// buildJob is the test job: events keyed by user (not the topics'
// partitioning: a repartition topic), summed in tumbling event-time
// windows of 100 ms, written exactly once.
func buildJob(s jobSpec, opts ...kafkacluster.Option) *weir.Environment {
	eopts := []weir.Option{weir.WithParallelism(1),
		weir.WithCluster(kafkacluster.New(s.Broker, append([]kafkacluster.Option{kafkacluster.SessionTimeout(time.Duration(s.SessionMS) * time.Millisecond),
			kafkacluster.Security(s.security())}, opts...)...)),
		weir.WithLogger(jobLogger())}
	if s.REST != nil {
		eopts = append(eopts, weir.WithPlugin(s.REST))
	}
	env := weir.NewEnvironment(eopts...)
	env.EnableCheckpointing(200*time.Millisecond, weir.CheckpointStorage(s.Checkpoints))
	strategy := weir.ForBoundedOutOfOrderness[ev](0).WithTimestampAssigner(func(e ev, _ int64) int64 { return e.TS })
	if s.IdleMS > 0 {
		strategy = strategy.WithIdleness(time.Duration(s.IdleMS) * time.Millisecond)
	}
	src := weir.FromDynamicSource(env, kafka.NewSource(kafka.JSON[ev](), kafka.WithBrokers(s.Broker), kafka.WithTopics(s.In),
		kafka.WithSecurity(s.security())), strategy, "events").UID("events")
	stamped := weir.Map(src, func(e ev) ev { e.Win = e.TS - e.TS%winSize; return e })
	sums := weir.Reduce(weir.Window(weir.KeyBy(stamped, func(e ev) string { return e.User }), window.TumblingEventTime(winSize*time.Millisecond)),
		func(a, b ev) ev { a.Amount += b.Amount; return a })
	lines := weir.Map(sums, func(e ev) string { return fmt.Sprintf("%s %d %d", e.User, e.Win, e.Amount) })
	if s.Join {
		byUser := func(e ev) string { return e.User }
		pairs := weir.IntervalJoinFunc(weir.KeyBy(stamped, byUser), weir.KeyBy(stamped, byUser), weir.Between(0, 0),
			func(a, b ev, _ weir.JoinContext, out weir.Collector[string]) error {
				if a.User != endUser {
					out.Collect(joinLine(a, b))
				}
				return nil
			}).UID("join")
		lines = weir.Union(lines, pairs)
	}
	// No WithTransactionalIDPrefix: in a cluster the sink writes through
	// its task's transaction, whose id the cluster derives.
	kafka.NewSink(kafka.StringValues(), kafka.WithBrokers(s.Broker), kafka.WithDefaultTopic(s.Out),
		kafka.WithDeliveryGuarantee(kafka.ExactlyOnce), kafka.WithSecurity(s.security())).To(lines).UID("out")
	return env
}

func memberMain() int {
	var s jobSpec
	if err := json.Unmarshal([]byte(os.Getenv("WEIR_CLUSTER_SPEC")), &s); err != nil {
		fmt.Fprintln(os.Stderr, "member:", err)
		return 2
	}
	if s.Forward != "" {
		listen, target, _ := strings.Cut(s.Forward, "=")
		_, stop, err := forward(listen, target)
		if err != nil {
			fmt.Fprintln(os.Stderr, "member:", err)
			return 2
		}
		defer stop()
	}
	ns, _ := os.Readlink("/proc/self/ns/net")
	fmt.Printf("netns %s\n", ns)
	if s.Q5 > 0 {
		if err := q5Job(s).Execute(context.Background(), s.Job); err != nil {
			fmt.Fprintln(os.Stderr, "member:", err)
			return 1
		}
		return 0
	}
	env := buildJob(s, kafkacluster.OnTasks(func(ts []string) { fmt.Printf("tasks %s\n", strings.Join(ts, ",")) }))
	if err := env.Execute(context.Background(), s.Job); err != nil {
		fmt.Fprintln(os.Stderr, "member:", err)
		return 1
	}
	return 0
}

// member is an instance running as its own OS process.
type member struct {
	cmd    *exec.Cmd
	mu     sync.Mutex
	tasks  []string
	events []taskEvent   // failover events (jobLogger)
	netns  string        // the member's network namespace (/proc/self/ns/net)
	moved  chan struct{} // a value per change of tasks (shared by a test's members)
}

// startMember starts an instance of the test job as an OS process, with
// wrap before the command (ip netns exec NS); it tells moved whenever its
// tasks change.
func startMember(t *testing.T, s jobSpec, moved chan struct{}, wrap ...string) *member {
	t.Helper()
	spec, _ := json.Marshal(s)
	args := append(slices.Clone(wrap), os.Args[0], "-test.run=^$")
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Env = append(os.Environ(), "WEIR_CLUSTER_MEMBER=1", "WEIR_CLUSTER_SPEC="+string(spec))
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	m := &member{cmd: cmd, moved: moved}
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if rest, ok := strings.CutPrefix(sc.Text(), "netns "); ok {
				m.mu.Lock()
				m.netns = rest
				m.mu.Unlock()
			}
			if rest, ok := strings.CutPrefix(sc.Text(), "event "); ok {
				var e taskEvent
				if json.Unmarshal([]byte(rest), &e) == nil {
					m.mu.Lock()
					m.events = append(m.events, e)
					m.mu.Unlock()
				}
				continue
			}
			if rest, ok := strings.CutPrefix(sc.Text(), "tasks "); ok {
				m.mu.Lock()
				m.tasks = strings.FieldsFunc(rest, func(r rune) bool { return r == ',' })
				m.mu.Unlock()
				select {
				case m.moved <- struct{}{}:
				default:
				}
			}
		}
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	return m
}

// ownedBy reports whether the members other than victim own every task
// of tasks.
func ownedBy(ms []*member, victim int, tasks []string) bool {
	have := map[string]bool{}
	for i, m := range ms {
		if i != victim {
			for _, t := range m.owned() {
				have[t] = true
			}
		}
	}
	for _, t := range tasks {
		if !have[t] {
			return false
		}
	}
	return true
}

func (m *member) owned() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Clone(m.tasks)
}

var seq int

func unique(t *testing.T, what string) string {
	seq++
	return fmt.Sprintf("weir-%s-%s-%d-%d", strings.ReplaceAll(t.Name(), "/", "-"), what, time.Now().UnixNano()%1e9, seq)
}

// clients returns a producer writing to the partition each record names,
// and an admin client, closed when the test ends.
func clients(t *testing.T, broker string) (*kgo.Client, *kadm.Client) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(broker), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl, kadm.NewClient(cl)
}

func createTopic(t *testing.T, adm *kadm.Client, name string, n int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	resp, err := adm.CreateTopic(ctx, int32(n), 1, kafkatest.KeepRecords(), name)
	if err == nil {
		err = resp.Err
	}
	if err != nil {
		t.Fatalf("creating topic %s: %v", name, err)
	}
}

// inputs makes per partition n events of users u0..u(users-1) in event
// time order, and the expected window sums.
func inputs(r *rand.Rand, parts, n, users int) ([][]ev, map[string]int) {
	evs := make([][]ev, parts)
	sums := map[[2]any]int64{}
	for p := range evs {
		ts := int64(0)
		for i := 0; i < n; i++ {
			ts += int64(r.IntN(7))
			e := ev{User: "u" + strconv.Itoa(r.IntN(users)), Amount: int64(1 + r.IntN(100)), TS: ts}
			evs[p] = append(evs[p], e)
			sums[[2]any{e.User, ts - ts%winSize}] += e.Amount
		}
	}
	want := map[string]int{}
	for k, v := range sums {
		want[fmt.Sprintf("%s %d %d", k[0], k[1], v)]++
	}
	return evs, want
}

func produceEvents(t *testing.T, cl *kgo.Client, topic string, evs [][]ev) {
	t.Helper()
	var recs []*kgo.Record
	for p, es := range evs {
		for _, e := range es {
			b, _ := json.Marshal(e)
			recs = append(recs, &kgo.Record{Topic: topic, Partition: int32(p), Value: b})
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
}

// reader collects the committed output of a topic (read_committed).
type reader struct {
	mu   sync.Mutex
	got  map[string]int
	last time.Time // of the last record
	stop func()
}

func readOutput(t *testing.T, broker, topic string) *reader {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(broker), kgo.ConsumeTopics(topic), kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxWait(100*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	r := &reader{got: map[string]int{}}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ctx.Err() == nil {
			fs := cl.PollFetches(ctx)
			r.mu.Lock()
			fs.EachRecord(func(rec *kgo.Record) {
				r.got[string(rec.Value)]++
				r.last = time.Now()
			})
			r.mu.Unlock()
		}
	}()
	r.stop = func() { cancel(); <-done; cl.Close() }
	t.Cleanup(r.stop)
	return r
}

func (r *reader) snapshot() (map[string]int, time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return maps.Clone(r.got), r.last
}

func count(m map[string]int) (n int) {
	for _, c := range m {
		n += c
	}
	return n
}

// wait waits until the committed output has at least n records.
func (r *reader) wait(t *testing.T, n int, within time.Duration) map[string]int {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		got, _ := r.snapshot()
		if count(got) >= n {
			return got
		}
		if time.Now().After(deadline) {
			t.Fatalf("after %v the committed output has %d records, want %d", within, count(got), n)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func diff(got, want map[string]int) string {
	var b strings.Builder
	n := 0
	for k, w := range want {
		if got[k] != w && n < 10 {
			fmt.Fprintf(&b, "  %q: got %d, want %d\n", k, got[k], w)
			n++
		}
	}
	for k, g := range got {
		if _, ok := want[k]; !ok && n < 20 {
			fmt.Fprintf(&b, "  %q: got %d, want 0\n", k, g)
			n++
		}
	}
	return b.String()
}

// TestClusterFailover runs the job as 3 OS processes, kills one with
// SIGKILL mid-stream, starts a fourth, and checks that the committed
// output is every window sum exactly once. WEIR_FAULT_TRIALS=N runs N
// trials with random victims and kill points.
func TestClusterFailover(t *testing.T) {
	broker := kafkatest.Broker(t)
	trials := 1
	if s := os.Getenv("WEIR_FAULT_TRIALS"); s != "" {
		trials, _ = strconv.Atoi(s)
	}
	for trial := 0; trial < trials; trial++ {
		t.Run(fmt.Sprint("trial", trial), func(t *testing.T) {
			failoverTrial(t, broker, uint64(trial), func(_ int, s jobSpec, moved chan struct{}) *member { return startMember(t, s, moved) })
		})
	}
}

// failoverTrial runs one failover trial, starting member i with start.
func failoverTrial(t *testing.T, broker string, seed uint64, start func(i int, s jobSpec, moved chan struct{}) *member) {
	const parts, perPart, users = 4, 3000, 30
	r := rand.New(rand.NewPCG(seed, 16))
	cl, adm := clients(t, broker)
	s := jobSpec{Broker: broker, Job: unique(t, "job"), In: unique(t, "in"), Out: unique(t, "out"),
		Checkpoints: t.TempDir(), SessionMS: 6000, Join: true}
	createTopic(t, adm, s.In, parts)
	createTopic(t, adm, s.Out, 2)
	evs, want := inputs(r, parts, perPart, users)
	joinWant(evs, want)
	// The first part of each partition now, the rest after the kill, then
	// an end event per partition.
	cut := perPart/4 + r.IntN(perPart/2)
	first, rest := make([][]ev, parts), make([][]ev, parts)
	for p := range evs {
		first[p], rest[p] = evs[p][:cut], evs[p][cut:]
		rest[p] = append(slices.Clone(rest[p]), ev{User: endUser, Amount: 1, TS: 1 << 40})
	}
	produceEvents(t, cl, s.In, first)
	moved := make(chan struct{}, 1)
	ms := []*member{start(0, s, moved), start(1, s, moved), start(2, s, moved)}
	// Wait until some output is committed: every task runs.
	out := readOutput(t, broker, s.Out)
	out.wait(t, 1, 2*time.Minute)
	// ... and the group has given every member a share of the 2 stages x
	// parts tasks, so that the victim has tasks to lose.
	waitFor(t, moved, 2*time.Minute, "every member to own tasks", func() bool {
		all := map[string]bool{}
		for _, m := range ms {
			ts := m.owned()
			if len(ts) == 0 {
				return false
			}
			for _, id := range ts {
				all[id] = true
			}
		}
		return len(all) == 2*parts
	})
	victim := r.IntN(len(ms))
	t.Logf("killing member %d (tasks %v) at %d of %d events per partition", victim, ms[victim].owned(), cut, perPart)
	snap, _ := out.snapshot()
	before := count(snap)
	killed := time.Now()
	if err := ms[victim].cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	lost := ms[victim].owned()
	produceEvents(t, cl, s.In, rest)
	got := out.wait(t, before+1, 2*time.Minute)
	t.Logf("first output committed after the kill: %v; %d -> %d records", time.Since(killed).Round(time.Millisecond), before, count(got))
	// The victim's tasks move to the others after the session timeout.
	waitFor(t, moved, 2*time.Minute, fmt.Sprintf("the tasks %v of the killed member to move", lost), func() bool { return ownedBy(ms, victim, lost) })
	t.Logf("tasks %v moved %v after the kill (session timeout %d ms)", lost, time.Since(killed).Round(time.Millisecond), s.SessionMS)
	defer logSplit(t, ms, victim, lost, killed, s.SessionMS)
	ms = append(ms, start(3, s, moved))
	out.wait(t, count(want), 3*time.Minute)
	// Let any duplicate surface: every task commits three more
	// checkpoints, so whatever it would still write is committed.
	waitCheckpoints(t, adm, s.Job, 3)
	got, _ = out.snapshot()
	if d := diff(got, want); d != "" {
		t.Fatalf("committed output (%d records) differs from the expected window sums (%d):\n%s", count(got), count(want), d)
	}
	for i, m := range ms {
		if i != victim {
			t.Logf("member %d owns %v", i, m.owned())
		}
	}
}

// jobLogger logs at logLevel to stderr; in a member process it also
// writes the tasks' failover events ("cluster task assigned", "restored",
// "running", "first commit") to stdout as JSON lines after "event ", for
// the test to time the failover.
func jobLogger() *slog.Logger {
	h := slog.Handler(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: logLevel()}))
	if os.Getenv("WEIR_CLUSTER_MEMBER") == "1" {
		h = eventTee{Handler: h, events: slog.NewJSONHandler(prefixWriter{os.Stdout}, nil)}
	}
	return slog.New(h)
}

// eventTee passes records to Handler and the failover events to events.
type eventTee struct {
	slog.Handler
	events slog.Handler
}

func (e eventTee) Enabled(ctx context.Context, l slog.Level) bool {
	return l >= slog.LevelInfo || e.Handler.Enabled(ctx, l)
}

func (e eventTee) Handle(ctx context.Context, r slog.Record) error {
	if strings.HasPrefix(r.Message, "cluster task ") {
		_ = e.events.Handle(ctx, r)
	}
	if e.Handler.Enabled(ctx, r.Level) {
		return e.Handler.Handle(ctx, r)
	}
	return nil
}

func (e eventTee) WithAttrs(as []slog.Attr) slog.Handler {
	return eventTee{Handler: e.Handler.WithAttrs(as), events: e.events.WithAttrs(as)}
}

func (e eventTee) WithGroup(g string) slog.Handler {
	return eventTee{Handler: e.Handler.WithGroup(g), events: e.events.WithGroup(g)}
}

// prefixWriter writes each JSON line after "event ".
type prefixWriter struct{ w io.Writer }

func (p prefixWriter) Write(b []byte) (int, error) {
	if _, err := p.w.Write(append([]byte("event "), b...)); err != nil {
		return 0, err
	}
	return len(b), nil
}

// taskEvent is a failover event of a member (jobLogger).
type taskEvent struct {
	Msg  string `json:"msg"`
	Task string `json:"task"`
	AtMs int64  `json:"at_ms"`
}

// logSplit logs the time from the kill to the first committed output of
// the moved tasks, split into detection (kill -> the survivor's
// assignment), restore (assignment -> the committed checkpoint loaded),
// start (the task's plan built and opened) and catch-up (-> the first
// checkpoint committed: the output reprocessed since the restored
// checkpoint is committed with it), for the slowest moved task of each.
func logSplit(t *testing.T, ms []*member, victim int, lost []string, killed time.Time, sessionMS int64) {
	at := map[string]map[string]int64{} // task -> event -> first time after the kill
	for i, m := range ms {
		if i == victim {
			continue
		}
		m.mu.Lock()
		for _, e := range m.events {
			if e.AtMs < killed.UnixMilli() || !slices.Contains(lost, e.Task) {
				continue
			}
			if at[e.Task] == nil {
				at[e.Task] = map[string]int64{}
			}
			if old, ok := at[e.Task][e.Msg]; !ok || e.AtMs < old {
				at[e.Task][e.Msg] = e.AtMs
			}
		}
		m.mu.Unlock()
	}
	var det, res, start, catch, total int64
	for _, task := range lost {
		ev := at[task]
		a, r, run, c := ev["cluster task assigned"], ev["cluster task restored"], ev["cluster task running"], ev["cluster task first commit"]
		if a == 0 || r == 0 || run == 0 || c == 0 {
			t.Logf("failover split: task %s has events %v", task, ev)
			continue
		}
		k := killed.UnixMilli()
		t.Logf("failover split: task %s: detection %d ms, restore %d ms, start %d ms, catch-up %d ms, kill -> first commit %d ms", task, a-k, r-a, run-r, c-run, c-k)
		det, res, start, catch, total = max(det, a-k), max(res, r-a), max(start, run-r), max(catch, c-run), max(total, c-k)
	}
	t.Logf("failover split (slowest moved task each, session timeout %d ms): detection %d ms, restore %d ms, start %d ms, catch-up %d ms; SIGKILL -> first committed output of the moved tasks %d ms", sessionMS, det, res, start, catch, total)
}

func logLevel() slog.Level {
	if os.Getenv("WEIR_CLUSTER_LOG") == "info" {
		return slog.LevelInfo
	}
	return slog.LevelWarn
}

// TestClusterOneInstance runs the job as one instance in the test's
// process: the same program as a cluster of one.
func TestClusterOneInstance(t *testing.T) {
	broker := kafkatest.Broker(t)
	cl, adm := clients(t, broker)
	s := jobSpec{Broker: broker, Job: unique(t, "job"), In: unique(t, "in"), Out: unique(t, "out"),
		Checkpoints: t.TempDir(), SessionMS: 6000}
	createTopic(t, adm, s.In, 3)
	createTopic(t, adm, s.Out, 1)
	s.Join = true
	evs, want := inputs(rand.New(rand.NewPCG(3, 4)), 3, 500, 10)
	joinWant(evs, want)
	for p := range evs {
		evs[p] = append(evs[p], ev{User: endUser, Amount: 1, TS: 1 << 40})
	}
	produceEvents(t, cl, s.In, evs)
	out := readOutput(t, broker, s.Out)
	ctx, cancel := context.WithCancel(context.Background())
	h, err := buildJob(s).ExecuteAsync(ctx, s.Job)
	if err != nil {
		t.Fatal(err)
	}
	got := out.wait(t, count(want), time.Minute)
	// weir cluster status: every task owned by the one instance, each with
	// a committed checkpoint.
	waitCheckpoints(t, adm, s.Job, 1)
	st, err := cluster.Status(ctx, []string{broker}, s.Job)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, ts := range st {
		if ts.Member == "" || ts.Checkpoint <= 0 {
			t.Errorf("status of task %s: %+v, want an owner and a committed checkpoint", ts.Task, ts)
		}
		ids = append(ids, ts.Task)
	}
	if want := []string{"s1-0", "s1-1", "s1-2", "s3-0", "s3-1", "s3-2"}; !slices.Equal(ids, want) {
		t.Errorf("status lists tasks %v, want %v", ids, want)
	}
	cancel()
	if err := h.Wait(); err != nil && ctx.Err() == nil {
		t.Fatal(err)
	}
	if d := diff(got, want); d != "" {
		t.Fatalf("committed output (%d records) differs from the expected window sums (%d):\n%s", count(got), count(want), d)
	}
}

// TestClusterWatermarks holds one input partition back in event time: no
// window past its watermark fires on any task, though the other
// partition's tasks are far ahead, until the held partition is marked
// idle (a second run of the job with WithIdleness): then the other's
// windows fire. There are two partitions, one held and one read: the
// idleness timeout is processing time, so on a loaded machine the read
// partition may be marked idle too between two fetches; with both idle
// the downstream watermark is the highest of them (Flink's
// StatusWatermarkValve), the read partition's own, and none of its later
// records is late. With a second read partition that one could run ahead
// while the first is idle and make the first's records late, a result
// that depends on timing.
func TestClusterWatermarks(t *testing.T) {
	broker := kafkatest.Broker(t)
	cl, adm := clients(t, broker)
	in := unique(t, "in")
	createTopic(t, adm, in, 2)
	r := rand.New(rand.NewPCG(5, 6))
	evs, _ := inputs(r, 2, 1500, 8)
	const held = 250 // partition 1 stops before this time
	var heldEvs []ev
	for _, e := range evs[1] {
		if e.TS < held {
			heldEvs = append(heldEvs, e)
		}
	}
	evs[1] = heldEvs
	evs[0] = append(evs[0], ev{User: endUser, Amount: 1, TS: 1 << 40})
	produceEvents(t, cl, in, evs)
	// The window sums of windows ending at or before end.
	sums := func(end int64) map[string]int {
		m := map[[2]any]int64{}
		for _, es := range evs {
			for _, e := range es {
				if e.User != endUser && e.TS-e.TS%winSize+winSize <= end {
					m[[2]any{e.User, e.TS - e.TS%winSize}] += e.Amount
				}
			}
		}
		out := map[string]int{}
		for k, v := range m {
			out[fmt.Sprintf("%s %d %d", k[0], k[1], v)]++
		}
		return out
	}
	run := func(s jobSpec, want map[string]int) {
		t.Helper()
		createTopic(t, adm, s.Out, 1)
		out := readOutput(t, broker, s.Out)
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		h, err := buildJob(s).ExecuteAsync(ctx, s.Job)
		if err != nil {
			t.Fatal(err)
		}
		out.wait(t, count(want), time.Minute)
		// Every window task commits three more checkpoints: whatever else
		// would fire has been committed.
		waitCheckpoints(t, adm, s.Job, 3)
		got, _ := out.snapshot()
		cancel()
		if err := h.Wait(); err != nil && ctx.Err() == nil {
			t.Fatal(err)
		}
		if d := diff(got, want); d != "" {
			t.Fatalf("job %s: committed output (%d records) is not the sums of the windows before the held partition's watermark (%d):\n%s", s.Job, count(got), count(want), d)
		}
	}
	// The held partition's watermark is its last time - 1 (< held): only
	// windows that end by then fire.
	last := evs[1][len(evs[1])-1].TS
	run(jobSpec{Broker: broker, Job: unique(t, "job"), In: in, Out: unique(t, "out"), Checkpoints: t.TempDir(), SessionMS: 6000},
		sums(last-last%winSize))
	// Marked idle, the held partition no longer holds the others back:
	// every window fires.
	run(jobSpec{Broker: broker, Job: unique(t, "job"), In: in, Out: unique(t, "out"), Checkpoints: t.TempDir(), SessionMS: 6000, IdleMS: 300},
		sums(1<<39))
}

// waitCheckpoints waits until every task of job has committed n more
// checkpoints than now (the committed pointers of cluster.PointerGroup).
func waitCheckpoints(t *testing.T, adm *kadm.Client, job string, n int64) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	read := func() map[int32]int64 {
		offs, err := adm.FetchOffsets(ctx, cluster.PointerGroup(job))
		if err != nil {
			t.Fatal(err)
		}
		m := map[int32]int64{}
		offs.Each(func(o kadm.OffsetResponse) {
			if o.Topic == cluster.TasksTopic(job) {
				m[o.Partition] = o.At
			}
		})
		return m
	}
	start := read()
	for len(start) == 0 && ctx.Err() == nil {
		time.Sleep(20 * time.Millisecond)
		start = read()
	}
	for {
		now, done := read(), true
		for p, at := range start {
			if now[p] < at+n {
				done = false
			}
		}
		if done && len(start) > 0 {
			return
		}
		if ctx.Err() != nil {
			t.Fatalf("job %s: the tasks' committed checkpoints went from %v to %v", job, start, now)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestClusterMisconfigured: a job the cluster cannot run fails at start
// with a message naming the problem.
func TestClusterMisconfigured(t *testing.T) {
	broker := kafkatest.Broker(t)
	_, adm := clients(t, broker)
	base := func() jobSpec {
		s := jobSpec{Broker: broker, Job: unique(t, "job"), In: unique(t, "in"), Out: unique(t, "out"), Checkpoints: t.TempDir(), SessionMS: 6000}
		createTopic(t, adm, s.In, 2)
		return s
	}
	start := func(env *weir.Environment, job string) error { return startErr(t, env, job) }
	// The job's tasks topic exists with another partition count (the job
	// changed shape under the same name).
	s := base()
	createTopic(t, adm, cluster.TasksTopic(s.Job), 3)
	if err := start(buildJob(s), s.Job); err == nil || !strings.Contains(err.Error(), "has 3 partitions, the job needs 4") {
		t.Errorf("tasks topic with the wrong partition count: got %v", err)
	}
	// Co-partitioned inputs (one stage: partition p of each topic is task
	// p) with different partition counts.
	other := unique(t, "in3")
	createTopic(t, adm, other, 3)
	env := weir.NewEnvironment(weir.WithCluster(kafkacluster.New(broker)))
	env.EnableCheckpointing(time.Second, weir.CheckpointStorage(t.TempDir()))
	weir.Collect(weir.FromDynamicSource(env, kafka.NewSource(kafka.String(), kafka.WithBrokers(broker), kafka.WithTopics(s.In, other)), weir.ForMonotonousTimestamps[string](), "in"))
	if err := start(env, s.Job+"z"); err == nil || !strings.Contains(err.Error(), "different partition counts") {
		t.Errorf("co-partitioned inputs with 2 and 3 partitions: got %v", err)
	}
	// Checkpoints in a store the other instances cannot reach.
	env = weir.NewEnvironment(weir.WithCluster(kafkacluster.New(broker)))
	weir.Collect(weir.FromDynamicSource(env, kafka.NewSource(kafka.String(), kafka.WithBrokers(broker), kafka.WithTopics(s.In)), weir.ForMonotonousTimestamps[string](), "in"))
	if err := start(env, s.Job+"x"); err == nil || !strings.Contains(err.Error(), "CheckpointStorage") {
		t.Errorf("no shared checkpoint storage: got %v", err)
	}
	// A source that is not Kafka.
	env = weir.NewEnvironment(weir.WithCluster(kafkacluster.New(broker)))
	env.EnableCheckpointing(time.Second, weir.CheckpointStorage(t.TempDir()))
	weir.Collect(weir.Generate(env, 10, 0, func(i int64) int64 { return i }, weir.ForMonotonousTimestamps[int64]()))
	if err := start(env, s.Job+"y"); err == nil || !strings.Contains(err.Error(), "cannot run in a cluster") {
		t.Errorf("a generator source: got %v", err)
	}
}
