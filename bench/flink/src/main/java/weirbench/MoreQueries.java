package weirbench;

import java.io.BufferedWriter;
import java.io.IOException;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.time.ZoneOffset;
import java.time.format.DateTimeFormatter;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;

import org.apache.flink.api.common.functions.AggregateFunction;
import org.apache.flink.api.common.functions.OpenContext;
import org.apache.flink.api.common.functions.RichFlatMapFunction;
import org.apache.flink.api.common.serialization.Encoder;
import org.apache.flink.api.common.state.ListState;
import org.apache.flink.api.common.state.ListStateDescriptor;
import org.apache.flink.api.common.state.ValueState;
import org.apache.flink.api.common.state.ValueStateDescriptor;
import org.apache.flink.api.common.typeinfo.Types;
import org.apache.flink.api.java.tuple.Tuple2;
import org.apache.flink.connector.file.sink.FileSink;
import org.apache.flink.core.io.SimpleVersionedSerializer;
import org.apache.flink.streaming.api.datastream.DataStream;
import org.apache.flink.streaming.api.functions.KeyedProcessFunction;
import org.apache.flink.streaming.api.functions.ProcessFunction;
import org.apache.flink.streaming.api.functions.co.KeyedCoProcessFunction;
import org.apache.flink.streaming.api.functions.sink.filesystem.BucketAssigner;
import org.apache.flink.streaming.api.functions.sink.filesystem.bucketassigners.SimpleVersionedStringSerializer;
import org.apache.flink.streaming.api.functions.windowing.ProcessAllWindowFunction;
import org.apache.flink.streaming.api.functions.windowing.ProcessWindowFunction;
import org.apache.flink.streaming.api.windowing.assigners.TumblingEventTimeWindows;
import org.apache.flink.streaming.api.windowing.windows.TimeWindow;
import org.apache.flink.util.Collector;

/**
 * The Nexmark queries q6, q10 and q13 to q23 as DataStream programs, each the Go query's
 * algorithm (weir/nexmark/queries) written with Flink's API; see README.md for the table.
 */
final class MoreQueries {
    private MoreQueries() {}

    static DataStream<Bid> bids(DataStream<Event> events) {
        return Queries.bids(events);
    }

    // ---- q6 -------------------------------------------------------------------------------

    static final int Q6_WINDOW = 11;

    /**
     * q6, average selling price by seller: per closed auction, the average winning price of its
     * seller's last 11 closed auctions. The winners are q9's, emitted at the auction's expiry;
     * keyed by seller they wait for the watermark and are taken in (expiry, auction id) order, as
     * an event-time OVER window orders its rows.
     */
    static DataStream<Results.Q6> q6(DataStream<Event> events) {
        return Queries.winningBids(events)
                .map(w -> new Sale(w.auction.seller, w.auction.id, w.bid.price, w.auction.expires))
                .returns(Sale.class).name("q6 sale")
                .keyBy(s -> s.seller, Types.LONG)
                .process(new SellerAverage()).name("q6 average");
    }

    /** A closed auction's winning price. */
    public static class Sale {
        public long seller;
        public long auction;
        public long price;
        public long closed;

        public Sale() {}

        Sale(long seller, long auction, long price, long closed) {
            this.seller = seller;
            this.auction = auction;
            this.price = price;
            this.closed = closed;
        }
    }

    /** A seller's OVER window: the last 11 prices (a ring) and the sales waiting for the watermark. */
    public static class SellerState {
        public long[] prices = new long[Q6_WINDOW];
        public int n;
        public List<Sale> pending = new ArrayList<>();

        public SellerState() {}
    }

    static final class SellerAverage extends KeyedProcessFunction<Long, Sale, Results.Q6> {
        private transient ValueState<SellerState> st;

        @Override
        public void open(OpenContext ctx) {
            st = getRuntimeContext().getState(new ValueStateDescriptor<>("over-window", SellerState.class));
        }

        @Override
        public void processElement(Sale s, Context ctx, Collector<Results.Q6> out) throws Exception {
            SellerState x = st.value();
            if (x == null) {
                x = new SellerState();
            }
            x.pending.add(s);
            st.update(x);
            ctx.timerService().registerEventTimeTimer(s.closed);
        }

        @Override
        public void onTimer(long ts, OnTimerContext ctx, Collector<Results.Q6> out) throws Exception {
            SellerState x = st.value();
            List<Sale> due = new ArrayList<>();
            List<Sale> keep = new ArrayList<>();
            for (Sale s : x.pending) {
                (s.closed <= ts ? due : keep).add(s);
            }
            due.sort(Comparator.<Sale>comparingLong(s -> s.closed).thenComparingLong(s -> s.auction));
            for (Sale s : due) {
                x.prices[x.n % Q6_WINDOW] = s.price;
                x.n++;
                int n = Math.min(x.n, Q6_WINDOW);
                long sum = 0;
                for (int i = 0; i < n; i++) {
                    sum += x.prices[i];
                }
                out.collect(new Results.Q6(ctx.getCurrentKey(), sum / n));
            }
            x.pending = keep;
            st.update(x);
        }
    }

    // ---- q10 ------------------------------------------------------------------------------

    /**
     * q10, log to file system: every bid as a CSV line "auction,bidder,price,yyyy-MM-dd
     * HH:mm:ss.SSS,extra" into partition directories dt=yyyy-MM-dd/hm=HH:mm (UTC) with Flink's
     * exactly-once FileSink (row format); without checkpoints the parts are committed at the end
     * of input.
     */
    static void q10(DataStream<Event> events, Path dir) {
        DataStream<Q10Row> rows = events.filter(e -> e.type == Event.BID).name("bids")
                .process(new Q10Rows()).name("q10 partition");
        rows.sinkTo(FileSink.forRowFormat(new org.apache.flink.core.fs.Path(dir.toUri()), new Q10Encoder())
                .withBucketAssigner(new PartitionAssigner()).build()).name("q10 files");
    }

    /** A bid as q10 logs it, with its partition ("dt=.../hm=...") and the two partition values. */
    public static class Q10Row {
        public long auction;
        public long bidder;
        public long price;
        public long dateTime;
        public String extra;
        public String partition;
        public String dt;
        public String hm;

        public Q10Row() {}
    }

    static final DateTimeFormatter PARTITION = DateTimeFormatter.ofPattern("'dt='yyyy-MM-dd'/hm='HH:mm").withZone(ZoneOffset.UTC);

    /** Derives the partition columns, keeping the strings of the minute it saw last. */
    static final class Q10Rows extends ProcessFunction<Event, Q10Row> {
        private long minute = -1;
        private String partition;

        @Override
        public void processElement(Event e, Context ctx, Collector<Q10Row> out) {
            Bid b = e.bid;
            long m = b.dateTime - b.dateTime % 60_000;
            if (m != minute) {
                minute = m;
                partition = PARTITION.format(Instant.ofEpochMilli(m));
            }
            Q10Row r = new Q10Row();
            r.auction = b.auction;
            r.bidder = b.bidder;
            r.price = b.price;
            r.dateTime = b.dateTime;
            r.extra = b.extra;
            r.partition = partition;
            r.dt = partition.substring(3, 13);
            r.hm = partition.substring(17, 22);
            out.collect(r);
        }
    }

    /** Q10's CSV line. */
    static String q10Line(Q10Row r) {
        long ms = r.dateTime % 60_000;
        StringBuilder sb = new StringBuilder(64 + r.extra.length());
        sb.append(r.auction).append(',').append(r.bidder).append(',').append(r.price).append(',')
                .append(r.dt).append(' ').append(r.hm).append(':')
                .append((char) ('0' + ms / 10_000)).append((char) ('0' + ms / 1000 % 10)).append('.')
                .append((char) ('0' + ms / 100 % 10)).append((char) ('0' + ms / 10 % 10)).append((char) ('0' + ms % 10))
                .append(',').append(r.extra);
        return sb.toString();
    }

    static final class Q10Encoder implements Encoder<Q10Row> {
        private static final long serialVersionUID = 1L;

        @Override
        public void encode(Q10Row r, OutputStream out) throws IOException {
            byte[] line = (q10Line(r) + "\n").getBytes(StandardCharsets.UTF_8);
            out.write(line);
        }
    }

    static final class PartitionAssigner implements BucketAssigner<Q10Row, String> {
        private static final long serialVersionUID = 1L;

        @Override
        public String getBucketId(Q10Row r, Context context) {
            return r.partition;
        }

        @Override
        public SimpleVersionedSerializer<String> getSerializer() {
            return SimpleVersionedStringSerializer.INSTANCE;
        }
    }

    /** The committed rows under dir (names starting with "." skipped) and the latest mtime (ns since the epoch). */
    static long[] committedRows(Path dir) throws IOException {
        long[] out = new long[2];
        try (Stream<Path> paths = Files.walk(dir)) {
            for (Path p : paths.toList()) {
                out[1] = Math.max(out[1], mtimeNanos(p));
                if (Files.isRegularFile(p) && !p.getFileName().toString().startsWith(".")) {
                    byte[] data = Files.readAllBytes(p);
                    for (byte c : data) {
                        if (c == '\n') {
                            out[0]++;
                        }
                    }
                }
            }
        }
        return out;
    }

    private static long mtimeNanos(Path p) throws IOException {
        Instant t = Files.getLastModifiedTime(p).toInstant();
        return t.getEpochSecond() * 1_000_000_000L + t.getNano();
    }

    // ---- q13 ------------------------------------------------------------------------------

    static final int SIDE_INPUT_ROWS = 10_000;

    /** Nexmark's side input: lines "i,i" for i in [0, rows) (SideInputGenerator). */
    static void writeSideInput(Path path, int rows) throws IOException {
        try (BufferedWriter w = Files.newBufferedWriter(path, StandardCharsets.UTF_8)) {
            for (int i = 0; i < rows; i++) {
                w.write(i + "," + i + "\n");
            }
        }
    }

    /**
     * q13, bounded side-input join: each bid with the side-input row whose key is its auction id
     * mod 10,000; as Flink's lookup join on a file system table (which caches the file), each
     * subtask reads the file in open() and looks bids up in a HashMap. Bids without a row are
     * dropped.
     */
    static DataStream<Results.Q13> q13(DataStream<Event> events, String sideInput) {
        return events.filter(e -> e.type == Event.BID).name("bids")
                .flatMap(new SideInputJoin(sideInput)).returns(Results.Q13.class).name("q13 join");
    }

    static final class SideInputJoin extends RichFlatMapFunction<Event, Results.Q13> {
        private final String path;
        private transient Map<Long, String> table;

        SideInputJoin(String path) {
            this.path = path;
        }

        @Override
        public void open(OpenContext ctx) throws IOException {
            table = new HashMap<>();
            int i = 0;
            for (String line : Files.readAllLines(Path.of(path))) {
                i++;
                int c = line.indexOf(',');
                try {
                    table.put(Long.parseLong(line.substring(0, c)), line.substring(c + 1));
                } catch (RuntimeException e) {
                    throw new IOException("q13: side input " + path + " line " + i + ": want key,value, got \"" + line + "\"");
                }
            }
        }

        @Override
        public void flatMap(Event e, Collector<Results.Q13> out) {
            Bid b = e.bid;
            String v = table.get(b.auction % 10_000);
            if (v != null) {
                out.collect(new Results.Q13(b.auction, b.bidder, b.price, b.dateTime, v));
            }
        }
    }

    // ---- q14, q21, q22 --------------------------------------------------------------------

    /** q14: bids with 1e6 < 0.908 * price < 5e7, with the time type of their hour (UTC) and count_char(extra, 'c'). */
    static DataStream<Results.Q14> q14(DataStream<Event> events) {
        return events.filter(e -> {
                    if (e.type != Event.BID) {
                        return false;
                    }
                    double p = 0.908 * e.bid.price;
                    return p > 1_000_000 && p < 50_000_000;
                }).name("q14 select")
                .map(e -> {
                    Bid b = e.bid;
                    return new Results.Q14(b.auction, b.bidder, 0.908 * b.price, bidTimeType(b.dateTime), b.dateTime,
                            b.extra, countChar(b.extra, 'c'));
                }).returns(Results.Q14.class).name("q14 calculate");
    }

    static String bidTimeType(long ts) {
        long h = Math.floorMod(ts / 3_600_000, 24L);
        if (h >= 8 && h <= 18) {
            return "dayTime";
        }
        if (h <= 6 || h >= 20) {
            return "nightTime";
        }
        return "otherTime";
    }

    /** The suite's count_char UDF: occurrences of c in s. */
    static long countChar(String s, char c) {
        long n = 0;
        for (int i = 0; i < s.length(); i++) {
            if (s.charAt(i) == c) {
                n++;
            }
        }
        return n;
    }

    /**
     * The part of q21's pattern {@code (&|^)channel_id=([^&]*)} after its leading alternation,
     * which ChannelId checks itself (as the Go query, whose regexp package needs the literal
     * prefix to search fast): the same matches.
     */
    static final Pattern CHANNEL_ID = Pattern.compile("channel_id=([^&]*)");

    /** q21: the named channels' ids 0-3, else the channel_id of the URL (a regular expression); bids with neither dropped. */
    static DataStream<Results.Q21> q21(DataStream<Event> events) {
        return events.filter(e -> e.type == Event.BID).name("bids")
                .flatMap(new ChannelId()).returns(Results.Q21.class).name("q21 channel id");
    }

    static final class ChannelId extends RichFlatMapFunction<Event, Results.Q21> {
        private transient Matcher m;

        @Override
        public void open(OpenContext ctx) {
            m = CHANNEL_ID.matcher("");
        }

        @Override
        public void flatMap(Event e, Collector<Results.Q21> out) {
            Bid b = e.bid;
            String id;
            if (b.channel.equalsIgnoreCase("apple")) {
                id = "0";
            } else if (b.channel.equalsIgnoreCase("google")) {
                id = "1";
            } else if (b.channel.equalsIgnoreCase("facebook")) {
                id = "2";
            } else if (b.channel.equalsIgnoreCase("baidu")) {
                id = "3";
            } else {
                id = channelId(m, b.url);
                if (id == null) {
                    return;
                }
            }
            out.collect(new Results.Q21(b.auction, b.bidder, b.price, b.channel, id));
        }
    }

    /** The first channel_id= value at the start of url or after an '&', or null. */
    static String channelId(Matcher m, String url) {
        m.reset(url);
        int from = 0;
        while (from < url.length() && m.find(from)) {
            int at = m.start();
            if (at == 0 || url.charAt(at - 1) == '&') {
                return m.group(1);
            }
            from = at + 1;
        }
        return null;
    }

    /** q22: SPLIT_INDEX(url, '/', 3), 4 and 5 ("" for NULL). */
    static DataStream<Results.Q22> q22(DataStream<Event> events) {
        return events.filter(e -> e.type == Event.BID).name("bids")
                .map(e -> {
                    Bid b = e.bid;
                    String[] d = urlDirs(b.url);
                    return new Results.Q22(b.auction, b.bidder, b.price, b.channel, d[0], d[1], d[2]);
                }).returns(Results.Q22.class).name("q22 split");
    }

    static String[] urlDirs(String url) {
        String[] parts = {"", "", ""};
        int i = 0;
        int start = 0;
        for (int j = 0; j <= url.length() && i < 6; j++) {
            if (j < url.length() && url.charAt(j) != '/') {
                continue;
            }
            if (i >= 3) {
                parts[i - 3] = url.substring(start, j);
            }
            i++;
            start = j + 1;
        }
        return parts;
    }

    // ---- q15, q16, q17 --------------------------------------------------------------------

    static final long DAY = 24L * 3600 * 1000;
    static final int SPLIT_BUCKETS = 1024;
    static final DateTimeFormatter DAY_FORMAT = DateTimeFormatter.ofPattern("yyyy-MM-dd").withZone(ZoneOffset.UTC);
    static final DateTimeFormatter MINUTE_FORMAT = DateTimeFormatter.ofPattern("HH:mm").withZone(ZoneOffset.UTC);

    static int rankOf(long price) {
        return price < 10_000 ? 1 : price < 1_000_000 ? 2 : 3;
    }

    /** HASH_CODE(id) mod 1024 of the split-distinct rewrite (Long.hashCode, floor modulus). */
    static int splitBucket(long id) {
        return Math.floorMod(Long.hashCode(id), SPLIT_BUCKETS);
    }

    /** The distinct ids of a group: per id a bit set of the ranks it was seen with. */
    static void addDistinct(Map<Long, Integer> ids, long id, int rank) {
        ids.merge(id, 1 << rank, (a, b) -> a | b);
    }

    static long[] distinctCounts(Map<Long, Integer> ids) {
        long[] c = new long[4];
        c[0] = ids.size();
        for (int m : ids.values()) {
            for (int r = 1; r <= 3; r++) {
                if ((m & (1 << r)) != 0) {
                    c[r]++;
                }
            }
        }
        return c;
    }

    /**
     * q15, bidding statistics per day: a one-day tumbling window per group, emitted when the day
     * ends; the distinct counts split as Flink's split-distinct rewrite does (per bucket of bidders,
     * which also counts the bids, and per bucket of auctions), then summed per day (windowAll).
     */
    static DataStream<Results.Q15> q15(DataStream<Event> events) {
        DataStream<Bid> bids = bids(events);
        DataStream<Results.Q15> byBidder = bids.keyBy(b -> splitBucket(b.bidder), Types.INT)
                .window(TumblingEventTimeWindows.of(Duration.ofDays(1)))
                .aggregate(new SplitDistinct(true)).name("q15 bidders");
        DataStream<Results.Q15> byAuction = bids.keyBy(b -> splitBucket(b.auction), Types.INT)
                .window(TumblingEventTimeWindows.of(Duration.ofDays(1)))
                .aggregate(new SplitDistinct(false)).name("q15 auctions");
        return byBidder.union(byAuction)
                .windowAll(TumblingEventTimeWindows.of(Duration.ofDays(1)))
                .aggregate(new SumReports(), new ProcessAllWindowFunction<Results.Q15, Results.Q15, TimeWindow>() {
                    @Override
                    public void process(Context ctx, Iterable<Results.Q15> in, Collector<Results.Q15> out) {
                        Results.Q15 r = in.iterator().next();
                        r.day = DAY_FORMAT.format(Instant.ofEpochMilli(ctx.window().getStart()));
                        out.collect(r);
                    }
                }).name("q15 report");
    }

    /** One bucket's part of a day's report. */
    public static class SplitAcc {
        public long[] bids = new long[4];
        public Map<Long, Integer> ids = new HashMap<>();

        public SplitAcc() {}
    }

    static final class SplitDistinct implements AggregateFunction<Bid, SplitAcc, Results.Q15> {
        private final boolean bidder;

        SplitDistinct(boolean bidder) {
            this.bidder = bidder;
        }

        @Override
        public SplitAcc createAccumulator() {
            return new SplitAcc();
        }

        @Override
        public SplitAcc add(Bid b, SplitAcc acc) {
            int r = rankOf(b.price);
            if (bidder) {
                acc.bids[0]++;
                acc.bids[r]++;
                addDistinct(acc.ids, b.bidder, r);
            } else {
                addDistinct(acc.ids, b.auction, r);
            }
            return acc;
        }

        @Override
        public Results.Q15 getResult(SplitAcc acc) {
            Results.Q15 r = new Results.Q15();
            if (bidder) {
                r.bids = acc.bids.clone();
                r.bidders = distinctCounts(acc.ids);
            } else {
                r.auctions = distinctCounts(acc.ids);
            }
            return r;
        }

        @Override
        public SplitAcc merge(SplitAcc a, SplitAcc b) {
            for (int i = 0; i < 4; i++) {
                a.bids[i] += b.bids[i];
            }
            b.ids.forEach((id, m) -> a.ids.merge(id, m, (x, y) -> x | y));
            return a;
        }
    }

    static void plus(long[] a, long[] b) {
        for (int i = 0; i < 4; i++) {
            a[i] += b[i];
        }
    }

    static final class SumReports implements AggregateFunction<Results.Q15, Results.Q15, Results.Q15> {
        @Override
        public Results.Q15 createAccumulator() {
            return new Results.Q15();
        }

        @Override
        public Results.Q15 add(Results.Q15 r, Results.Q15 acc) {
            plus(acc.bids, r.bids);
            plus(acc.bidders, r.bidders);
            plus(acc.auctions, r.auctions);
            return acc;
        }

        @Override
        public Results.Q15 getResult(Results.Q15 acc) {
            return acc;
        }

        @Override
        public Results.Q15 merge(Results.Q15 a, Results.Q15 b) {
            return add(b, a);
        }
    }

    /** q16, channel statistics per channel and day: one-day windows keyed by channel, distinct sets in the accumulator. */
    static DataStream<Results.Q16> q16(DataStream<Event> events) {
        return bids(events).keyBy(b -> b.channel, Types.STRING)
                .window(TumblingEventTimeWindows.of(Duration.ofDays(1)))
                .aggregate(new ChannelReport(), new ProcessWindowFunction<Results.Q16, Results.Q16, String, TimeWindow>() {
                    @Override
                    public void process(String channel, Context ctx, Iterable<Results.Q16> in, Collector<Results.Q16> out) {
                        Results.Q16 r = in.iterator().next();
                        r.channel = channel;
                        r.day = DAY_FORMAT.format(Instant.ofEpochMilli(ctx.window().getStart()));
                        out.collect(r);
                    }
                }).name("q16 report");
    }

    /** A channel's day so far. */
    public static class ChannelAcc {
        public long last;
        public long[] bids = new long[4];
        public Map<Long, Integer> bidders = new HashMap<>();
        public Map<Long, Integer> auctions = new HashMap<>();

        public ChannelAcc() {}
    }

    static final class ChannelReport implements AggregateFunction<Bid, ChannelAcc, Results.Q16> {
        @Override
        public ChannelAcc createAccumulator() {
            return new ChannelAcc();
        }

        @Override
        public ChannelAcc add(Bid b, ChannelAcc acc) {
            int r = rankOf(b.price);
            acc.last = Math.max(acc.last, b.dateTime);
            acc.bids[0]++;
            acc.bids[r]++;
            addDistinct(acc.bidders, b.bidder, r);
            addDistinct(acc.auctions, b.auction, r);
            return acc;
        }

        @Override
        public Results.Q16 getResult(ChannelAcc acc) {
            Results.Q16 r = new Results.Q16();
            r.minute = MINUTE_FORMAT.format(Instant.ofEpochMilli(acc.last));
            r.bids = acc.bids.clone();
            r.bidders = distinctCounts(acc.bidders);
            r.auctions = distinctCounts(acc.auctions);
            return r;
        }

        @Override
        public ChannelAcc merge(ChannelAcc a, ChannelAcc b) {
            a.last = Math.max(a.last, b.last);
            plus(a.bids, b.bids);
            b.bidders.forEach((id, m) -> a.bidders.merge(id, m, (x, y) -> x | y));
            b.auctions.forEach((id, m) -> a.auctions.merge(id, m, (x, y) -> x | y));
            return a;
        }
    }

    /** q17, auction statistics per auction and day: one-day windows keyed by auction, incremental aggregate. */
    static DataStream<Results.Q17> q17(DataStream<Event> events) {
        return bids(events).keyBy(b -> b.auction, Types.LONG)
                .window(TumblingEventTimeWindows.of(Duration.ofDays(1)))
                .aggregate(new AuctionReport(), new ProcessWindowFunction<Results.Q17, Results.Q17, Long, TimeWindow>() {
                    @Override
                    public void process(Long auction, Context ctx, Iterable<Results.Q17> in, Collector<Results.Q17> out) {
                        Results.Q17 r = in.iterator().next();
                        r.auction = auction;
                        r.day = DAY_FORMAT.format(Instant.ofEpochMilli(ctx.window().getStart()));
                        out.collect(r);
                    }
                }).name("q17 report");
    }

    static final class AuctionReport implements AggregateFunction<Bid, Results.Q17, Results.Q17> {
        @Override
        public Results.Q17 createAccumulator() {
            return new Results.Q17();
        }

        @Override
        public Results.Q17 add(Bid b, Results.Q17 acc) {
            if (acc.bids[0] == 0 || b.price < acc.minPrice) {
                acc.minPrice = b.price;
            }
            acc.maxPrice = Math.max(acc.maxPrice, b.price);
            acc.bids[0]++;
            acc.bids[rankOf(b.price)]++;
            acc.sumPrice += b.price;
            return acc;
        }

        @Override
        public Results.Q17 getResult(Results.Q17 acc) {
            Results.Q17 r = new Results.Q17();
            r.bids = acc.bids.clone();
            r.minPrice = acc.minPrice;
            r.maxPrice = acc.maxPrice;
            r.sumPrice = acc.sumPrice;
            r.avgPrice = acc.bids[0] > 0 ? acc.sumPrice / acc.bids[0] : 0;
            return r;
        }

        @Override
        public Results.Q17 merge(Results.Q17 a, Results.Q17 b) {
            if (a.bids[0] == 0) {
                return b;
            }
            if (b.bids[0] == 0) {
                return a;
            }
            a.minPrice = Math.min(a.minPrice, b.minPrice);
            a.maxPrice = Math.max(a.maxPrice, b.maxPrice);
            plus(a.bids, b.bids);
            a.sumPrice += b.sumPrice;
            return a;
        }
    }

    // ---- q18, q19 -------------------------------------------------------------------------

    /**
     * q18, last bid per (bidder, auction): an upsert stream; a bid at least as recent as its key's
     * latest is emitted and becomes the latest (value state: the time), an older one is dropped.
     */
    static DataStream<Bid> q18(DataStream<Event> events) {
        return bids(events).keyBy(b -> Tuple2.of(b.bidder, b.auction), Types.TUPLE(Types.LONG, Types.LONG))
                .process(new LastBid()).name("q18 last bid");
    }

    static final class LastBid extends KeyedProcessFunction<Tuple2<Long, Long>, Bid, Bid> {
        private transient ValueState<Long> latest;

        @Override
        public void open(OpenContext ctx) {
            latest = getRuntimeContext().getState(new ValueStateDescriptor<>("latest", Types.LONG));
        }

        @Override
        public void processElement(Bid b, Context ctx, Collector<Bid> out) throws Exception {
            Long t = latest.value();
            if (t != null && b.dateTime < t) {
                return;
            }
            latest.update(b.dateTime);
            out.collect(b);
        }
    }

    static final int TOP_N = 10;

    /**
     * q19, top-10 bids per auction: an upsert stream keyed by (auction, rank); a bid entering the
     * ten highest at rank r is emitted with r, and each bid it pushes down with its new rank.
     * Equal prices keep arrival order; a bid only tying the tenth does not enter.
     */
    static DataStream<Results.Q19> q19(DataStream<Event> events) {
        return bids(events).keyBy(b -> b.auction, Types.LONG).process(new TopBids()).name("q19 top 10");
    }

    /** An auction's best bids, highest first. */
    public static class Top {
        public Bid[] bids = new Bid[TOP_N];
        public int n;

        public Top() {}
    }

    static final class TopBids extends KeyedProcessFunction<Long, Bid, Results.Q19> {
        private transient ValueState<Top> top;

        @Override
        public void open(OpenContext ctx) {
            top = getRuntimeContext().getState(new ValueStateDescriptor<>("top", Top.class));
        }

        @Override
        public void processElement(Bid b, Context ctx, Collector<Results.Q19> out) throws Exception {
            Top t = top.value();
            if (t == null) {
                t = new Top();
            }
            if (t.n == TOP_N && b.price <= t.bids[TOP_N - 1].price) {
                return;
            }
            int r = t.n;
            while (r > 0 && t.bids[r - 1].price < b.price) {
                r--;
            }
            int n = Math.min(t.n + 1, TOP_N);
            System.arraycopy(t.bids, r, t.bids, r + 1, n - 1 - r);
            t.bids[r] = b;
            t.n = n;
            top.update(t);
            for (int i = r; i < n; i++) {
                out.collect(new Results.Q19(t.bids[i], i + 1));
            }
        }
    }

    // ---- q20, q23 -------------------------------------------------------------------------

    /**
     * q20, bids expanded with their auction of category 10: a regular join keyed by auction id
     * that nothing expires; the auction is kept in value state (ids are unique), a bid before its
     * auction waits in list state.
     */
    static DataStream<Results.Q20> q20(DataStream<Event> events) {
        DataStream<Auction> auctions = Queries.auctions(events);
        return bids(events).keyBy(b -> b.auction, Types.LONG)
                .connect(auctions.keyBy(a -> a.id, Types.LONG))
                .process(new ExpandBid()).name("q20 join");
    }

    static final class ExpandBid extends KeyedCoProcessFunction<Long, Bid, Auction, Results.Q20> {
        private transient ValueState<Auction> auction;
        private transient ListState<Bid> waiting;

        @Override
        public void open(OpenContext ctx) {
            auction = getRuntimeContext().getState(new ValueStateDescriptor<>("auction", Auction.class));
            waiting = getRuntimeContext().getListState(new ListStateDescriptor<>("waiting-bids", Bid.class));
        }

        @Override
        public void processElement1(Bid b, Context ctx, Collector<Results.Q20> out) throws Exception {
            Auction a = auction.value();
            if (a == null) {
                waiting.add(b);
            } else if (a.category == 10) {
                out.collect(new Results.Q20(b, a));
            }
        }

        @Override
        public void processElement2(Auction a, Context ctx, Collector<Results.Q20> out) throws Exception {
            auction.update(a);
            Iterable<Bid> w = waiting.get();
            if (w != null) {
                if (a.category == 10) {
                    for (Bid b : w) {
                        out.collect(new Results.Q20(b, a));
                    }
                }
                waiting.clear();
            }
        }
    }

    /**
     * q23, bids joined with their bidder and every auction the bidder sells: the three inputs keyed
     * by the one person id (bidder, id, seller) into one operator (as Flink 2.1's multi-way join),
     * keeping person, auctions and bids forever and emitting each triple when its last member comes.
     */
    static DataStream<Results.Q23> q23(DataStream<Event> events) {
        return events.keyBy(e -> e.type == Event.PERSON ? e.person.id : e.type == Event.AUCTION ? e.auction.seller : e.bid.bidder,
                        Types.LONG)
                .process(new MultiJoin()).name("q23 join");
    }

    static final class MultiJoin extends KeyedProcessFunction<Long, Event, Results.Q23> {
        private transient ValueState<Person> person;
        private transient ListState<Auction> auctions;
        private transient ListState<Bid> bids;

        @Override
        public void open(OpenContext ctx) {
            person = getRuntimeContext().getState(new ValueStateDescriptor<>("person", Person.class));
            auctions = getRuntimeContext().getListState(new ListStateDescriptor<>("auctions", Auction.class));
            bids = getRuntimeContext().getListState(new ListStateDescriptor<>("bids", Bid.class));
        }

        @Override
        public void processElement(Event e, Context ctx, Collector<Results.Q23> out) throws Exception {
            switch (e.type) {
                case Event.PERSON: {
                    Person p = e.person;
                    person.update(p);
                    Iterable<Auction> as = auctions.get();
                    Iterable<Bid> bs = bids.get();
                    if (as != null && bs != null) {
                        for (Auction a : as) {
                            for (Bid b : bs) {
                                out.collect(new Results.Q23(b, p, a));
                            }
                        }
                    }
                    break;
                }
                case Event.AUCTION: {
                    Auction a = e.auction;
                    auctions.add(a);
                    Person p = person.value();
                    Iterable<Bid> bs = bids.get();
                    if (p != null && bs != null) {
                        for (Bid b : bs) {
                            out.collect(new Results.Q23(b, p, a));
                        }
                    }
                    break;
                }
                default: {
                    Bid b = e.bid;
                    bids.add(b);
                    Person p = person.value();
                    Iterable<Auction> as = auctions.get();
                    if (p != null && as != null) {
                        for (Auction a : as) {
                            out.collect(new Results.Q23(b, p, a));
                        }
                    }
                }
            }
        }
    }
}
