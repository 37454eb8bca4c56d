package weirbench;

/**
 * The events of a run generated into memory before it starts (the engine-only mode, {@code
 * --source memory}): one array per generator, which the source's readers replay. Held in a static
 * so that the job's readers, which run in this JVM's MiniCluster and load their classes from the
 * application class path, find them without the events being serialized into the job graph.
 */
final class MemoryStore {
    private MemoryStore() {}

    private static volatile Event[][] splits;
    /** What the events held were generated from (events, rate, seed, generators), or null. */
    private static String heldKey;

    private static String key(NexmarkConfig cfg) {
        return cfg.events + "/" + cfg.rate + "/" + cfg.seed + "/" + cfg.generators;
    }

    /** Whether the events held are cfg's (generate was last called with the same events, rate, seed and generators). */
    static boolean holds(NexmarkConfig cfg) {
        return splits != null && key(cfg).equals(heldKey);
    }

    /** Generates every event of cfg's generators (cfg.generators of them) into memory. */
    static void generate(NexmarkConfig cfg) {
        Event[][] s = new Event[cfg.generators][];
        for (int i = 0; i < cfg.generators; i++) {
            Generator g = new Generator(cfg, i);
            Event[] events = new Event[(int) g.remaining()];
            for (int j = 0; j < events.length; j++) {
                events[j] = g.next();
            }
            s[i] = events;
        }
        splits = s;
        heldKey = key(cfg);
    }

    static Event[] split(int index) {
        Event[][] s = splits;
        if (s == null || index >= s.length) {
            throw new IllegalStateException("no events in memory for split " + index);
        }
        return s[index];
    }

    /** The checksum of the events held, generator 0 first (Checksum). */
    static long checksum() {
        long h = Checksum.SEED;
        for (Event[] events : splits) {
            for (Event e : events) {
                h = Checksum.event(h, e);
            }
        }
        return h;
    }

    static void clear() {
        splits = null;
        heldKey = null;
    }
}
