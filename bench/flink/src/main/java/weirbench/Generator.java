package weirbench;

/**
 * One split of the Nexmark event generator: nexmark/nexmark's NexmarkGenerator with its
 * Person/Auction/Bid/Price/Strings generators, in the same random-number call order, but seeded
 * (from the run's seed and the split index) and with a fixed base time, exactly as the Go
 * generator (weir/nexmark Generator), so that both engines see the same events.
 *
 * <p>Split i of n owns event ids [1 + i*(max/n), ...) with max/n events (the last split takes the
 * remainder) on its own timeline starting at event number 1, as GeneratorConfig.split.
 */
final class Generator {
    static final long FIRST_PERSON_ID = 1000;
    static final long FIRST_AUCTION_ID = 1000;
    static final long FIRST_CATEGORY_ID = 10;
    static final int NUM_CATEGORIES = 5;
    private static final int PERSON_ID_LEAD = 10;
    private static final int AUCTION_ID_LEAD = 10;
    private static final int HOT_SELLER_RATIO = 100;
    private static final int HOT_BIDDER_RATIO = 100;
    private static final int HOT_AUCTION_RATIO = 100;

    private final int index;
    private final long firstEventId;
    private final long firstEventNumber = 1;
    private final long maxEvents;
    private long count;

    private final long baseTime;
    private final double interEventDelayUs;
    private final long personProportion;
    private final long auctionProportion;
    private final long totalProportion;
    private final long outOfOrderGroupSize;
    private final int hotAuctionRatio;
    private final int hotSellersRatio;
    private final int hotBiddersRatio;
    private final long numActivePeople;
    private final long numInFlightAuctions;
    private final int avgPersonByteSize;
    private final int avgAuctionByteSize;
    private final int avgBidByteSize;
    private final long eventsAhead;
    private final boolean doubleBidderOffset;

    private final SplitRand rnd;
    private final Tables tab = Tables.get();

    Generator(NexmarkConfig cfg, int index) {
        int n = cfg.generators;
        long max = cfg.maxEvents();
        long sub = max / n;
        this.index = index;
        this.firstEventId = 1 + (long) index * sub;
        if (index == n - 1) {
            sub = max - sub * (n - 1);
        }
        this.maxEvents = sub;
        this.baseTime = cfg.baseTime;
        this.interEventDelayUs = 1_000_000.0 / cfg.rate * n;
        this.personProportion = cfg.personProportion;
        this.auctionProportion = cfg.auctionProportion;
        this.totalProportion = cfg.totalProportion();
        this.outOfOrderGroupSize = cfg.outOfOrderGroupSize;
        this.hotAuctionRatio = cfg.hotAuctionRatio;
        this.hotSellersRatio = cfg.hotSellersRatio;
        this.hotBiddersRatio = cfg.hotBiddersRatio;
        this.numActivePeople = cfg.numActivePeople;
        this.numInFlightAuctions = cfg.numInFlightAuctions;
        this.avgPersonByteSize = cfg.avgPersonByteSize;
        this.avgAuctionByteSize = cfg.avgAuctionByteSize;
        this.avgBidByteSize = cfg.avgBidByteSize;
        this.eventsAhead = (long) cfg.numInFlightAuctions * totalProportion / cfg.auctionProportion;
        this.doubleBidderOffset = cfg.doubleBidderOffset;
        this.rnd = new SplitRand(SplitRand.mix64(cfg.seed ^ SplitRand.mix64(index + 1L)));
    }

    int index() {
        return index;
    }

    long emitted() {
        return count;
    }

    boolean hasNext() {
        return count < maxEvents;
    }

    long remaining() {
        return maxEvents - count;
    }

    /** Skips n events (restoring a split): generates and drops them, so the RNG state matches. */
    void skip(long n) {
        for (long i = 0; i < n && hasNext(); i++) {
            next();
        }
    }

    private long adjustedNumber(long c) {
        long num = firstEventNumber + c;
        if (outOfOrderGroupSize == 1) {
            return num;
        }
        long n = outOfOrderGroupSize;
        return (num / n) * n + (num * 953) % n;
    }

    private long timestampFor(long number) {
        return baseTime + (long) (number * interEventDelayUs) / 1000L;
    }

    Event next() {
        long number = adjustedNumber(count);
        long ts = timestampFor(number);
        long id = firstEventId + number;
        long rem = id % totalProportion;
        Event e;
        if (rem < personProportion) {
            e = Event.of(nextPerson(id, ts));
        } else if (rem < personProportion + auctionProportion) {
            e = Event.of(nextAuction(number, id, ts));
        } else {
            e = Event.of(nextBid(id, ts));
        }
        count++;
        return e;
    }

    private long lastBase0PersonId(long eventId) {
        long epoch = eventId / totalProportion;
        long offset = eventId % totalProportion;
        if (offset >= personProportion) {
            offset = personProportion - 1;
        }
        return epoch * personProportion + offset;
    }

    private long lastBase0AuctionId(long eventId) {
        long epoch = eventId / totalProportion;
        long offset = eventId % totalProportion;
        if (offset < personProportion) {
            epoch--;
            offset = auctionProportion - 1;
        } else if (offset >= personProportion + auctionProportion) {
            offset = auctionProportion - 1;
        } else {
            offset -= personProportion;
        }
        return epoch * auctionProportion + offset;
    }

    private long nextBase0PersonId(long eventId) {
        long numPeople = lastBase0PersonId(eventId) + 1;
        long active = Math.min(numPeople, numActivePeople);
        return numPeople - active + rnd.nextLong(active + PERSON_ID_LEAD);
    }

    private long nextBase0AuctionId(long eventId) {
        long maxA = lastBase0AuctionId(eventId);
        long minA = Math.max(maxA - numInFlightAuctions, 0);
        return minA + rnd.nextLong(maxA - minA + 1 + AUCTION_ID_LEAD);
    }

    /** PriceGenerator.nextPrice: log-uniform cents, 100 .. 1e8. */
    private long nextPrice() {
        return Math.round(Math.pow(10.0, rnd.nextDouble() * 6.0) * 100.0);
    }

    /** StringsGenerator.nextString: 3..max-1 chars, special with probability 1/13, then trim(). */
    private String nextString(int maxLength, char special) {
        int len = 3 + rnd.nextInt(maxLength - 3);
        StringBuilder sb = new StringBuilder(len);
        while (len-- > 0) {
            if (rnd.nextInt(13) == 0) {
                sb.append(special);
            } else {
                sb.append((char) ('a' + rnd.nextInt(26)));
            }
        }
        return sb.toString().trim();
    }

    /** StringsGenerator.nextExtra: a slice of the shared padding string at a random offset. */
    private String nextExtra(int currentSize, int desiredAverageSize) {
        if (currentSize > desiredAverageSize) {
            return "";
        }
        desiredAverageSize -= currentSize;
        int delta = (int) Math.round(desiredAverageSize * 0.2);
        int minSize = desiredAverageSize - delta;
        int size = minSize + (delta == 0 ? 0 : rnd.nextInt(2 * delta));
        int offset = rnd.nextInt(Tables.EXTRA_SIZE - size);
        return tab.extra.substring(offset, offset + size);
    }

    private Person nextPerson(long eventId, long ts) {
        long id = lastBase0PersonId(eventId) + FIRST_PERSON_ID;
        String name = Tables.FIRST_NAMES[rnd.nextInt(Tables.FIRST_NAMES.length)] + " "
                + Tables.LAST_NAMES[rnd.nextInt(Tables.LAST_NAMES.length)];
        String email = nextString(7, ' ') + "@" + nextString(5, ' ') + ".com";
        StringBuilder cc = new StringBuilder(19);
        for (int i = 0; i < 4; i++) {
            if (i > 0) {
                cc.append(' ');
            }
            cc.append(Tables.CREDIT_CARD[rnd.nextInt(10000)]);
        }
        String card = cc.toString();
        String city = Tables.CITIES[rnd.nextInt(Tables.CITIES.length)];
        String state = Tables.STATES[rnd.nextInt(Tables.STATES.length)];
        int size = 8 + name.length() + email.length() + card.length() + city.length() + state.length();
        return new Person(id, name, email, card, city, state, ts, nextExtra(size, avgPersonByteSize));
    }

    private Auction nextAuction(long number, long eventId, long ts) {
        long id = lastBase0AuctionId(eventId) + FIRST_AUCTION_ID;
        long seller;
        if (rnd.nextInt(hotSellersRatio) > 0) {
            seller = (lastBase0PersonId(eventId) / HOT_SELLER_RATIO) * HOT_SELLER_RATIO;
        } else {
            seller = nextBase0PersonId(eventId);
        }
        seller += FIRST_PERSON_ID;
        long category = FIRST_CATEGORY_ID + rnd.nextInt(NUM_CATEGORIES);
        long initialBid = nextPrice();
        long horizon = timestampFor(number + eventsAhead) - ts;
        long expires = ts + 1 + rnd.nextLong(Math.max(horizon * 2, 1));
        String name = nextString(20, ' ');
        String desc = nextString(100, ' ');
        long reserve = initialBid + nextPrice();
        int size = 8 + name.length() + desc.length() + 8 + 8 + 8 + 8 + 8;
        return new Auction(id, name, desc, initialBid, reserve, ts, expires, seller, category,
                nextExtra(size, avgAuctionByteSize));
    }

    private Bid nextBid(long eventId, long ts) {
        long auction;
        if (rnd.nextInt(hotAuctionRatio) > 0) {
            auction = (lastBase0AuctionId(eventId) / HOT_AUCTION_RATIO) * HOT_AUCTION_RATIO;
        } else {
            auction = nextBase0AuctionId(eventId);
        }
        auction += FIRST_AUCTION_ID;
        long bidder;
        if (rnd.nextInt(hotBiddersRatio) > 0) {
            bidder = (lastBase0PersonId(eventId) / HOT_BIDDER_RATIO) * HOT_BIDDER_RATIO + 1;
        } else {
            bidder = nextBase0PersonId(eventId);
        }
        bidder += FIRST_PERSON_ID;
        long price = nextPrice();
        String channel;
        String url;
        if (rnd.nextInt(2) > 0) {
            int i = rnd.nextInt(Tables.HOT_CHANNELS.length);
            channel = Tables.HOT_CHANNELS[i];
            url = tab.hotUrls[i];
        } else {
            int c = rnd.nextInt(Tables.NUM_CHANNELS);
            channel = tab.channels[c];
            url = tab.channelUrls[c];
        }
        if (doubleBidderOffset) {
            bidder += FIRST_PERSON_ID;
        }
        return new Bid(auction, bidder, price, channel, url, ts, nextExtra(8 + 8 + 8 + 8, avgBidByteSize));
    }
}
