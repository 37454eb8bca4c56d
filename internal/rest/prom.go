package rest

import (
	"math"
	"net/http"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/weirstream/weir/internal/monitor"
)

// Prometheus: GET /metrics in the text exposition format, with
// client_golang. Names follow its conventions: the weir_ prefix, _total
// for counters, base units (seconds, bytes; watermarks in seconds since
// the epoch), labels job_id and job_name on every series, vertex_id,
// vertex (its name, not unique), subtask, input (and operator, split
// where they apply). Values are read from a fresh
// snapshot at each scrape; ratios cover the server's last sampling
// interval.

// collector is a prometheus.Collector over the server's jobs.
type collector struct{ s *Server }

// Describe sends nothing: the metrics depend on the jobs' graphs, so the
// collector is unchecked.
func (c collector) Describe(chan<- *prometheus.Desc) {}

var metricName = regexp.MustCompile(`[^a-zA-Z0-9_]`)

type emitter struct {
	ch    chan<- prometheus.Metric
	descs map[string]*prometheus.Desc
}

func (e *emitter) emit(name, help string, kind prometheus.ValueType, value float64, labels []string, values ...string) {
	key := name + "|" + strings.Join(labels, ",")
	d, ok := e.descs[key]
	if !ok {
		d = prometheus.NewDesc(name, help, labels, nil)
		e.descs[key] = d
	}
	e.ch <- prometheus.MustNewConstMetric(d, kind, value, values...)
}

var (
	jobLabels     = []string{"job_id", "job_name"}
	subtaskLabels = []string{"job_id", "job_name", "vertex_id", "vertex", "subtask"}
	inputLabels   = []string{"job_id", "job_name", "vertex_id", "vertex", "subtask", "input"}
	opLabels      = []string{"job_id", "job_name", "vertex_id", "vertex", "operator", "subtask"}
	splitLabels   = []string{"job_id", "job_name", "vertex_id", "vertex", "operator", "subtask", "split"}
)

const (
	counter = prometheus.CounterValue
	gauge   = prometheus.GaugeValue
)

func wmSeconds(wm int64) float64 {
	if wm == monitor.MinWatermark {
		return math.Inf(-1)
	}
	if wm == math.MaxInt64 {
		return math.Inf(1)
	}
	return float64(wm) / 1000
}

// Collect implements prometheus.Collector.
func (c collector) Collect(ch chan<- prometheus.Metric) {
	e := &emitter{ch: ch, descs: map[string]*prometheus.Desc{}}
	for _, en := range c.s.entries() {
		snap, rates := en.now()
		collectJob(e, snap, rates)
	}
}

func collectJob(e *emitter, snap *monitor.Snapshot, rates map[string][]monitor.Rate) {
	id, job := snap.Job.ID, snap.Job.Name
	jl := jobLabels
	now := float64(snap.Timestamp) / 1000
	up := 0.0
	if snap.Job.State == "RUNNING" {
		up = 1
	}
	e.emit("weir_job_running", "1 while the job runs.", gauge, up, jl, id, job)
	e.emit("weir_job_restarts_total", "Restarts after failures.", counter, float64(snap.Job.Restarts), jl, id, job)
	e.emit("weir_job_uptime_seconds", "Time since the job started.", gauge, float64(duration(snap.Job, snap.Timestamp))/1000, jl, id, job)
	for _, v := range snap.Vertices {
		for i, st := range v.Subtasks {
			sub := strconv.Itoa(st.Index)
			l := []string{id, job, v.ID, v.Name, sub}
			rt := rateOf(rates, &v, i)
			e.emit("weir_records_in_total", "Records the subtask received from other subtasks.", counter, float64(st.RecordsIn), subtaskLabels, l...)
			e.emit("weir_records_out_total", "Records the subtask sent to other subtasks.", counter, float64(st.RecordsOut), subtaskLabels, l...)
			e.emit("weir_bytes_in_total", "In-memory bytes of the records received (Weir does not serialize).", counter, float64(st.BytesIn), subtaskLabels, l...)
			e.emit("weir_bytes_out_total", "In-memory bytes of the records sent.", counter, float64(st.BytesOut), subtaskLabels, l...)
			e.emit("weir_busy_seconds_total", "Time the subtask processed (back-pressured time excluded).", counter, float64(st.BusyNanos)/1e9, subtaskLabels, l...)
			e.emit("weir_idle_seconds_total", "Time the subtask waited for input.", counter, float64(st.IdleNanos)/1e9, subtaskLabels, l...)
			e.emit("weir_backpressured_seconds_total", "Time the subtask waited for downstream credit.", counter, float64(st.BackPressuredNanos)/1e9, subtaskLabels, l...)
			e.emit("weir_busy_ratio", "Share of the last interval spent busy.", gauge, rt.BusyMsPerSec/1000, subtaskLabels, l...)
			e.emit("weir_idle_ratio", "Share of the last interval spent idle.", gauge, rt.IdleMsPerSec/1000, subtaskLabels, l...)
			e.emit("weir_backpressured_ratio", "Share of the last interval spent back-pressured.", gauge, rt.BackPressuredMs/1000, subtaskLabels, l...)
			e.emit("weir_checkpoints_taken_total", "Snapshots the subtask took.", counter, float64(st.Checkpoints), subtaskLabels, l...)
			for in, wm := range st.InputWatermarks {
				il := []string{id, job, v.ID, v.Name, sub, strconv.Itoa(in + 1)}
				e.emit("weir_input_watermark_seconds", "Current watermark of the input, in seconds since the epoch.", gauge, wmSeconds(wm), inputLabels, il...)
				lag := math.NaN()
				if wm != monitor.MinWatermark && wm != math.MaxInt64 {
					lag = now - float64(wm)/1000
				}
				e.emit("weir_input_watermark_lag_seconds", "Wall-clock time minus the input's watermark.", gauge, lag, inputLabels, il...)
				idle := 0.0
				if in < len(st.InputIdle) && st.InputIdle[in] {
					idle = 1
				}
				e.emit("weir_input_idle", "1 if the input is idle.", gauge, idle, inputLabels, il...)
				if in < len(st.InputRecords) {
					e.emit("weir_input_records_total", "Records of the input.", counter, float64(st.InputRecords[in]), inputLabels, il...)
				}
			}
			for _, op := range st.Operators {
				ol := []string{id, job, v.ID, v.Name, op.Name, sub}
				e.emit("weir_operator_records_in_total", "Records that reached the operator.", counter, float64(op.RecordsIn), opLabels, ol...)
				e.emit("weir_operator_records_out_total", "Records the operator emitted on its main output.", counter, float64(op.RecordsOut), opLabels, ol...)
				if op.OutputWatermark != nil {
					e.emit("weir_operator_output_watermark_seconds", "The operator's output watermark (Flink's currentOutputWatermark), in seconds since the epoch.", gauge, wmSeconds(*op.OutputWatermark), opLabels, ol...)
					lag := math.NaN()
					if wm := *op.OutputWatermark; wm != monitor.MinWatermark && wm != math.MaxInt64 {
						lag = now - float64(wm)/1000
					}
					e.emit("weir_operator_output_watermark_lag_seconds", "Wall-clock time minus the operator's output watermark.", gauge, lag, opLabels, ol...)
				}
				e.emit("weir_late_records_dropped_total", "Late records a window operator dropped.", counter, float64(op.LateRecordsDropped), opLabels, ol...)
				if op.Keyed {
					e.emit("weir_state_entries", "Keyed-state entries of the operator.", gauge, float64(op.StateEntries), opLabels, ol...)
					e.emit("weir_timers", "Registered timers of the operator.", gauge, float64(op.Timers), opLabels, ol...)
					e.emit("weir_state_bytes", "Keyed-state bytes of the operator in the last completed checkpoint.", gauge, float64(op.StateBytes), opLabels, ol...)
				}
				for _, sp := range op.Splits {
					sl := []string{id, job, v.ID, v.Name, op.Name, sub, sp.ID}
					e.emit("weir_source_split_records_total", "Records read from the split.", counter, float64(sp.Records), splitLabels, sl...)
					e.emit("weir_source_split_watermark_seconds", "The split's watermark, in seconds since the epoch.", gauge, wmSeconds(sp.Watermark), splitLabels, sl...)
					idle := 0.0
					if sp.Idle {
						idle = 1
					}
					e.emit("weir_source_split_idle", "1 if the split is idle.", gauge, idle, splitLabels, sl...)
					paused := 0.0
					if sp.Paused {
						paused = 1
					}
					e.emit("weir_source_split_paused", "1 if watermark alignment pauses the split.", gauge, paused, splitLabels, sl...)
				}
				for _, g := range op.Gauges {
					name, labels, values := gaugeMetric(g)
					e.emit(name, "A gauge the operator publishes ("+g.Name+").", gauge, g.Value, append(append([]string(nil), opLabels...), labels...), append(ol, values...)...)
				}
				for _, u := range op.User {
					collectUser(e, u, ol)
				}
				if j := op.Join; j != nil {
					e.emit("weir_join_sampled_probes_total", "Interval-join probes sampled.", counter, float64(j.Probes), opLabels, ol...)
					e.emit("weir_join_sampled_matches_total", "Sampled probes that found a partner.", counter, float64(j.Matched), opLabels, ol...)
					e.emit("weir_join_sampled_mirrored_matches_total", "Sampled probes that would have found one with Between(-upper, -lower).", counter, float64(j.MirroredMatched), opLabels, ol...)
				}
			}
		}
	}
	cs := snap.Checkpoints
	e.emit("weir_checkpoints_completed_total", "Completed checkpoints and savepoints.", counter, float64(cs.Counts.Completed), jl, id, job)
	e.emit("weir_checkpoints_failed_total", "Failed checkpoints and savepoints.", counter, float64(cs.Counts.Failed), jl, id, job)
	e.emit("weir_checkpoints_in_progress", "Checkpoints in progress.", gauge, float64(cs.Counts.InProgress), jl, id, job)
	e.emit("weir_checkpoints_restored_total", "Restores from a checkpoint or savepoint.", counter, float64(cs.Counts.Restored), jl, id, job)
	if c := cs.Completed; c != nil {
		e.emit("weir_last_checkpoint_duration_seconds", "End-to-end duration of the last completed checkpoint.", gauge, float64(endToEnd(*c))/1000, jl, id, job)
		e.emit("weir_last_checkpoint_size_bytes", "State size of the last completed checkpoint.", gauge, float64(c.StateSize), jl, id, job)
		e.emit("weir_last_checkpoint_persisted_bytes", "In-flight data the last completed checkpoint persisted.", gauge, float64(c.InFlight), jl, id, job)
		for _, v := range snap.Vertices {
			for _, sc := range c.Vertices[v.ID] {
				if !sc.Acked {
					continue
				}
				l := []string{id, job, v.ID, v.Name, strconv.Itoa(sc.Subtask)}
				e.emit("weir_checkpoint_start_delay_seconds", "Last completed checkpoint: from its start to the subtask's first barrier.", gauge, float64(sc.StartDelayMs)/1000, subtaskLabels, l...)
				e.emit("weir_checkpoint_alignment_seconds", "Last completed checkpoint: the subtask's barrier alignment.", gauge, float64(sc.AlignmentMs)/1000, subtaskLabels, l...)
				e.emit("weir_checkpoint_sync_seconds", "Last completed checkpoint: the synchronous part of the subtask's snapshot.", gauge, float64(sc.SyncMs)/1000, subtaskLabels, l...)
				e.emit("weir_checkpoint_async_seconds", "Last completed checkpoint: the asynchronous part of the subtask's snapshot.", gauge, float64(sc.AsyncMs)/1000, subtaskLabels, l...)
				e.emit("weir_checkpoint_state_bytes", "Last completed checkpoint: the subtask's state size.", gauge, float64(sc.StateSize), subtaskLabels, l...)
				e.emit("weir_checkpoint_persisted_bytes", "Last completed checkpoint: the subtask's persisted in-flight data.", gauge, float64(sc.InFlight), subtaskLabels, l...)
			}
		}
	}
	collectCluster(e, id, job, snap.Cluster)
}

var (
	clusterTaskLabels  = []string{"job_id", "job_name", "task", "stage", "partition", "member"}
	clusterInputLabels = []string{"job_id", "job_name", "task", "topic", "partition"}
)

// collectCluster emits the tasks a cluster member owns: one series per
// task, gone when the task moves.
func collectCluster(e *emitter, id, job string, c *monitor.Cluster) {
	if c == nil {
		return
	}
	e.emit("weir_cluster_tasks", "Tasks (stage x partition) this cluster instance owns.", gauge, float64(len(c.Tasks)), []string{"job_id", "job_name", "member"}, id, job, c.Member)
	for _, t := range c.Tasks {
		l := []string{id, job, t.ID, t.Stage, strconv.Itoa(t.Partition), c.Member}
		running := 0.0
		if t.State == "RUNNING" {
			running = 1
		}
		e.emit("weir_cluster_task_owned", "1 for each task this instance owns.", gauge, 1, clusterTaskLabels, l...)
		e.emit("weir_cluster_task_running", "1 while the owned task runs (0: restoring or restarting).", gauge, running, clusterTaskLabels, l...)
		e.emit("weir_cluster_task_committed_checkpoint", "The last checkpoint the task committed on this instance (0: none yet).", gauge, float64(t.CommittedCheckpoint), clusterTaskLabels, l...)
		e.emit("weir_cluster_task_restored_checkpoint", "The checkpoint the task restored when it came to this instance (0: none).", gauge, float64(t.RestoredCheckpoint), clusterTaskLabels, l...)
		for _, in := range t.Inputs {
			e.emit("weir_cluster_task_committed_offset", "The next offset to read of the task's input partition in its last committed checkpoint.", gauge, float64(in.Offset), clusterInputLabels, id, job, t.ID, in.Topic, strconv.Itoa(int(in.Partition)))
		}
	}
}

// collectUser emits a user metric (metrics.Group) with the operator's
// labels ol: a counter as weir_user_counter_<name>_total, a gauge as
// weir_user_gauge_<name>, a histogram as the summary
// weir_user_histogram_<name>. The kind in the name keeps the families of
// different kinds apart, and the weir_user_ prefix apart from Weir's own.
func collectUser(e *emitter, u monitor.UserMetric, ol []string) {
	name := strings.ToLower(metricName.ReplaceAllString(u.Name, "_"))
	switch {
	case u.Histogram != nil:
		h := u.Histogram
		full := "weir_user_histogram_" + name
		key := full + "|summary"
		d, ok := e.descs[key]
		if !ok {
			d = prometheus.NewDesc(full, "User histogram "+u.Name+" (quantiles over its latest 1024 updates).", opLabels, nil)
			e.descs[key] = d
		}
		q := map[float64]float64{0.5: h.P50, 0.75: h.P75, 0.9: h.P90, 0.95: h.P95, 0.98: h.P98, 0.99: h.P99, 0.999: h.P999}
		e.ch <- prometheus.MustNewConstSummary(d, uint64(h.Count), h.Sum, q, ol...)
	case u.Kind == "counter":
		e.emit("weir_user_counter_"+name+"_total", "User counter "+u.Name+".", counter, u.Value, opLabels, ol...)
	default:
		e.emit("weir_user_gauge_"+name, "User gauge "+u.Name+".", gauge, u.Value, opLabels, ol...)
	}
}

// gaugeMetric names an operator's gauge for Prometheus: weir_ and the
// gauge's name in snake case, with its labels (sorted, sanitized, those
// that would clash with Weir's prefixed with "gauge_").
func gaugeMetric(g monitor.Gauge) (name string, labels, values []string) {
	name = strings.ToLower(metricName.ReplaceAllString(g.Name, "_"))
	if !strings.HasPrefix(name, "weir_") {
		name = "weir_" + name
	}
	for k := range g.Labels {
		labels = append(labels, k)
	}
	sort.Strings(labels)
	for i, k := range labels {
		values = append(values, g.Labels[k])
		l := metricName.ReplaceAllString(k, "_")
		if slices.Contains(opLabels, l) || l == "" || l[0] >= '0' && l[0] <= '9' || strings.HasPrefix(l, "__") {
			l = "gauge_" + l
		}
		labels[i] = l
	}
	return name, labels, values
}

// prometheusHandler serves /metrics: the jobs' metrics and Go's runtime
// and process collectors, on a registry of the server's own.
func (s *Server) prometheusHandler() http.Handler {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collector{s}, collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return promhttp.HandlerFor(reg, promhttp.HandlerOpts{ErrorHandling: promhttp.ContinueOnError})
}
