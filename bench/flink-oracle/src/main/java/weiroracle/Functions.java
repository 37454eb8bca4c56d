package weiroracle;

import org.apache.flink.api.common.functions.AggregateFunction;
import org.apache.flink.api.common.functions.CoGroupFunction;
import org.apache.flink.api.common.functions.JoinFunction;
import org.apache.flink.api.common.functions.MapFunction;
import org.apache.flink.api.common.functions.ReduceFunction;
import org.apache.flink.api.java.functions.KeySelector;
import org.apache.flink.api.java.tuple.Tuple2;
import org.apache.flink.streaming.api.functions.co.CoMapFunction;
import org.apache.flink.streaming.api.functions.co.ProcessJoinFunction;
import org.apache.flink.streaming.api.functions.windowing.WindowFunction;
import org.apache.flink.streaming.api.windowing.windows.GlobalWindow;
import org.apache.flink.streaming.api.windowing.windows.TimeWindow;
import org.apache.flink.streaming.api.windowing.windows.Window;
import org.apache.flink.util.Collector;


/** The user functions a scenario stands for. Records are Tuple2(key, value). */
public final class Functions {
    private Functions() {}

    static String label(Window w) {
        if (w instanceof TimeWindow) {
            TimeWindow t = (TimeWindow) w;
            return t.getStart() + "," + t.getEnd();
        }
        if (w instanceof GlobalWindow) {
            return "global";
        }
        return String.valueOf(w);
    }

    /** keyBy(record -> record.f0). */
    public static final class KeyOf<V> implements KeySelector<Tuple2<String, V>, String> {
        @Override
        public String getKey(Tuple2<String, V> value) {
            return value.f0;
        }
    }

    // ----- watermarks op: identity

    public static final class Identity
            implements MapFunction<Tuple2<String, String>, Tuple2<String, String>> {
        @Override
        public Tuple2<String, String> map(Tuple2<String, String> value) {
            return value;
        }
    }

    public static final class CoIdentity
            implements CoMapFunction<
                    Tuple2<String, String>, Tuple2<String, String>, Tuple2<String, String>> {
        @Override
        public Tuple2<String, String> map1(Tuple2<String, String> value) {
            return value;
        }

        @Override
        public Tuple2<String, String> map2(Tuple2<String, String> value) {
            return value;
        }
    }

    // ----- interval join

    public static final class IntervalJoinFmt
            extends ProcessJoinFunction<
                    Tuple2<String, String>, Tuple2<String, String>, Tuple2<String, String>> {
        @Override
        public void processElement(
                Tuple2<String, String> left,
                Tuple2<String, String> right,
                Context ctx,
                Collector<Tuple2<String, String>> out) {
            out.collect(Tuple2.of(left.f0, "(" + left.f1 + "," + right.f1 + ")"));
        }
    }

    // ----- window: fn=count (AggregateFunction), sum/min/max (ReduceFunction), list (apply)

    public static final class CountAgg
            implements AggregateFunction<Tuple2<String, String>, Long, Long> {
        @Override
        public Long createAccumulator() {
            return 0L;
        }

        @Override
        public Long add(Tuple2<String, String> value, Long acc) {
            return acc + 1;
        }

        @Override
        public Long getResult(Long acc) {
            return acc;
        }

        @Override
        public Long merge(Long a, Long b) {
            return a + b;
        }
    }

    public static final class CountFmt<W extends Window>
            implements WindowFunction<Long, Tuple2<String, String>, String, W> {
        @Override
        public void apply(String key, W window, Iterable<Long> input, Collector<Tuple2<String, String>> out) {
            for (Long v : input) {
                out.collect(Tuple2.of(key, label(window) + ":" + v));
            }
        }
    }

    public static final class LongReduce implements ReduceFunction<Tuple2<String, Long>> {
        private final String fn;

        public LongReduce(String fn) {
            this.fn = fn;
        }

        @Override
        public Tuple2<String, Long> reduce(Tuple2<String, Long> a, Tuple2<String, Long> b) {
            long r;
            switch (fn) {
                case "sum":
                    r = a.f1 + b.f1;
                    break;
                case "min":
                    r = Math.min(a.f1, b.f1);
                    break;
                default:
                    r = Math.max(a.f1, b.f1);
            }
            return Tuple2.of(a.f0, r);
        }
    }

    public static final class ReduceFmt<W extends Window>
            implements WindowFunction<Tuple2<String, Long>, Tuple2<String, String>, String, W> {
        @Override
        public void apply(
                String key, W window, Iterable<Tuple2<String, Long>> input, Collector<Tuple2<String, String>> out) {
            for (Tuple2<String, Long> v : input) {
                out.collect(Tuple2.of(key, label(window) + ":" + v.f1));
            }
        }
    }

    public static final class ListFmt<W extends Window>
            implements WindowFunction<Tuple2<String, String>, Tuple2<String, String>, String, W> {
        @Override
        public void apply(
                String key, W window, Iterable<Tuple2<String, String>> input, Collector<Tuple2<String, String>> out) {
            StringBuilder sb = new StringBuilder();
            for (Tuple2<String, String> v : input) {
                if (sb.length() > 0) sb.append(',');
                sb.append(v.f1);
            }
            out.collect(Tuple2.of(key, label(window) + ":[" + sb + "]"));
        }
    }

    // ----- window join (through the real JoinedStreams / CoGroupWindowFunction path)

    public static final class JoinFmt
            implements JoinFunction<Tuple2<String, String>, Tuple2<String, String>, Tuple2<String, String>> {
        @Override
        public Tuple2<String, String> join(Tuple2<String, String> l, Tuple2<String, String> r) {
            return Tuple2.of(l.f0, "(" + l.f1 + "," + r.f1 + ")");
        }
    }

    /** Only used to let CoGroupedStreams build its taggers, union type and key selector. */
    public static final class NoCoGroup
            implements CoGroupFunction<Tuple2<String, String>, Tuple2<String, String>, Tuple2<String, String>> {
        @Override
        public void coGroup(
                Iterable<Tuple2<String, String>> first,
                Iterable<Tuple2<String, String>> second,
                Collector<Tuple2<String, String>> out) {
            throw new UnsupportedOperationException();
        }
    }
}
