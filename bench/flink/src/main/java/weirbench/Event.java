package weirbench;

/**
 * One Nexmark event: a tagged union as the Nexmark table's row (event_type 0 person, 1 auction,
 * 2 bid); only the part named by {@link #type} is set.
 */
public class Event {
    public static final int PERSON = 0;
    public static final int AUCTION = 1;
    public static final int BID = 2;

    public int type;
    public Person person;
    public Auction auction;
    public Bid bid;

    public Event() {}

    public static Event of(Person p) {
        Event e = new Event();
        e.type = PERSON;
        e.person = p;
        return e;
    }

    public static Event of(Auction a) {
        Event e = new Event();
        e.type = AUCTION;
        e.auction = a;
        return e;
    }

    public static Event of(Bid b) {
        Event e = new Event();
        e.type = BID;
        e.bid = b;
        return e;
    }

    /** The event's time (its part's dateTime), in ms. */
    public long timestamp() {
        switch (type) {
            case PERSON: return person.dateTime;
            case AUCTION: return auction.dateTime;
            default: return bid.dateTime;
        }
    }

    @Override
    public String toString() {
        switch (type) {
            case PERSON: return person.toString();
            case AUCTION: return auction.toString();
            default: return bid.toString();
        }
    }
}
