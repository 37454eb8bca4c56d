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

    /** q6: a seller's average selling price over their last 11 closed auctions. */
    public static class Q6 {
        public long seller;
        public long avg;

        public Q6() {}

        public Q6(long seller, long avg) {
            this.seller = seller;
            this.avg = avg;
        }
    }

    /** q13: a bid with the side-input value of its auction. */
    public static class Q13 {
        public long auction;
        public long bidder;
        public long price;
        public long dateTime;
        public String value;

        public Q13() {}

        public Q13(long auction, long bidder, long price, long dateTime, String value) {
            this.auction = auction;
            this.bidder = bidder;
            this.price = price;
            this.dateTime = dateTime;
            this.value = value;
        }
    }

    /** q14: a bid in the price band with its derived columns. */
    public static class Q14 {
        public long auction;
        public long bidder;
        public double price;
        public String bidTimeType;
        public long dateTime;
        public String extra;
        public long cCounts;

        public Q14() {}

        public Q14(long auction, long bidder, double price, String bidTimeType, long dateTime, String extra, long cCounts) {
            this.auction = auction;
            this.bidder = bidder;
            this.price = price;
            this.bidTimeType = bidTimeType;
            this.dateTime = dateTime;
            this.extra = extra;
            this.cCounts = cCounts;
        }
    }

    /** q15: a day's bids, distinct bidders and distinct auctions, each total then ranks 1-3. */
    public static class Q15 {
        public String day;
        public long[] bids = new long[4];
        public long[] bidders = new long[4];
        public long[] auctions = new long[4];

        public Q15() {}
    }

    /** q16: q15's statistics per channel and day, with the latest minute. */
    public static class Q16 {
        public String channel;
        public String day;
        public String minute;
        public long[] bids = new long[4];
        public long[] bidders = new long[4];
        public long[] auctions = new long[4];

        public Q16() {}
    }

    /** q17: an auction's bids on one day: counts total and per rank, min, max, avg, sum of prices. */
    public static class Q17 {
        public long auction;
        public String day;
        public long[] bids = new long[4];
        public long minPrice;
        public long maxPrice;
        public long avgPrice;
        public long sumPrice;

        public Q17() {}
    }

    /** q19: a bid and its rank among its auction's ten highest. */
    public static class Q19 {
        public Bid bid;
        public long rank;

        public Q19() {}

        public Q19(Bid bid, long rank) {
            this.bid = bid;
            this.rank = rank;
        }
    }

    /** q20: a bid with its auction. */
    public static class Q20 {
        public Bid bid;
        public Auction auction;

        public Q20() {}

        public Q20(Bid bid, Auction auction) {
            this.bid = bid;
            this.auction = auction;
        }
    }

    /** q21: a bid with its channel id. */
    public static class Q21 {
        public long auction;
        public long bidder;
        public long price;
        public String channel;
        public String channelId;

        public Q21() {}

        public Q21(long auction, long bidder, long price, String channel, String channelId) {
            this.auction = auction;
            this.bidder = bidder;
            this.price = price;
            this.channel = channel;
            this.channelId = channelId;
        }
    }

    /** q22: a bid with the first three directories of its URL. */
    public static class Q22 {
        public long auction;
        public long bidder;
        public long price;
        public String channel;
        public String dir1;
        public String dir2;
        public String dir3;

        public Q22() {}

        public Q22(long auction, long bidder, long price, String channel, String dir1, String dir2, String dir3) {
            this.auction = auction;
            this.bidder = bidder;
            this.price = price;
            this.channel = channel;
            this.dir1 = dir1;
            this.dir2 = dir2;
            this.dir3 = dir3;
        }
    }

    /** q23: a bid with its bidder and an auction the bidder sells. */
    public static class Q23 {
        public Bid bid;
        public Person person;
        public Auction auction;

        public Q23() {}

        public Q23(Bid bid, Person person, Auction auction) {
            this.bid = bid;
            this.person = person;
            this.auction = auction;
        }
    }
}
