package weirbench;

/**
 * The events checksum of weir/nexmark (Memory.Checksum, EventChecksum): the event type, then
 * every field in EventFormat's order, integers as 64-bit words and strings as their length then
 * their bytes, 8 at a time little-endian (the last word zero-padded), each word mixed in as
 * h = (h ^ word) * 1099511628211. Equal checksums on both engines mean they replay the same
 * events. Strings are taken as bytes of their chars (the generator's are ASCII).
 */
final class Checksum {
    private Checksum() {}

    static final long SEED = 0xcbf29ce484222325L; // 14695981039346656037
    private static final long PRIME = 1099511628211L;

    private static long word(long h, long w) {
        return (h ^ w) * PRIME;
    }

    private static long string(long h, String s) {
        int n = s.length();
        h = word(h, n);
        int i = 0;
        for (; i + 8 <= n; i += 8) {
            long w = 0;
            for (int j = 7; j >= 0; j--) {
                w = (w << 8) | (s.charAt(i + j) & 0xff);
            }
            h = word(h, w);
        }
        long w = 0;
        for (int j = n - 1; j >= i; j--) {
            w = (w << 8) | (s.charAt(j) & 0xff);
        }
        return word(h, w);
    }

    static long event(long h, Event e) {
        h = word(h, e.type);
        switch (e.type) {
            case Event.PERSON: {
                Person p = e.person;
                h = word(h, p.id);
                h = string(h, p.name);
                h = string(h, p.emailAddress);
                h = string(h, p.creditCard);
                h = string(h, p.city);
                h = string(h, p.state);
                h = word(h, p.dateTime);
                return string(h, p.extra);
            }
            case Event.AUCTION: {
                Auction a = e.auction;
                h = word(h, a.id);
                h = string(h, a.itemName);
                h = string(h, a.description);
                h = word(h, a.initialBid);
                h = word(h, a.reserve);
                h = word(h, a.dateTime);
                h = word(h, a.expires);
                h = word(h, a.seller);
                h = word(h, a.category);
                return string(h, a.extra);
            }
            default: {
                Bid b = e.bid;
                h = word(h, b.auction);
                h = word(h, b.bidder);
                h = word(h, b.price);
                h = string(h, b.channel);
                h = string(h, b.url);
                h = word(h, b.dateTime);
                return string(h, b.extra);
            }
        }
    }
}
