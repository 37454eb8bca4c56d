package weirbench;

/** One line per event, the format bench/compare.sh's generator cross-check diffs against Go's. */
final class EventFormat {
    private EventFormat() {}

    static String line(Event e) {
        switch (e.type) {
            case Event.PERSON: {
                Person p = e.person;
                return "P|" + p.id + "|" + p.name + "|" + p.emailAddress + "|" + p.creditCard + "|" + p.city + "|"
                        + p.state + "|" + p.dateTime + "|" + p.extra;
            }
            case Event.AUCTION: {
                Auction a = e.auction;
                return "A|" + a.id + "|" + a.itemName + "|" + a.description + "|" + a.initialBid + "|" + a.reserve + "|"
                        + a.dateTime + "|" + a.expires + "|" + a.seller + "|" + a.category + "|" + a.extra;
            }
            default: {
                Bid b = e.bid;
                return "B|" + b.auction + "|" + b.bidder + "|" + b.price + "|" + b.channel + "|" + b.url + "|"
                        + b.dateTime + "|" + b.extra;
            }
        }
    }

    /** Parses a line of {@link #line}'s format (the Go side's nexmark.AppendLine). */
    static Event parse(String line) {
        String[] f = line.split("\\|", -1);
        switch (f[0]) {
            case "P":
                want(f, 9, line);
                return Event.of(new Person(Long.parseLong(f[1]), f[2], f[3], f[4], f[5], f[6], Long.parseLong(f[7]), f[8]));
            case "A":
                want(f, 11, line);
                return Event.of(new Auction(Long.parseLong(f[1]), f[2], f[3], Long.parseLong(f[4]), Long.parseLong(f[5]),
                        Long.parseLong(f[6]), Long.parseLong(f[7]), Long.parseLong(f[8]), Long.parseLong(f[9]), f[10]));
            case "B":
                want(f, 8, line);
                return Event.of(new Bid(Long.parseLong(f[1]), Long.parseLong(f[2]), Long.parseLong(f[3]), f[4], f[5],
                        Long.parseLong(f[6]), f[7]));
            default:
                throw new IllegalArgumentException("unknown event type in line " + line);
        }
    }

    private static void want(String[] f, int n, String line) {
        if (f.length != n) {
            throw new IllegalArgumentException(f.length + " fields, want " + n + ", in line " + line);
        }
    }
}
