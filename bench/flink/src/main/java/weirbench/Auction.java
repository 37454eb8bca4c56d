package weirbench;

/** A Nexmark auction (Flink POJO). Times in ms of event time. */
public class Auction {
    public long id;
    public String itemName;
    public String description;
    public long initialBid;
    public long reserve;
    public long dateTime;
    public long expires;
    public long seller;
    public long category;
    public String extra;

    public Auction() {}

    public Auction(long id, String itemName, String description, long initialBid, long reserve,
                   long dateTime, long expires, long seller, long category, String extra) {
        this.id = id;
        this.itemName = itemName;
        this.description = description;
        this.initialBid = initialBid;
        this.reserve = reserve;
        this.dateTime = dateTime;
        this.expires = expires;
        this.seller = seller;
        this.category = category;
        this.extra = extra;
    }

    @Override
    public String toString() {
        return "Auction{id=" + id + ", item=" + itemName + ", desc=" + description.length() + "b, initialBid=" + initialBid
                + ", reserve=" + reserve + ", dateTime=" + dateTime + ", expires=" + expires + ", seller=" + seller
                + ", category=" + category + ", extra=" + extra.length() + "b}";
    }
}
