package weirbench;

import java.io.BufferedWriter;
import java.io.OutputStreamWriter;
import java.nio.charset.StandardCharsets;

/**
 * Prints every event of a generator run, one line each (EventFormat), generator 0 first: for
 * diffing against the Go generator's output.
 *
 * <p>Usage: GenDump EVENTS GENERATORS [RATE [SEED]]
 */
public final class GenDump {
    private GenDump() {}

    public static void main(String[] args) throws Exception {
        NexmarkConfig cfg = new NexmarkConfig();
        cfg.events = Long.parseLong(args[0]);
        cfg.generators = Integer.parseInt(args[1]);
        if (args.length > 2) {
            cfg.rate = Double.parseDouble(args[2]);
        }
        if (args.length > 3) {
            cfg.seed = Long.parseUnsignedLong(args[3]);
        }
        try (BufferedWriter w = new BufferedWriter(new OutputStreamWriter(System.out, StandardCharsets.UTF_8), 1 << 16)) {
            for (int i = 0; i < cfg.generators; i++) {
                Generator g = new Generator(cfg, i);
                while (g.hasNext()) {
                    w.write(EventFormat.line(g.next()));
                    w.write('\n');
                }
            }
        }
    }
}
