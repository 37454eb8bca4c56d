package weirbench;

/**
 * java.util.SplittableRandom's algorithm for a seeded instance (SplitMix64, fixed golden gamma),
 * written out so that it is bit for bit the same as the Go generator's port on every JDK:
 * nextInt(bound) rejection sampling, nextDouble from the top 53 bits.
 */
final class SplitRand {
    static final long GOLDEN_GAMMA = 0x9e3779b97f4a7c15L;

    private long seed;

    SplitRand(long seed) {
        this.seed = seed;
    }

    static long mix64(long z) {
        z = (z ^ (z >>> 30)) * 0xbf58476d1ce4e5b9L;
        z = (z ^ (z >>> 27)) * 0x94d049bb133111ebL;
        return z ^ (z >>> 31);
    }

    static int mix32(long z) {
        z = (z ^ (z >>> 33)) * 0x62a9d9ed799705f5L;
        return (int) (((z ^ (z >>> 28)) * 0xcb24d0a5c88c35b3L) >>> 32);
    }

    private long nextSeed() {
        return seed += GOLDEN_GAMMA;
    }

    int nextInt() {
        return mix32(nextSeed());
    }

    /** Uniform in [0, bound), bound &gt; 0. */
    int nextInt(int bound) {
        int r = mix32(nextSeed());
        int m = bound - 1;
        if ((bound & m) == 0) {
            return r & m;
        }
        for (int u = r >>> 1; u + m - (r = u % bound) < 0; u = mix32(nextSeed()) >>> 1) {
            // reject the over-represented tail (int overflow)
        }
        return r;
    }

    long nextLong() {
        return mix64(nextSeed());
    }

    double nextDouble() {
        return (mix64(nextSeed()) >>> 11) * 0x1.0p-53;
    }

    /** The generator's LongGenerator.nextLong: an int draw when n fits, else |nextLong % n|. */
    long nextLong(long n) {
        if (n < Integer.MAX_VALUE) {
            return nextInt((int) n);
        }
        return Math.abs(nextLong() % n);
    }
}
