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
}
