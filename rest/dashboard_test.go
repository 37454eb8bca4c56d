package rest_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/rest"
)

// dashboardPath is the Grafana dashboard shipped in the docs.
var dashboardPath = filepath.Join("..", "docs", "grafana", "weir-dashboard.json")

var (
	promString   = regexp.MustCompile(`"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'`)
	promGrouping = regexp.MustCompile(`\b(?:by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)`)
	promRange    = regexp.MustCompile(`\[[^\]]*\]`)
	promIdent    = regexp.MustCompile(`[a-zA-Z_:][a-zA-Z0-9_:]*`)
	promNameRe   = regexp.MustCompile(`__name__\s*=~\s*"([^"]*)"`)
	promKeywords = []string{"and", "or", "unless", "bool", "offset", "by", "without", "on", "ignoring", "group_left", "group_right", "inf", "nan"}
)

// promMetrics returns the metric names a PromQL expression reads: the
// identifiers left once strings, label matchers, ranges, grouping
// clauses and Grafana's $variables are gone, that are not followed by
// "(" (functions) or keywords; and the regular expressions of its
// __name__=~ matchers.
func promMetrics(expr string) (names, patterns []string) {
	for _, m := range promNameRe.FindAllStringSubmatch(expr, -1) {
		patterns = append(patterns, m[1])
	}
	s := promString.ReplaceAllString(expr, `""`)
	s = regexp.MustCompile(`\{[^}]*\}`).ReplaceAllString(s, "{}")
	s = promRange.ReplaceAllString(s, "")
	s = promGrouping.ReplaceAllString(s, "")
	s = regexp.MustCompile(`\$\{?\w+\}?`).ReplaceAllString(s, "")
	for _, loc := range promIdent.FindAllStringIndex(s, -1) {
		id := s[loc[0]:loc[1]]
		rest := strings.TrimLeft(s[loc[1]:], " \t\n")
		if strings.HasPrefix(rest, "(") || slices.Contains(promKeywords, strings.ToLower(id)) {
			continue
		}
		if loc[0] > 0 && (s[loc[0]-1] >= '0' && s[loc[0]-1] <= '9' || s[loc[0]-1] == '.') {
			continue // the exponent or suffix of a number
		}
		names = append(names, id)
	}
	return names, patterns
}

func TestPromMetricsTokenizer(t *testing.T) {
	names, pats := promMetrics(`sum by (vertex, vertex_id) (rate(weir_records_in_total{job_name=~"$job"}[$__rate_interval])) / on(job_id) group_left weir_job_running * 1e3 + {__name__=~"weir_user_.+",x="a b"}`)
	if strings.Join(names, ",") != "weir_records_in_total,weir_job_running" || strings.Join(pats, ",") != "weir_user_.+" {
		t.Fatalf("names %q, patterns %q", names, pats)
	}
}

// conditional are metrics a dashboard panel may read that the small job
// below cannot export, with where they come from.
var conditional = map[string]string{
	"weir_kafka_consumer_lag": "kafka_consumer_lag, the gauge of a Kafka source (connector/kafka/source.go)",
}

// TestGrafanaDashboard loads the shipped dashboard and checks that every
// PromQL expression of its panels names metrics that a real scrape of a
// small job (keyed state, event time, checkpoints, user metrics) returns,
// and that each __name__ pattern matches one of them.
func TestGrafanaDashboard(t *testing.T) {
	data, err := os.ReadFile(dashboardPath)
	if err != nil {
		t.Fatal(err)
	}
	var dash struct {
		Panels []struct {
			Title   string `json:"title"`
			Type    string `json:"type"`
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
	}
	if err := json.Unmarshal(data, &dash); err != nil {
		t.Fatal(err)
	}

	srv := rest.New("127.0.0.1:0")
	t.Cleanup(func() { srv.Close() })
	env := weir.NewEnvironment(weir.WithParallelism(1), weir.WithPlugin(srv))
	env.EnableCheckpointing(20 * time.Millisecond)
	wm := weir.ForMonotonousTimestamps[int64]().WithTimestampAssigner(func(v int64, _ int64) int64 { return v })
	src := weir.Generate(env, -1, 2000, func(i int64) int64 { return i }, wm)
	sums := weir.Sum(weir.KeyBy(src, func(v int64) int64 { return v % 8 }), func(v int64) int64 { return v }, func(p *int64, v int64) { *p = v })
	weir.Discard(weir.Process(weir.KeyBy(sums, func(v int64) int64 { return v % 4 }), &counting{n: 10}).Name("counting"))
	run(t, env, "dashboard")
	fams := eventually(t, "http://"+srv.Addr(), func(f map[string]*dto.MetricFamily) string {
		for _, n := range []string{"weir_last_checkpoint_size_bytes", "weir_state_bytes", "weir_user_histogram_digit_value", "weir_operator_output_watermark_seconds"} {
			if f[n] == nil {
				return n + " not exported yet"
			}
		}
		return ""
	})
	exported := map[string]bool{}
	for name := range fams {
		exported[name] = true
	}

	exprs, used := 0, map[string]bool{}
	for _, p := range dash.Panels {
		if p.Type != "row" && len(p.Targets) == 0 {
			t.Errorf("panel %q has no targets", p.Title)
		}
		for _, tg := range p.Targets {
			exprs++
			names, patterns := promMetrics(tg.Expr)
			if len(names)+len(patterns) == 0 {
				t.Errorf("panel %q: no metric in %q", p.Title, tg.Expr)
			}
			for _, n := range names {
				used[n] = true
				if !exported[n] && conditional[n] == "" {
					t.Errorf("panel %q reads %s, which Weir does not export", p.Title, n)
				}
			}
			for _, pat := range patterns {
				re := regexp.MustCompile("^(?:" + pat + ")$")
				found := false
				for n := range exported {
					found = found || re.MatchString(n)
				}
				if !found {
					t.Errorf("panel %q: no exported metric matches __name__=~%q", p.Title, pat)
				}
			}
		}
	}
	if exprs < 15 {
		t.Errorf("%d expressions, want the dashboard's panels", exprs)
	}
	var all []string
	for n := range used {
		all = append(all, n)
	}
	sort.Strings(all)
	t.Logf("%d expressions read %s", exprs, strings.Join(all, " "))
	for n, from := range conditional {
		if !used[n] {
			continue
		}
		src, err := os.ReadFile(filepath.Join("..", "connector", "kafka", "source.go"))
		if err != nil || !strings.Contains(string(src), `"`+strings.TrimPrefix(n, "weir_")+`"`) {
			t.Errorf("%s (%s) is not a gauge name in connector/kafka/source.go", n, from)
		}
	}
}
