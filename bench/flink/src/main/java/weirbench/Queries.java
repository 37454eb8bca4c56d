package weirbench;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

import org.apache.flink.api.common.functions.AggregateFunction;
import org.apache.flink.api.common.functions.OpenContext;
import org.apache.flink.api.common.state.ListState;
import org.apache.flink.api.common.state.ListStateDescriptor;
import org.apache.flink.api.common.state.ValueState;
import org.apache.flink.api.common.state.ValueStateDescriptor;
import org.apache.flink.api.common.typeinfo.Types;
import org.apache.flink.streaming.api.datastream.DataStream;
import org.apache.flink.streaming.api.functions.KeyedProcessFunction;
import org.apache.flink.streaming.api.functions.co.KeyedCoProcessFunction;
import org.apache.flink.streaming.api.functions.windowing.ProcessAllWindowFunction;
import org.apache.flink.streaming.api.functions.windowing.ProcessWindowFunction;
import org.apache.flink.streaming.api.windowing.assigners.EventTimeSessionWindows;
import org.apache.flink.streaming.api.windowing.assigners.SlidingEventTimeWindows;
import org.apache.flink.streaming.api.windowing.assigners.TumblingEventTimeWindows;
import org.apache.flink.streaming.api.windowing.assigners.TumblingProcessingTimeWindows;
import org.apache.flink.streaming.api.windowing.windows.TimeWindow;
import org.apache.flink.util.Collector;

/**
 * The Nexmark queries as DataStream programs: each takes the event stream (timestamps and the
 * 4 s bounded-out-of-orderness watermarks already assigned at the source) and returns the stream
 * of result rows, which the benchmark counts in a discarding sink.
 */
final class Queries {
    private Queries() {}

    /** The queries, after "gen": the source alone into the discarding sink (the baseline). */
    static final List<String> NAMES = List.of("gen", "q0", "q1", "q2", "q3", "q4", "q5", "q6", "q7", "q8", "q9",
            "q10", "q11", "q12", "q13", "q14", "q15", "q16", "q17", "q18", "q19", "q20", "q21", "q22", "q23");

    /** Where q10 writes and what q13 reads. */
    static final class Options {
        final java.nio.file.Path outputDir;
        final String sideInput;

        Options(java.nio.file.Path outputDir, String sideInput) {
            this.outputDir = outputDir;
            this.sideInput = sideInput;
        }
    }

    static final int SIDE_INPUT_ROWS = MoreQueries.SIDE_INPUT_ROWS;

    static void writeSideInput(java.nio.file.Path path, int rows) throws java.io.IOException {
        MoreQueries.writeSideInput(path, rows);
    }

    /** The committed rows of q10's output and the latest modification time under it (ns since the epoch). */
    static long[] committedRows(java.nio.file.Path dir) throws java.io.IOException {
        return MoreQueries.committedRows(dir);
    }

    /**
     * The query's result stream, which the caller ends in a counting sink, or null for q10, which
     * ends in its own file sink.
     */
    static DataStream<?> build(String query, DataStream<Event> events, Options opts) {
        switch (query) {
            case "q6": return MoreQueries.q6(events);
            case "q10": MoreQueries.q10(events, opts.outputDir); return null;
            case "q13": return MoreQueries.q13(events, opts.sideInput);
            case "q14": return MoreQueries.q14(events);
            case "q15": return MoreQueries.q15(events);
            case "q16": return MoreQueries.q16(events);
            case "q17": return MoreQueries.q17(events);
            case "q18": return MoreQueries.q18(events);
            case "q19": return MoreQueries.q19(events);
            case "q20": return MoreQueries.q20(events);
            case "q21": return MoreQueries.q21(events);
            case "q22": return MoreQueries.q22(events);
            case "q23": return MoreQueries.q23(events);
            default: return build(query, events);
        }
    }

    static DataStream<?> build(String query, DataStream<Event> events) {
        switch (query) {
            case "gen": return events;
            case "q0": return q0(events);
            case "q1": return q1(events);
            case "q2": return q2(events);
            case "q3": return q3(events);
            case "q4": return q4(events);
            case "q5": return q5(events);
            case "q7": return q7(events);
            case "q8": return q8(events);
            case "q9": return q9(events);
            case "q11": return q11(events);
            case "q12": return q12(events);
            default: throw new IllegalArgumentException("unknown query " + query);
        }
    }

    static DataStream<Bid> bids(DataStream<Event> events) {
        return events.filter(e -> e.type == Event.BID).name("bids")
                .map(e -> e.bid).returns(Bid.class).name("bid");
    }

    static DataStream<Auction> auctions(DataStream<Event> events) {
        return events.filter(e -> e.type == Event.AUCTION).name("auctions")
                .map(e -> e.auction).returns(Auction.class).name("auction");
    }

    static DataStream<Person> persons(DataStream<Event> events) {
        return events.filter(e -> e.type == Event.PERSON).name("persons")
                .map(e -> e.person).returns(Person.class).name("person");
    }

    /** q0, pass through: every bid, unchanged (SELECT auction, bidder, price, dateTime, extra FROM bid). */
    static DataStream<Bid> q0(DataStream<Event> events) {
        return bids(events);
    }

    /** q1, currency conversion: the price times 0.908. */
    static DataStream<Results.Q1> q1(DataStream<Event> events) {
        return events.filter(e -> e.type == Event.BID).name("bids")
                .map(e -> new Results.Q1(e.bid.auction, e.bid.bidder, 0.908 * e.bid.price, e.bid.dateTime, e.bid.extra))
                .returns(Results.Q1.class).name("q1 convert");
    }

    /** q2, selection: bids on auctions whose id is a multiple of 123. */
    static DataStream<Results.Q2> q2(DataStream<Event> events) {
        return events.filter(e -> e.type == Event.BID && e.bid.auction % 123 == 0).name("q2 select")
                .map(e -> new Results.Q2(e.bid.auction, e.bid.price)).returns(Results.Q2.class).name("q2 project");
    }

    /**
     * q3, local item suggestion: auctions of category 10 joined with their sellers from OR, ID or
     * CA, as an incremental (regular, unbounded) join keyed by person id. A person is kept in value
     * state; an auction that comes before its seller waits (its id) in list state. Nothing expires.
     */
    static DataStream<Results.Q3> q3(DataStream<Event> events) {
        DataStream<Q3Auction> a = events.filter(e -> e.type == Event.AUCTION && e.auction.category == 10)
                .name("q3 auctions")
                .map(e -> new Q3Auction(e.auction.id, e.auction.seller)).returns(Q3Auction.class).name("q3 auction");
        DataStream<Q3Person> p = events.filter(e -> {
                    if (e.type != Event.PERSON) {
                        return false;
                    }
                    String st = e.person.state;
                    return st.equals("OR") || st.equals("ID") || st.equals("CA");
                }).name("q3 persons")
                .map(e -> new Q3Person(e.person.id, e.person.name, e.person.city, e.person.state))
                .returns(Q3Person.class).name("q3 person");
        return a.keyBy(x -> x.seller, Types.LONG).connect(p.keyBy(x -> x.id, Types.LONG))
                .process(new Q3Join()).name("q3 join");
    }

    /** The columns of an auction q3 needs. */
    public static class Q3Auction {
        public long id;
        public long seller;

        public Q3Auction() {}

        Q3Auction(long id, long seller) {
            this.id = id;
            this.seller = seller;
        }
    }

    /** The columns of a person q3 needs. */
    public static class Q3Person {
        public long id;
        public String name;
        public String city;
        public String state;

        public Q3Person() {}

        Q3Person(long id, String name, String city, String state) {
            this.id = id;
            this.name = name;
            this.city = city;
            this.state = state;
        }
    }

    static final class Q3Join extends KeyedCoProcessFunction<Long, Q3Auction, Q3Person, Results.Q3> {
        private transient ValueState<Q3Person> person;
        private transient ListState<Long> waiting;

        @Override
        public void open(OpenContext ctx) {
            person = getRuntimeContext().getState(new ValueStateDescriptor<>("person", Q3Person.class));
            waiting = getRuntimeContext().getListState(new ListStateDescriptor<>("waiting-auctions", Types.LONG));
        }

        @Override
        public void processElement1(Q3Auction a, Context ctx, Collector<Results.Q3> out) throws Exception {
            Q3Person p = person.value();
            if (p != null) {
                out.collect(new Results.Q3(p.name, p.city, p.state, a.id));
            } else {
                waiting.add(a.id);
            }
        }

        @Override
        public void processElement2(Q3Person p, Context ctx, Collector<Results.Q3> out) throws Exception {
            person.update(p);
            Iterable<Long> ids = waiting.get();
            if (ids != null) {
                for (Long id : ids) {
                    out.collect(new Results.Q3(p.name, p.city, p.state, id));
                }
                waiting.clear();
            }
        }
    }

    /**
     * q4, average price per category: the winning bid of each auction (q9's, emitted at its
     * expiry), then per category a running sum and count, emitting the updated average (truncated,
     * as Flink's AVG on BIGINT) with each closed auction.
     */
    static DataStream<Results.Q4> q4(DataStream<Event> events) {
        return winningBids(events)
                .map(w -> new FinalPrice(w.auction.category, w.bid.price)).returns(FinalPrice.class).name("q4 final price")
                .keyBy(f -> f.category, Types.LONG)
                .process(new CategoryAverage()).name("q4 average");
    }

    /** An auction's category and final price. */
    public static class FinalPrice {
        public long category;
        public long price;

        public FinalPrice() {}

        FinalPrice(long category, long price) {
            this.category = category;
            this.price = price;
        }
    }

    /** Running sum and count. */
    public static class SumCount {
        public long sum;
        public long count;

        public SumCount() {}
    }

    static final class CategoryAverage extends KeyedProcessFunction<Long, FinalPrice, Results.Q4> {
        private transient ValueState<SumCount> acc;

        @Override
        public void open(OpenContext ctx) {
            acc = getRuntimeContext().getState(new ValueStateDescriptor<>("sum-count", SumCount.class));
        }

        @Override
        public void processElement(FinalPrice f, Context ctx, Collector<Results.Q4> out) throws Exception {
            SumCount sc = acc.value();
            if (sc == null) {
                sc = new SumCount();
            }
            sc.sum += f.price;
            sc.count++;
            acc.update(sc);
            out.collect(new Results.Q4(ctx.getCurrentKey(), sc.sum / sc.count, sc.count));
        }
    }

    /**
     * q5, hot items: bids per auction over sliding windows of 10 s every 2 s (an incremental
     * aggregate), then, per sliding window, the auctions with the most bids (all of them on a tie).
     * Each count carries its window's max timestamp, so a tumbling 2 s window over all counts
     * (windowAll) gathers exactly one sliding window's counts.
     */
    static DataStream<Results.Q5> q5(DataStream<Event> events) {
        final long size = 10_000;
        return bids(events)
                .keyBy(b -> b.auction, Types.LONG)
                .window(SlidingEventTimeWindows.of(Duration.ofMillis(size), Duration.ofSeconds(2)))
                .aggregate(new AuctionCount()).name("q5 count")
                .windowAll(TumblingEventTimeWindows.of(Duration.ofSeconds(2)))
                .aggregate(new HottestAuctions(), new ProcessAllWindowFunction<List<AuctionBids>, Results.Q5, TimeWindow>() {
                    @Override
                    public void process(Context ctx, Iterable<List<AuctionBids>> in, Collector<Results.Q5> out) {
                        long end = ctx.window().getEnd();
                        for (AuctionBids a : in.iterator().next()) {
                            out.collect(new Results.Q5(a.auction, a.num, end - size, end));
                        }
                    }
                }).name("q5 hottest");
    }

    /** The number of bids on an auction in one window. */
    public static class AuctionBids {
        public long auction;
        public long num;

        public AuctionBids() {}

        AuctionBids(long auction, long num) {
            this.auction = auction;
            this.num = num;
        }
    }

    /** Counts the bids of one auction (the key) in a window. */
    static final class AuctionCount implements AggregateFunction<Bid, AuctionBids, AuctionBids> {
        @Override
        public AuctionBids createAccumulator() {
            return new AuctionBids();
        }

        @Override
        public AuctionBids add(Bid b, AuctionBids acc) {
            acc.auction = b.auction;
            acc.num++;
            return acc;
        }

        @Override
        public AuctionBids getResult(AuctionBids acc) {
            return new AuctionBids(acc.auction, acc.num);
        }

        @Override
        public AuctionBids merge(AuctionBids a, AuctionBids b) {
            return new AuctionBids(Math.max(a.auction, b.auction), a.num + b.num);
        }
    }

    /** Keeps the counts equal to the largest seen. */
    static final class HottestAuctions implements AggregateFunction<AuctionBids, List<AuctionBids>, List<AuctionBids>> {
        @Override
        public List<AuctionBids> createAccumulator() {
            return new ArrayList<>();
        }

        @Override
        public List<AuctionBids> add(AuctionBids c, List<AuctionBids> acc) {
            if (acc.isEmpty() || c.num > acc.get(0).num) {
                acc.clear();
                acc.add(c);
            } else if (c.num == acc.get(0).num) {
                acc.add(c);
            }
            return acc;
        }

        @Override
        public List<AuctionBids> getResult(List<AuctionBids> acc) {
            return acc;
        }

        @Override
        public List<AuctionBids> merge(List<AuctionBids> a, List<AuctionBids> b) {
            List<AuctionBids> out = new ArrayList<>(a);
            for (AuctionBids c : b) {
                add(c, out);
            }
            return out;
        }
    }

    /**
     * q7, highest bid: the bids with the highest price of each tumbling 10 s window (all of them
     * on a tie); a bid belongs to its own window [start, end) only. Two-phase maximum: per auction
     * and window (keyed, parallel), then over those partial maxima per window (windowAll).
     */
    static DataStream<Bid> q7(DataStream<Event> events) {
        Duration size = Duration.ofSeconds(10);
        return bids(events)
                .keyBy(b -> b.auction, Types.LONG)
                .window(TumblingEventTimeWindows.of(size))
                .aggregate(new HighestBids()).name("q7 partial max")
                .flatMap(Queries::spread).returns(Bid.class).name("q7 spread")
                .windowAll(TumblingEventTimeWindows.of(size))
                .aggregate(new HighestBids()).name("q7 max")
                .flatMap(Queries::spread).returns(Bid.class).name("q7 highest bids");
    }

    static void spread(List<Bid> bids, Collector<Bid> out) {
        for (Bid b : bids) {
            out.collect(b);
        }
    }

    /** Keeps the bids with the highest price. */
    static final class HighestBids implements AggregateFunction<Bid, List<Bid>, List<Bid>> {
        @Override
        public List<Bid> createAccumulator() {
            return new ArrayList<>();
        }

        @Override
        public List<Bid> add(Bid b, List<Bid> acc) {
            if (acc.isEmpty() || b.price > acc.get(0).price) {
                acc.clear();
                acc.add(b);
            } else if (b.price == acc.get(0).price) {
                acc.add(b);
            }
            return acc;
        }

        @Override
        public List<Bid> getResult(List<Bid> acc) {
            return acc;
        }

        @Override
        public List<Bid> merge(List<Bid> a, List<Bid> b) {
            List<Bid> out = new ArrayList<>(a);
            for (Bid x : b) {
                add(x, out);
            }
            return out;
        }
    }

    /**
     * q8, monitor new users: the people who created an auction in the same tumbling 10 s window as
     * their registration (window join of people grouped by id and name with auctions grouped by
     * seller). As Flink's DataStream window join, both sides go, tagged, into one keyed tumbling
     * window (keyed by person id), whose incremental aggregate notes whether the person and an
     * auction of theirs are in it; one row per person and window.
     */
    static DataStream<Results.Q8> q8(DataStream<Event> events) {
        DataStream<NewUser> people = events.filter(e -> e.type == Event.PERSON).name("persons")
                .map(e -> new NewUser(e.person.id, e.person.name, true, false)).returns(NewUser.class).name("q8 person");
        DataStream<NewUser> sellers = events.filter(e -> e.type == Event.AUCTION).name("auctions")
                .map(e -> new NewUser(e.auction.seller, null, false, true)).returns(NewUser.class).name("q8 seller");
        return people.union(sellers)
                .keyBy(u -> u.id, Types.LONG)
                .window(TumblingEventTimeWindows.of(Duration.ofSeconds(10)))
                .aggregate(new JoinUser(), new ProcessWindowFunction<NewUser, Results.Q8, Long, TimeWindow>() {
                    @Override
                    public void process(Long id, Context ctx, Iterable<NewUser> in, Collector<Results.Q8> out) {
                        NewUser u = in.iterator().next();
                        if (u.person && u.auction) {
                            out.collect(new Results.Q8(id, u.name, ctx.window().getStart()));
                        }
                    }
                }).name("q8 window join");
    }

    /** A person (person set, with the name) or an auction's seller (auction set); the join's accumulator has both. */
    public static class NewUser {
        public long id;
        public String name;
        public boolean person;
        public boolean auction;

        public NewUser() {}

        NewUser(long id, String name, boolean person, boolean auction) {
            this.id = id;
            this.name = name;
            this.person = person;
            this.auction = auction;
        }
    }

    static final class JoinUser implements AggregateFunction<NewUser, NewUser, NewUser> {
        @Override
        public NewUser createAccumulator() {
            return new NewUser();
        }

        @Override
        public NewUser add(NewUser u, NewUser acc) {
            acc.id = u.id;
            if (u.person) {
                acc.person = true;
                acc.name = u.name;
            }
            acc.auction = acc.auction || u.auction;
            return acc;
        }

        @Override
        public NewUser getResult(NewUser acc) {
            return acc;
        }

        @Override
        public NewUser merge(NewUser a, NewUser b) {
            if (b.person) {
                add(new NewUser(b.id, b.name, true, false), a);
            }
            a.auction = a.auction || b.auction;
            return a;
        }
    }

    /**
     * q9, winning bids: per auction the highest bid (earliest on a tie) made between the auction's
     * start and its expiry, emitted when the watermark passes the expiry.
     */
    static DataStream<Results.Q9> q9(DataStream<Event> events) {
        return winningBids(events);
    }

    static DataStream<Results.Q9> winningBids(DataStream<Event> events) {
        return auctions(events).keyBy(a -> a.id, Types.LONG)
                .connect(bids(events).keyBy(b -> b.auction, Types.LONG))
                .process(new WinningBid()).name("winning bids");
    }

    /**
     * How long, in event time after an auction expires, WinningBid remembers that it is closed, so
     * that later bids for it are dropped at once: the source's watermark delay (as the Go query).
     */
    static final long CLOSED_RETENTION_MS = 4000;

    /**
     * Keeps each auction and its best bid so far, emits the winner once when the watermark passes
     * the auction's expiry, then remembers the auction as closed for CLOSED_RETENTION_MS. Bids that
     * come before their auction wait until it comes or the watermark passes them.
     */
    static final class WinningBid extends KeyedCoProcessFunction<Long, Auction, Bid, Results.Q9> {
        private transient ValueState<Auction> auction;
        private transient ValueState<Bid> best;
        private transient ListState<Bid> early;
        private transient ValueState<Long> closed;

        @Override
        public void open(OpenContext ctx) {
            auction = getRuntimeContext().getState(new ValueStateDescriptor<>("auction", Auction.class));
            best = getRuntimeContext().getState(new ValueStateDescriptor<>("best-bid", Bid.class));
            early = getRuntimeContext().getListState(new ListStateDescriptor<>("early-bids", Bid.class));
            closed = getRuntimeContext().getState(new ValueStateDescriptor<>("closed", Types.LONG));
        }

        /** Whether b beats the current best: higher price, then earlier; on a full tie the first stays. */
        private static boolean better(Bid b, Bid best) {
            return b.price > best.price || (b.price == best.price && b.dateTime < best.dateTime);
        }

        private void offer(Auction a, Bid b) throws Exception {
            if (b.dateTime < a.dateTime || b.dateTime > a.expires) {
                return;
            }
            Bid cur = best.value();
            if (cur != null && !better(b, cur)) {
                return;
            }
            best.update(b);
        }

        @Override
        public void processElement1(Auction a, Context ctx, Collector<Results.Q9> out) throws Exception {
            auction.update(a);
            Iterable<Bid> waiting = early.get();
            if (waiting != null) {
                for (Bid b : waiting) {
                    offer(a, b);
                }
            }
            early.clear();
            ctx.timerService().registerEventTimeTimer(a.expires);
        }

        @Override
        public void processElement2(Bid b, Context ctx, Collector<Results.Q9> out) throws Exception {
            Auction a = auction.value();
            if (a != null) {
                offer(a, b);
                return;
            }
            if (closed.value() != null) {
                return; // the auction has been emitted; this bid is after its expiry
            }
            if (b.dateTime < ctx.timerService().currentWatermark()) {
                return; // late: its auction, if any, would be late too
            }
            early.add(b);
            ctx.timerService().registerEventTimeTimer(b.dateTime);
        }

        @Override
        public void onTimer(long ts, OnTimerContext ctx, Collector<Results.Q9> out) throws Exception {
            Auction a = auction.value();
            if (a != null) {
                if (ts >= a.expires) {
                    Bid b = best.value();
                    if (b != null) {
                        out.collect(new Results.Q9(a, b));
                    }
                    auction.clear();
                    best.clear();
                    closed.update(a.expires);
                    ctx.timerService().registerEventTimeTimer(a.expires + CLOSED_RETENTION_MS);
                }
                return;
            }
            Long exp = closed.value();
            if (exp != null && ts >= exp + CLOSED_RETENTION_MS) {
                closed.clear();
            }
            // Early bids the watermark has passed can no longer meet their auction.
            Iterable<Bid> waiting = early.get();
            if (waiting == null) {
                return;
            }
            List<Bid> keep = new ArrayList<>();
            int n = 0;
            for (Bid b : waiting) {
                n++;
                if (b.dateTime > ts) {
                    keep.add(b);
                }
            }
            if (keep.size() < n) {
                early.update(keep);
            }
        }
    }

    /** Counts elements. */
    static final class CountBids implements AggregateFunction<Bid, Long, Long> {
        @Override
        public Long createAccumulator() {
            return 0L;
        }

        @Override
        public Long add(Bid b, Long acc) {
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

    /** q11, user sessions: bids per bidder per session (10 s gap). */
    static DataStream<Results.BidderCount> q11(DataStream<Event> events) {
        return bids(events)
                .keyBy(b -> b.bidder, Types.LONG)
                .window(EventTimeSessionWindows.withGap(Duration.ofSeconds(10)))
                .aggregate(new CountBids(), new BidderWindowCount()).name("q11 sessions");
    }

    static final class BidderWindowCount extends ProcessWindowFunction<Long, Results.BidderCount, Long, TimeWindow> {
        @Override
        public void process(Long bidder, Context ctx, Iterable<Long> counts, Collector<Results.BidderCount> out) {
            out.collect(new Results.BidderCount(bidder, counts.iterator().next(),
                    ctx.window().getStart(), ctx.window().getEnd()));
        }
    }

    /** q12, processing-time windows: bids per bidder per tumbling 10 s window of processing time. */
    static DataStream<Results.BidderCount> q12(DataStream<Event> events) {
        return bids(events)
                .keyBy(b -> b.bidder, Types.LONG)
                .window(TumblingProcessingTimeWindows.of(Duration.ofSeconds(10)))
                .aggregate(new CountBids(), new BidderWindowCount()).name("q12 windows");
    }
}
