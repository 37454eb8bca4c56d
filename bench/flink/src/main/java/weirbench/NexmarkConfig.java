package weirbench;

import java.io.Serializable;

/**
 * Generator settings, with the defaults of nexmark/nexmark's NexmarkConfiguration and of the Go
 * generator (weir/nexmark Config): the two must agree for both engines to see the same events.
 */
final class NexmarkConfig implements Serializable {
    private static final long serialVersionUID = 1L;

    /** Event time of event number 0 (2015-07-15T00:00:00Z, Beam's base time), as the Go default. */
    static final long DEFAULT_BASE_TIME = 1436918400000L;
    static final double DEFAULT_RATE = 10_000;

    long events;
    double rate = DEFAULT_RATE;
    int generators = 1;
    long seed;
    long baseTime = DEFAULT_BASE_TIME;
    long watermarkDelayMs = 4000;

    int personProportion = 1;
    int auctionProportion = 3;
    int bidProportion = 46;

    int avgPersonByteSize = 200;
    int avgAuctionByteSize = 500;
    int avgBidByteSize = 100;

    int hotAuctionRatio = 2;
    int hotSellersRatio = 4;
    int hotBiddersRatio = 4;

    int numActivePeople = 1000;
    int numInFlightAuctions = 100;
    int outOfOrderGroupSize = 1;

    /** Flink's double FIRST_PERSON_ID on bidders (nexmark/nexmark#30); off as in the Go default. */
    boolean doubleBidderOffset;

    int totalProportion() {
        return personProportion + auctionProportion + bidProportion;
    }

    long maxEvents() {
        if (events > 0) {
            return events;
        }
        return Long.MAX_VALUE / ((long) totalProportion()
                * Math.max(Math.max(avgPersonByteSize, avgAuctionByteSize), avgBidByteSize));
    }
}
