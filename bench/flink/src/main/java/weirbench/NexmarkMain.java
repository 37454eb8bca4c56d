package weirbench;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Comparator;
import java.util.Locale;
import java.util.stream.Stream;

import org.apache.flink.api.common.eventtime.WatermarkStrategy;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.configuration.PipelineOptions;
import org.apache.flink.configuration.RestOptions;
import org.apache.flink.configuration.StateBackendOptions;
import org.apache.flink.configuration.TaskManagerOptions;
import org.apache.flink.runtime.jobgraph.JobGraph;
import org.apache.flink.runtime.minicluster.MiniCluster;
import org.apache.flink.runtime.minicluster.MiniClusterConfiguration;
import org.apache.flink.runtime.minicluster.RpcServiceSharing;
import org.apache.flink.runtime.util.EnvironmentInformation;
import org.apache.flink.streaming.api.datastream.DataStream;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.streaming.api.graph.StreamGraph;

/**
 * {@code weir-nexmark-flink --query qN --events N --parallelism P [--rate R] [--json]}: runs one
 * Nexmark query on Flink (local MiniCluster, DataStream API) with the same generator, events,
 * rate and parallelism as {@code weir nexmark}, and prints the same summary.
 *
 * <p>Measurement: a warm-up run of the same query first (same JVM, so the JIT has compiled the
 * hot paths), then the measured run, timed from the first event a source emits to the end of
 * input at the last sink subtask (q10: to the last commit of its file sink): JVM and MiniCluster
 * start-up, job deployment and teardown are not counted. With {@code --source memory} the
 * events of each run are generated into memory before it (MemoryStore) and replayed. CPU seconds are the process's CPU time over the same interval; the peak RSS is the
 * process's VmHWM, reset before the measured run.
 */
public final class NexmarkMain {
    private NexmarkMain() {}

    static final String USAGE = String.join("\n",
            "usage: weir-nexmark-flink --query QUERY --events N --parallelism P [--rate R] [--json]",
            "",
            "  --query QUERY        " + String.join(", ", Queries.NAMES),
            "  --source KIND        generator (the generators run in the source, default) or memory",
            "                       (each split's events generated into memory before the run, then",
            "                       replayed; engine only), or kafka (the events of --topic, written",
            "                       by weir nexmark --source kafka, read with Flink's KafkaSource;",
            "                       the warm-up run reads the first --warmup-events of the same topic;",
            "                       the results go to a fresh",
            "                       topic with Flink's KafkaSink, as JSON, counted there, then deleted)",
            "  --kafka-bootstrap H:P the broker of --source kafka (default $WEIR_KAFKA_BOOTSTRAP)",
            "  --topic NAME         the topic of --source kafka (required with it)",
            "  --output-dir DIR     where q10 writes its files (default: a temporary directory, removed)",
            "  --side-input FILE    q13's side input, lines key,value (default: Nexmark's 10,000 rows",
            "                       i,i in a temporary file)",
            "  --events N           events to generate (> 0)",
            "  --parallelism P      parallelism and number of generators (>= 1; default 2)",
            "  --rate R             event rate in events per second of event time (default 10000)",
            "  --seed S             generator seed (default 0)",
            "  --warmup-events N    events of the warm-up run (default: --events; 0: no warm-up)",
            "  --json               print one JSON object",
            "  --serve              after the warm-up print {\"ready\":true}, then one measured run per line",
            "                       \"run\" on stdin, each printing its JSON object, until \"quit\" or end of input",
            "");

    static final class Options {
        String query;
        long events = -1;
        int parallelism = 2;
        double rate = NexmarkConfig.DEFAULT_RATE;
        long seed;
        long warmupEvents = -1;
        boolean json;
        boolean serve;
        String source = "generator";
        String outputDir;
        String sideInput;
        String bootstrap = System.getenv("WEIR_KAFKA_BOOTSTRAP");
        String topic;
    }

    static final class UsageException extends Exception {
        UsageException(String msg) {
            super(msg);
        }
    }

    static Options parse(String[] args) throws UsageException {
        Options o = new Options();
        for (int i = 0; i < args.length; i++) {
            String a = args[i];
            String value = null;
            int eq = a.indexOf('=');
            if (a.startsWith("--") && eq > 0) {
                value = a.substring(eq + 1);
                a = a.substring(0, eq);
            } else if (a.startsWith("-") && !a.startsWith("--")) {
                a = "-" + a; // -query as --query, like Go's flag package
            }
            if (a.equals("--json")) {
                o.json = true;
                continue;
            }
            if (a.equals("--serve")) {
                o.serve = true;
                o.json = true;
                continue;
            }
            if (a.equals("--help") || a.equals("--h")) {
                throw new UsageException(null);
            }
            if (value == null) {
                if (i + 1 >= args.length) {
                    throw new UsageException("flag needs an argument: " + a);
                }
                value = args[++i];
            }
            try {
                switch (a) {
                    case "--query": o.query = value; break;
                    case "--events": o.events = Long.parseLong(value); break;
                    case "--parallelism": o.parallelism = Integer.parseInt(value); break;
                    case "--rate": o.rate = Double.parseDouble(value); break;
                    case "--seed": o.seed = Long.parseUnsignedLong(value); break;
                    case "--warmup-events": o.warmupEvents = Long.parseLong(value); break;
                    case "--source": o.source = value; break;
                    case "--output-dir": o.outputDir = value; break;
                    case "--side-input": o.sideInput = value; break;
                    case "--kafka-bootstrap": o.bootstrap = value; break;
                    case "--topic": o.topic = value; break;
                    default: throw new UsageException("unknown flag " + a);
                }
            } catch (NumberFormatException e) {
                throw new UsageException("invalid value \"" + value + "\" for " + a);
            }
        }
        if (o.query == null) {
            throw new UsageException("--query is required");
        }
        o.query = o.query.toLowerCase(Locale.ROOT);
        if (!Queries.NAMES.contains(o.query)) {
            throw new UsageException("unknown query \"" + o.query + "\" (known: " + String.join(", ", Queries.NAMES) + ")");
        }
        if (o.events <= 0) {
            throw new UsageException("--events must be > 0");
        }
        if (o.parallelism < 1) {
            throw new UsageException("--parallelism must be >= 1");
        }
        if (!(o.rate > 0) || Double.isInfinite(o.rate)) {
            throw new UsageException("--rate must be > 0");
        }
        if (!o.source.equals("generator") && !o.source.equals("memory") && !o.source.equals("kafka")) {
            throw new UsageException("--source must be generator, memory or kafka, got \"" + o.source + "\"");
        }
        if (o.source.equals("kafka") && (o.bootstrap == null || o.bootstrap.isEmpty() || o.topic == null)) {
            throw new UsageException("--source kafka needs --kafka-bootstrap (or WEIR_KAFKA_BOOTSTRAP) and --topic");
        }
        if (o.warmupEvents < 0 || (o.source.equals("kafka") && o.warmupEvents > o.events)) {
            o.warmupEvents = o.events; // kafka: the topic holds --events events
        }
        return o;
    }

    public static void main(String[] args) throws Exception {
        Options o;
        try {
            o = parse(args);
        } catch (UsageException e) {
            if (e.getMessage() == null) {
                System.out.print(USAGE);
                System.exit(0);
            }
            System.err.println("weir-nexmark-flink: " + e.getMessage());
            System.err.print(USAGE);
            System.exit(2);
            return;
        }
        phase("jvm");
        Path tmp = null;
        try {
            if ((o.query.equals("q10") && o.outputDir == null) || (o.query.equals("q13") && o.sideInput == null)) {
                tmp = Files.createTempDirectory("weir-nexmark-flink-");
            }
            if (o.query.equals("q13") && o.sideInput == null) {
                o.sideInput = tmp.resolve("side_input.txt").toString();
                Queries.writeSideInput(Path.of(o.sideInput), Queries.SIDE_INPUT_ROWS);
            }
            Path out = o.outputDir != null ? Path.of(o.outputDir) : tmp == null ? null : tmp.resolve("q10");
            if (o.warmupEvents > 0) {
                run(o, o.warmupEvents, out == null ? null : out.resolveSibling(out.getFileName() + "-warmup"));
                if (!o.json) {
                    System.err.printf(Locale.ROOT, "warm-up: %d events in %.3f s%n", o.warmupEvents, RunStats.seconds());
                }
            }
            if (o.serve) {
                serve(o, out);
            } else {
                run(o, o.events, out);
                report(o, System.out);
            }
        } finally {
            if (tmp != null) {
                deleteTree(tmp);
            }
        }
        System.exit(0);
    }

    /**
     * The --serve loop: after the warm-up, prints {"ready":true}, then one measured run per line
     * "run" read from stdin, each printing its JSON line (or {"error":...} when the run fails, the
     * stack trace on stderr), until "quit" or the end of stdin. One JVM and one warm-up then serve
     * every run of a query, so that bench/compare.sh can alternate them with Weir's runs without
     * paying JVM start-up, class loading, the warm-up and, with the memory source, the events'
     * generation once per run.
     */
    static void serve(Options o, Path out) throws IOException {
        System.out.println("{\"ready\":true}");
        System.out.flush();
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        for (String line; (line = in.readLine()) != null; ) {
            line = line.trim();
            if (line.equals("quit")) {
                return;
            }
            if (!line.equals("run")) {
                System.out.println("{\"error\":\"unknown command (want run or quit)\"}");
                System.out.flush();
                continue;
            }
            try {
                run(o, o.events, out);
                report(o, System.out);
            } catch (Exception e) {
                e.printStackTrace();
                String msg = String.valueOf(e.getMessage()).replace("\\", "\\\\").replace("\"", "\\\"").replace("\n", " ");
                System.out.println("{\"error\":\"" + msg + "\"}");
            }
            System.out.flush();
        }
    }

    static void deleteTree(Path dir) throws IOException {
        if (!Files.exists(dir)) {
            return;
        }
        try (Stream<Path> paths = Files.walk(dir)) {
            for (Path p : paths.sorted(Comparator.reverseOrder()).toList()) {
                Files.delete(p);
            }
        }
    }

    static NexmarkConfig config(Options o, long events) {
        NexmarkConfig cfg = new NexmarkConfig();
        cfg.events = events;
        cfg.rate = o.rate;
        cfg.seed = o.seed;
        cfg.generators = o.parallelism;
        return cfg;
    }

    /**
     * Runs the query once over the given number of events in a fresh local MiniCluster; q10 writes
     * into out (emptied first, removed after a warm-up).
     */
    static void run(Options o, long events, Path out) throws Exception {
        NexmarkConfig cfg = config(o, events);
        boolean memory = o.source.equals("memory");
        eventsChecksum = null;
        phase("start run of " + events);
        if (memory) {
            // The same events as the previous run (the warm-up, an earlier --serve run) are kept:
            // generating them again costs as much as a run; the checksum after each run shows the
            // query left them as they were.
            if (!MemoryStore.holds(cfg)) {
                MemoryStore.clear();
                System.gc();
                MemoryStore.generate(cfg);
                heldChecksum = String.format(Locale.ROOT, "%016x", MemoryStore.checksum());
                phase("generate");
            }
            eventsChecksum = heldChecksum;
        }
        if (out != null) {
            deleteTree(out);
        }
        Configuration conf = new Configuration();
        conf.set(StateBackendOptions.STATE_BACKEND, "hashmap");
        conf.set(PipelineOptions.OBJECT_REUSE, true);
        conf.set(PipelineOptions.GENERIC_TYPES, Boolean.getBoolean("weirbench.genericTypes"));
        conf.set(RestOptions.BIND_ADDRESS, "127.0.0.1");
        conf.set(RestOptions.ADDRESS, "127.0.0.1");
        StreamExecutionEnvironment env = StreamExecutionEnvironment.createLocalEnvironment(o.parallelism, conf);
        WatermarkStrategy<Event> wm = WatermarkStrategy.<Event>forBoundedOutOfOrderness(Duration.ofMillis(cfg.watermarkDelayMs));
        DataStream<Event> events0 = o.source.equals("kafka")
                ? env.fromSource(events < o.events ? KafkaEvents.source(o.bootstrap, o.topic, events, o.parallelism)
                        : KafkaEvents.source(o.bootstrap, o.topic), wm, "Nexmark")
                : env.fromSource(new NexmarkSource(cfg, memory), wm, "Nexmark");
        DataStream<?> results = Queries.build(o.query, events0, new Queries.Options(out, o.sideInput));
        org.apache.kafka.clients.admin.Admin admin = null;
        String resultsTopic = null;
        if (results != null && o.source.equals("kafka")) {
            admin = KafkaResults.admin(o.bootstrap);
            resultsTopic = KafkaResults.create(admin, o.topic, o.query, o.parallelism);
            sinkToKafka(results, o.bootstrap, resultsTopic);
        } else if (results != null) {
            sinkAll(results);
        }
        phase("build");
        System.gc();
        phase("gc");
        RunStats.resetPeakRss();
        RunStats.reset();
        try {
            StreamGraph graph = env.getStreamGraph();
            graph.setJobName("nexmark " + o.query);
            JobGraph job = graph.getJobGraph();
            cluster(conf, o.parallelism).executeJobBlocking(job);
            phase("execute (measured " + RunStats.seconds() + " s)");
            if (resultsTopic != null) {
                long inTopic = KafkaResults.count(admin, resultsTopic);
                if (inTopic != RunStats.results.sum()) {
                    throw new IllegalStateException("the KafkaSink wrote " + RunStats.results.sum() + " results but topic "
                            + resultsTopic + " holds " + inTopic);
                }
            }
        } finally {
            if (admin != null) {
                KafkaResults.delete(admin, resultsTopic);
                admin.close();
            }
        }
        long emitted = RunStats.eventsEmitted.sum();
        if (emitted != events) {
            throw new IllegalStateException("sources emitted " + emitted + " events, want " + events);
        }
        if (results == null) {
            // q10: the results are the committed rows; the run ends with the last commit, a rename
            // into a partition directory, whose time the directory keeps.
            long[] committed = Queries.committedRows(out);
            RunStats.results.add(committed[0]);
            RunStats.endAtWallClock(committed[1]);
        }
        if (memory) {
            String after = String.format(Locale.ROOT, "%016x", MemoryStore.checksum());
            if (!after.equals(heldChecksum)) {
                MemoryStore.clear();
                throw new IllegalStateException("the query changed the events in memory (checksum " + heldChecksum + " before the run, " + after + " after)");
            }
            phase("checksum after the run");
        }
    }

    /** The checksum of the events MemoryStore holds. */
    private static String heldChecksum;

    private static MiniCluster cluster;

    /**
     * The MiniCluster every run of this JVM (the warm-up, each --serve run) is submitted to,
     * started by the first: configured as Flink's local executor configures the one it starts per
     * job (PerJobMiniClusterFactory: one TaskManager, parallelism slots, a shared RPC service, a
     * random REST port), so the job runs as env.execute() would run it, without a cluster's start
     * and shutdown (about 2.5 CPU seconds, 5-10 s under load) before and after each run. Like a
     * session cluster, it keeps its threads and JIT-compiled code from one job to the next.
     */
    static MiniCluster cluster(Configuration conf, int parallelism) throws Exception {
        if (cluster == null) {
            Configuration c = new Configuration(conf);
            if (!c.contains(RestOptions.BIND_PORT)) {
                c.set(RestOptions.BIND_PORT, "0");
            }
            MiniCluster mc = new MiniCluster(new MiniClusterConfiguration.Builder()
                    .setConfiguration(c)
                    .setNumTaskManagers(c.get(TaskManagerOptions.MINI_CLUSTER_NUM_TASK_MANAGERS))
                    .setNumSlotsPerTaskManager(parallelism)
                    .setRpcServiceSharing(RpcServiceSharing.SHARED)
                    .build());
            mc.start();
            cluster = mc;
        }
        return cluster;
    }

    private static long lastPhase = -1;

    /** Prints how long the phase just ended took (wall and process CPU) to stderr. */
    static void phase(String what) {
        var rt = java.lang.management.ManagementFactory.getRuntimeMXBean();
        var os = (com.sun.management.OperatingSystemMXBean) java.lang.management.ManagementFactory.getOperatingSystemMXBean();
        long now = System.nanoTime();
        if (lastPhase < 0) {
            System.err.printf(Locale.ROOT, "phase jvm start %.3f s, cpu %.3f s%n", rt.getUptime() / 1e3, os.getProcessCpuTime() / 1e9);
        } else {
            System.err.printf(Locale.ROOT, "phase %s %.3f s, cpu total %.3f s%n", what, (now - lastPhase) / 1e9, os.getProcessCpuTime() / 1e9);
        }
        lastPhase = now;
    }

    /** The memory source's events checksum of the last run (null with the generator source). */
    static String eventsChecksum;

    @SuppressWarnings({"unchecked", "rawtypes"})
    private static void sinkAll(DataStream<?> results) {
        ((DataStream) results).sinkTo(new CountingSink<>()).name("count");
    }

    @SuppressWarnings({"unchecked", "rawtypes"})
    private static void sinkToKafka(DataStream<?> results, String bootstrap, String topic) {
        ((DataStream) results).sinkTo(KafkaResults.sink(bootstrap, topic)).name("kafka results");
    }

    static void report(Options o, PrintStream out) {
        double seconds = RunStats.seconds();
        double eps = o.events / seconds;
        long results = RunStats.results.sum();
        double cpu = RunStats.cpuSeconds();
        long rss = RunStats.peakRssBytes();
        String flink = EnvironmentInformation.getVersion();
        if (o.json) {
            out.printf(Locale.ROOT,
                    "{\"engine\":\"flink\",\"flink_version\":\"%s\",\"query\":\"%s\",\"events\":%d,\"parallelism\":%d,"
                            + "\"rate\":%s,\"seconds\":%.6f,\"events_per_second\":%.1f,\"results\":%d,"
                            + "\"cpu_seconds\":%.3f,\"peak_rss_bytes\":%d,\"warmup_events\":%d,\"source\":\"%s\"%s}%n",
                    flink, o.query, o.events, o.parallelism, num(o.rate), seconds, eps, results, cpu, rss,
                    o.warmupEvents, o.source,
                    eventsChecksum == null ? "" : ",\"events_checksum\":\"" + eventsChecksum + "\"");
        } else {
            out.printf(Locale.ROOT, "flink %s  %s  parallelism %d  rate %s%n", flink, o.query, o.parallelism, num(o.rate));
            out.printf(Locale.ROOT, "  events        %d%n", o.events);
            out.printf(Locale.ROOT, "  seconds       %.3f%n", seconds);
            out.printf(Locale.ROOT, "  events/s      %.0f%n", eps);
            out.printf(Locale.ROOT, "  cpu seconds   %.3f (%.2f cores)%n", cpu, cpu / seconds);
            out.printf(Locale.ROOT, "  peak rss      %.1f MiB%n", rss / 1048576.0);
            out.printf(Locale.ROOT, "  results       %d%n", results);
        }
    }

    private static String num(double v) {
        if (v == Math.rint(v) && Math.abs(v) < 1e15) {
            return Long.toString((long) v);
        }
        return Double.toString(v);
    }
}
