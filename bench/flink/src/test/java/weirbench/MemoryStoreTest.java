package weirbench;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;

import org.apache.flink.api.common.eventtime.WatermarkStrategy;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.configuration.RestOptions;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.util.CloseableIterator;
import org.junit.jupiter.api.Test;

/**
 * The events checksum is pinned to the values weir/nexmark's TestMemoryChecksum pins, so the two
 * engines hash the same events the same way; and the memory source replays every event.
 */
class MemoryStoreTest {
    static long checksum(long events, long seed, double rate, int generators) {
        NexmarkConfig c = new NexmarkConfig();
        c.events = events;
        c.seed = seed;
        c.rate = rate;
        c.generators = generators;
        MemoryStore.generate(c);
        try {
            return MemoryStore.checksum();
        } finally {
            MemoryStore.clear();
        }
    }

    @Test
    void checksumMatchesGo() {
        assertEquals(0xf4575f4f18c423d3L, checksum(200_000, 0, NexmarkConfig.DEFAULT_RATE, 2));
        assertEquals(0x0c8bd3220601f40aL, checksum(50_000, 7, 1_000_000, 3));
    }

    @Test
    void replaysEveryEvent() throws Exception {
        NexmarkConfig c = new NexmarkConfig();
        c.events = 20_000;
        c.seed = 5;
        c.generators = 2;
        List<String> want = new ArrayList<>();
        for (int i = 0; i < c.generators; i++) {
            Generator g = new Generator(c, i);
            while (g.hasNext()) {
                want.add(EventFormat.line(g.next()));
            }
        }
        MemoryStore.generate(c);
        List<String> got = new ArrayList<>();
        try {
            Configuration conf = new Configuration();
            conf.set(RestOptions.BIND_ADDRESS, "127.0.0.1");
            conf.set(RestOptions.ADDRESS, "127.0.0.1");
            StreamExecutionEnvironment env = StreamExecutionEnvironment.createLocalEnvironment(2, conf);
            try (CloseableIterator<Event> it = env.fromSource(new NexmarkSource(c, true),
                    WatermarkStrategy.<Event>forBoundedOutOfOrderness(Duration.ofSeconds(4)), "Nexmark")
                    .executeAndCollect("memory")) {
                it.forEachRemaining(e -> got.add(EventFormat.line(e)));
            }
        } finally {
            MemoryStore.clear();
        }
        Collections.sort(want);
        Collections.sort(got);
        assertEquals(want, got);
    }
}
