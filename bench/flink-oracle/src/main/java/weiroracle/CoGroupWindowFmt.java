package weiroracle;

import org.apache.flink.api.java.tuple.Tuple2;
import org.apache.flink.streaming.api.functions.windowing.WindowFunction;
import org.apache.flink.streaming.api.windowing.windows.Window;
import org.apache.flink.util.Collector;
import org.apache.flink.util.TaggedUnion;

import java.util.ArrayList;
import java.util.List;

/**
 * CoGroupedStreams.CoGroupWindowFunction (split the TaggedUnions by tag, in order) followed
 * by a coGroup function that prints the window: the public CoGroupFunction does not see the
 * window, so this stands in for the private CoGroupWindowFunction with the same loop.
 */
public final class CoGroupWindowFmt<W extends Window>
        implements WindowFunction<
                TaggedUnion<Tuple2<String, String>, Tuple2<String, String>>,
                Tuple2<String, String>,
                String,
                W> {
    @Override
    public void apply(
            String key,
            W window,
            Iterable<TaggedUnion<Tuple2<String, String>, Tuple2<String, String>>> values,
            Collector<Tuple2<String, String>> out) {
        List<Tuple2<String, String>> oneValues = new ArrayList<>();
        List<Tuple2<String, String>> twoValues = new ArrayList<>();
        for (TaggedUnion<Tuple2<String, String>, Tuple2<String, String>> val : values) {
            if (val.isOne()) {
                oneValues.add(val.getOne());
            } else {
                twoValues.add(val.getTwo());
            }
        }
        out.collect(
                Tuple2.of(key, Functions.label(window) + ":[" + join(oneValues) + "]:[" + join(twoValues) + "]"));
    }

    private static String join(List<Tuple2<String, String>> vs) {
        StringBuilder sb = new StringBuilder();
        for (Tuple2<String, String> v : vs) {
            if (sb.length() > 0) sb.append(',');
            sb.append(v.f1);
        }
        return sb.toString();
    }
}
