package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/weirstream/weir/internal/kafkatest"
	"github.com/weirstream/weir/nexmark/queries"
)

func TestNexmarkBadInput(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--query", "q24"}, `unknown query "q24"`},
		{[]string{"--source", "files"}, `--source must be generator, memory or kafka, got "files"`},
		{[]string{"--source", "kafka", "--kafka-bootstrap", ""}, "--source kafka needs --kafka-bootstrap"},
		{[]string{"--query", "q0", "--events", "0"}, "--events must be positive"},
		{[]string{"--events", "-5"}, "--events must be positive"},
		{[]string{"--parallelism", "0"}, "--parallelism must be at least 1"},
		{[]string{"--rate", "0"}, "--rate must be positive"},
		{[]string{"--events", "ten"}, "invalid value"},
		{[]string{"--frobnicate"}, "not defined"},
		{[]string{"q0"}, "unexpected arguments"},
		{[]string{"--query", "all", "--serve"}, `--serve runs one query, got "all"`},
		{[]string{"--query", "q1,q2", "--serve"}, `--serve runs one query, got "q1,q2"`},
		{[]string{"--warmup-events", "10"}, "--warmup-events needs --serve"},
		{[]string{"--serve", "--events", "10", "--warmup-events", "11"}, "--warmup-events must be between 0 and --events (10), got 11"},
	} {
		var out, errb bytes.Buffer
		code := run(append([]string{"nexmark"}, tc.args...), &out, &errb)
		if code != 2 || !strings.Contains(errb.String(), tc.want) || out.Len() != 0 {
			t.Errorf("%v: code %d, stderr %q, stdout %q; want 2 and %q", tc.args, code, errb.String(), out.String(), tc.want)
		}
	}
}

// --serve: a warm-up, {"ready":true}, then one JSON line per "run" from
// the same events, an error line for an unknown command, until "quit".
func TestNexmarkServe(t *testing.T) {
	for _, tc := range []struct{ source, warmup string }{{"memory", "3000"}, {"memory", "6000"}, {"generator", "0"}} {
		var out, errb bytes.Buffer
		in := strings.NewReader("run\nstop\n run \nquit\nrun\n")
		code := nexmarkMain([]string{"--query", "q4", "--events", "6000", "--parallelism", "2", "--source", tc.source,
			"--serve", "--warmup-events", tc.warmup}, in, &out, &errb)
		if code != 0 {
			t.Fatalf("%v: code %d, stderr %s", tc, code, errb.String())
		}
		lines := strings.Split(strings.TrimSpace(out.String()), "\n")
		if len(lines) != 4 || lines[0] != `{"ready":true}` || !strings.Contains(lines[2], `"error":"unknown command`) {
			t.Fatalf("%v: want ready, run, error, run (nothing after quit), got\n%s", tc, out.String())
		}
		var runs [2]nexmarkRun
		for i, l := range []string{lines[1], lines[3]} {
			if err := json.Unmarshal([]byte(l), &runs[i]); err != nil {
				t.Fatalf("%v: %v: %s", tc, err, l)
			}
		}
		w, _ := strconv.ParseInt(tc.warmup, 10, 64)
		for _, r := range runs {
			if r.Query != "q4" || r.Events != 6000 || r.Results == 0 || r.Results != runs[0].Results ||
				r.EventsChecksum != runs[0].EventsChecksum || (tc.source == "memory") != (r.EventsChecksum != "") ||
				r.WarmupEvents != w || r.Seconds <= 0 {
				t.Errorf("%v: runs %+v", tc, runs)
			}
		}
	}
}

func TestNexmarkJSON(t *testing.T) {
	var out, errb bytes.Buffer
	code := run([]string{"nexmark", "--query", "q2", "--events", "20000", "--parallelism", "2", "--json"}, &out, &errb)
	if code != 0 {
		t.Fatalf("code %d, stderr %s", code, errb.String())
	}
	dec := json.NewDecoder(&out)
	var m map[string]any
	if err := dec.Decode(&m); err != nil {
		t.Fatalf("stdout is not a JSON object: %v\n%s", err, out.String())
	}
	if dec.More() {
		t.Fatal("more than one JSON value on stdout")
	}
	for _, k := range []string{"query", "events", "seconds", "events_per_second", "results", "cpu_seconds", "peak_rss_bytes"} {
		if _, ok := m[k]; !ok {
			t.Errorf("key %q missing in %v", k, m)
		}
	}
	if m["query"] != "q2" || m["events"] != float64(20000) || m["seconds"].(float64) <= 0 || m["events_per_second"].(float64) <= 0 {
		t.Errorf("summary %v", m)
	}
	// q2 keeps the bids on auctions divisible by 123: some, not all.
	if r := m["results"].(float64); r <= 0 || r >= 20000*0.92 {
		t.Errorf("q2 results %v", r)
	}
	if errb.Len() != 0 {
		t.Errorf("stderr is not a terminal but got %q", errb.String())
	}
}

func TestNexmarkSummaryAndAll(t *testing.T) {
	var out, errb bytes.Buffer
	if code := run([]string{"nexmark", "--query", "q0", "--events", "5000", "--parallelism", "1"}, &out, &errb); code != 0 {
		t.Fatalf("code %d, stderr %s", code, errb.String())
	}
	for _, k := range []string{"events", "wall seconds", "events/s", "CPU seconds", "peak RSS", "results"} {
		if !strings.Contains(out.String(), k) {
			t.Errorf("summary lacks %q:\n%s", k, out.String())
		}
	}
	// 5000 events: 4600 bids pass through.
	if !strings.Contains(strings.Join(strings.Fields(out.String()), " "), "results 4600") {
		t.Errorf("q0 result count is not 4600:\n%s", out.String())
	}
	out.Reset()
	if code := run([]string{"nexmark", "--query", "all", "--events", "5000", "--parallelism", "2"}, &out, &errb); code != 0 {
		t.Fatalf("all: code %d, stderr %s", code, errb.String())
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 26 || !strings.Contains(lines[0], "events/s") || !strings.HasPrefix(strings.TrimSpace(lines[1]), "gen") || !strings.HasPrefix(strings.TrimSpace(lines[2]), "q0") {
		t.Fatalf("table:\n%s", out.String())
	}
	out.Reset()
	if code := run([]string{"nexmark", "--query", "all", "--events", "5000", "--json"}, &out, &errb); code != 0 {
		t.Fatalf("all --json: code %d", code)
	}
	var all struct {
		Query string           `json:"query"`
		Runs  []map[string]any `json:"runs"`
	}
	if err := json.Unmarshal(out.Bytes(), &all); err != nil || all.Query != "all" || len(all.Runs) != 25 {
		t.Fatalf("all --json: %v %+v", err, all)
	}
	out.Reset()
	if code := run([]string{"nexmark", "--help"}, &out, &errb); code != 0 || !strings.Contains(out.String(), "--query") {
		t.Fatalf("help: code %d %q", code, out.String())
	}
}

// The memory source replays the generator's events: same results, a
// checksum of the events, and q10's files and q13's side input handled.
func TestNexmarkMemorySource(t *testing.T) {
	results := map[string]float64{}
	for _, src := range []string{"generator", "memory"} {
		var out, errb bytes.Buffer
		code := run([]string{"nexmark", "--query", "all", "--events", "20000", "--parallelism", "2", "--source", src, "--json"}, &out, &errb)
		if code != 0 {
			t.Fatalf("%s: code %d, stderr %s", src, code, errb.String())
		}
		var all struct {
			Source string           `json:"source"`
			Runs   []map[string]any `json:"runs"`
		}
		if err := json.Unmarshal(out.Bytes(), &all); err != nil || all.Source != src {
			t.Fatalf("%s: %v %s", src, err, out.String())
		}
		for _, r := range all.Runs {
			q := r["query"].(string)
			sum, _ := r["events_checksum"].(string)
			if (src == "memory") != (len(sum) == 16) || r["source"] != src {
				t.Errorf("%s %s: source %v, checksum %q", src, q, r["source"], sum)
			}
			n := r["results"].(float64)
			if src == "generator" {
				results[q] = n
			} else if q != "q12" && !queries.OrderDependent(q) && n != results[q] {
				t.Errorf("%s: %v results from memory, %v from the generator", q, n, results[q])
			}
		}
	}
	if results["q10"] != results["q0"] || results["q13"] != results["q0"] || results["q0"] == 0 {
		t.Errorf("q10 wrote %v rows, q13 joined %v, q0 passed %v: want all bids", results["q10"], results["q13"], results["q0"])
	}
	// A given output directory is kept, with q10's partitions.
	dir := t.TempDir()
	var out, errb bytes.Buffer
	if code := run([]string{"nexmark", "--query", "q10", "--events", "5000", "--output-dir", dir, "--source", "memory"}, &out, &errb); code != 0 {
		t.Fatalf("q10: code %d, stderr %s", code, errb.String())
	}
	if n, err := queries.CommittedRows(dir); err != nil || n != 4600 {
		t.Fatalf("q10 into %s: %d rows, %v", dir, n, err)
	}
}

// --cpuprofile writes one profile per query run: the file, or FILE.<query>
// with several queries (all, or a comma-separated list).
func TestNexmarkCPUProfile(t *testing.T) {
	dir := t.TempDir()
	isProfile := func(path string) {
		t.Helper()
		b, err := os.ReadFile(path)
		if err != nil || len(b) < 2 || b[0] != 0x1f || b[1] != 0x8b { // a gzipped profile.proto
			t.Errorf("%s: %v, %d bytes, want a gzipped pprof profile", path, err, len(b))
		}
	}
	var out, errb bytes.Buffer
	one := filepath.Join(dir, "q1.pprof")
	if code := run([]string{"nexmark", "--query", "q1", "--events", "20000", "--parallelism", "2", "--source", "memory", "--cpuprofile", one, "--json"}, &out, &errb); code != 0 {
		t.Fatalf("code %d, stderr %s", code, errb.String())
	}
	isProfile(one)
	if code := run([]string{"nexmark", "--query", "all", "--events", "5000", "--parallelism", "1", "--cpuprofile", filepath.Join(dir, "all"), "--json"}, &out, &errb); code != 0 {
		t.Fatalf("all: code %d, stderr %s", code, errb.String())
	}
	for _, q := range append([]string{"gen"}, queries.Names()...) {
		isProfile(filepath.Join(dir, "all."+q))
	}
	out.Reset()
	if code := run([]string{"nexmark", "--query", "q2,q13", "--events", "5000", "--parallelism", "1", "--source", "memory", "--cpuprofile", filepath.Join(dir, "two"), "--json"}, &out, &errb); code != 0 {
		t.Fatalf("q2,q13: code %d, stderr %s", code, errb.String())
	}
	var two struct {
		Query string           `json:"query"`
		Runs  []map[string]any `json:"runs"`
	}
	if err := json.Unmarshal(out.Bytes(), &two); err != nil || two.Query != "q2,q13" || len(two.Runs) != 2 || two.Runs[1]["query"] != "q13" {
		t.Errorf("q2,q13: %v %s", err, out.String())
	}
	isProfile(filepath.Join(dir, "two.q2"))
	isProfile(filepath.Join(dir, "two.q13"))
	if code := run([]string{"nexmark", "--query", "q2,q99"}, &out, &errb); code != 2 || !strings.Contains(errb.String(), `unknown query "q99"`) {
		t.Errorf("q2,q99: code %d, stderr %s", code, errb.String())
	}
	if code := run([]string{"nexmark", "--query", "q0", "--events", "5000", "--cpuprofile", filepath.Join(dir, "missing", "x")}, &out, &errb); code != 1 {
		t.Errorf("a profile in a missing directory: code %d, want 1", code)
	}
}

// TestNexmarkKafkaSource writes the events to a topic once, reads them
// back into every query and writes the results to a topic per query: the
// same counts as the memory source's, each result in its topic (counted
// there by the run, and read back here for q2: one JSON Q2Result per
// record); a second run reuses the topic; a topic holding other events is
// refused.
func TestNexmarkKafkaSource(t *testing.T) {
	broker := kafkatest.Broker(t)
	topic := fmt.Sprintf("weir-nexmark-test-%d", time.Now().UnixNano())
	t.Cleanup(func() { deleteTopic(t, broker, topic) })
	args := []string{"nexmark", "--events", "5000", "--parallelism", "2", "--json", "--kafka-bootstrap", broker}
	type qrun struct {
		Query          string `json:"query"`
		Results        int64  `json:"results"`
		ResultsTopic   string `json:"results_topic"`
		ResultsInTopic int64  `json:"results_in_topic"`
	}
	results := func(src, query string, extra ...string) map[string]qrun {
		var out, errb bytes.Buffer
		var err error
		if code := run(append(append(args, "--query", query, "--source", src), extra...), &out, &errb); code != 0 {
			t.Fatalf("%s: code %d, stderr %s", src, code, errb.String())
		}
		var all struct {
			Runs []qrun `json:"runs"`
		}
		if query != "all" {
			all.Runs = make([]qrun, 1)
			err = json.Unmarshal(out.Bytes(), &all.Runs[0])
		} else {
			err = json.Unmarshal(out.Bytes(), &all)
		}
		if err != nil {
			t.Fatalf("%s: %v %s", src, err, out.String())
		}
		m := map[string]qrun{}
		for _, r := range all.Runs {
			m[r.Query] = r
		}
		return m
	}
	mem := results("memory", "all")
	got := results("kafka", "all", "--topic", topic)
	if len(got) != len(mem) || len(mem) < 25 {
		t.Fatalf("%d runs from Kafka, %d from memory", len(got), len(mem))
	}
	for q, m := range mem {
		g := got[q]
		if q != "q12" && !queries.OrderDependent(q) && g.Results != m.Results {
			t.Errorf("%s: %d results from Kafka, %d from memory", q, g.Results, m.Results)
		}
		if q != "q10" && (g.ResultsTopic == "" || g.ResultsInTopic != g.Results) {
			t.Errorf("%s: %d results, %d of them in the results topic %q", q, g.Results, g.ResultsInTopic, g.ResultsTopic)
		}
	}
	// The second run reads the topic the first wrote; its results are
	// in their topic, as JSON.
	again := results("kafka", "q2", "--topic", topic, "--keep-results")["q2"]
	if again.Results != mem["q2"].Results || again.Results == 0 {
		t.Fatalf("q2 again: %d results from Kafka, %d from memory", again.Results, mem["q2"].Results)
	}
	if n := readQ2Results(t, broker, again.ResultsTopic); n != again.Results {
		t.Errorf("q2: read %d results back from %s, want %d", n, again.ResultsTopic, again.Results)
	}
	var out, errb bytes.Buffer
	if code := run([]string{"nexmark", "--events", "30000", "--parallelism", "2", "--source", "kafka", "--topic", topic, "--kafka-bootstrap", broker}, &out, &errb); code == 0 ||
		!strings.Contains(errb.String(), "exists with 5000 records") {
		t.Fatalf("a topic of other events: code %d, stderr %s", code, errb.String())
	}
}

// readQ2Results reads every record of topic as a JSON queries.Q2Result,
// deletes the topic and returns how many there were.
func readQ2Results(t *testing.T, broker, topic string) int64 {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(broker), kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	defer adm.DeleteTopics(context.Background(), topic)
	ends, err := adm.ListEndOffsets(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	var want, n int64
	ends.Each(func(o kadm.ListedOffset) { want += o.Offset })
	for n < want {
		fs := cl.PollFetches(ctx)
		if err := fs.Err0(); err != nil {
			t.Fatalf("reading %s: %v", topic, err)
		}
		fs.EachRecord(func(r *kgo.Record) {
			var v queries.Q2Result
			if err := json.Unmarshal(r.Value, &v); err != nil || v.Auction%123 != 0 || v.Price <= 0 {
				t.Fatalf("record %s is not a q2 result: %v", r.Value, err)
			}
			n++
		})
	}
	return n
}

// deleteTopic deletes the events topic a test wrote (the broker is shared
// and long-lived outside the test command).
func deleteTopic(t *testing.T, broker, topic string) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(broker))
	if err != nil {
		t.Errorf("deleting %s: %v", topic, err)
		return
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := kadm.NewClient(cl).DeleteTopic(ctx, topic); err != nil {
		t.Errorf("deleting %s: %v", topic, err)
	}
}
