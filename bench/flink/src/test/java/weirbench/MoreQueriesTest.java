package weirbench;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.time.ZoneOffset;
import java.time.format.DateTimeFormatter;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.Comparator;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.stream.Stream;

import org.apache.flink.api.common.eventtime.WatermarkStrategy;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.configuration.PipelineOptions;
import org.apache.flink.configuration.RestOptions;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * q6, q10 and q13 to q23 against batch computations over the same events, as the Go tests; the
 * small stream of QueriesTest, and for the reports one that starts 3 s before midnight (two days).
 */
class MoreQueriesTest {
    @TempDir
    Path tmp;

    static final class Stream3 {
        final List<Person> persons = new ArrayList<>();
        final List<Auction> auctions = new ArrayList<>();
        final List<Bid> bids = new ArrayList<>();
        final List<Integer> bidGenerator = new ArrayList<>();
    }

    static Stream3 generate(NexmarkConfig c) {
        Stream3 s = new Stream3();
        for (int i = 0; i < c.generators; i++) {
            Generator g = new Generator(c, i);
            while (g.hasNext()) {
                Event e = g.next();
                switch (e.type) {
                    case Event.PERSON: s.persons.add(e.person); break;
                    case Event.AUCTION: s.auctions.add(e.auction); break;
                    default: s.bids.add(e.bid); s.bidGenerator.add(i);
                }
            }
        }
        return s;
    }

    static NexmarkConfig config(long events, long seed) {
        NexmarkConfig c = new NexmarkConfig();
        c.events = events;
        c.seed = seed;
        c.generators = QueriesTest.P;
        return c;
    }

    static final NexmarkConfig CFG = config(60_000, 11);
    static final Stream3 S = generate(CFG);

    static <T> List<T> run(String q, NexmarkConfig c) throws Exception {
        return QueriesTest.run(q, c, new Queries.Options(null, null));
    }

    static String day(long ts) {
        return DateTimeFormatter.ofPattern("yyyy-MM-dd").withZone(ZoneOffset.UTC).format(Instant.ofEpochMilli(ts));
    }

    static int rank(long price) {
        return price < 10_000 ? 1 : price < 1_000_000 ? 2 : 3;
    }

    @Test
    void q6() throws Exception {
        Map<Long, Auction> byId = new HashMap<>();
        S.auctions.forEach(a -> byId.put(a.id, a));
        Map<Long, List<long[]>> bySeller = new HashMap<>(); // {expires, id, price}
        Map<Long, Bid> best = new TreeMap<>();
        for (Bid b : S.bids) {
            Auction a = byId.get(b.auction);
            if (a == null || b.dateTime < a.dateTime || b.dateTime > a.expires) {
                continue;
            }
            Bid cur = best.get(a.id);
            if (cur == null || b.price > cur.price || (b.price == cur.price && b.dateTime < cur.dateTime)) {
                best.put(a.id, b);
            }
        }
        best.forEach((id, b) -> {
            Auction a = byId.get(id);
            bySeller.computeIfAbsent(a.seller, k -> new ArrayList<>()).add(new long[] {a.expires, a.id, b.price});
        });
        List<String> want = new ArrayList<>();
        boolean long11 = false;
        for (Map.Entry<Long, List<long[]>> e : bySeller.entrySet()) {
            List<long[]> ws = e.getValue();
            ws.sort(Comparator.<long[]>comparingLong(x -> x[0]).thenComparingLong(x -> x[1]));
            long11 |= ws.size() > 11;
            for (int i = 0; i < ws.size(); i++) {
                int from = Math.max(0, i - 10);
                long sum = 0;
                for (int j = from; j <= i; j++) {
                    sum += ws.get(j)[2];
                }
                want.add(e.getKey() + "/" + sum / (i + 1 - from));
            }
        }
        assertTrue(long11, "no seller closed more than 11 auctions");
        List<Results.Q6> got = run("q6", CFG);
        QueriesTest.sameMultiset("q6", got.stream().map(r -> r.seller + "/" + r.avg).toList(), want, x -> x);
    }

    @Test
    void q10() throws Exception {
        NexmarkConfig c = config(40_000, 3);
        c.rate = 500;
        Stream3 s = generate(c);
        DateTimeFormatter line = DateTimeFormatter.ofPattern("yyyy-MM-dd HH:mm:ss.SSS").withZone(ZoneOffset.UTC);
        DateTimeFormatter dir = DateTimeFormatter.ofPattern("'dt='yyyy-MM-dd'/hm='HH:mm").withZone(ZoneOffset.UTC);
        Map<String, List<String>> want = new TreeMap<>();
        for (Bid b : s.bids) {
            Instant at = Instant.ofEpochMilli(b.dateTime);
            want.computeIfAbsent(dir.format(at), k -> new ArrayList<>())
                    .add(b.auction + "," + b.bidder + "," + b.price + "," + line.format(at) + "," + b.extra);
        }
        assertTrue(want.size() >= 2);
        Path out = tmp.resolve("q10");
        Configuration conf = new Configuration();
        conf.set(PipelineOptions.OBJECT_REUSE, true);
        conf.set(RestOptions.BIND_ADDRESS, "127.0.0.1");
        conf.set(RestOptions.ADDRESS, "127.0.0.1");
        StreamExecutionEnvironment env = StreamExecutionEnvironment.createLocalEnvironment(QueriesTest.P, conf);
        MoreQueries.q10(env.fromSource(new NexmarkSource(c),
                WatermarkStrategy.<Event>forBoundedOutOfOrderness(Duration.ofMillis(c.watermarkDelayMs)), "Nexmark"), out);
        env.execute("q10");
        Map<String, List<String>> got = new TreeMap<>();
        try (Stream<Path> paths = Files.walk(out)) {
            for (Path p : paths.filter(Files::isRegularFile).toList()) {
                assertFalse(p.getFileName().toString().startsWith("."), "uncommitted " + p);
                got.computeIfAbsent(out.relativize(p.getParent()).toString(), k -> new ArrayList<>())
                        .addAll(Files.readAllLines(p));
            }
        }
        want.values().forEach(Collections::sort);
        got.values().forEach(Collections::sort);
        assertEquals(want, got);
        assertEquals(s.bids.size(), MoreQueries.committedRows(out)[0]);
    }

    @Test
    void q13() throws Exception {
        Path side = tmp.resolve("even.txt");
        StringBuilder sb = new StringBuilder();
        for (int k = 0; k < 10_000; k += 2) {
            sb.append(k).append(",v").append(k).append('\n');
        }
        Files.writeString(side, sb.toString());
        List<String> want = new ArrayList<>();
        for (Bid b : S.bids) {
            long k = b.auction % 10_000;
            if (k % 2 == 0) {
                want.add(b.auction + "/" + b.bidder + "/" + b.price + "/" + b.dateTime + "/v" + k);
            }
        }
        List<Results.Q13> got = QueriesTest.run("q13", CFG, new Queries.Options(null, side.toString()));
        QueriesTest.sameKeys("q13", got, r -> r.auction + "/" + r.bidder + "/" + r.price + "/" + r.dateTime + "/" + r.value, want);
    }

    @Test
    void q14() throws Exception {
        List<String> want = new ArrayList<>();
        for (Bid b : S.bids) {
            double p = 0.908 * b.price;
            if (p > 1e6 && p < 5e7) {
                long h = (b.dateTime / 3_600_000) % 24;
                String t = h >= 8 && h <= 18 ? "dayTime" : h <= 6 || h >= 20 ? "nightTime" : "otherTime";
                want.add(b.auction + "/" + p + "/" + t + "/" + b.extra.chars().filter(ch -> ch == 'c').count());
            }
        }
        assertTrue(want.size() < S.bids.size());
        List<Results.Q14> got = run("q14", CFG);
        QueriesTest.sameKeys("q14", got, r -> r.auction + "/" + r.price + "/" + r.bidTimeType + "/" + r.cCounts, want);
    }

    @Test
    void q21q22() throws Exception {
        Map<String, String> named = Map.of("apple", "0", "google", "1", "facebook", "2", "baidu", "3");
        List<String> want21 = new ArrayList<>();
        List<String> want22 = new ArrayList<>();
        for (Bid b : S.bids) {
            String id = named.get(b.channel.toLowerCase(Locale.ROOT));
            if (id == null) {
                for (String part : b.url.substring(b.url.indexOf('?') + 1).split("&")) {
                    if (part.startsWith("channel_id=")) {
                        id = part.substring("channel_id=".length());
                        break;
                    }
                }
            }
            if (id != null) {
                want21.add(b.auction + "/" + b.channel + "/" + id);
            }
            String[] p = b.url.split("/", -1);
            want22.add(b.auction + "/" + p[3] + "/" + p[4] + "/" + p[5]);
        }
        assertTrue(want21.size() < S.bids.size());
        List<Results.Q21> got21 = run("q21", CFG);
        QueriesTest.sameKeys("q21", got21, r -> r.auction + "/" + r.channel + "/" + r.channelId, want21);
        List<Results.Q22> got22 = run("q22", CFG);
        QueriesTest.sameKeys("q22", got22, r -> r.auction + "/" + r.dir1 + "/" + r.dir2 + "/" + r.dir3, want22);
    }

    static NexmarkConfig twoDays() {
        NexmarkConfig c = config(60_000, 11);
        c.baseTime = NexmarkConfig.DEFAULT_BASE_TIME - 3000;
        return c;
    }

    /** Counts and distinct sets (index 0: all, then the ranks) of one report group. */
    static final class Tally {
        long[] bids = new long[4];
        List<Set<Long>> bidders = List.of(new HashSet<>(), new HashSet<>(), new HashSet<>(), new HashSet<>());
        List<Set<Long>> auctions = List.of(new HashSet<>(), new HashSet<>(), new HashSet<>(), new HashSet<>());
        long last;

        void add(Bid b) {
            for (int i : new int[] {0, rank(b.price)}) {
                bids[i]++;
                bidders.get(i).add(b.bidder);
                auctions.get(i).add(b.auction);
            }
            last = Math.max(last, b.dateTime);
        }

        String key() {
            return Arrays.toString(bids) + Arrays.toString(bidders.stream().mapToInt(Set::size).toArray())
                    + Arrays.toString(auctions.stream().mapToInt(Set::size).toArray());
        }
    }

    static String reportKey(long[] bids, long[] bidders, long[] auctions) {
        return Arrays.toString(bids) + Arrays.toString(Arrays.stream(bidders).mapToInt(x -> (int) x).toArray())
                + Arrays.toString(Arrays.stream(auctions).mapToInt(x -> (int) x).toArray());
    }

    @Test
    void q15q16q17() throws Exception {
        NexmarkConfig c = twoDays();
        Stream3 s = generate(c);
        Map<String, Tally> days = new TreeMap<>();
        Map<String, Tally> channels = new TreeMap<>();
        Map<String, long[]> auctions = new TreeMap<>(); // count, r1, r2, r3, min, max, sum
        for (Bid b : s.bids) {
            days.computeIfAbsent(day(b.dateTime), k -> new Tally()).add(b);
            channels.computeIfAbsent(b.channel + "/" + day(b.dateTime), k -> new Tally()).add(b);
            long[] a = auctions.computeIfAbsent(b.auction + "/" + day(b.dateTime), k -> new long[] {0, 0, 0, 0, Long.MAX_VALUE, 0, 0});
            a[0]++;
            a[rank(b.price)]++;
            a[4] = Math.min(a[4], b.price);
            a[5] = Math.max(a[5], b.price);
            a[6] += b.price;
        }
        assertEquals(2, days.size());
        List<String> want15 = new ArrayList<>();
        days.forEach((d, t) -> want15.add(d + t.key()));
        List<Results.Q15> got15 = run("q15", c);
        QueriesTest.sameKeys("q15", got15, r -> r.day + reportKey(r.bids, r.bidders, r.auctions), want15);
        List<String> want16 = new ArrayList<>();
        DateTimeFormatter minute = DateTimeFormatter.ofPattern("HH:mm").withZone(ZoneOffset.UTC);
        channels.forEach((k, t) -> want16.add(k + "/" + minute.format(Instant.ofEpochMilli(t.last)) + t.key()));
        List<Results.Q16> got16 = run("q16", c);
        QueriesTest.sameKeys("q16", got16,
                r -> r.channel + "/" + r.day + "/" + r.minute + reportKey(r.bids, r.bidders, r.auctions), want16);
        List<String> want17 = new ArrayList<>();
        auctions.forEach((k, a) -> want17.add(k + "/" + a[0] + "," + a[1] + "," + a[2] + "," + a[3] + "/" + a[4] + "/" + a[5]
                + "/" + a[6] / a[0] + "/" + a[6]));
        List<Results.Q17> got17 = run("q17", c);
        QueriesTest.sameKeys("q17", got17, r -> r.auction + "/" + r.day + "/" + r.bids[0] + "," + r.bids[1]
                + "," + r.bids[2] + "," + r.bids[3] + "/" + r.minPrice + "/" + r.maxPrice + "/" + r.avgPrice + "/" + r.sumPrice, want17);
    }

    @Test
    void q18q19() throws Exception {
        NexmarkConfig c = config(60_000, 11);
        c.outOfOrderGroupSize = 10;
        Stream3 s = generate(c);
        // Keys with bids from two generators see them in a varying order: left out.
        Map<String, Integer> owner18 = new HashMap<>();
        Map<Long, Integer> owner19 = new HashMap<>();
        Set<String> mixed18 = new HashSet<>();
        Set<Long> mixed19 = new HashSet<>();
        for (int i = 0; i < s.bids.size(); i++) {
            Bid b = s.bids.get(i);
            int g = s.bidGenerator.get(i);
            Integer o = owner18.put(b.bidder + "/" + b.auction, g);
            if (o != null && o != g) {
                mixed18.add(b.bidder + "/" + b.auction);
            }
            o = owner19.put(b.auction, g);
            if (o != null && o != g) {
                mixed19.add(b.auction);
            }
        }
        Map<String, Long> latest = new HashMap<>();
        List<String> want18 = new ArrayList<>();
        int dropped = 0;
        for (Bid b : s.bids) {
            String k = b.bidder + "/" + b.auction;
            if (mixed18.contains(k)) {
                continue;
            }
            Long t = latest.get(k);
            if (t != null && b.dateTime < t) {
                dropped++;
                continue;
            }
            latest.put(k, b.dateTime);
            want18.add(QueriesTest.bidKey(b));
        }
        assertTrue(dropped > 0);
        List<Bid> got18 = run("q18", c);
        QueriesTest.sameKeys("q18", got18.stream().filter(b -> !mixed18.contains(b.bidder + "/" + b.auction)).toList(),
                QueriesTest::bidKey, want18);

        // q19: the upsert view (last row per auction and rank) is the batch top 10.
        List<Results.Q19> got19 = run("q19", c);
        Map<String, Bid> view = new HashMap<>();
        for (Results.Q19 r : got19) {
            if (!mixed19.contains(r.bid.auction)) {
                view.put(r.bid.auction + "#" + r.rank, r.bid);
            }
        }
        Map<Long, List<Bid>> byAuction = new HashMap<>();
        for (Bid b : s.bids) {
            if (!mixed19.contains(b.auction)) {
                byAuction.computeIfAbsent(b.auction, k -> new ArrayList<>()).add(b);
            }
        }
        List<String> want19 = new ArrayList<>();
        byAuction.forEach((a, bs) -> {
            bs.sort(Comparator.comparingLong((Bid b) -> -b.price)); // stable: arrival order on ties
            for (int i = 0; i < Math.min(10, bs.size()); i++) {
                want19.add(a + "#" + (i + 1) + "=" + QueriesTest.bidKey(bs.get(i)));
            }
        });
        List<String> have = new ArrayList<>();
        view.forEach((k, b) -> have.add(k + "=" + QueriesTest.bidKey(b)));
        QueriesTest.sameKeys("q19", have, x -> x, want19);
        assertTrue(got19.size() > want19.size());
    }

    @Test
    void q20q23() throws Exception {
        Map<Long, Auction> byId = new HashMap<>();
        S.auctions.forEach(a -> byId.put(a.id, a));
        List<String> want20 = new ArrayList<>();
        for (Bid b : S.bids) {
            Auction a = byId.get(b.auction);
            if (a != null && a.category == 10) {
                want20.add(QueriesTest.bidKey(b) + "/" + a.id);
            }
        }
        List<Results.Q20> got20 = run("q20", CFG);
        QueriesTest.sameKeys("q20", got20, r -> QueriesTest.bidKey(r.bid) + "/" + r.auction.id, want20);

        Set<Long> people = new HashSet<>();
        S.persons.forEach(p -> people.add(p.id));
        Map<Long, List<Long>> sells = new HashMap<>();
        S.auctions.forEach(a -> sells.computeIfAbsent(a.seller, k -> new ArrayList<>()).add(a.id));
        List<String> want23 = new ArrayList<>();
        for (Bid b : S.bids) {
            if (people.contains(b.bidder)) {
                for (long a : sells.getOrDefault(b.bidder, List.of())) {
                    want23.add(QueriesTest.bidKey(b) + "/" + b.bidder + "/" + a);
                }
            }
        }
        List<Results.Q23> got23 = run("q23", CFG);
        QueriesTest.sameKeys("q23", got23, r -> QueriesTest.bidKey(r.bid) + "/" + r.person.id + "/" + r.auction.id, want23);
    }
}
