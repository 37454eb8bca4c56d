package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	goruntime "runtime"
	"runtime/debug"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/nexmark"
	"github.com/weirstream/weir/nexmark/queries"
	"github.com/weirstream/weir/rest"
)

const nexmarkUsage = `usage: weir nexmark [flags]

Runs a Nexmark query on the built-in event generator (one generator per
source subtask) into a discarding sink (q10: into partitioned files) and
prints a summary: events, wall seconds, events/s, CPU seconds, peak RSS,
result count.

flags:
  --query NAME        query to run: %s; gen (the source alone,
                      the baseline); a comma-separated list of them (one after the other,
                      on the same events); or all (gen, then every query) (default q0)
  --source KIND       generator: the generators run inside the source, as part of the
                      measurement (default); memory: every generator's events are generated
                      into memory first, then replayed as fast as the job takes them, timed
                      from the first event read to the end of the job (engine only);
                      kafka: the events are read from a Kafka topic (one partition per
                      generator, written once when the topic does not exist yet, one text
                      line per event), timed from the first record decoded to the end;
                      the results go to a topic (<topic>-results-<query>-<n>, created before
                      and deleted after each run, as JSON; the run ends when the last is
                      acknowledged) and are counted there
  --kafka-bootstrap H:P  the broker of --source kafka (default $WEIR_KAFKA_BOOTSTRAP)
  --topic NAME        the topic of --source kafka (default: weir-nexmark-e<events>-p<P>-
                      r<rate>-s<seed>, so that runs with the same flags share it)
  --events N          events to generate, over all generators (default 10000000)
  --parallelism P     parallelism of every operator and number of generators (default: CPUs)
  --rate N            event rate in events per second of event time (default %d); it spaces
                      the synthetic timestamps only, the source runs as fast as it can
  --seed N            generator seed (default 0); runs with the same flags see the same events
  --double-bidder-offset
                      reproduce the Flink generator's bidder id (+1000 twice)
  --output-dir DIR    where q10 writes its files (default: a temporary directory,
                      removed after the run; a given one is kept)
  --side-input FILE   q13's side input, lines "key,value" (default: Nexmark's
                      10,000 lines "i,i" in a temporary file)
  --json              print one JSON object on stdout instead of the text summary
  --rest ADDR         serve the REST API, metrics and dashboard on ADDR while it runs
  --key-sampling N    keyBy key-sketch stride (default 1024; 0 turns the sketches off)
  --scrape D          with --rest, read /metrics and the job's snapshot every D (a monitor's load)
  --keep-results      with --source kafka, keep the results topics (named in --json's
                      results_topic)
  --cpuprofile FILE   write a CPU profile of each run (job start to end, without the memory
                      source's generation) to FILE (several queries: FILE.<query>); read it
                      with go tool pprof -top FILE
  --serve             one query, many runs in this process (as the Flink module's --serve):
                      prepare the events once, run the warm-up, print {"ready":true}, then one
                      measured run per line "run" on stdin, each printing its JSON line (or
                      {"error":...}), until "quit" or the end of stdin; the memory source's
                      checksum is computed again after every run; --cpuprofile then holds the
                      last run's profile
  --warmup-events N   with --serve, the events of one unmeasured run before the first (default
                      0: none; the memory source and the generator run it on N events of
                      their own, generated for it unless N = --events; Kafka reads the
                      whole topic)
`

// nexmarkRun is the summary of one query run.
type nexmarkRun struct {
	Query           string  `json:"query"`
	Events          int64   `json:"events"`
	Parallelism     int     `json:"parallelism"`
	Rate            float64 `json:"rate"`
	Seconds         float64 `json:"seconds"`
	EventsPerSecond float64 `json:"events_per_second"`
	CPUSeconds      float64 `json:"cpu_seconds"`
	PeakRSSBytes    int64   `json:"peak_rss_bytes"`
	Results         int64   `json:"results"`
	Source          string  `json:"source"`
	// EventsChecksum is the memory source's nexmark.Memory.Checksum, in
	// hex (memory source only).
	EventsChecksum string `json:"events_checksum,omitempty"`
	// ResultsTopic is the topic the results went to (Kafka source only;
	// deleted after the run unless --keep-results), ResultsInTopic the
	// records it held after the run (= Results, or the run fails).
	ResultsTopic   string `json:"results_topic,omitempty"`
	ResultsInTopic int64  `json:"results_in_topic,omitempty"`
	// MinorFaults is the process's minor page faults during the run
	// (getrusage): memory touched for the first time, or again after it
	// was returned to the OS.
	MinorFaults int64 `json:"minor_faults"`
	// WarmupEvents is --warmup-events (--serve only).
	WarmupEvents int64 `json:"warmup_events,omitempty"`
}

type nexmarkOptions struct {
	query       string
	events      int64
	parallelism int
	rate        float64
	seed        uint64
	quirk       bool
	json        bool
	rest        string // --rest: serve the REST API while the query runs
	keySample   int    // --key-sampling
	scrape      time.Duration
	source      string
	outputDir   string
	sideInput   string
	bootstrap   string
	topic       string
	cpuProfile  string // --cpuprofile
	keepResults bool
	serve       bool  // --serve
	warmup      int64 // --warmup-events
}

func nexmarkMain(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	var o nexmarkOptions
	fs := flag.NewFlagSet("nexmark", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.StringVar(&o.query, "query", "q0", "")
	fs.Int64Var(&o.events, "events", 10_000_000, "")
	fs.IntVar(&o.parallelism, "parallelism", goruntime.NumCPU(), "")
	fs.Float64Var(&o.rate, "rate", nexmark.DefaultRate, "")
	fs.Uint64Var(&o.seed, "seed", 0, "")
	fs.BoolVar(&o.quirk, "double-bidder-offset", false, "")
	fs.BoolVar(&o.json, "json", false, "")
	fs.StringVar(&o.rest, "rest", "", "")
	fs.IntVar(&o.keySample, "key-sampling", -1, "")
	fs.DurationVar(&o.scrape, "scrape", 0, "")
	fs.StringVar(&o.source, "source", "generator", "")
	fs.StringVar(&o.outputDir, "output-dir", "", "")
	fs.StringVar(&o.sideInput, "side-input", "", "")
	fs.StringVar(&o.bootstrap, "kafka-bootstrap", os.Getenv("WEIR_KAFKA_BOOTSTRAP"), "")
	fs.StringVar(&o.topic, "topic", "", "")
	fs.StringVar(&o.cpuProfile, "cpuprofile", "", "")
	fs.BoolVar(&o.keepResults, "keep-results", false, "")
	fs.BoolVar(&o.serve, "serve", false, "")
	fs.Int64Var(&o.warmup, "warmup-events", 0, "")
	usage := fmt.Sprintf(nexmarkUsage, strings.Join(queries.Names(), ", "), nexmark.DefaultRate)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprint(stdout, usage)
			return 0
		}
		fmt.Fprintf(stderr, "weir nexmark: %v\n%s", err, usage)
		return 2
	}
	var bad []string
	if fs.NArg() > 0 {
		bad = append(bad, fmt.Sprintf("unexpected arguments %q", fs.Args()))
	}
	var qs []queries.Query
	if o.query == "all" {
		qs = append([]queries.Query{queries.Generator}, queries.All...)
	} else {
		for name := range strings.SplitSeq(o.query, ",") {
			if q, ok := queries.Lookup(name); ok {
				qs = append(qs, q)
			} else {
				bad = append(bad, fmt.Sprintf("unknown query %q (available: %s, gen, all)", name, strings.Join(queries.Names(), ", ")))
			}
		}
	}
	if o.events <= 0 {
		bad = append(bad, fmt.Sprintf("--events must be positive, got %d", o.events))
	}
	if o.parallelism < 1 {
		bad = append(bad, fmt.Sprintf("--parallelism must be at least 1, got %d", o.parallelism))
	}
	if !(o.rate > 0) {
		bad = append(bad, fmt.Sprintf("--rate must be positive, got %v", o.rate))
	}
	if o.source != "generator" && o.source != "memory" && o.source != "kafka" {
		bad = append(bad, fmt.Sprintf("--source must be generator, memory or kafka, got %q", o.source))
	}
	if o.source == "kafka" && o.bootstrap == "" {
		bad = append(bad, "--source kafka needs --kafka-bootstrap or WEIR_KAFKA_BOOTSTRAP")
	}
	if o.serve && len(qs) != 1 {
		bad = append(bad, fmt.Sprintf("--serve runs one query, got %q", o.query))
	}
	if o.warmup < 0 || o.warmup > o.events {
		bad = append(bad, fmt.Sprintf("--warmup-events must be between 0 and --events (%d), got %d", o.events, o.warmup))
	}
	if o.warmup > 0 && !o.serve {
		bad = append(bad, "--warmup-events needs --serve")
	}
	if len(bad) > 0 {
		for _, b := range bad {
			fmt.Fprintf(stderr, "weir nexmark: %s\n", b)
		}
		return 2
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	var progress io.Writer
	if isTerminal(stderr) {
		progress = stderr
	}
	env, cleanup, err := newNexmarkEnv(ctx, o, qs)
	if err != nil {
		fmt.Fprintf(stderr, "weir nexmark: %v\n", err)
		return 1
	}
	defer cleanup()
	if o.serve {
		return serveNexmark(ctx, qs[0], o, env, stdin, stdout, stderr)
	}
	var runs []nexmarkRun
	for _, q := range qs {
		r, err := runNexmark(ctx, q, o, env, progress)
		if err != nil {
			fmt.Fprintf(stderr, "weir nexmark: %s: %v\n", q.Name, err)
			return 1
		}
		runs = append(runs, r)
	}
	if o.json {
		enc := json.NewEncoder(stdout)
		if len(qs) > 1 {
			enc.Encode(struct {
				Query       string       `json:"query"`
				Events      int64        `json:"events"`
				Parallelism int          `json:"parallelism"`
				Rate        float64      `json:"rate"`
				Source      string       `json:"source"`
				Runs        []nexmarkRun `json:"runs"`
			}{o.query, o.events, o.parallelism, o.rate, o.source, runs})
		} else {
			enc.Encode(runs[0])
		}
		return 0
	}
	if len(runs) == 1 {
		printSummary(stdout, qs[0], runs[0])
	} else {
		printTable(stdout, runs)
	}
	return 0
}

// nexmarkEnv is what the runs of one invocation share: the events in
// memory (memory source), q13's side input and q10's output directory.
type nexmarkEnv struct {
	cfg       nexmark.Config
	memory    *nexmark.Memory
	checksum  string
	opts      queries.Options
	keepOut   bool // the output directory was given: keep it
	outParent string
	brokers   []string // --source kafka
	topic     string
}

// newNexmarkEnv prepares the runs of qs: the memory source's events, a
// side input and an output directory when a query needs them. cleanup
// removes what it created and releases the events held in memory: call it
// only when every run has ended (their jobs waited for).
func newNexmarkEnv(ctx context.Context, o nexmarkOptions, qs []queries.Query) (*nexmarkEnv, func(), error) {
	e := &nexmarkEnv{cfg: nexmark.Config{Events: o.events, Rate: o.rate, Seed: o.seed, DoubleBidderOffset: o.quirk},
		opts: queries.Options{OutputDir: o.outputDir, SideInput: o.sideInput}, keepOut: o.outputDir != ""}
	var tmp string
	cleanup := func() {
		if tmp != "" {
			os.RemoveAll(tmp)
		}
		if e.memory != nil {
			e.memory.Close()
		}
	}
	needs := func(name string) bool {
		return slices.ContainsFunc(qs, func(q queries.Query) bool { return q.Name == name })
	}
	if (needs("q10") && !e.keepOut) || (needs("q13") && e.opts.SideInput == "") {
		var err error
		if tmp, err = os.MkdirTemp("", "weir-nexmark-"); err != nil {
			return nil, cleanup, err
		}
	}
	if needs("q13") && e.opts.SideInput == "" {
		e.opts.SideInput = filepath.Join(tmp, "side_input.txt")
		if err := queries.WriteSideInput(e.opts.SideInput, queries.SideInputRows); err != nil {
			return nil, cleanup, err
		}
	}
	if needs("q10") && !e.keepOut {
		e.outParent = tmp
	}
	if o.source == "kafka" {
		e.brokers, e.topic = strings.Split(o.bootstrap, ","), kafkaTopic(o)
		if _, err := produceEvents(ctx, e.brokers, e.topic, e.cfg, o.parallelism); err != nil {
			return nil, cleanup, err
		}
	}
	if o.source == "memory" {
		m, err := nexmark.NewMemory(e.cfg, o.parallelism)
		if err != nil {
			return nil, cleanup, err
		}
		e.memory, e.checksum = m, fmt.Sprintf("%016x", m.Checksum())
	}
	return e, cleanup, nil
}

// runNexmark runs one query and measures it: wall time from job start to
// end (the job's set-up is a few ms), or with the memory source from the
// first event read to the end of the job; process CPU time from job start
// to end; and the peak RSS (reset before the run where Linux allows, after
// returning freed memory to the OS; it includes the process's baseline and,
// with the memory source, the events held in memory).
func runNexmark(ctx context.Context, q queries.Query, o nexmarkOptions, ne *nexmarkEnv, progress io.Writer) (nexmarkRun, error) {
	opts := ne.opts
	if q.Name == "q10" && ne.outParent != "" {
		opts.OutputDir = filepath.Join(ne.outParent, "q10")
		defer os.RemoveAll(opts.OutputDir)
	}
	envOpts := []weir.Option{weir.WithParallelism(o.parallelism)}
	var srv rest.Server
	if o.rest != "" {
		srv = rest.New(o.rest)
		envOpts = append(envOpts, weir.WithPlugin(srv))
	}
	if o.keySample >= 0 {
		envOpts = append(envOpts, weir.WithKeySampling(o.keySample))
	}
	env := weir.NewEnvironment(envOpts...)
	var mem *nexmark.MemorySource
	var first *firstRead
	var resultsTopic *resultsTopic
	switch {
	case ne.memory != nil:
		mem = ne.memory.Source()
		q.Build(mem.Events(env), opts)
	case ne.topic != "":
		first = new(firstRead)
		out, err := createResultsTopic(ctx, ne.brokers, ne.topic, q.Name, o.parallelism)
		if err != nil {
			return nexmarkRun{}, err
		}
		if !o.keepResults {
			defer out.delete()
		} else {
			defer out.cl.Close()
		}
		if q.Name != "q10" {
			opts.Kafka = &queries.KafkaResults{Brokers: ne.brokers, Topic: out.topic}
		}
		resultsTopic = out
		q.Build(kafkaEvents(env, ne.brokers, ne.topic, ne.cfg, first), opts)
	default:
		q.Build(nexmark.Events(env, ne.cfg), opts)
	}
	if o.serve {
		// A collection now, the heap kept: the process's memory stays as
		// the earlier runs left it, as a JVM's heap does.
		goruntime.GC()
	} else {
		debug.FreeOSMemory() // a collection now, and the peak RSS below is this run's
	}
	resetPeakRSS()
	if o.cpuProfile != "" {
		stopProfile, err := startCPUProfile(o.cpuProfile, q.Name, o.query == "all" || strings.Contains(o.query, ","))
		if err != nil {
			return nexmarkRun{}, err
		}
		defer stopProfile()
	}
	cpu0, faults0 := processUsage()
	start := time.Now()
	h, err := env.ExecuteAsync(ctx, "nexmark "+q.Name)
	if err != nil {
		return nexmarkRun{}, err
	}
	if o.rest != "" && o.scrape > 0 {
		stopScrape := scrape(h, srv.Addr(), o.scrape)
		defer stopScrape()
	}
	if progress != nil {
		tick := time.NewTicker(250 * time.Millisecond)
	loop:
		for {
			select {
			case <-h.Done():
				break loop
			case <-tick.C:
				n := sourceEvents(h)
				el := time.Since(start).Seconds()
				fmt.Fprintf(progress, "\r%s: %s / %s events (%.0f%%), %s events/s, %s results   ",
					q.Name, human(float64(n)), human(float64(o.events)), 100*float64(n)/float64(o.events),
					human(float64(n)/el), human(float64(queries.Results(h))))
			}
		}
		tick.Stop()
		fmt.Fprint(progress, "\r\033[K")
	}
	err = h.Wait()
	end := time.Now()
	cpu1, faults1 := processUsage()
	cpu, faults := cpu1-cpu0, faults1-faults0
	if err != nil {
		return nexmarkRun{}, err
	}
	if mem != nil {
		if first, ok := mem.FirstRead(); ok {
			start = first
		}
	}
	if first != nil {
		first.once.Do(func() {}) // the job has ended: at is set or stays zero
		if !first.at.IsZero() {
			start = first.at
		}
	}
	secs := end.Sub(start).Seconds()
	r := nexmarkRun{
		Query: q.Name, Events: o.events, Parallelism: o.parallelism, Rate: o.rate,
		Seconds: secs, EventsPerSecond: float64(o.events) / secs, CPUSeconds: cpu,
		PeakRSSBytes: peakRSS(), Results: queries.Results(h), Source: o.source, EventsChecksum: ne.checksum,
		MinorFaults: faults,
	}
	if resultsTopic != nil && q.Name != "q10" {
		// Every result the sink received is in the topic, acknowledged.
		n, err := resultsTopic.records(ctx)
		if err != nil {
			return nexmarkRun{}, err
		}
		if n != r.Results {
			return nexmarkRun{}, fmt.Errorf("the Kafka sink received %d results but topic %s holds %d", r.Results, resultsTopic.topic, n)
		}
		r.ResultsTopic, r.ResultsInTopic = resultsTopic.topic, n
	}
	if q.Name == "q10" {
		// The results are the committed rows, which must be every row the
		// sink received.
		n, err := queries.CommittedRows(opts.OutputDir)
		if err != nil {
			return nexmarkRun{}, err
		}
		if n != r.Results {
			return nexmarkRun{}, fmt.Errorf("the file sink received %d rows but %d are committed in %s", r.Results, n, opts.OutputDir)
		}
	}
	return r, nil
}

// serveNexmark is --serve: the warm-up run, {"ready":true}, then one
// measured run of q per line "run" read from in, each printed as one JSON
// line, until "quit" or the end of in. A failed run prints
// {"error":...} and the loop goes on, as the Flink module's does.
func serveNexmark(ctx context.Context, q queries.Query, o nexmarkOptions, ne *nexmarkEnv, in io.Reader, stdout, stderr io.Writer) int {
	if o.warmup > 0 {
		we, wo, cleanup := ne, o, func() {}
		if o.source != "kafka" && o.warmup != o.events {
			wo.events = o.warmup
			var err error
			if we, cleanup, err = newNexmarkEnv(ctx, wo, []queries.Query{q}); err != nil {
				cleanup()
				fmt.Fprintf(stderr, "weir nexmark: warm-up: %v\n", err)
				return 1
			}
		}
		_, err := runNexmark(ctx, q, wo, we, nil)
		cleanup()
		if err != nil {
			fmt.Fprintf(stderr, "weir nexmark: %s: warm-up: %v\n", q.Name, err)
			return 1
		}
	}
	enc := json.NewEncoder(stdout)
	enc.Encode(map[string]bool{"ready": true})
	sc := bufio.NewScanner(in)
	for sc.Scan() {
		switch strings.TrimSpace(sc.Text()) {
		case "quit":
			return 0
		case "run":
		default:
			enc.Encode(map[string]string{"error": "unknown command (want run or quit)"})
			continue
		}
		r, err := runNexmark(ctx, q, o, ne, nil)
		if err == nil && ne.memory != nil {
			// The events are the same for every run: a query that changed
			// them would change the next runs' input.
			if sum := fmt.Sprintf("%016x", ne.memory.Checksum()); sum != ne.checksum {
				err = fmt.Errorf("the events in memory changed during the run: checksum %s, was %s", sum, ne.checksum)
			}
		}
		if err != nil {
			fmt.Fprintf(stderr, "weir nexmark: %s: %v\n", q.Name, err)
			enc.Encode(map[string]string{"error": err.Error()})
			if ctx.Err() != nil {
				return 1
			}
			continue
		}
		r.WarmupEvents = o.warmup
		enc.Encode(r)
	}
	if err := sc.Err(); err != nil {
		fmt.Fprintf(stderr, "weir nexmark: reading commands: %v\n", err)
		return 1
	}
	return 0
}

// startCPUProfile starts a CPU profile into path (path.<query> when
// several queries run) and returns the function that ends it.
func startCPUProfile(path, query string, several bool) (func(), error) {
	if several {
		path += "." + query
	}
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, err
	}
	return func() { pprof.StopCPUProfile(); f.Close() }, nil
}

// sourceEvents is the number of events the source has emitted so far.
func sourceEvents(h *weir.JobHandle) int64 {
	var n int64
	for _, t := range h.Metrics() {
		for _, o := range t.Operators {
			if o.Name == "Nexmark" {
				n += o.RecordsOut
			}
		}
	}
	return n
}

// processUsage is the process's CPU seconds (user and system) and minor page
// faults so far (getrusage; the faults: memory touched for the first time,
// or again after it was returned to the OS).
func processUsage() (cpuSeconds float64, minorFaults int64) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0, 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()).Seconds(), int64(ru.Minflt)
}

// peakRSS is the process's peak resident set: VmHWM from /proc (reset by
// resetPeakRSS), else getrusage's ru_maxrss (the peak over the process's
// life; kilobytes on Linux).
func peakRSS() int64 {
	if b, err := os.ReadFile("/proc/self/status"); err == nil {
		for line := range strings.SplitSeq(string(b), "\n") {
			if rest, ok := strings.CutPrefix(line, "VmHWM:"); ok {
				f := strings.Fields(rest)
				if len(f) >= 1 {
					if kb, err := strconv.ParseInt(f[0], 10, 64); err == nil {
						return kb * 1024
					}
				}
			}
		}
	}
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return int64(ru.Maxrss) * 1024
}

// resetPeakRSS resets VmHWM to the current RSS (Linux: clear_refs 5), so
// each query of `--query all` reports its own peak.
func resetPeakRSS() {
	_ = os.WriteFile("/proc/self/clear_refs", []byte("5"), 0)
}

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

// human formats n with a k/M/G suffix.
func human(n float64) string {
	switch {
	case n >= 1e9:
		return strconv.FormatFloat(n/1e9, 'f', 2, 64) + "G"
	case n >= 1e6:
		return strconv.FormatFloat(n/1e6, 'f', 2, 64) + "M"
	case n >= 1e4:
		return strconv.FormatFloat(n/1e3, 'f', 1, 64) + "k"
	}
	return strconv.FormatFloat(n, 'f', 0, 64)
}

func mib(b int64) string { return strconv.FormatFloat(float64(b)/(1<<20), 'f', 1, 64) + " MiB" }

func printSummary(w io.Writer, q queries.Query, r nexmarkRun) {
	fmt.Fprintf(w, "%s: %s (parallelism %d, rate %g events/s of event time)\n", q.Name, q.Title, r.Parallelism, r.Rate)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "events\t%d\n", r.Events)
	fmt.Fprintf(tw, "wall seconds\t%.3f\n", r.Seconds)
	fmt.Fprintf(tw, "events/s\t%.0f\n", r.EventsPerSecond)
	fmt.Fprintf(tw, "CPU seconds\t%.3f (%.2f cores)\n", r.CPUSeconds, r.CPUSeconds/r.Seconds)
	fmt.Fprintf(tw, "peak RSS\t%s\n", mib(r.PeakRSSBytes))
	fmt.Fprintf(tw, "results\t%d\n", r.Results)
	tw.Flush()
}

func printTable(w io.Writer, runs []nexmarkRun) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "query\tevents\tseconds\tevents/s\tCPU s\tpeak RSS\tresults\t")
	for _, r := range runs {
		fmt.Fprintf(tw, "%s\t%d\t%.3f\t%.0f\t%.3f\t%s\t%d\t\n", r.Query, r.Events, r.Seconds, r.EventsPerSecond, r.CPUSeconds, mib(r.PeakRSSBytes), r.Results)
	}
	tw.Flush()
}

// scrape reads the job's Prometheus metrics and snapshot every d until the
// returned function is called, as a monitor would.
func scrape(h *weir.JobHandle, addr string, d time.Duration) func() {
	done := make(chan struct{})
	stopped := make(chan struct{})
	base := "http://" + addr
	go func() {
		defer close(stopped)
		t := time.NewTicker(d)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-h.Done():
				return
			case <-t.C:
				for _, p := range []string{"/metrics", "/weir/jobs/" + h.ID() + "/snapshot"} {
					if resp, err := http.Get(base + p); err == nil {
						io.Copy(io.Discard, resp.Body)
						resp.Body.Close()
					}
				}
			}
		}
	}()
	return func() { close(done); <-stopped }
}
