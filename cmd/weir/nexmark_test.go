package main

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

func TestNexmarkBadInput(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--query", "q6"}, `unknown query "q6"`},
		{[]string{"--query", "q0", "--events", "0"}, "--events must be positive"},
		{[]string{"--events", "-5"}, "--events must be positive"},
		{[]string{"--parallelism", "0"}, "--parallelism must be at least 1"},
		{[]string{"--rate", "0"}, "--rate must be positive"},
		{[]string{"--events", "ten"}, "invalid value"},
		{[]string{"--frobnicate"}, "not defined"},
		{[]string{"q0"}, "unexpected arguments"},
	} {
		var out, errb bytes.Buffer
		code := run(append([]string{"nexmark"}, tc.args...), &out, &errb)
		if code != 2 || !strings.Contains(errb.String(), tc.want) || out.Len() != 0 {
			t.Errorf("%v: code %d, stderr %q, stdout %q; want 2 and %q", tc.args, code, errb.String(), out.String(), tc.want)
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
	if len(lines) != 13 || !strings.Contains(lines[0], "events/s") || !strings.HasPrefix(strings.TrimSpace(lines[1]), "gen") || !strings.HasPrefix(strings.TrimSpace(lines[2]), "q0") {
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
	if err := json.Unmarshal(out.Bytes(), &all); err != nil || all.Query != "all" || len(all.Runs) != 12 {
		t.Fatalf("all --json: %v %+v", err, all)
	}
	out.Reset()
	if code := run([]string{"nexmark", "--help"}, &out, &errb); code != 0 || !strings.Contains(out.String(), "--query") {
		t.Fatalf("help: code %d %q", code, out.String())
	}
}
