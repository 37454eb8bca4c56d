package weirbench;

/** A Nexmark bid (Flink POJO). Times in ms of event time. */
public class Bid {
    public long auction;
    public long bidder;
    public long price;
    public String channel;
    public String url;
    public long dateTime;
    public String extra;

    public Bid() {}

    public Bid(long auction, long bidder, long price, String channel, String url, long dateTime, String extra) {
        this.auction = auction;
        this.bidder = bidder;
        this.price = price;
        this.channel = channel;
        this.url = url;
        this.dateTime = dateTime;
        this.extra = extra;
    }

    @Override
    public String toString() {
        return "Bid{auction=" + auction + ", bidder=" + bidder + ", price=" + price + ", channel=" + channel
                + ", url=" + url + ", dateTime=" + dateTime + ", extra=" + extra.length() + "b}";
    }
}
