package weirbench;

import java.lang.management.ManagementFactory;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.LongAdder;

/**
 * What one run measures, shared by the source readers and sink writers of a job running in this
 * JVM's MiniCluster (the local environment loads the job's classes from the application class
 * path, so these statics are the ones the tasks see).
 *
 * <p>The measured interval starts when the first source subtask emits its first event and ends
 * when the last sink subtask has seen its end of input, so neither JVM nor MiniCluster start-up
 * nor job deployment and teardown count.
 */
final class RunStats {
    private static final com.sun.management.OperatingSystemMXBean OS =
            (com.sun.management.OperatingSystemMXBean) ManagementFactory.getOperatingSystemMXBean();

    static final AtomicLong firstEventNanos = new AtomicLong(Long.MAX_VALUE);
    static final AtomicLong cpuAtFirstEvent = new AtomicLong();
    static final AtomicLong lastEndNanos = new AtomicLong(Long.MIN_VALUE);
    static final AtomicLong cpuAtLastEnd = new AtomicLong();
    static final LongAdder results = new LongAdder();
    static final LongAdder eventsEmitted = new LongAdder();

    private RunStats() {}

    static void reset() {
        firstEventNanos.set(Long.MAX_VALUE);
        lastEndNanos.set(Long.MIN_VALUE);
        cpuAtFirstEvent.set(0);
        cpuAtLastEnd.set(0);
        results.reset();
        eventsEmitted.reset();
    }

    /** The wall clock (ns since the epoch) when firstEventNanos was taken. */
    static final AtomicLong firstEventWallNanos = new AtomicLong();

    /** Called by each source reader right before it emits its first event. */
    static synchronized void sourceStarted() {
        long now = System.nanoTime();
        if (now < firstEventNanos.get()) {
            firstEventNanos.set(now);
            java.time.Instant w = java.time.Instant.now();
            firstEventWallNanos.set(w.getEpochSecond() * 1_000_000_000L + w.getNano());
            cpuAtFirstEvent.set(OS.getProcessCpuTime());
        }
    }

    /**
     * Sets the end of the run to a wall-clock time (ns since the epoch) taken by the file system,
     * for a sink whose end is known from its files (q10); CPU time is taken now.
     */
    static synchronized void endAtWallClock(long wallNanos) {
        lastEndNanos.set(firstEventNanos.get() + (wallNanos - firstEventWallNanos.get()));
        cpuAtLastEnd.set(OS.getProcessCpuTime());
    }

    /** Called by each sink writer at its end of input. */
    static synchronized void sinkFinished() {
        long now = System.nanoTime();
        if (now > lastEndNanos.get()) {
            lastEndNanos.set(now);
            cpuAtLastEnd.set(OS.getProcessCpuTime());
        }
    }

    static double seconds() {
        return (lastEndNanos.get() - firstEventNanos.get()) / 1e9;
    }

    static double cpuSeconds() {
        return (cpuAtLastEnd.get() - cpuAtFirstEvent.get()) / 1e9;
    }

    /** Resets the peak resident set (VmHWM) to the current RSS (Linux: clear_refs 5), as weir nexmark does per run. */
    static void resetPeakRss() {
        try {
            Files.writeString(Path.of("/proc/self/clear_refs"), "5");
        } catch (Exception e) {
            // not Linux, or not allowed: the peak is then the process's
        }
    }

    /** Peak resident set size of this process (VmHWM), in bytes; 0 where /proc is missing. */
    static long peakRssBytes() {
        try {
            for (String line : Files.readAllLines(Path.of("/proc/self/status"))) {
                if (line.startsWith("VmHWM:")) {
                    String[] f = line.trim().split("\\s+");
                    return Long.parseLong(f[1]) * 1024L;
                }
            }
        } catch (Exception e) {
            // not Linux
        }
        return 0;
    }
}
