package weirprograms;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

import org.apache.flink.api.common.functions.OpenContext;
import org.apache.flink.api.common.state.ListState;
import org.apache.flink.api.common.state.ListStateDescriptor;
import org.apache.flink.api.common.state.MapState;
import org.apache.flink.api.common.state.MapStateDescriptor;
import org.apache.flink.api.common.state.StateTtlConfig;
import org.apache.flink.api.common.state.ValueState;
import org.apache.flink.api.common.state.ValueStateDescriptor;
import org.apache.flink.api.common.typeinfo.Types;
import org.apache.flink.api.java.tuple.Tuple3;
import org.apache.flink.shaded.jackson2.com.fasterxml.jackson.databind.JsonNode;
import org.apache.flink.streaming.api.TimeDomain;
import org.apache.flink.streaming.api.functions.KeyedProcessFunction;
import org.apache.flink.streaming.api.operators.KeyedProcessOperator;
import org.apache.flink.streaming.api.watermark.Watermark;
import org.apache.flink.streaming.runtime.streamrecord.StreamRecord;
import org.apache.flink.streaming.util.KeyedOneInputStreamOperatorTestHarness;
import org.apache.flink.util.Collector;

/**
 * The harness mode of the whole-program tester (internal/progdiff/harness.go,
 * README.md): one keyed process operator with TTL state and timers, driven by
 * a script of steps through Flink's KeyedOneInputStreamOperatorTestHarness,
 * whose processing time (timers and the TTL clock) the script sets.
 */
final class HarnessMode {
    private HarnessMode() {}

    /** Runs the spec's steps; returns the output as sink 0's lines. */
    static List<String> run(JsonNode spec) throws Exception {
        JsonNode h = spec.get("harness");
        TtlProc fn = new TtlProc(h.path("ttl").asLong(), h.path("update").asText("write").equals("read"), h.path("delay").asLong());
        List<String> lines = new ArrayList<>();
        try (KeyedOneInputStreamOperatorTestHarness<String, Tuple3<String, Long, Long>, Tuple3<String, Long, Long>> th =
                new KeyedOneInputStreamOperatorTestHarness<>(new KeyedProcessOperator<>(fn), new Main.KeyOf(), Types.STRING)) {
            th.open();
            for (JsonNode st : h.path("steps")) {
                long t = st.path("t").asLong();
                switch (st.path("op").asText()) {
                    case "rec":
                        th.processElement(new StreamRecord<>(Tuple3.of(st.path("k").asText(), st.path("v").asLong(), t), t));
                        break;
                    case "wm":
                        th.processWatermark(new Watermark(t));
                        break;
                    case "time":
                        th.setStateTtlProcessingTime(t);
                        th.setProcessingTime(t);
                        break;
                    default:
                        throw new IllegalArgumentException("unknown step " + st);
                }
            }
            for (Object o : th.getOutput()) {
                if (!(o instanceof StreamRecord)) continue;
                @SuppressWarnings("unchecked")
                StreamRecord<Tuple3<String, Long, Long>> r = (StreamRecord<Tuple3<String, Long, Long>>) o;
                lines.add("sink0 " + r.getValue().f0 + " " + r.getValue().f1 + " " + (r.hasTimestamp() ? Long.toString(r.getTimestamp()) : "none"));
            }
        }
        return lines;
    }

    /** The ttl block (internal/progdiff/README.md). */
    static final class TtlProc extends KeyedProcessFunction<String, Tuple3<String, Long, Long>, Tuple3<String, Long, Long>> {
        final long ttl, delay;
        final boolean onRead;
        transient ValueState<Long> val;
        transient ListState<Long> list;
        transient MapState<Long, Long> map;

        TtlProc(long ttl, boolean onRead, long delay) { this.ttl = ttl; this.onRead = onRead; this.delay = delay; }

        @Override public void open(OpenContext c) {
            StateTtlConfig cfg = StateTtlConfig.newBuilder(Duration.ofMillis(ttl))
                    .setUpdateType(onRead ? StateTtlConfig.UpdateType.OnReadAndWrite : StateTtlConfig.UpdateType.OnCreateAndWrite)
                    .setStateVisibility(StateTtlConfig.StateVisibility.NeverReturnExpired).build();
            ValueStateDescriptor<Long> v = new ValueStateDescriptor<>("val", Types.LONG);
            ListStateDescriptor<Long> l = new ListStateDescriptor<>("list", Types.LONG);
            MapStateDescriptor<Long, Long> m = new MapStateDescriptor<>("map", Types.LONG, Types.LONG);
            v.enableTimeToLive(cfg);
            l.enableTimeToLive(cfg);
            m.enableTimeToLive(cfg);
            val = getRuntimeContext().getState(v);
            list = getRuntimeContext().getListState(l);
            map = getRuntimeContext().getMapState(m);
        }

        /** "v=VALUE|l=COUNT,SUM|m=COUNT,SUM" (VALUE "-" when absent). */
        String view() throws Exception {
            Long x = val.value();
            long n = 0, s = 0, mn = 0, ms = 0;
            Iterable<Long> li = list.get();
            if (li != null) for (Long e : li) { n++; s += e; }
            for (Map.Entry<Long, Long> e : map.entries()) { mn++; ms += e.getValue(); }
            return "v=" + (x == null ? "-" : x.toString()) + "|l=" + n + "," + s + "|m=" + mn + "," + ms;
        }

        @Override public void processElement(Tuple3<String, Long, Long> r, Context ctx, Collector<Tuple3<String, Long, Long>> out) throws Exception {
            out.collect(Tuple3.of(r.f0 + "|" + view(), r.f1, r.f2));
            if (Math.floorMod(r.f1, 2) == 0) {
                Long old = val.value();
                val.update((old == null ? 0 : old) + r.f1);
            }
            list.add(r.f1);
            if (Math.floorMod(r.f1, 3) != 0) map.put(Math.floorMod(r.f1, 4L), r.f1);
            ctx.timerService().registerProcessingTimeTimer(ctx.timerService().currentProcessingTime() + delay);
            if (ctx.timestamp() != null) ctx.timerService().registerEventTimeTimer(ctx.timestamp() + delay);
        }

        @Override public void onTimer(long t, OnTimerContext ctx, Collector<Tuple3<String, Long, Long>> out) throws Exception {
            String domain = ctx.timeDomain() == TimeDomain.EVENT_TIME ? "event" : "proc";
            out.collect(Tuple3.of(ctx.getCurrentKey() + "|" + domain + "@" + t + "|" + view(), 0L, 0L));
        }
    }
}
