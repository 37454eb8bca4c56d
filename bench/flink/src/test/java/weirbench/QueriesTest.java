package weirbench;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.function.Function;

import org.apache.flink.api.common.eventtime.WatermarkStrategy;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.configuration.PipelineOptions;
import org.apache.flink.configuration.RestOptions;
import org.apache.flink.streaming.api.datastream.DataStream;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.util.CloseableIterator;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * Each query on a small stream (2 generators, 60,000 events, seed 11) against a straightforward
 * batch computation over the same generated events, as the Go side's query tests do.
 */
class QueriesTest {
    static final int P = 2;
    static NexmarkConfig cfg;
    static List<Person> persons = new ArrayList<>();
    static List<Auction> auctions = new ArrayList<>();
    static List<Bid> bids = new ArrayList<>();

    @BeforeAll
    static void generate() {
        cfg = new NexmarkConfig();
        cfg.events = 60_000;
        cfg.seed = 11;
        cfg.generators = P;
        for (int i = 0; i < P; i++) {
            Generator g = new Generator(cfg, i);
            while (g.hasNext()) {
                Event e = g.next();
                switch (e.type) {
                    case Event.PERSON: persons.add(e.person); break;
                    case Event.AUCTION: auctions.add(e.auction); break;
                    default: bids.add(e.bid);
                }
            }
        }
    }

    static <T> List<T> run(String query) throws Exception {
        return run(query, cfg, null);
    }

    @SuppressWarnings("unchecked")
    static <T> List<T> run(String query, NexmarkConfig cfg, Queries.Options opts) throws Exception {
        Configuration conf = new Configuration();
        conf.set(PipelineOptions.OBJECT_REUSE, true);
        conf.set(RestOptions.BIND_ADDRESS, "127.0.0.1");
        conf.set(RestOptions.ADDRESS, "127.0.0.1");
        StreamExecutionEnvironment env = StreamExecutionEnvironment.createLocalEnvironment(P, conf);
        DataStream<Event> events = env.fromSource(new NexmarkSource(cfg),
                WatermarkStrategy.<Event>forBoundedOutOfOrderness(Duration.ofMillis(cfg.watermarkDelayMs)), "Nexmark");
        List<T> out = new ArrayList<>();
        try (CloseableIterator<T> it = ((DataStream<T>) Queries.build(query, events, opts)).executeAndCollect(query)) {
            it.forEachRemaining(out::add);
        }
        return out;
    }

    static <T> void sameMultiset(String what, List<T> got, List<T> want, Function<T, String> key) {
        List<String> w = new ArrayList<>();
        want.forEach(v -> w.add(key.apply(v)));
        sameKeys(what, got, key, w);
    }

    /** The keys of got against the keys want, as multisets. */
    static <T> void sameKeys(String what, List<T> got, Function<T, String> key, List<String> w) {
        assertFalse(w.isEmpty(), what + ": the batch computation found no results; the test proves nothing");
        List<String> g = new ArrayList<>();
        got.forEach(v -> g.add(key.apply(v)));
        w = new ArrayList<>(w);
        Collections.sort(g);
        Collections.sort(w);
        assertEquals(w.size(), g.size(), what + ": result count");
        assertEquals(w, g, what + ": results");
    }

    static String bidKey(Bid b) {
        return b.auction + "/" + b.bidder + "/" + b.price + "/" + b.dateTime + "/" + b.channel + "/" + b.extra;
    }

    @Test
    void generatorProportions() {
        assertEquals(60_000, persons.size() + auctions.size() + bids.size());
        assertEquals(1200, persons.size());
        assertEquals(3600, auctions.size());
        long hot = bids.stream().filter(b -> (b.auction - 1000) % 100 == 0).count();
        assertTrue(Math.abs(hot / (double) bids.size() - 0.5) < 0.03, "hot auction share " + hot / (double) bids.size());
    }

    @Test
    void q0q1q2() throws Exception {
        sameMultiset("q0", run("q0"), bids, QueriesTest::bidKey);
        List<Results.Q1> want1 = new ArrayList<>();
        List<Results.Q2> want2 = new ArrayList<>();
        for (Bid b : bids) {
            want1.add(new Results.Q1(b.auction, b.bidder, 0.908 * b.price, b.dateTime, b.extra));
            if (b.auction % 123 == 0) {
                want2.add(new Results.Q2(b.auction, b.price));
            }
        }
        sameMultiset("q1", run("q1"), want1, r -> r.auction + "/" + r.bidder + "/" + r.price + "/" + r.dateTime + "/" + r.extra);
        sameMultiset("q2", run("q2"), want2, r -> r.auction + "/" + r.price);
    }

    @Test
    void q3() throws Exception {
        Map<Long, Person> people = new HashMap<>();
        persons.forEach(p -> people.put(p.id, p));
        List<Results.Q3> want = new ArrayList<>();
        for (Auction a : auctions) {
            Person p = people.get(a.seller);
            if (p == null || a.category != 10 || !(p.state.equals("OR") || p.state.equals("ID") || p.state.equals("CA"))) {
                continue;
            }
            want.add(new Results.Q3(p.name, p.city, p.state, a.id));
        }
        sameMultiset("q3", run("q3"), want, r -> r.name + "/" + r.city + "/" + r.state + "/" + r.id);
    }

    /** Per auction, the highest bid made while it was open, the earliest on a tie. */
    static Map<Long, Bid> winners() {
        Map<Long, Auction> byId = new HashMap<>();
        auctions.forEach(a -> byId.put(a.id, a));
        Map<Long, Bid> best = new TreeMap<>();
        for (Bid b : bids) {
            Auction a = byId.get(b.auction);
            if (a == null || b.dateTime < a.dateTime || b.dateTime > a.expires) {
                continue;
            }
            Bid cur = best.get(a.id);
            if (cur == null || b.price > cur.price || (b.price == cur.price && b.dateTime < cur.dateTime)) {
                best.put(a.id, b);
            }
        }
        return best;
    }

    @Test
    void q9() throws Exception {
        Map<Long, Bid> w = winners();
        List<String> want = new ArrayList<>();
        w.forEach((id, b) -> want.add(id + ":" + b.price + "@" + b.dateTime));
        List<Results.Q9> got = run("q9");
        List<String> g = new ArrayList<>();
        got.forEach(r -> g.add(r.auction.id + ":" + r.bid.price + "@" + r.bid.dateTime));
        Collections.sort(want);
        Collections.sort(g);
        assertFalse(want.isEmpty());
        assertEquals(want, g);
    }

    @Test
    void q4() throws Exception {
        Map<Long, Auction> byId = new HashMap<>();
        auctions.forEach(a -> byId.put(a.id, a));
        Map<Long, long[]> perCategory = new TreeMap<>();
        winners().forEach((id, b) -> {
            long[] sc = perCategory.computeIfAbsent(byId.get(id).category, k -> new long[2]);
            sc[0] += b.price;
            sc[1]++;
        });
        List<Results.Q4> got = run("q4");
        long total = perCategory.values().stream().mapToLong(sc -> sc[1]).sum();
        assertEquals(total, got.size(), "q4: one update per closed auction with a winner");
        Map<Long, Results.Q4> last = new TreeMap<>();
        for (Results.Q4 r : got) {
            Results.Q4 cur = last.get(r.category);
            if (cur == null || r.count > cur.count) {
                last.put(r.category, r);
            }
        }
        assertEquals(perCategory.keySet(), last.keySet());
        perCategory.forEach((c, sc) -> assertEquals(sc[0] / sc[1], last.get(c).avg, "q4 category " + c));
    }

    @Test
    void q5() throws Exception {
        // window ends e (multiples of 2 s) with e - 10 s <= ts < e
        Map<Long, Map<Long, Long>> counts = new TreeMap<>();
        for (Bid b : bids) {
            long lastStart = b.dateTime - Math.floorMod(b.dateTime, 2000L);
            for (long start = lastStart; start > b.dateTime - 10_000; start -= 2000) {
                counts.computeIfAbsent(start + 10_000, k -> new HashMap<>()).merge(b.auction, 1L, Long::sum);
            }
        }
        List<Results.Q5> want = new ArrayList<>();
        counts.forEach((end, perAuction) -> {
            long max = Collections.max(perAuction.values());
            perAuction.forEach((a, n) -> {
                if (n == max) {
                    want.add(new Results.Q5(a, n, end - 10_000, end));
                }
            });
        });
        sameMultiset("q5", run("q5"), want, r -> r.auction + "/" + r.num + "/" + r.start + "/" + r.end);
    }

    @Test
    void q7() throws Exception {
        Map<Long, List<Bid>> top = new TreeMap<>();
        for (Bid b : bids) {
            long start = b.dateTime - Math.floorMod(b.dateTime, 10_000L);
            List<Bid> l = top.computeIfAbsent(start, k -> new ArrayList<>());
            if (l.isEmpty() || b.price > l.get(0).price) {
                l.clear();
                l.add(b);
            } else if (b.price == l.get(0).price) {
                l.add(b);
            }
        }
        List<Bid> want = new ArrayList<>();
        top.values().forEach(want::addAll);
        sameMultiset("q7", run("q7"), want, QueriesTest::bidKey);
    }

    @Test
    void q8() throws Exception {
        Map<String, Boolean> sellerWindows = new HashMap<>();
        for (Auction a : auctions) {
            sellerWindows.put(a.seller + "@" + (a.dateTime - Math.floorMod(a.dateTime, 10_000L)), true);
        }
        List<Results.Q8> want = new ArrayList<>();
        for (Person p : persons) {
            long start = p.dateTime - Math.floorMod(p.dateTime, 10_000L);
            if (sellerWindows.containsKey(p.id + "@" + start)) {
                want.add(new Results.Q8(p.id, p.name, start));
            }
        }
        sameMultiset("q8", run("q8"), want, r -> r.id + "/" + r.name + "/" + r.startTime);
    }

    @Test
    void q11() throws Exception {
        long gap = 10_000;
        Map<Long, List<Long>> times = new HashMap<>();
        for (Bid b : bids) {
            times.computeIfAbsent(b.bidder, k -> new ArrayList<>()).add(b.dateTime);
        }
        List<Results.BidderCount> want = new ArrayList<>();
        times.forEach((bidder, ts) -> {
            Collections.sort(ts);
            long start = ts.get(0);
            long end = start + gap;
            long n = 0;
            for (long t : ts) {
                if (t > end) { // Flink merges windows [t, t+gap) that touch
                    want.add(new Results.BidderCount(bidder, n, start, end));
                    start = t;
                    n = 0;
                }
                n++;
                end = Math.max(end, t + gap);
            }
            want.add(new Results.BidderCount(bidder, n, start, end));
        });
        sameMultiset("q11", run("q11"), want, r -> r.bidder + "/" + r.count + "/" + r.start + "/" + r.end);
    }

    @Test
    void q12Runs() throws Exception {
        // Processing-time windows: a run this short ends before a 10 s window fires.
        List<Results.BidderCount> got = run("q12");
        assertTrue(got.size() < bids.size());
    }

    @Test
    void badFlags() {
        String[][] bad = {
            {"--query", "q24", "--events", "10"},
            {"--query", "q0", "--events", "10", "--source", "kafka"},
            {"--query", "q0", "--events", "0"},
            {"--query", "q0", "--events", "10", "--parallelism", "0"},
            {"--events", "10"},
            {"--query", "q0", "--events", "x"},
        };
        for (String[] args : bad) {
            try {
                NexmarkMain.parse(args);
                throw new AssertionError("accepted " + String.join(" ", args));
            } catch (NexmarkMain.UsageException e) {
                assertTrue(e.getMessage() != null && !e.getMessage().isEmpty());
            }
        }
    }
}
