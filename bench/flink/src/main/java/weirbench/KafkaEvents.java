package weirbench;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import org.apache.flink.api.common.typeinfo.TypeInformation;
import org.apache.flink.connector.kafka.source.KafkaSource;
import org.apache.flink.connector.kafka.source.enumerator.initializer.OffsetsInitializer;
import org.apache.flink.connector.kafka.source.reader.deserializer.KafkaRecordDeserializationSchema;
import org.apache.flink.util.Collector;
import org.apache.kafka.clients.consumer.ConsumerRecord;

/**
 * --source kafka: the events of a topic that {@code weir nexmark --source kafka} wrote (one
 * partition per generator, one line per event in EventFormat's format, the event time as the
 * record timestamp), read with Flink's own KafkaSource from the earliest to the latest offsets at
 * start.
 */
final class KafkaEvents {
    private KafkaEvents() {}

    static KafkaSource<Event> source(String bootstrap, String topic) {
        return source(bootstrap, topic, OffsetsInitializer.latest());
    }

    /**
     * The first {@code events} events of a topic of {@code partitions} partitions (a warm-up run
     * shorter than the measured one): partition i up to offset events / partitions, one more for
     * the first events % partitions partitions.
     */
    static KafkaSource<Event> source(String bootstrap, String topic, long events, int partitions) {
        java.util.Map<org.apache.kafka.common.TopicPartition, Long> stops = new java.util.HashMap<>();
        for (int i = 0; i < partitions; i++) {
            stops.put(new org.apache.kafka.common.TopicPartition(topic, i), events / partitions + (i < events % partitions ? 1 : 0));
        }
        return source(bootstrap, topic, OffsetsInitializer.offsets(stops));
    }

    private static KafkaSource<Event> source(String bootstrap, String topic, OffsetsInitializer stop) {
        return KafkaSource.<Event>builder()
                .setBootstrapServers(bootstrap)
                .setTopics(topic)
                .setGroupId("weir-bench-flink")
                .setStartingOffsets(OffsetsInitializer.earliest())
                .setBounded(stop)
                .setProperty("commit.offsets.on.checkpoint", "false")
                .setDeserializer(new Lines())
                .build();
    }

    /** Decodes a record's value line; counts the events and marks the first one read. */
    static final class Lines implements KafkaRecordDeserializationSchema<Event> {
        private transient boolean started;

        @Override
        public void deserialize(ConsumerRecord<byte[], byte[]> record, Collector<Event> out) throws IOException {
            if (!started) {
                started = true;
                RunStats.sourceStarted();
            }
            Event e;
            try {
                e = EventFormat.parse(new String(record.value(), StandardCharsets.UTF_8));
            } catch (RuntimeException ex) {
                throw new IOException("topic " + record.topic() + " partition " + record.partition() + " offset "
                        + record.offset() + ": " + ex.getMessage(), ex);
            }
            RunStats.eventsEmitted.increment();
            out.collect(e);
        }

        @Override
        public TypeInformation<Event> getProducedType() {
            return TypeInformation.of(Event.class);
        }
    }
}
