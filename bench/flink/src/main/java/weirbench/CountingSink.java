package weirbench;

import org.apache.flink.api.connector.sink2.Sink;
import org.apache.flink.api.connector.sink2.SinkWriter;
import org.apache.flink.api.connector.sink2.WriterInitContext;

/** A discarding sink that counts the records it receives (the blackhole sink of the SQL runs). */
final class CountingSink<T> implements Sink<T> {
    private static final long serialVersionUID = 1L;

    @Override
    public SinkWriter<T> createWriter(WriterInitContext context) {
        return new Writer<>();
    }

    private static final class Writer<T> implements SinkWriter<T> {
        private long count;
        private boolean finished;

        @Override
        public void write(T element, Context context) {
            count++;
        }

        @Override
        public void flush(boolean endOfInput) {
            if (endOfInput) {
                finish();
            }
        }

        private void finish() {
            if (!finished) {
                finished = true;
                RunStats.results.add(count);
                RunStats.sinkFinished();
            }
        }

        @Override
        public void close() {
            finish();
        }
    }
}
