package weirbench;

/**
 * The generator's per-process tables: the 1 MiB padding string, the 4 hot URLs and the 10,000
 * channel URLs. nexmark-flink draws them from an unseeded RNG once per JVM; here, as in the Go
 * generator, from fixed seeds, so both engines carry the same strings.
 */
final class Tables {
    static final String[] STATES = {"AZ", "CA", "ID", "OR", "WA", "WY"};
    static final String[] CITIES = {"Phoenix", "Los Angeles", "San Francisco", "Boise", "Portland", "Bend",
            "Redmond", "Seattle", "Kent", "Cheyenne"};
    static final String[] FIRST_NAMES = {"Peter", "Paul", "Luke", "John", "Saul", "Vicky", "Kate", "Julie",
            "Sarah", "Deiter", "Walter"};
    static final String[] LAST_NAMES = {"Shultz", "Abrams", "Spencer", "White", "Bartels", "Walton", "Smith",
            "Jones", "Noris"};
    static final String[] HOT_CHANNELS = {"Google", "Facebook", "Baidu", "Apple"};
    static final int NUM_CHANNELS = 10_000;
    static final int EXTRA_SIZE = 1 << 20;
    static final long TABLES_SEED = 0x6e65786d61726bL; // "nexmark"
    static final String[] CREDIT_CARD = new String[10000];

    static {
        for (int i = 0; i < CREDIT_CARD.length; i++) {
            CREDIT_CARD[i] = String.format("%04d", i);
        }
    }

    final String extra;
    final String[] hotUrls = new String[4];
    final String[] channels = new String[NUM_CHANNELS];
    final String[] channelUrls = new String[NUM_CHANNELS];

    private static volatile Tables instance;

    static Tables get() {
        Tables t = instance;
        if (t == null) {
            synchronized (Tables.class) {
                t = instance;
                if (t == null) {
                    t = new Tables();
                    instance = t;
                }
            }
        }
        return t;
    }

    private Tables() {
        // StringsGenerator.nextExactString for long lengths: 6 chars per nextInt(), 'a' + rnd % 26
        // (Java's remainder, so negative draws give 'H'..'`').
        SplitRand r = new SplitRand(TABLES_SEED);
        char[] b = new char[EXTRA_SIZE];
        int rnd = 0;
        int n = 0;
        for (int i = 0; i < b.length; i++) {
            if (n == 0) {
                rnd = r.nextInt();
                n = 6;
            }
            b[i] = (char) ('a' + rnd % 26);
            rnd /= 26;
            n--;
        }
        extra = new String(b);
        // BidGenerator's static initialisation: hot URLs, then the channel cache, from one RNG.
        r = new SplitRand(SplitRand.mix64(TABLES_SEED));
        for (int i = 0; i < hotUrls.length; i++) {
            hotUrls[i] = baseUrl(r);
        }
        for (int i = 0; i < NUM_CHANNELS; i++) {
            String url = baseUrl(r);
            if (r.nextInt(10) > 0) {
                url = url + "&channel_id=" + Math.abs(Integer.reverse(i));
            }
            channels[i] = "channel-" + i;
            channelUrls[i] = url;
        }
    }

    private static String baseUrl(SplitRand r) {
        return "https://www.nexmark.com/" + nextString(r, 5, '_') + '/' + nextString(r, 5, '_') + '/'
                + nextString(r, 5, '_') + '/' + "item.htm?query=1";
    }

    private static String nextString(SplitRand r, int maxLength, char special) {
        int len = 3 + r.nextInt(maxLength - 3);
        StringBuilder sb = new StringBuilder(len);
        while (len-- > 0) {
            if (r.nextInt(13) == 0) {
                sb.append(special);
            } else {
                sb.append((char) ('a' + r.nextInt(26)));
            }
        }
        return sb.toString().trim();
    }
}
