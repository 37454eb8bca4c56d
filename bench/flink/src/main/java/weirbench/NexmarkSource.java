package weirbench;

import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Collections;
import java.util.List;
import java.util.concurrent.CompletableFuture;

import org.apache.flink.api.connector.source.Boundedness;
import org.apache.flink.api.connector.source.ReaderOutput;
import org.apache.flink.api.connector.source.Source;
import org.apache.flink.api.connector.source.SourceReader;
import org.apache.flink.api.connector.source.SourceReaderContext;
import org.apache.flink.api.connector.source.SourceSplit;
import org.apache.flink.api.connector.source.SplitEnumerator;
import org.apache.flink.api.connector.source.SplitEnumeratorContext;
import org.apache.flink.core.io.InputStatus;
import org.apache.flink.core.io.SimpleVersionedSerializer;

/**
 * The Nexmark generator as a bounded FLIP-27 source: one split per generator (split i = generator
 * i of n, as nexmark-flink's NexmarkSource), split i assigned to subtask i mod parallelism. Each
 * reader emits up to {@link #BATCH} events per pollNext call, then yields to the mailbox (timers,
 * watermarks) and comes back. With {@code memory} set, a split's events are not generated but
 * replayed from {@link MemoryStore}, where they were generated before the job started.
 */
final class NexmarkSource implements Source<Event, NexmarkSource.GenSplit, Collection<NexmarkSource.GenSplit>> {
    private static final long serialVersionUID = 1L;
    static final int BATCH = 256;

    private final NexmarkConfig config;
    private final boolean memory;

    NexmarkSource(NexmarkConfig config) {
        this(config, false);
    }

    NexmarkSource(NexmarkConfig config, boolean memory) {
        this.config = config;
        this.memory = memory;
    }

    @Override
    public Boundedness getBoundedness() {
        return Boundedness.BOUNDED;
    }

    @Override
    public SplitEnumerator<GenSplit, Collection<GenSplit>> createEnumerator(SplitEnumeratorContext<GenSplit> ctx) {
        List<GenSplit> splits = new ArrayList<>();
        for (int i = 0; i < config.generators; i++) {
            splits.add(new GenSplit(i, 0));
        }
        return new Enumerator(ctx, splits);
    }

    @Override
    public SplitEnumerator<GenSplit, Collection<GenSplit>> restoreEnumerator(
            SplitEnumeratorContext<GenSplit> ctx, Collection<GenSplit> checkpoint) {
        return new Enumerator(ctx, new ArrayList<>(checkpoint));
    }

    @Override
    public SimpleVersionedSerializer<GenSplit> getSplitSerializer() {
        return new SplitSerializer();
    }

    @Override
    public SimpleVersionedSerializer<Collection<GenSplit>> getEnumeratorCheckpointSerializer() {
        return new CheckpointSerializer();
    }

    @Override
    public SourceReader<Event, GenSplit> createReader(SourceReaderContext readerContext) {
        return memory ? new MemoryReader() : new Reader(config);
    }

    /** Generator index and how many events it has already emitted. */
    static final class GenSplit implements SourceSplit {
        final int index;
        final long emitted;

        GenSplit(int index, long emitted) {
            this.index = index;
            this.emitted = emitted;
        }

        @Override
        public String splitId() {
            return Integer.toString(index);
        }
    }

    private static final class Enumerator implements SplitEnumerator<GenSplit, Collection<GenSplit>> {
        private final SplitEnumeratorContext<GenSplit> ctx;
        private final List<GenSplit> pending;

        Enumerator(SplitEnumeratorContext<GenSplit> ctx, List<GenSplit> pending) {
            this.ctx = ctx;
            this.pending = pending;
        }

        @Override
        public void start() {}

        @Override
        public void handleSplitRequest(int subtaskId, String requesterHostname) {}

        @Override
        public void addSplitsBack(List<GenSplit> splits, int subtaskId) {
            pending.addAll(splits);
            if (ctx.registeredReaders().containsKey(subtaskId)) {
                addReader(subtaskId);
            }
        }

        @Override
        public void addReader(int subtaskId) {
            int p = ctx.currentParallelism();
            List<GenSplit> mine = new ArrayList<>();
            pending.removeIf(s -> {
                if (s.index % p == subtaskId) {
                    mine.add(s);
                    return true;
                }
                return false;
            });
            if (!mine.isEmpty()) {
                for (GenSplit s : mine) {
                    ctx.assignSplit(s, subtaskId);
                }
            }
            ctx.signalNoMoreSplits(subtaskId);
        }

        @Override
        public Collection<GenSplit> snapshotState(long checkpointId) {
            return new ArrayList<>(pending);
        }

        @Override
        public void close() {}
    }

    private static final class Reader implements SourceReader<Event, GenSplit> {
        private final NexmarkConfig config;
        private final List<Generator> generators = new ArrayList<>();
        private int current;
        private boolean noMoreSplits;
        private boolean started;
        private CompletableFuture<Void> available = new CompletableFuture<>();

        Reader(NexmarkConfig config) {
            this.config = config;
        }

        @Override
        public void start() {}

        @Override
        public InputStatus pollNext(ReaderOutput<Event> output) {
            while (current < generators.size()) {
                Generator g = generators.get(current);
                if (!g.hasNext()) {
                    current++;
                    continue;
                }
                if (!started) {
                    started = true;
                    RunStats.sourceStarted();
                }
                int n = 0;
                while (n < BATCH && g.hasNext()) {
                    Event e = g.next();
                    output.collect(e, e.timestamp());
                    n++;
                }
                RunStats.eventsEmitted.add(n);
                return InputStatus.MORE_AVAILABLE;
            }
            if (noMoreSplits) {
                return InputStatus.END_OF_INPUT;
            }
            available = new CompletableFuture<>();
            return InputStatus.NOTHING_AVAILABLE;
        }

        @Override
        public List<GenSplit> snapshotState(long checkpointId) {
            List<GenSplit> out = new ArrayList<>();
            for (Generator g : generators) {
                out.add(new GenSplit(g.index(), g.emitted()));
            }
            return out;
        }

        @Override
        public CompletableFuture<Void> isAvailable() {
            return available;
        }

        @Override
        public void addSplits(List<GenSplit> splits) {
            for (GenSplit s : splits) {
                Generator g = new Generator(config, s.index);
                g.skip(s.emitted);
                generators.add(g);
            }
            available.complete(null);
        }

        @Override
        public void notifyNoMoreSplits() {
            noMoreSplits = true;
            available.complete(null);
        }

        @Override
        public void close() {}
    }

    /** Replays splits' events from MemoryStore, up to BATCH per pollNext call. */
    private static final class MemoryReader implements SourceReader<Event, GenSplit> {
        private final List<GenSplit> splits = new ArrayList<>();
        private final List<Event[]> events = new ArrayList<>();
        private final List<Integer> positions = new ArrayList<>();
        private int current;
        private int pos;
        private boolean noMoreSplits;
        private boolean started;
        private CompletableFuture<Void> available = new CompletableFuture<>();

        @Override
        public void start() {}

        @Override
        public InputStatus pollNext(ReaderOutput<Event> output) {
            while (current < events.size()) {
                Event[] es = events.get(current);
                if (pos >= es.length) {
                    positions.set(current, pos);
                    current++;
                    pos = current < events.size() ? positions.get(current) : 0;
                    continue;
                }
                if (!started) {
                    started = true;
                    RunStats.sourceStarted();
                }
                int end = Math.min(es.length, pos + BATCH);
                for (int i = pos; i < end; i++) {
                    Event e = es[i];
                    output.collect(e, e.timestamp());
                }
                RunStats.eventsEmitted.add(end - pos);
                pos = end;
                return InputStatus.MORE_AVAILABLE;
            }
            if (noMoreSplits) {
                return InputStatus.END_OF_INPUT;
            }
            available = new CompletableFuture<>();
            return InputStatus.NOTHING_AVAILABLE;
        }

        @Override
        public List<GenSplit> snapshotState(long checkpointId) {
            List<GenSplit> out = new ArrayList<>();
            for (int i = 0; i < splits.size(); i++) {
                out.add(new GenSplit(splits.get(i).index, i == current ? pos : positions.get(i)));
            }
            return out;
        }

        @Override
        public CompletableFuture<Void> isAvailable() {
            return available;
        }

        @Override
        public void addSplits(List<GenSplit> added) {
            for (GenSplit s : added) {
                splits.add(s);
                events.add(MemoryStore.split(s.index));
                positions.add((int) s.emitted);
                if (events.size() == current + 1) {
                    pos = (int) s.emitted;
                }
            }
            available.complete(null);
        }

        @Override
        public void notifyNoMoreSplits() {
            noMoreSplits = true;
            available.complete(null);
        }

        @Override
        public void close() {}
    }

    private static final class SplitSerializer implements SimpleVersionedSerializer<GenSplit> {
        @Override
        public int getVersion() {
            return 1;
        }

        @Override
        public byte[] serialize(GenSplit s) throws IOException {
            ByteArrayOutputStream b = new ByteArrayOutputStream();
            DataOutputStream out = new DataOutputStream(b);
            out.writeInt(s.index);
            out.writeLong(s.emitted);
            return b.toByteArray();
        }

        @Override
        public GenSplit deserialize(int version, byte[] bytes) throws IOException {
            DataInputStream in = new DataInputStream(new ByteArrayInputStream(bytes));
            return new GenSplit(in.readInt(), in.readLong());
        }
    }

    private static final class CheckpointSerializer implements SimpleVersionedSerializer<Collection<GenSplit>> {
        @Override
        public int getVersion() {
            return 1;
        }

        @Override
        public byte[] serialize(Collection<GenSplit> splits) throws IOException {
            ByteArrayOutputStream b = new ByteArrayOutputStream();
            DataOutputStream out = new DataOutputStream(b);
            out.writeInt(splits.size());
            for (GenSplit s : splits) {
                out.writeInt(s.index);
                out.writeLong(s.emitted);
            }
            return b.toByteArray();
        }

        @Override
        public Collection<GenSplit> deserialize(int version, byte[] bytes) throws IOException {
            DataInputStream in = new DataInputStream(new ByteArrayInputStream(bytes));
            int n = in.readInt();
            if (n == 0) {
                return Collections.emptyList();
            }
            List<GenSplit> out = new ArrayList<>(n);
            for (int i = 0; i < n; i++) {
                out.add(new GenSplit(in.readInt(), in.readLong()));
            }
            return out;
        }
    }
}
