package weirprograms;

import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.stream.Stream;

import org.apache.flink.api.common.eventtime.Watermark;
import org.apache.flink.api.common.eventtime.WatermarkGenerator;
import org.apache.flink.api.common.eventtime.WatermarkOutput;
import org.apache.flink.api.common.eventtime.WatermarkStrategy;
import org.apache.flink.api.common.functions.AggregateFunction;
import org.apache.flink.api.common.functions.CoGroupFunction;
import org.apache.flink.api.common.functions.OpenContext;
import org.apache.flink.api.common.state.AggregatingState;
import org.apache.flink.api.common.state.AggregatingStateDescriptor;
import org.apache.flink.api.common.state.ListState;
import org.apache.flink.api.common.state.ListStateDescriptor;
import org.apache.flink.api.common.state.MapState;
import org.apache.flink.api.common.state.MapStateDescriptor;
import org.apache.flink.api.common.state.ReducingState;
import org.apache.flink.api.common.state.ReducingStateDescriptor;
import org.apache.flink.api.common.state.ValueState;
import org.apache.flink.api.common.state.ValueStateDescriptor;
import org.apache.flink.api.common.typeinfo.TypeInformation;
import org.apache.flink.api.common.typeinfo.Types;
import org.apache.flink.api.connector.source.Boundedness;
import org.apache.flink.api.connector.source.ReaderOutput;
import org.apache.flink.api.connector.source.Source;
import org.apache.flink.api.connector.source.SourceReader;
import org.apache.flink.api.connector.source.SourceReaderContext;
import org.apache.flink.api.connector.source.SourceSplit;
import org.apache.flink.api.connector.source.SplitEnumerator;
import org.apache.flink.api.connector.source.SplitEnumeratorContext;
import org.apache.flink.api.java.functions.KeySelector;
import org.apache.flink.api.java.tuple.Tuple3;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.core.io.InputStatus;
import org.apache.flink.core.io.SimpleVersionedSerializer;
import org.apache.flink.runtime.jobgraph.JobGraph;
import org.apache.flink.runtime.jobmaster.JobResult;
import org.apache.flink.runtime.minicluster.MiniCluster;
import org.apache.flink.runtime.minicluster.MiniClusterConfiguration;
import org.apache.flink.shaded.jackson2.com.fasterxml.jackson.databind.JsonNode;
import org.apache.flink.shaded.jackson2.com.fasterxml.jackson.databind.ObjectMapper;
import org.apache.flink.streaming.api.datastream.AllWindowedStream;
import org.apache.flink.streaming.api.datastream.DataStream;
import org.apache.flink.streaming.api.datastream.KeyedStream;
import org.apache.flink.streaming.api.datastream.SingleOutputStreamOperator;
import org.apache.flink.streaming.api.datastream.WindowedStream;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.streaming.api.functions.KeyedProcessFunction;
import org.apache.flink.streaming.api.functions.ProcessFunction;
import org.apache.flink.streaming.api.TimerService;
import org.apache.flink.streaming.api.datastream.AsyncDataStream;
import org.apache.flink.streaming.api.functions.async.AsyncFunction;
import org.apache.flink.streaming.api.functions.async.ResultFuture;
import org.apache.flink.streaming.api.functions.co.CoProcessFunction;
import org.apache.flink.streaming.api.functions.co.KeyedBroadcastProcessFunction;
import org.apache.flink.streaming.api.functions.co.KeyedCoProcessFunction;
import org.apache.flink.streaming.api.functions.co.ProcessJoinFunction;
import org.apache.flink.streaming.api.functions.sink.v2.DiscardingSink;
import org.apache.flink.streaming.api.functions.windowing.ProcessAllWindowFunction;
import org.apache.flink.streaming.api.functions.windowing.ProcessWindowFunction;
import org.apache.flink.streaming.api.windowing.assigners.EventTimeSessionWindows;
import org.apache.flink.streaming.api.windowing.assigners.SlidingEventTimeWindows;
import org.apache.flink.streaming.api.windowing.assigners.TumblingEventTimeWindows;
import org.apache.flink.streaming.api.windowing.assigners.WindowAssigner;
import org.apache.flink.streaming.api.windowing.evictors.CountEvictor;
import org.apache.flink.streaming.api.windowing.evictors.TimeEvictor;
import org.apache.flink.streaming.api.windowing.triggers.CountTrigger;
import org.apache.flink.streaming.api.windowing.windows.GlobalWindow;
import org.apache.flink.streaming.api.windowing.windows.TimeWindow;
import org.apache.flink.util.Collector;
import org.apache.flink.util.OutputTag;

/**
 * Runs program specs (internal/progdiff/README.md) on one MiniCluster:
 * {@code Main SPEC_DIR OUT_DIR} runs every SPEC_DIR/*.json and writes
 * OUT_DIR/NAME.out (the sink lines) or OUT_DIR/NAME.err (the failure).
 */
public final class Main {
    /** The records of every stream: key, value, event timestamp. */
    public static final TypeInformation<Tuple3<String, Long, Long>> T3 = Types.TUPLE(Types.STRING, Types.LONG, Types.LONG);

    /** The sink lines of the running job (one job runs at a time). */
    static final ConcurrentLinkedQueue<String> LINES = new ConcurrentLinkedQueue<>();

    public static void main(String[] args) throws Exception {
        Path in = Path.of(args[0]);
        Path outDir = Path.of(args[1]);
        Files.createDirectories(outDir);
        List<Path> specs;
        try (Stream<Path> s = Files.list(in)) {
            specs = s.filter(p -> p.toString().endsWith(".json")).sorted().toList();
        }
        Configuration conf = new Configuration();
        MiniClusterConfiguration mc = new MiniClusterConfiguration.Builder()
                .setConfiguration(conf).setNumTaskManagers(1).setNumSlotsPerTaskManager(4).build();
        ObjectMapper om = new ObjectMapper();
        try (MiniCluster cluster = new MiniCluster(mc)) {
            cluster.start();
            for (Path p : specs) {
                String name = p.getFileName().toString().replaceFirst("\\.json$", "");
                LINES.clear();
                try {
                    JsonNode spec = om.readTree(Files.readString(p));
                    if (spec.has("harness")) {
                        Files.write(outDir.resolve(name + ".out"), HarnessMode.run(spec), StandardCharsets.UTF_8);
                        continue;
                    }
                    StreamExecutionEnvironment env = StreamExecutionEnvironment.getExecutionEnvironment();
                    env.setParallelism(1);
                    env.getConfig().setAutoWatermarkInterval(0);
                    build(env, spec);
                    // A job that does not end within a minute is reported
                    // (NAME.err) and cancelled, not waited for.
                    JobGraph job = env.getStreamGraph().getJobGraph();
                    cluster.submitJob(job).get();
                    JobResult res;
                    try {
                        res = cluster.requestJobResult(job.getJobID()).get(60, TimeUnit.SECONDS);
                    } catch (TimeoutException e) {
                        cluster.cancelJob(job.getJobID());
                        throw new IllegalStateException("the job did not finish within 60 s", e);
                    }
                    if (res.getSerializedThrowable().isPresent()) {
                        throw res.getSerializedThrowable().get().deserializeError(Main.class.getClassLoader());
                    }
                    Files.write(outDir.resolve(name + ".out"), new ArrayList<>(LINES), StandardCharsets.UTF_8);
                } catch (Throwable t) {
                    StringWriter sw = new StringWriter();
                    t.printStackTrace(new PrintWriter(sw));
                    Files.writeString(outDir.resolve(name + ".err"), sw.toString());
                }
            }
        }
        System.exit(0);
    }

    static long floorMod(long a, long m) { return Math.floorMod(a, m); }

    static long lng(JsonNode n, String f) { return n.path(f).asLong(0); }

    static Duration ms(long n) { return Duration.ofMillis(n); }

    /** The key of every keyed block: the record's key. */
    public static final class KeyOf implements KeySelector<Tuple3<String, Long, Long>, String> {
        @Override public String getKey(Tuple3<String, Long, Long> r) { return r.f0; }
    }

    /** After each record, watermark = max timestamp seen - bound - 1. */
    static final class Punctuated implements WatermarkGenerator<Tuple3<String, Long, Long>> {
        final long bound;
        long max = Long.MIN_VALUE;
        boolean seen;
        Punctuated(long bound) { this.bound = bound; }
        @Override public void onEvent(Tuple3<String, Long, Long> e, long ts, WatermarkOutput out) {
            if (!seen || ts > max) { max = ts; seen = true; }
            out.emitWatermark(new Watermark(max - bound - 1));
        }
        @Override public void onPeriodicEmit(WatermarkOutput out) {}
    }

    static void build(StreamExecutionEnvironment env, JsonNode spec) {
        Map<Integer, DataStream<Tuple3<String, Long, Long>>> streams = new HashMap<>();
        Map<Integer, SingleOutputStreamOperator<Tuple3<String, Long, Long>>> withSide = new HashMap<>();
        Map<Integer, OutputTag<Tuple3<String, Long, Long>>> tags = new HashMap<>();
        Map<Integer, OutputTag<Tuple3<String, Long, Long>>> rightTags = new HashMap<>();
        for (JsonNode n : spec.get("nodes")) {
            int id = n.get("id").asInt();
            String op = n.get("op").asText();
            int par = n.path("par").asInt(0);
            String part = n.path("part").asText("");
            String kind = n.path("kind").asText("");
            long a = lng(n, "a"), b = lng(n, "b");
            List<DataStream<Tuple3<String, Long, Long>>> in = new ArrayList<>();
            for (JsonNode i : n.path("in")) in.add(streams.get(i.asInt()));
            OutputTag<Tuple3<String, Long, Long>> tag = new OutputTag<>("side-" + id, T3);
            OutputTag<Tuple3<String, Long, Long>> rightTag = new OutputTag<>("side-" + id + "-right", T3);
            DataStream<Tuple3<String, Long, Long>> first = in.isEmpty() ? null : partition(in.get(0), part);
            SingleOutputStreamOperator<Tuple3<String, Long, Long>> ds;
            switch (op) {
                case "source": {
                    List<Tuple3<String, Long, Long>> data = new ArrayList<>();
                    for (JsonNode r : n.get("data")) data.add(Tuple3.of(r.get("k").asText(), lng(r, "v"), lng(r, "t")));
                    long bound = lng(n, "bound");
                    int sp = Math.max(par, 1);
                    DataStream<Tuple3<String, Long, Long>> src = sp == 1 ? env.fromData(data, T3).setParallelism(1)
                            : env.fromSource(new PartSource(data), WatermarkStrategy.noWatermarks(), "source-" + id, T3).setParallelism(sp);
                    ds = src.assignTimestampsAndWatermarks(WatermarkStrategy.<Tuple3<String, Long, Long>>forGenerator(c -> new Punctuated(bound))
                                    .withTimestampAssigner((r, ts) -> r.f2))
                            .setParallelism(sp);
                    break;
                }
                case "map":
                    ds = first.map(r -> {
                        switch (kind) {
                            case "add": return Tuple3.of(r.f0, r.f1 + a, r.f2);
                            case "mul": return Tuple3.of(r.f0, floorMod(r.f1 * a, 1000003), r.f2);
                            default: return Tuple3.of("k" + floorMod(r.f1, a), r.f1, r.f2);
                        }
                    }).returns(T3).setParallelism(par);
                    break;
                case "filter":
                    ds = first.filter(r -> floorMod(r.f1, a) != b).setParallelism(par);
                    break;
                case "flatmap":
                    ds = first.flatMap((Tuple3<String, Long, Long> r, Collector<Tuple3<String, Long, Long>> out) -> {
                        for (long i = 0; i < floorMod(r.f1, 3); i++) out.collect(Tuple3.of(r.f0, r.f1 + i, r.f2));
                    }).returns(T3).setParallelism(par);
                    break;
                case "proc":
                    ds = first.process(new ProcessFunction<Tuple3<String, Long, Long>, Tuple3<String, Long, Long>>() {
                        @Override public void processElement(Tuple3<String, Long, Long> r, Context ctx, Collector<Tuple3<String, Long, Long>> out) {
                            if (floorMod(r.f1, 5) == 0) ctx.output(tag, r);
                            out.collect(Tuple3.of(r.f0, r.f1 * 2 + floorMod(ctx.timestamp(), 7), r.f2));
                        }
                    }).returns(T3).setParallelism(par);
                    break;
                case "windowall": {
                    AllWindowedStream<Tuple3<String, Long, Long>, TimeWindow> ws = in.get(0).windowAll(assigner(n));
                    if (lng(n, "lateness") > 0) ws = ws.allowedLateness(ms(lng(n, "lateness")));
                    ds = ws.process(new ProcessAllWindowFunction<Tuple3<String, Long, Long>, Tuple3<String, Long, Long>, TimeWindow>() {
                        @Override public void process(Context ctx, Iterable<Tuple3<String, Long, Long>> elems, Collector<Tuple3<String, Long, Long>> out) {
                            long c = 0, sum = 0;
                            for (Tuple3<String, Long, Long> r : elems) { c++; sum += r.f1; }
                            out.collect(Tuple3.of("all@" + ctx.window().getStart(), c * 1000 + sum, 0L));
                        }
                    }).returns(T3);
                    break;
                }
                case "union": {
                    DataStream<Tuple3<String, Long, Long>> u = in.get(0);
                    @SuppressWarnings("unchecked")
                    DataStream<Tuple3<String, Long, Long>>[] more = in.subList(1, in.size()).toArray(new DataStream[0]);
                    streams.put(id, u.union(more));
                    continue;
                }
                case "rolling":
                    if (kind.equals("max")) {
                        ds = in.get(0).keyBy(new KeyOf()).reduce((x, y) -> Tuple3.of(y.f0, Math.max(x.f1, y.f1), y.f2)).setParallelism(par);
                    } else {
                        ds = in.get(0).keyBy(new KeyOf()).reduce((x, y) -> Tuple3.of(y.f0, x.f1 + y.f1, y.f2)).setParallelism(par);
                    }
                    break;
                case "window":
                    ds = window(n, in.get(0).keyBy(new KeyOf()), tag);
                    break;
                case "countwin": {
                    KeyedStream<Tuple3<String, Long, Long>, String> ks = in.get(0).keyBy(new KeyOf());
                    WindowedStream<Tuple3<String, Long, Long>, String, GlobalWindow> cw = b > 0 ? ks.countWindow(a, b) : ks.countWindow(a);
                    ds = cw.process(new ProcessWindowFunction<Tuple3<String, Long, Long>, Tuple3<String, Long, Long>, String, GlobalWindow>() {
                        @Override public void process(String key, Context ctx, Iterable<Tuple3<String, Long, Long>> elems, Collector<Tuple3<String, Long, Long>> out) {
                            long c = 0, sum = 0;
                            for (Tuple3<String, Long, Long> r : elems) { c++; sum += r.f1; }
                            out.collect(Tuple3.of(key, c * 1000 + sum, 0L));
                        }
                    }).returns(T3).setParallelism(par);
                    break;
                }
                case "kproc":
                    ds = in.get(0).keyBy(new KeyOf()).process(new KProc(kind, a, tag)).setParallelism(par);
                    break;
                case "async": {
                    AsyncFunction<Tuple3<String, Long, Long>, Tuple3<String, Long, Long>> f = new AsyncFunction<>() {
                        @Override public void asyncInvoke(Tuple3<String, Long, Long> r, ResultFuture<Tuple3<String, Long, Long>> rf) {
                            rf.complete(Collections.singletonList(Tuple3.of(r.f0, r.f1 * 3 + 1, r.f2)));
                        }
                    };
                    ds = (kind.equals("ordered") ? AsyncDataStream.orderedWait(first, f, 60, TimeUnit.SECONDS, 4)
                            : AsyncDataStream.unorderedWait(first, f, 60, TimeUnit.SECONDS, 4)).setParallelism(par);
                    break;
                }
                case "coproc":
                    ds = in.get(0).connect(in.get(1)).process(new CoProcessFunction<Tuple3<String, Long, Long>, Tuple3<String, Long, Long>, Tuple3<String, Long, Long>>() {
                        @Override public void processElement1(Tuple3<String, Long, Long> r, Context ctx, Collector<Tuple3<String, Long, Long>> out) {
                            out.collect(Tuple3.of(r.f0, r.f1 + 100, r.f2));
                        }
                        @Override public void processElement2(Tuple3<String, Long, Long> r, Context ctx, Collector<Tuple3<String, Long, Long>> out) {
                            out.collect(Tuple3.of(r.f0, r.f1 - 100, r.f2));
                        }
                    }).returns(T3).setParallelism(par);
                    break;
                case "cokproc":
                    ds = in.get(0).connect(in.get(1)).keyBy(new KeyOf(), new KeyOf()).process(new CoKProc(a, tag)).setParallelism(par);
                    break;
                case "ijoin":
                    KeyedStream.IntervalJoined<Tuple3<String, Long, Long>, Tuple3<String, Long, Long>, String> ij =
                            in.get(0).keyBy(new KeyOf()).intervalJoin(in.get(1).keyBy(new KeyOf())).between(ms(lng(n, "lower")), ms(lng(n, "upper")));
                    if (kind.equals("lower-exclusive") || kind.equals("exclusive")) ij = ij.lowerBoundExclusive();
                    if (kind.equals("upper-exclusive") || kind.equals("exclusive")) ij = ij.upperBoundExclusive();
                    if (n.path("late").asBoolean(false)) ij = ij.sideOutputLeftLateData(tag).sideOutputRightLateData(rightTag);
                    ds = ij.process(new ProcessJoinFunction<Tuple3<String, Long, Long>, Tuple3<String, Long, Long>, Tuple3<String, Long, Long>>() {
                                @Override public void processElement(Tuple3<String, Long, Long> l, Tuple3<String, Long, Long> r, Context ctx,
                                        Collector<Tuple3<String, Long, Long>> out) {
                                    out.collect(Tuple3.of(l.f0, l.f1 * 1000 + r.f1, 0L));
                                }
                            }).returns(T3).setParallelism(par);
                    break;
                case "wjoin": {
                    WindowAssigner<Object, TimeWindow> w = assigner(n);
                    if (kind.equals("cogroup")) {
                        ds = in.get(0).coGroup(in.get(1)).where(new KeyOf(), Types.STRING).equalTo(new KeyOf(), Types.STRING).window(w)
                                .apply(new CoGroupFunction<Tuple3<String, Long, Long>, Tuple3<String, Long, Long>, Tuple3<String, Long, Long>>() {
                                    @Override public void coGroup(Iterable<Tuple3<String, Long, Long>> left, Iterable<Tuple3<String, Long, Long>> right,
                                            Collector<Tuple3<String, Long, Long>> out) {
                                        String k = null;
                                        long sl = 0, sr = 0, nl = 0, nr = 0;
                                        for (Tuple3<String, Long, Long> r : left) { k = r.f0; sl += r.f1; nl++; }
                                        for (Tuple3<String, Long, Long> r : right) { k = r.f0; sr += r.f1; nr++; }
                                        out.collect(Tuple3.of(k, (sl * 1000 + sr) * 100 + nl * 10 + nr, 0L));
                                    }
                                }, T3);
                    } else {
                        ds = in.get(0).join(in.get(1)).where(new KeyOf(), Types.STRING).equalTo(new KeyOf(), Types.STRING).window(w)
                                .apply((x, y) -> Tuple3.of(x.f0, x.f1 * 1000 + y.f1, 0L), T3);
                    }
                    ds.setParallelism(par);
                    break;
                }
                case "bcast":
                    ds = in.get(0).keyBy(new KeyOf()).connect(in.get(1).broadcast(BProc.STATE)).process(new BProc(a)).setParallelism(par);
                    break;
                case "side": {
                    int from = n.get("in").get(0).asInt();
                    streams.put(id, withSide.get(from).getSideOutput((kind.equals("right") ? rightTags : tags).get(from)));
                    continue;
                }
                case "sink": {
                    int sink = n.path("sink").asInt();
                    first.process(new SinkFn(sink)).setParallelism(par).sinkTo(new DiscardingSink<>()).setParallelism(par);
                    continue;
                }
                default:
                    throw new IllegalArgumentException("node " + id + ": unknown op " + op);
            }
            streams.put(id, ds);
            withSide.put(id, ds);
            tags.put(id, tag);
            rightTags.put(id, rightTag);
        }
    }

    static DataStream<Tuple3<String, Long, Long>> partition(DataStream<Tuple3<String, Long, Long>> ds, String part) {
        switch (part) {
            case "rebalance": return ds.rebalance();
            case "rescale": return ds.rescale();
            case "broadcast": return ds.broadcast();
            default: return ds;
        }
    }

    /** Sliding when slide is set, sessions when gap is, else tumbling. */
    static WindowAssigner<Object, TimeWindow> assigner(JsonNode n) {
        if (lng(n, "gap") > 0) return EventTimeSessionWindows.withGap(ms(lng(n, "gap")));
        if (lng(n, "slide") > 0) return SlidingEventTimeWindows.of(ms(lng(n, "size")), ms(lng(n, "slide")), ms(lng(n, "offset")));
        return TumblingEventTimeWindows.of(ms(lng(n, "size")), ms(lng(n, "offset")));
    }

    static SingleOutputStreamOperator<Tuple3<String, Long, Long>> window(JsonNode n, KeyedStream<Tuple3<String, Long, Long>, String> ks,
            OutputTag<Tuple3<String, Long, Long>> tag) {
        WindowedStream<Tuple3<String, Long, Long>, String, TimeWindow> ws = ks.window(assigner(n));
        if (lng(n, "count") > 0) ws = ws.trigger(CountTrigger.of(lng(n, "count")));
        boolean after = n.path("evictafter").asBoolean(false);
        switch (n.path("evictor").asText("")) {
            case "count": ws = ws.evictor(CountEvictor.of(lng(n, "keep"), after)); break;
            case "time": ws = ws.evictor(TimeEvictor.of(ms(lng(n, "keep")), after)); break;
            default: break;
        }
        if (lng(n, "lateness") > 0) ws = ws.allowedLateness(ms(lng(n, "lateness")));
        if (n.path("late").asBoolean(false)) ws = ws.sideOutputLateData(tag);
        SingleOutputStreamOperator<Tuple3<String, Long, Long>> ds;
        switch (n.path("fn").asText("")) {
            case "reduce": ds = ws.reduce((x, y) -> Tuple3.of(x.f0, x.f1 + y.f1, Math.max(x.f2, y.f2))); break;
            case "aggregate": ds = ws.aggregate(new Agg()); break;
            case "reduceproc":
                ds = ws.reduce((x, y) -> Tuple3.of(x.f0, x.f1 + y.f1, Math.max(x.f2, y.f2)),
                        new ProcessWindowFunction<Tuple3<String, Long, Long>, Tuple3<String, Long, Long>, String, TimeWindow>() {
                            @Override public void process(String key, Context ctx, Iterable<Tuple3<String, Long, Long>> elems, Collector<Tuple3<String, Long, Long>> out) {
                                out.collect(Tuple3.of(key + "@" + ctx.window().getEnd(), elems.iterator().next().f1, 0L));
                            }
                        }, T3);
                break;
            case "aggproc":
                ds = ws.aggregate(new Agg(), new ProcessWindowFunction<Tuple3<String, Long, Long>, Tuple3<String, Long, Long>, String, TimeWindow>() {
                    @Override public void process(String key, Context ctx, Iterable<Tuple3<String, Long, Long>> elems, Collector<Tuple3<String, Long, Long>> out) {
                        out.collect(Tuple3.of(key + "#" + ctx.window().getStart(), elems.iterator().next().f1, 0L));
                    }
                });
                break;
            default: ds = ws.process(new ProcWin());
        }
        return ds.setParallelism(n.get("par").asInt());
    }

    /** Count and sum of a window, keyed: (key, count*1000+sum, 0). */
    public static final class Agg implements AggregateFunction<Tuple3<String, Long, Long>, Tuple3<String, Long, Long>, Tuple3<String, Long, Long>> {
        @Override public Tuple3<String, Long, Long> createAccumulator() { return Tuple3.of("", 0L, 0L); }
        @Override public Tuple3<String, Long, Long> add(Tuple3<String, Long, Long> r, Tuple3<String, Long, Long> acc) {
            return Tuple3.of(r.f0, acc.f1 + 1, acc.f2 + r.f1);
        }
        @Override public Tuple3<String, Long, Long> getResult(Tuple3<String, Long, Long> acc) { return Tuple3.of(acc.f0, acc.f1 * 1000 + acc.f2, 0L); }
        @Override public Tuple3<String, Long, Long> merge(Tuple3<String, Long, Long> x, Tuple3<String, Long, Long> y) {
            return Tuple3.of(x.f0.isEmpty() ? y.f0 : x.f0, x.f1 + y.f1, x.f2 + y.f2);
        }
    }

    /** (key@start, count*1000+sum, 0). */
    public static final class ProcWin extends ProcessWindowFunction<Tuple3<String, Long, Long>, Tuple3<String, Long, Long>, String, TimeWindow> {
        @Override public void process(String key, Context ctx, Iterable<Tuple3<String, Long, Long>> elems, Collector<Tuple3<String, Long, Long>> out) {
            long n = 0, s = 0;
            for (Tuple3<String, Long, Long> r : elems) { n++; s += r.f1; }
            out.collect(Tuple3.of(key + "@" + ctx.window().getStart(), n * 1000 + s, 0L));
        }
    }

    /** The state and logic of the kproc and cokproc blocks (internal/progdiff/README.md). */
    static final class Logic implements java.io.Serializable {
        final String kind;
        final long delay;
        final OutputTag<Tuple3<String, Long, Long>> tag;
        transient MapState<Long, Long> buf;
        transient ValueState<Long> fired;
        transient ReducingState<Long> total;
        transient ListState<Long> last;
        transient AggregatingState<Long, Long> stats;

        Logic(String kind, long delay, OutputTag<Tuple3<String, Long, Long>> tag) { this.kind = kind; this.delay = delay; this.tag = tag; }

        void open(org.apache.flink.api.common.functions.RuntimeContext rc) {
            buf = rc.getMapState(new MapStateDescriptor<>("buf", Types.LONG, Types.LONG));
            fired = rc.getState(new ValueStateDescriptor<>("fired", Types.LONG));
            total = rc.getReducingState(new ReducingStateDescriptor<>("total", (x, y) -> x + y, Types.LONG));
            last = rc.getListState(new ListStateDescriptor<>("last", Types.LONG));
            stats = rc.getAggregatingState(new AggregatingStateDescriptor<>("stats", new Stats(), Types.TUPLE(Types.LONG, Types.LONG, Types.LONG)));
        }

        void element(Tuple3<String, Long, Long> r, long mult, long ts, TimerService timers,
                java.util.function.Consumer<Tuple3<String, Long, Long>> side, Collector<Tuple3<String, Long, Long>> out) throws Exception {
            if (floorMod(r.f1, 5) == 0) side.accept(r);
            if (kind.equals("agg")) {
                stats.add(r.f1);
                out.collect(Tuple3.of(r.f0, stats.get(), r.f2));
                if (floorMod(r.f1, 7) == 0) stats.clear();
                return;
            }
            if (kind.equals("running")) {
                total.add(r.f1);
                List<Long> l = new ArrayList<>();
                for (Long v : last.get()) l.add(v);
                l.add(r.f1);
                if (l.size() > 3) l = new ArrayList<>(l.subList(l.size() - 3, l.size()));
                last.update(l);
                long s = 0;
                for (long v : l) s += v;
                out.collect(Tuple3.of(r.f0, total.get() * 1000 + s, r.f2));
                return;
            }
            Long old = buf.get(ts);
            buf.put(ts, (old == null ? 0 : old) + r.f1 * mult);
            timers.registerEventTimeTimer(ts + delay);
        }

        void onTimer(long t, String key, Collector<Tuple3<String, Long, Long>> out) throws Exception {
            long sum = 0;
            List<Long> done = new ArrayList<>();
            for (Map.Entry<Long, Long> e : buf.entries()) {
                if (e.getKey() <= t) { sum += e.getValue(); done.add(e.getKey()); }
            }
            for (Long k : done) buf.remove(k);
            Long f = fired.value();
            long nf = (f == null ? 0 : f) + 1;
            fired.update(nf);
            out.collect(Tuple3.of(key, sum * 1000 + nf, 0L));
        }
    }

    /**
     * A bounded parallel source: subtask s of p emits the records at the
     * indexes i of data with i mod p == s, in order. It needs no splits:
     * each reader knows its subtask index.
     */
    public static final class PartSource implements Source<Tuple3<String, Long, Long>, NoSplit, Void> {
        final ArrayList<Tuple3<String, Long, Long>> data;
        PartSource(List<Tuple3<String, Long, Long>> data) { this.data = new ArrayList<>(data); }
        @Override public Boundedness getBoundedness() { return Boundedness.BOUNDED; }
        @Override public SplitEnumerator<NoSplit, Void> createEnumerator(SplitEnumeratorContext<NoSplit> ctx) { return new NoEnumerator(ctx); }
        @Override public SplitEnumerator<NoSplit, Void> restoreEnumerator(SplitEnumeratorContext<NoSplit> ctx, Void chk) { return new NoEnumerator(ctx); }
        @Override public SimpleVersionedSerializer<NoSplit> getSplitSerializer() { return new NoSerializer<>(); }
        @Override public SimpleVersionedSerializer<Void> getEnumeratorCheckpointSerializer() { return new NoSerializer<>(); }
        @Override public SourceReader<Tuple3<String, Long, Long>, NoSplit> createReader(SourceReaderContext ctx) {
            int s = ctx.getIndexOfSubtask(), p = ctx.currentParallelism();
            List<Tuple3<String, Long, Long>> part = new ArrayList<>();
            for (int i = s; i < data.size(); i += p) part.add(data.get(i));
            // The reader ends only after the enumerator's "no more
            // splits": a task that finished before that event arrives
            // fails the job (the event is lost).
            return new SourceReader<>() {
                int pos;
                boolean noMore;
                final CompletableFuture<Void> noMoreSplits = new CompletableFuture<>();
                @Override public void start() {}
                @Override public InputStatus pollNext(ReaderOutput<Tuple3<String, Long, Long>> out) {
                    if (pos < part.size()) {
                        out.collect(part.get(pos++));
                        return InputStatus.MORE_AVAILABLE;
                    }
                    return noMore ? InputStatus.END_OF_INPUT : InputStatus.NOTHING_AVAILABLE;
                }
                @Override public List<NoSplit> snapshotState(long id) { return List.of(); }
                @Override public CompletableFuture<Void> isAvailable() {
                    return pos < part.size() ? CompletableFuture.completedFuture(null) : noMoreSplits;
                }
                @Override public void addSplits(List<NoSplit> splits) {}
                @Override public void notifyNoMoreSplits() { noMore = true; noMoreSplits.complete(null); }
                @Override public void close() {}
            };
        }
    }

    /** PartSource has no splits. */
    public static final class NoSplit implements SourceSplit {
        @Override public String splitId() { return "none"; }
    }

    /** PartSource's enumerator: no splits to assign. */
    static final class NoEnumerator implements SplitEnumerator<NoSplit, Void> {
        final SplitEnumeratorContext<NoSplit> ctx;
        NoEnumerator(SplitEnumeratorContext<NoSplit> ctx) { this.ctx = ctx; }
        @Override public void start() {}
        @Override public void handleSplitRequest(int subtask, String host) {}
        @Override public void addSplitsBack(List<NoSplit> splits, int subtask) {}
        @Override public void addReader(int subtask) { ctx.signalNoMoreSplits(subtask); }
        @Override public Void snapshotState(long id) { return null; }
        @Override public void close() {}
    }

    /** Serializes nothing (PartSource keeps no split or enumerator state). */
    static final class NoSerializer<T> implements SimpleVersionedSerializer<T> {
        @Override public int getVersion() { return 1; }
        @Override public byte[] serialize(T t) { return new byte[0]; }
        @Override public T deserialize(int version, byte[] b) { return null; }
    }

    /** The kproc block's AggregatingState: (count, sum, max) -> (count*1000+sum)*100 + floorMod(max, 100). */
    public static final class Stats implements AggregateFunction<Long, Tuple3<Long, Long, Long>, Long> {
        @Override public Tuple3<Long, Long, Long> createAccumulator() { return Tuple3.of(0L, 0L, Long.MIN_VALUE); }
        @Override public Tuple3<Long, Long, Long> add(Long v, Tuple3<Long, Long, Long> a) { return Tuple3.of(a.f0 + 1, a.f1 + v, Math.max(a.f2, v)); }
        @Override public Long getResult(Tuple3<Long, Long, Long> a) { return (a.f0 * 1000 + a.f1) * 100 + floorMod(a.f2, 100); }
        @Override public Tuple3<Long, Long, Long> merge(Tuple3<Long, Long, Long> x, Tuple3<Long, Long, Long> y) {
            return Tuple3.of(x.f0 + y.f0, x.f1 + y.f1, Math.max(x.f2, y.f2));
        }
    }

    /** The kproc block. */
    public static final class KProc extends KeyedProcessFunction<String, Tuple3<String, Long, Long>, Tuple3<String, Long, Long>> {
        final Logic l;
        KProc(String kind, long delay, OutputTag<Tuple3<String, Long, Long>> tag) { l = new Logic(kind, delay, tag); }
        @Override public void open(OpenContext c) { l.open(getRuntimeContext()); }
        @Override public void processElement(Tuple3<String, Long, Long> r, Context ctx, Collector<Tuple3<String, Long, Long>> out) throws Exception {
            l.element(r, 1, ctx.timestamp(), ctx.timerService(), v -> ctx.output(l.tag, v), out);
        }
        @Override public void onTimer(long t, OnTimerContext ctx, Collector<Tuple3<String, Long, Long>> out) throws Exception {
            l.onTimer(t, ctx.getCurrentKey(), out);
        }
    }

    /** The cokproc block. */
    public static final class CoKProc extends KeyedCoProcessFunction<String, Tuple3<String, Long, Long>, Tuple3<String, Long, Long>, Tuple3<String, Long, Long>> {
        final Logic l;
        CoKProc(long delay, OutputTag<Tuple3<String, Long, Long>> tag) { l = new Logic("buffer", delay, tag); }
        @Override public void open(OpenContext c) { l.open(getRuntimeContext()); }
        @Override public void processElement1(Tuple3<String, Long, Long> r, Context ctx, Collector<Tuple3<String, Long, Long>> out) throws Exception {
            l.element(r, 1, ctx.timestamp(), ctx.timerService(), v -> ctx.output(l.tag, v), out);
        }
        @Override public void processElement2(Tuple3<String, Long, Long> r, Context ctx, Collector<Tuple3<String, Long, Long>> out) throws Exception {
            l.element(r, 7, ctx.timestamp(), ctx.timerService(), v -> ctx.output(l.tag, v), out);
        }
        @Override public void onTimer(long t, OnTimerContext ctx, Collector<Tuple3<String, Long, Long>> out) throws Exception {
            l.onTimer(t, ctx.getCurrentKey(), out);
        }
    }

    /** The bcast block (internal/progdiff/README.md). */
    public static final class BProc extends KeyedBroadcastProcessFunction<String, Tuple3<String, Long, Long>, Tuple3<String, Long, Long>, Tuple3<String, Long, Long>> {
        static final MapStateDescriptor<Long, Long> STATE = new MapStateDescriptor<>("bstate", Types.LONG, Types.LONG);
        final long delay;
        transient MapState<Long, Long> buf;
        BProc(long delay) { this.delay = delay; }
        @Override public void open(OpenContext c) {
            buf = getRuntimeContext().getMapState(new MapStateDescriptor<>("buf", Types.LONG, Types.LONG));
        }
        @Override public void processElement(Tuple3<String, Long, Long> r, ReadOnlyContext ctx, Collector<Tuple3<String, Long, Long>> out) throws Exception {
            long ts = ctx.timestamp();
            Long old = buf.get(ts);
            buf.put(ts, (old == null ? 0 : old) + r.f1);
            ctx.timerService().registerEventTimeTimer(ts + delay);
        }
        @Override public void processBroadcastElement(Tuple3<String, Long, Long> r, Context ctx, Collector<Tuple3<String, Long, Long>> out) throws Exception {
            long ts = ctx.timestamp();
            Long old = ctx.getBroadcastState(STATE).get(ts);
            ctx.getBroadcastState(STATE).put(ts, (old == null ? 0 : old) + r.f1);
        }
        @Override public void onTimer(long t, OnTimerContext ctx, Collector<Tuple3<String, Long, Long>> out) throws Exception {
            long own = 0, b = 0;
            List<Long> done = new ArrayList<>();
            for (Map.Entry<Long, Long> e : buf.entries()) {
                if (e.getKey() <= t) { own += e.getValue(); done.add(e.getKey()); }
            }
            for (Long k : done) buf.remove(k);
            for (Map.Entry<Long, Long> e : ctx.getBroadcastState(STATE).immutableEntries()) {
                if (e.getKey() <= t) b += e.getValue();
            }
            out.collect(Tuple3.of(ctx.getCurrentKey(), own * 1000 + b, 0L));
        }
    }

    /** The sink block: "sinkN key value ts" lines into LINES. */
    public static final class SinkFn extends ProcessFunction<Tuple3<String, Long, Long>, String> {
        final int sink;
        SinkFn(int sink) { this.sink = sink; }
        @Override public void processElement(Tuple3<String, Long, Long> r, Context ctx, Collector<String> out) {
            Long ts = ctx.timestamp();
            LINES.add("sink" + sink + " " + r.f0 + " " + r.f1 + " " + (ts == null ? "none" : ts.toString()));
        }
    }
}
