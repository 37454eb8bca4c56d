package weirbench;

/** Result rows of the queries (Flink POJOs). */
final class Results {
    private Results() {}

    /** q1: a bid with its price in euros. */
    public static class Q1 {
        public long auction;
        public long bidder;
        public double price;
        public long dateTime;
        public String extra;

        public Q1() {}

        public Q1(long auction, long bidder, double price, long dateTime, String extra) {
            this.auction = auction;
            this.bidder = bidder;
            this.price = price;
            this.dateTime = dateTime;
            this.extra = extra;
        }
    }

    /** q2: auction and price. */
    public static class Q2 {
        public long auction;
        public long price;

        public Q2() {}

        public Q2(long auction, long price) {
            this.auction = auction;
            this.price = price;
        }
    }

    /** q3: name, city, state of the seller and the auction id. */
    public static class Q3 {
        public String name;
        public String city;
        public String state;
        public long id;

        public Q3() {}

        public Q3(String name, String city, String state, long id) {
            this.name = name;
            this.city = city;
            this.state = state;
            this.id = id;
        }
    }

    /** q4: a category and the average of its auctions' winning prices so far (truncated). */
    public static class Q4 {
        public long category;
        public long avg;
        public long count;

        public Q4() {}

        public Q4(long category, long avg, long count) {
            this.category = category;
            this.avg = avg;
            this.count = count;
        }
    }

    /** q5: an auction with the most bids in a window (ties: all of them). */
    public static class Q5 {
        public long auction;
        public long num;
        public long start;
        public long end;

        public Q5() {}

        public Q5(long auction, long num, long start, long end) {
            this.auction = auction;
            this.num = num;
            this.start = start;
            this.end = end;
        }
    }

    /** q8: a person who created auctions in the window where they were created. */
    public static class Q8 {
        public long id;
        public String name;
        public long startTime;

        public Q8() {}

        public Q8(long id, String name, long startTime) {
            this.id = id;
            this.name = name;
            this.startTime = startTime;
        }
    }

    /** q9: an auction and its winning bid. */
    public static class Q9 {
        public Auction auction;
        public Bid bid;

        public Q9() {}

        public Q9(Auction auction, Bid bid) {
            this.auction = auction;
            this.bid = bid;
        }
    }

    /** q11 and q12: bids per bidder per window (session or processing-time tumbling). */
    public static class BidderCount {
        public long bidder;
        public long count;
        public long start;
        public long end;

        public BidderCount() {}

        public BidderCount(long bidder, long count, long start, long end) {
            this.bidder = bidder;
            this.count = count;
            this.start = start;
            this.end = end;
        }
    }
}
