package weirbench;

import java.io.IOException;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;

import org.apache.flink.api.common.serialization.SerializationSchema;
import org.apache.flink.api.connector.sink2.Sink;
import org.apache.flink.api.connector.sink2.SinkWriter;
import org.apache.flink.api.connector.sink2.WriterInitContext;
import org.apache.flink.api.common.eventtime.Watermark;
import org.apache.flink.connector.base.DeliveryGuarantee;
import org.apache.flink.connector.kafka.sink.KafkaRecordSerializationSchema;
import org.apache.flink.connector.kafka.sink.KafkaSink;
import org.apache.flink.shaded.jackson2.com.fasterxml.jackson.databind.ObjectMapper;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.common.TopicPartition;

/**
 * --source kafka: the results go to a topic of the same broker with Flink's own KafkaSink, as JSON
 * (Jackson, the result POJOs' public fields), no key, the element's timestamp as the record's,
 * at-least-once (every record acknowledged at the end of input), without compression (the
 * producer's default), as the Weir side. The topic is created before the run and deleted after it,
 * once its records are counted.
 */
final class KafkaResults {
    private KafkaResults() {}

    static Admin admin(String bootstrap) {
        Properties p = new Properties();
        p.setProperty(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        return Admin.create(p);
    }

    /** Creates a fresh topic of the given partitions for one run's results; retention off (2015 timestamps). */
    static String create(Admin admin, String eventsTopic, String query, int partitions) throws Exception {
        String topic = eventsTopic + "-results-flink-" + query + "-" + System.nanoTime();
        NewTopic t = new NewTopic(topic, partitions, (short) 1).configs(Map.of("retention.ms", "-1"));
        admin.createTopics(List.of(t)).all().get(1, TimeUnit.MINUTES);
        return topic;
    }

    /** The records the topic holds (end minus start offsets over its partitions). */
    static long count(Admin admin, String topic) throws Exception {
        int n = admin.describeTopics(List.of(topic)).allTopicNames().get(1, TimeUnit.MINUTES).get(topic).partitions().size();
        List<TopicPartition> parts = new java.util.ArrayList<>();
        for (int i = 0; i < n; i++) {
            parts.add(new TopicPartition(topic, i));
        }
        var ends = admin.listOffsets(parts.stream().collect(Collectors.toMap(p -> p, p -> OffsetSpec.latest()))).all().get(1, TimeUnit.MINUTES);
        var starts = admin.listOffsets(parts.stream().collect(Collectors.toMap(p -> p, p -> OffsetSpec.earliest()))).all().get(1, TimeUnit.MINUTES);
        long total = 0;
        for (TopicPartition p : parts) {
            total += ends.get(p).offset() - starts.get(p).offset();
        }
        return total;
    }

    static void delete(Admin admin, String topic) {
        try {
            admin.deleteTopics(List.of(topic)).all().get(30, TimeUnit.SECONDS);
        } catch (Exception e) {
            // best effort
        }
    }

    /** Flink's KafkaSink into topic, wrapped to count the records and time the end of input. */
    static <T> Sink<T> sink(String bootstrap, String topic) {
        KafkaSink<T> ks = KafkaSink.<T>builder()
                .setBootstrapServers(bootstrap)
                .setDeliveryGuarantee(DeliveryGuarantee.AT_LEAST_ONCE)
                .setRecordSerializer(KafkaRecordSerializationSchema.<T>builder()
                        .setTopic(topic)
                        .setValueSerializationSchema(new Json<T>())
                        .build())
                .build();
        return new Timed<>(ks);
    }

    /** Each value as JSON. */
    static final class Json<T> implements SerializationSchema<T> {
        private static final long serialVersionUID = 1L;
        private transient ObjectMapper mapper;

        @Override
        public void open(InitializationContext context) {
            mapper = new ObjectMapper();
        }

        @Override
        public byte[] serialize(T element) {
            try {
                return mapper.writeValueAsBytes(element);
            } catch (IOException e) {
                throw new IllegalStateException("serializing " + element, e);
            }
        }
    }

    /**
     * The KafkaSink's writer, counting what it writes; its end of input (the flush that waits for
     * every record's acknowledgement) ends the run's clock, as the counting sink's does.
     */
    static final class Timed<T> implements Sink<T> {
        private static final long serialVersionUID = 1L;
        private final KafkaSink<T> delegate;

        Timed(KafkaSink<T> delegate) {
            this.delegate = delegate;
        }

        @Override
        public SinkWriter<T> createWriter(WriterInitContext context) throws IOException {
            SinkWriter<T> w = delegate.createWriter(context);
            return new SinkWriter<T>() {
                private long count;
                private boolean finished;

                @Override
                public void write(T element, Context ctx) throws IOException, InterruptedException {
                    count++;
                    w.write(element, ctx);
                }

                @Override
                public void writeWatermark(Watermark watermark) throws IOException, InterruptedException {
                    w.writeWatermark(watermark);
                }

                @Override
                public void flush(boolean endOfInput) throws IOException, InterruptedException {
                    w.flush(endOfInput);
                    if (endOfInput && !finished) {
                        finished = true;
                        RunStats.results.add(count);
                        RunStats.sinkFinished();
                    }
                }

                @Override
                public void close() throws Exception {
                    w.close();
                }
            };
        }
    }
}
