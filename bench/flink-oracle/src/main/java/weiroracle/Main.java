package weiroracle;

import org.apache.flink.api.common.functions.MapFunction;
import org.apache.flink.api.common.typeinfo.TypeInformation;
import org.apache.flink.api.common.typeinfo.Types;
import org.apache.flink.api.dag.Transformation;
import org.apache.flink.api.java.functions.KeySelector;
import org.apache.flink.api.java.tuple.Tuple2;
import org.apache.flink.streaming.api.datastream.DataStream;
import org.apache.flink.streaming.api.datastream.KeyedStream;
import org.apache.flink.streaming.api.datastream.SingleOutputStreamOperator;
import org.apache.flink.streaming.api.datastream.WindowedStream;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.streaming.api.operators.SimpleOperatorFactory;
import org.apache.flink.streaming.api.operators.StreamMap;
import org.apache.flink.streaming.api.operators.StreamOperatorFactory;
import org.apache.flink.streaming.api.watermark.Watermark;
import org.apache.flink.streaming.api.windowing.assigners.EventTimeSessionWindows;
import org.apache.flink.streaming.api.windowing.assigners.GlobalWindows;
import org.apache.flink.streaming.api.windowing.assigners.ProcessingTimeSessionWindows;
import org.apache.flink.streaming.api.windowing.assigners.SlidingEventTimeWindows;
import org.apache.flink.streaming.api.windowing.assigners.SlidingProcessingTimeWindows;
import org.apache.flink.streaming.api.windowing.assigners.TumblingEventTimeWindows;
import org.apache.flink.streaming.api.windowing.assigners.TumblingProcessingTimeWindows;
import org.apache.flink.streaming.api.windowing.assigners.WindowAssigner;
import org.apache.flink.streaming.api.windowing.triggers.ContinuousEventTimeTrigger;
import org.apache.flink.streaming.api.windowing.triggers.ContinuousProcessingTimeTrigger;
import org.apache.flink.streaming.api.windowing.triggers.CountTrigger;
import org.apache.flink.streaming.api.windowing.triggers.PurgingTrigger;
import org.apache.flink.streaming.api.windowing.triggers.Trigger;
import org.apache.flink.streaming.api.transformations.OneInputTransformation;
import org.apache.flink.streaming.api.transformations.PartitionTransformation;
import org.apache.flink.streaming.api.transformations.TwoInputTransformation;
import org.apache.flink.streaming.api.transformations.UnionTransformation;
import org.apache.flink.streaming.runtime.streamrecord.StreamRecord;
import org.apache.flink.streaming.runtime.tasks.OneInputStreamTask;
import org.apache.flink.streaming.runtime.tasks.StreamTaskMailboxTestHarness;
import org.apache.flink.streaming.runtime.tasks.StreamTaskMailboxTestHarnessBuilder;
import org.apache.flink.streaming.runtime.tasks.TestProcessingTimeService;
import org.apache.flink.streaming.runtime.tasks.TwoInputStreamTask;
import org.apache.flink.streaming.runtime.watermarkstatus.WatermarkStatus;
import org.apache.flink.util.OutputTag;

import java.io.IOException;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Queue;
import java.util.Set;

/**
 * Runs scenario files (.scn) through Flink's real operators inside a real StreamTask (the
 * mailbox test harness: network input, StatusWatermarkValve per input, two-input combiner,
 * RecordWriterOutput), and prints each scenario back with what Flink emitted under each input
 * line, like `weir scenario FILE`.
 *
 * <p>Usage (scripts/flink-oracle.sh runs it): Main [--out DIR] [--files LIST] FILE... LIST is a
 * file of scenario file names, one a line. With --out, one printout per scenario at
 * DIR/parentdir/name; without, the printouts go to stdout.
 */
public class Main {

    // ------------------------------------------------------------------ side-output sink

    static Queue<Object> currentOutput;

    static final class SideLine {
        final String text;

        SideLine(String text) {
            this.text = text;
        }
    }

    static final int MAX_OUTPUTS_PER_LINE = Integer.getInteger("oracle.maxOutputsPerLine", 100000);
    static int outputsThisLine;

    /** Guards against Flink's endless timer loops that emit on every firing. */
    static void countOutput() {
        if (++outputsThisLine > MAX_OUTPUTS_PER_LINE) {
            throw new IllegalStateException(
                    "more than " + MAX_OUTPUTS_PER_LINE + " outputs for one input line (Flink would not return: "
                            + "the timer loop keeps registering due timers)");
        }
    }

    static <X> void side(String tag, StreamRecord<X> record) {
        Object v = record.getValue();
        String line;
        if (v instanceof Tuple2) {
            Tuple2<?, ?> t = (Tuple2<?, ?>) v;
            line = "side " + tag + " " + t.f0 + " " + record.getTimestamp() + " " + t.f1;
        } else {
            line = "side " + tag + " ? " + record.getTimestamp() + " " + v;
        }
        currentOutput.add(new SideLine(line));
    }

    // ------------------------------------------------------------------ scenario files

    static final class ParseError extends Exception {
        final int lineno;

        ParseError(int lineno, String msg) {
            super(msg);
            this.lineno = lineno;
        }
    }

    static final class InputLine {
        int lineno;
        String text;
        String kind; // rec wm idle active proc end
        int inp;
        int ch;
        String key;
        long ts;
        String value;
        List<String> expected = new ArrayList<>();
        List<String> rawAfter = new ArrayList<>();
    }

    static final class Scenario {
        List<String> header = new ArrayList<>();
        int opLineno;
        String op;
        Map<String, String> params = new LinkedHashMap<>();
        Set<String> flags = new HashSet<>();
        List<InputLine> inputs = new ArrayList<>();
    }

    static String stripComment(String line) {
        int i = line.indexOf('#');
        return i < 0 ? line : line.substring(0, i);
    }

    static long parseLong(String tok, int lineno, String what) throws ParseError {
        try {
            return Long.parseLong(tok);
        } catch (NumberFormatException e) {
            throw new ParseError(lineno, what + " is not an int64: '" + tok + "'");
        }
    }

    static Scenario parse(String text) throws ParseError {
        Scenario sc = new Scenario();
        String[] lines = text.split("\n", -1);
        int n = lines.length;
        if (n > 0 && lines[n - 1].isEmpty()) n--;
        InputLine current = null;
        for (int idx = 0; idx < n; idx++) {
            int lineno = idx + 1;
            String line = lines[idx];
            if (line.endsWith("\r")) line = line.substring(0, line.length() - 1);
            String body = stripComment(line).trim();
            if (sc.op == null) {
                sc.header.add(line);
                if (body.isEmpty()) continue;
                String[] toks = body.split("\\s+");
                if (!toks[0].equals("op") || toks.length < 2) {
                    throw new ParseError(lineno, "the first non-comment line must be `op <operator> ...`");
                }
                sc.opLineno = lineno;
                sc.op = toks[1];
                for (int i = 2; i < toks.length; i++) {
                    int eq = toks[i].indexOf('=');
                    if (eq >= 0) {
                        sc.params.put(toks[i].substring(0, eq), toks[i].substring(eq + 1));
                    } else {
                        sc.flags.add(toks[i]);
                    }
                }
                continue;
            }
            if (body.isEmpty()) {
                if (current != null) current.rawAfter.add(line);
                else sc.header.add(line);
                continue;
            }
            if (body.startsWith(">")) {
                if (current == null) throw new ParseError(lineno, "an expected output line before any input line");
                current.expected.add(String.join(" ", body.substring(1).trim().split("\\s+")));
                continue;
            }
            String[] toks = body.split("\\s+");
            InputLine il = new InputLine();
            il.lineno = lineno;
            il.text = line;
            if (toks[0].equals("proc")) {
                if (toks.length != 2) throw new ParseError(lineno, "usage: proc <t>");
                il.kind = "proc";
                il.ts = parseLong(toks[1], lineno, "time");
            } else if (toks[0].equals("end")) {
                il.kind = "end";
            } else {
                String[] parts = toks[0].split("\\.");
                try {
                    il.inp = Integer.parseInt(parts[0]);
                    il.ch = parts.length > 1 ? Integer.parseInt(parts[1]) : 0;
                } catch (NumberFormatException e) {
                    throw new ParseError(lineno, "bad input line " + body);
                }
                if (toks.length < 2) throw new ParseError(lineno, "bad input line " + body);
                il.kind = toks[1];
                switch (il.kind) {
                    case "rec":
                        if (toks.length != 5) throw new ParseError(lineno, "usage: <in> rec <key> <ts> <value>");
                        il.key = toks[2];
                        il.ts = parseLong(toks[3], lineno, "timestamp");
                        il.value = toks[4];
                        break;
                    case "wm":
                        if (toks.length != 3) throw new ParseError(lineno, "usage: <in> wm <ts>");
                        il.ts = parseLong(toks[2], lineno, "watermark");
                        break;
                    case "idle":
                    case "active":
                        break;
                    default:
                        throw new ParseError(lineno, "unknown input kind " + il.kind);
                }
            }
            current = il;
            sc.inputs.add(il);
        }
        if (sc.op == null) throw new ParseError(n, "no `op` line");
        return sc;
    }

    // ------------------------------------------------------------------ building the operator

    static final TypeInformation<Tuple2<String, String>> SS = Types.TUPLE(Types.STRING, Types.STRING);
    static final TypeInformation<Tuple2<String, Long>> SL = Types.TUPLE(Types.STRING, Types.LONG);

    static long req(Scenario sc, String name, Long dflt) throws ParseError {
        String v = sc.params.get(name);
        if (v == null) {
            if (dflt == null) throw new ParseError(sc.opLineno, "parameter " + name + "= is required");
            return dflt;
        }
        return parseLong(v, sc.opLineno, name);
    }

    /** A built task: how to route input lines into it. */
    static final class Built {
        String kind; // one | two | union
        int channels;
        int numInputs;
        boolean longValues;
        MapFunction<Object, Object>[] taggers; // union only
        StreamTaskMailboxTestHarness<Tuple2<String, String>> harness;
        TestProcessingTimeService tps; // one-input tasks only
        long now;
    }

    @SuppressWarnings({"unchecked", "rawtypes"})
    static Built build(Scenario sc) throws Exception {
        int channels = (int) req(sc, "channels", 1L);
        if (channels < 1) throw new ParseError(sc.opLineno, "channels must be >= 1");
        StreamExecutionEnvironment env = StreamExecutionEnvironment.getExecutionEnvironment();
        DataStream<Tuple2<String, String>> src1 = env.fromData(SS, Tuple2.of("k", "v"));
        DataStream<Tuple2<String, String>> src2 = env.fromData(SS, Tuple2.of("k", "v"));
        Built b = new Built();
        b.channels = channels;
        String op = sc.op;

        if (op.equals("watermarks")) {
            int inputs = (int) req(sc, "inputs", 1L);
            if (inputs == 1) {
                OneInputTransformation t =
                        (OneInputTransformation) src1.map(new Functions.Identity(), SS).getTransformation();
                b.kind = "one";
                b.numInputs = 1;
                b.tps = new TestProcessingTimeService();
                b.tps.setCurrentTime(0);
                final TestProcessingTimeService tps = b.tps;
                b.harness =
                        new StreamTaskMailboxTestHarnessBuilder<>(
                                        env1 -> new OneInputStreamTask<>(env1, tps), SS)
                                .addInput(SS, channels)
                                .setupOutputForSingletonOperatorChain(new CaptureFactory(t.getOperatorFactory()))
                                .build();
            } else if (inputs == 2) {
                TwoInputTransformation t =
                        (TwoInputTransformation)
                                src1.connect(src2).map(new Functions.CoIdentity(), SS).getTransformation();
                b.kind = "two";
                b.numInputs = 2;
                b.harness =
                        new StreamTaskMailboxTestHarnessBuilder<>(TwoInputStreamTask::new, SS)
                                .addInput(SS, channels)
                                .addInput(SS, channels)
                                .setupOutputForSingletonOperatorChain(new CaptureFactory(t.getOperatorFactory()))
                                .build();
            } else {
                throw new ParseError(sc.opLineno, "inputs must be 1 or 2");
            }
            return b;
        }

        if (op.equals("interval-join")) {
            long lower = req(sc, "lower", null);
            long upper = req(sc, "upper", null);
            KeyedStream.IntervalJoined ij =
                    src1.keyBy(new Functions.KeyOf<String>(), Types.STRING)
                            .intervalJoin(src2.keyBy(new Functions.KeyOf<String>(), Types.STRING))
                            .between(Duration.ofMillis(lower), Duration.ofMillis(upper));
            if (sc.flags.contains("lower-exclusive")) ij = ij.lowerBoundExclusive();
            if (sc.flags.contains("upper-exclusive")) ij = ij.upperBoundExclusive();
            ij = ij.sideOutputLeftLateData(new OutputTag<>("late-left", SS))
                    .sideOutputRightLateData(new OutputTag<>("late-right", SS));
            TwoInputTransformation t =
                    (TwoInputTransformation) ij.process(new Functions.IntervalJoinFmt(), SS).getTransformation();
            b.kind = "two";
            b.numInputs = 2;
            b.harness =
                    new StreamTaskMailboxTestHarnessBuilder<>(TwoInputStreamTask::new, SS)
                            .addInput(SS, channels, t.getStateKeySelector1())
                            .addInput(SS, channels, t.getStateKeySelector2())
                            .setKeyType(t.getStateKeyType())
                            .setupOutputForSingletonOperatorChain(new CaptureFactory(t.getOperatorFactory()))
                            .build();
            return b;
        }

        // window, window-join, cogroup
        String time = sc.params.getOrDefault("time", "event");
        if (!time.equals("event") && !time.equals("processing")) {
            throw new ParseError(sc.opLineno, "time must be event or processing");
        }
        boolean event = time.equals("event");
        String an = sc.params.get("assigner");
        if (an == null) throw new ParseError(sc.opLineno, "parameter assigner= is required");
        WindowAssigner assigner;
        switch (an) {
            case "tumbling": {
                Duration size = Duration.ofMillis(req(sc, "size", null));
                Duration offset = Duration.ofMillis(req(sc, "offset", 0L));
                assigner = event ? TumblingEventTimeWindows.of(size, offset)
                        : TumblingProcessingTimeWindows.of(size, offset);
                break;
            }
            case "sliding": {
                Duration size = Duration.ofMillis(req(sc, "size", null));
                Duration slide = Duration.ofMillis(req(sc, "slide", null));
                Duration offset = Duration.ofMillis(req(sc, "offset", 0L));
                assigner = event ? SlidingEventTimeWindows.of(size, slide, offset)
                        : SlidingProcessingTimeWindows.of(size, slide, offset);
                break;
            }
            case "session": {
                Duration gap = Duration.ofMillis(req(sc, "gap", null));
                assigner = event ? EventTimeSessionWindows.withGap(gap) : ProcessingTimeSessionWindows.withGap(gap);
                break;
            }
            case "global":
                assigner = GlobalWindows.create();
                break;
            default:
                throw new ParseError(sc.opLineno, "unknown assigner " + an);
        }
        String trig = sc.params.getOrDefault("trigger", "default");
        Trigger trigger;
        switch (trig) {
            case "default":
                trigger = null;
                break;
            case "count":
                trigger = CountTrigger.of(req(sc, "n", null));
                break;
            case "continuous": {
                Duration interval = Duration.ofMillis(req(sc, "interval", null));
                trigger = event ? ContinuousEventTimeTrigger.of(interval) : ContinuousProcessingTimeTrigger.of(interval);
                break;
            }
            default:
                throw new ParseError(sc.opLineno, "unknown trigger " + trig);
        }
        if (sc.flags.contains("purging")) {
            trigger = PurgingTrigger.of(trigger != null ? trigger : assigner.getDefaultTrigger());
        }
        Duration lateness = Duration.ofMillis(req(sc, "lateness", 0L));

        OneInputTransformation wt;
        if (op.equals("window")) {
            String fn = sc.params.get("fn");
            if (fn == null || !(fn.equals("count") || fn.equals("sum") || fn.equals("min") || fn.equals("max") || fn.equals("list"))) {
                throw new ParseError(sc.opLineno, "fn= must be count, sum, min, max or list");
            }
            boolean longValues = fn.equals("sum") || fn.equals("min") || fn.equals("max");
            b.longValues = longValues;
            SingleOutputStreamOperator<Tuple2<String, String>> res;
            if (longValues) {
                DataStream<Tuple2<String, Long>> s = env.fromData(SL, Tuple2.of("k", 0L));
                WindowedStream ws = s.keyBy(new Functions.KeyOf<Long>(), Types.STRING).window(assigner);
                if (trigger != null) ws.trigger(trigger);
                ws.allowedLateness(lateness);
                ws.sideOutputLateData(new OutputTag<>("late", SL));
                res = ws.reduce(new Functions.LongReduce(fn), new Functions.ReduceFmt(), SS);
            } else {
                WindowedStream ws = src1.keyBy(new Functions.KeyOf<String>(), Types.STRING).window(assigner);
                if (trigger != null) ws.trigger(trigger);
                ws.allowedLateness(lateness);
                ws.sideOutputLateData(new OutputTag<>("late", SS));
                if (fn.equals("count")) {
                    res = ws.aggregate(new Functions.CountAgg(), new Functions.CountFmt(), Types.LONG, SS);
                } else {
                    res = ws.apply(new Functions.ListFmt(), SS);
                }
            }
            wt = (OneInputTransformation) res.getTransformation();
            b.numInputs = 1;
            b.kind = "one";
        } else if (op.equals("window-join") || op.equals("cogroup")) {
            DataStream<Tuple2<String, String>> res;
            if (op.equals("window-join")) {
                // the real JoinedStreams -> CoGroupedStreams path
                org.apache.flink.streaming.api.datastream.JoinedStreams.WithWindow ww =
                        src1.join(src2)
                                .where(new Functions.KeyOf<String>(), Types.STRING)
                                .equalTo(new Functions.KeyOf<String>(), Types.STRING)
                                .window(assigner);
                if (trigger != null) ww = ww.trigger(trigger);
                ww = ww.allowedLateness(lateness);
                res = ww.apply(new Functions.JoinFmt(), SS);
                wt = (OneInputTransformation) res.getTransformation();
            } else {
                // let CoGroupedStreams build the taggers, union type and key selector ...
                org.apache.flink.streaming.api.datastream.CoGroupedStreams.WithWindow ww =
                        src1.coGroup(src2)
                                .where(new Functions.KeyOf<String>(), Types.STRING)
                                .equalTo(new Functions.KeyOf<String>(), Types.STRING)
                                .window(assigner);
                if (trigger != null) ww = ww.trigger(trigger);
                ww = ww.allowedLateness(lateness);
                res = ww.apply(new Functions.NoCoGroup(), SS);
                OneInputTransformation probe = (OneInputTransformation) res.getTransformation();
                Object[] parts = unionParts(probe);
                OneInputTransformation tag1 = (OneInputTransformation) parts[0];
                OneInputTransformation tag2 = (OneInputTransformation) parts[1];
                TypeInformation unionType = tag1.getOutputType();
                // ... then the same steps as CoGroupedStreams.WithWindow.apply, with a window
                // function that prints the window (CoGroupWindowFunction is private)
                DataStream u1 = src1.map((MapFunction) taggerOf(tag1)).returns(unionType);
                DataStream u2 = src2.map((MapFunction) taggerOf(tag2)).returns(unionType);
                DataStream union = u1.union(u2);
                WindowedStream ws =
                        new KeyedStream(union, probe.getStateKeySelector(), probe.getStateKeyType()).window(assigner);
                if (trigger != null) ws.trigger(trigger);
                ws.allowedLateness(lateness);
                res = ws.apply(new CoGroupWindowFmt(), SS);
                wt = (OneInputTransformation) res.getTransformation();
            }
            Object[] parts = unionParts(wt);
            b.taggers = new MapFunction[] {taggerOf((OneInputTransformation) parts[0]), taggerOf((OneInputTransformation) parts[1])};
            b.numInputs = 2;
            b.kind = "union";
        } else {
            throw new ParseError(sc.opLineno, "unknown operator " + op);
        }
        b.tps = new TestProcessingTimeService();
        b.tps.setCurrentTime(0);
        final TestProcessingTimeService tps = b.tps;
        int gateChannels = b.kind.equals("union") ? 2 * channels : channels;
        b.harness =
                new StreamTaskMailboxTestHarnessBuilder<>(env1 -> new OneInputStreamTask<>(env1, tps), SS)
                        .addInput(wt.getInputType(), gateChannels, wt.getStateKeySelector())
                        .setKeyType(wt.getStateKeyType())
                        .setupOutputForSingletonOperatorChain(new CaptureFactory(wt.getOperatorFactory()))
                        .build();
        return b;
    }

    /** window transformation <- keyBy partition <- union <- (tagger1, tagger2). */
    static Object[] unionParts(OneInputTransformation<?, ?> window) {
        Transformation<?> in = window.getInputs().get(0);
        if (!(in instanceof PartitionTransformation)) throw new IllegalStateException("expected keyBy, got " + in);
        Transformation<?> u = in.getInputs().get(0);
        if (!(u instanceof UnionTransformation)) throw new IllegalStateException("expected union, got " + u);
        List<Transformation<?>> ins = u.getInputs();
        return new Object[] {ins.get(0), ins.get(1)};
    }

    @SuppressWarnings("unchecked")
    static MapFunction<Object, Object> taggerOf(OneInputTransformation<?, ?> t) {
        StreamOperatorFactory<?> f = t.getOperatorFactory();
        StreamMap<Object, Object> m = (StreamMap<Object, Object>) ((SimpleOperatorFactory<?>) f).getOperator();
        return m.getUserFunction();
    }

    // ------------------------------------------------------------------ running

    static final int MAX_TIMER_ROUNDS = 100000;

    @SuppressWarnings({"unchecked", "rawtypes"})
    static void step(Built b, InputLine il) throws Exception {
        StreamTaskMailboxTestHarness<Tuple2<String, String>> h = b.harness;
        switch (il.kind) {
            case "rec": {
                Object elem;
                if (b.longValues) {
                    long v;
                    try {
                        v = Long.parseLong(il.value);
                    } catch (NumberFormatException e) {
                        throw new RuntimeException("NumberFormatException: For input string: \"" + il.value + "\"");
                    }
                    elem = Tuple2.of(il.key, v);
                } else {
                    elem = Tuple2.of(il.key, il.value);
                }
                if (b.kind.equals("union")) {
                    elem = b.taggers[il.inp - 1].map(elem); // Input1Tagger / Input2Tagger
                }
                h.processElement(new StreamRecord<>(elem, il.ts), gate(b, il.inp), channel(b, il.inp, il.ch));
                break;
            }
            case "wm":
                h.processElement(new Watermark(il.ts), gate(b, il.inp), channel(b, il.inp, il.ch));
                break;
            case "idle":
                h.processElement(WatermarkStatus.IDLE, gate(b, il.inp), channel(b, il.inp, il.ch));
                break;
            case "active":
                h.processElement(WatermarkStatus.ACTIVE, gate(b, il.inp), channel(b, il.inp, il.ch));
                break;
            case "proc":
                b.now = il.ts;
                if (b.tps != null) {
                    b.tps.setCurrentTime(il.ts);
                }
                // two-input tasks: no processing-time timers in these operators
                break;
            case "end":
                for (int inp = 1; inp <= b.numInputs; inp++) {
                    for (int ch = 0; ch < b.channels; ch++) {
                        h.processElement(new Watermark(Long.MAX_VALUE), gate(b, inp), channel(b, inp, ch));
                        h.processAll();
                    }
                }
                break;
            default:
                throw new IllegalStateException(il.kind);
        }
        h.processAll();
        if (il.kind.equals("proc")) {
            fireDue(b);
        }
    }

    /**
     * `proc t` fires every processing-time timer with timestamp <= t, as the test harness's
     * TestProcessingTimeService.setCurrentTime does. With the mailbox, InternalTimerServiceImpl's
     * callback runs as a mail after setCurrentTime returned, fires the timers up to the
     * physical timer's timestamp and only then schedules the next physical timer, so call
     * setCurrentTime again while a due one is queued. Timers that a record registers at or
     * before the current time wait for the next `proc` line (the clock does not move between
     * them; SystemProcessingTimeService would fire a timer at now one ms later).
     */
    static void fireDue(Built b) throws Exception {
        if (b.tps == null) return;
        for (int round = 0; round < MAX_TIMER_ROUNDS; round++) {
            boolean due = false;
            for (Long ts : b.tps.getActiveTimerTimestamps()) {
                if (ts <= b.now) {
                    due = true;
                    break;
                }
            }
            if (!due) return;
            b.tps.setCurrentTime(b.now);
            b.harness.processAll();
        }
        throw new RuntimeException("processing-time timers keep coming due");
    }

    static int gate(Built b, int inp) {
        return b.kind.equals("two") ? inp - 1 : 0;
    }

    static int channel(Built b, int inp, int ch) {
        return b.kind.equals("union") ? (inp - 1) * b.channels + ch : ch;
    }

    static List<String> drain(Built b) {
        List<String> out = new ArrayList<>();
        Queue<Object> q = b.harness.getOutput();
        Object o;
        while ((o = q.poll()) != null) {
            if (o instanceof StreamRecord) {
                StreamRecord<?> r = (StreamRecord<?>) o;
                Tuple2<?, ?> t = (Tuple2<?, ?>) r.getValue();
                out.add("out " + t.f0 + " " + (r.hasTimestamp() ? Long.toString(r.getTimestamp()) : "none") + " " + t.f1);
            } else if (o instanceof Watermark) {
                out.add("wm " + ((Watermark) o).getTimestamp());
            } else if (o instanceof WatermarkStatus) {
                out.add("status " + (((WatermarkStatus) o).isIdle() ? "idle" : "active"));
            } else if (o instanceof SideLine) {
                out.add(((SideLine) o).text);
            } else {
                out.add("# other: " + o);
            }
        }
        return out;
    }

    static final long LINE_TIMEOUT_MS = Long.getLong("oracle.lineTimeoutMs", 20000L);
    static final long BUILD_TIMEOUT_MS = Math.max(LINE_TIMEOUT_MS, 300000L);

    /** What the worker thread produced for one scenario. */
    static final class Progress {
        volatile int lineIndex = -1; // -1: building
        volatile long lineStart = System.currentTimeMillis();
        volatile String buildError;
        volatile boolean done;
        final Map<Integer, List<String>> outputs = new HashMap<>();
        final Map<Integer, String> errors = new HashMap<>();
        volatile Built built;
    }

    /** Runs one scenario; returns the printout. */
    @SuppressWarnings("deprecation")
    static String runFile(Path path) {
        StringBuilder sb = new StringBuilder();
        Scenario sc;
        try {
            sc = parse(new String(Files.readAllBytes(path), StandardCharsets.UTF_8));
        } catch (ParseError e) {
            return "# error: " + path + ": line " + e.lineno + ": " + e.getMessage() + "\n";
        } catch (IOException e) {
            return "# error: " + path + ": " + e + "\n";
        }
        final Progress pr = new Progress();
        // The StreamTask's mailbox belongs to the thread that creates the task, so the whole
        // scenario runs on one worker thread; this thread only watches for a line that never
        // returns (Flink's timer loop can spin forever, e.g. continuous triggers at MAX_WATERMARK).
        Thread worker = new Thread(() -> work(sc, pr), "scenario");
        worker.setDaemon(true);
        worker.start();
        boolean timedOut = false;
        while (worker.isAlive()) {
            try {
                worker.join(100);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                break;
            }
            // Building the first operator loads Flink's classes, which can take a while on a busy
            // machine; stopping the thread then would break those classes for every later file.
            long limit = pr.lineIndex < 0 ? BUILD_TIMEOUT_MS : LINE_TIMEOUT_MS;
            if (worker.isAlive() && System.currentTimeMillis() - pr.lineStart > limit) {
                timedOut = true;
                try {
                    worker.stop();
                } catch (Throwable ignored) {
                    // not supported: leave the daemon thread spinning
                }
                try {
                    worker.join(2000);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
                break;
            }
        }
        if (pr.buildError != null) {
            return "# error: " + path + ": " + pr.buildError + "\n";
        }
        int timedOutLine = timedOut ? pr.lineIndex : -1;
        if (timedOut && timedOutLine < 0) {
            return "# error: " + path + ": building the operator did not return\n";
        }
        for (String l : sc.header) sb.append(l).append('\n');
        boolean failed = false;
        for (int i = 0; i < sc.inputs.size(); i++) {
            InputLine il = sc.inputs.get(i);
            sb.append(il.text).append('\n');
            if (!failed) {
                List<String> outs;
                String err;
                synchronized (pr) {
                    outs = pr.outputs.get(i);
                    err = pr.errors.get(i);
                }
                if (outs != null) for (String o : outs) sb.append("> ").append(o).append('\n');
                if (i == timedOutLine) {
                    err = "did not return within " + LINE_TIMEOUT_MS + " ms (Flink keeps firing timers)";
                }
                if (err != null) {
                    sb.append("# error: ").append(err).append('\n');
                    failed = true;
                } else if (outs == null) {
                    sb.append("# error: no result (worker died)\n");
                    failed = true;
                }
            }
            for (String extra : il.rawAfter) sb.append(extra).append('\n');
        }
        return sb.toString();
    }

    static void work(Scenario sc, Progress pr) {
        Built b;
        try {
            b = build(sc);
            for (InputLine il : sc.inputs) {
                if (il.kind.equals("proc") || il.kind.equals("end")) continue;
                if (il.inp < 1 || il.inp > b.numInputs) {
                    throw new ParseError(il.lineno, "input " + il.inp + " does not exist for " + sc.op);
                }
                if (il.ch < 0 || il.ch >= b.channels) {
                    throw new ParseError(il.lineno, "channel " + il.ch + " does not exist (channels=" + b.channels + ")");
                }
            }
        } catch (ParseError e) {
            pr.buildError = "line " + e.lineno + ": " + e.getMessage();
            return;
        } catch (Throwable e) {
            if (Boolean.getBoolean("oracle.debug")) e.printStackTrace();
            pr.buildError = "line " + sc.opLineno + ": " + describe(e);
            return;
        }
        pr.built = b;
        currentOutput = b.harness.getOutput();
        for (int i = 0; i < sc.inputs.size(); i++) {
            InputLine il = sc.inputs.get(i);
            pr.lineStart = System.currentTimeMillis();
            pr.lineIndex = i;
            outputsThisLine = 0;
            String err = null;
            try {
                step(b, il);
            } catch (Throwable e) {
                if (Boolean.getBoolean("oracle.debug")) e.printStackTrace();
                err = describe(e);
            }
            List<String> outs = drain(b);
            if (outs.size() > MAX_OUTPUTS_PER_LINE) outs = new ArrayList<>(outs.subList(0, MAX_OUTPUTS_PER_LINE));
            synchronized (pr) {
                pr.outputs.put(i, outs);
                if (err != null) pr.errors.put(i, err);
            }
            if (err != null) return;
        }
        pr.lineIndex = sc.inputs.size();
        try {
            b.harness.close();
        } catch (Throwable e) {
            // ignore: what the task does after the last line is not part of the scenario
        }
        pr.done = true;
    }

    static String describe(Throwable e) {
        Throwable root = e;
        while (root.getCause() != null && root.getCause() != root) root = root.getCause();
        String s = root.getClass().getSimpleName() + ": " + root.getMessage();
        return s.replace('\n', ' ');
    }

    public static void main(String[] args) throws Exception {
        Path outDir = null;
        List<String> files = new ArrayList<>();
        for (int i = 0; i < args.length; i++) {
            if (args[i].equals("--out")) {
                outDir = Paths.get(args[++i]);
            } else if (args[i].equals("--files")) {
                for (String l : Files.readAllLines(Paths.get(args[++i]), StandardCharsets.UTF_8)) {
                    if (!l.isBlank()) files.add(l.trim());
                }
            } else {
                files.add(args[i]);
            }
        }
        int n = 0;
        long t0 = System.currentTimeMillis();
        for (String f : files) {
            Path p = Paths.get(f);
            String text;
            try {
                text = runFile(p);
            } catch (Throwable e) {
                StringWriter sw = new StringWriter();
                e.printStackTrace(new PrintWriter(sw));
                text = "# error: " + p + ": " + describe(e) + "\n";
                System.err.println(sw);
            }
            if (outDir == null) {
                System.out.print(text);
            } else {
                Path parent = p.toAbsolutePath().getParent();
                Path dir = outDir.resolve(parent.getFileName().toString());
                Files.createDirectories(dir);
                Files.write(dir.resolve(p.getFileName().toString()), text.getBytes(StandardCharsets.UTF_8));
            }
            n++;
            if (outDir != null && n % 50 == 0) {
                System.err.println("oracle: " + n + "/" + files.size() + " files, " + (System.currentTimeMillis() - t0) / 1000 + " s");
            }
        }
        if (outDir != null) {
            System.err.println("oracle: " + n + " files in " + (System.currentTimeMillis() - t0) / 1000 + " s");
        }
        System.exit(0);
    }
}
