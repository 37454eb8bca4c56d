package weiroracle;

import org.apache.flink.api.common.ExecutionConfig;
import org.apache.flink.api.common.typeinfo.TypeInformation;
import org.apache.flink.runtime.event.WatermarkEvent;
import org.apache.flink.streaming.api.operators.ChainingStrategy;
import org.apache.flink.streaming.api.operators.OperatorAttributes;
import org.apache.flink.streaming.api.operators.Output;
import org.apache.flink.streaming.api.operators.StreamOperator;
import org.apache.flink.streaming.api.operators.StreamOperatorFactory;
import org.apache.flink.streaming.api.operators.StreamOperatorParameters;
import org.apache.flink.streaming.api.watermark.Watermark;
import org.apache.flink.streaming.runtime.streamrecord.LatencyMarker;
import org.apache.flink.streaming.runtime.streamrecord.RecordAttributes;
import org.apache.flink.streaming.runtime.streamrecord.StreamRecord;
import org.apache.flink.streaming.runtime.watermarkstatus.WatermarkStatus;
import org.apache.flink.util.OutputTag;

/**
 * Wraps the real operator factory (the one the DataStream API produced) and hands the operator
 * an Output that forwards everything to the task's real output (RecordWriterOutput, with its
 * idle-status watermark suppression), except side-output records, which it records.
 *
 * <p>In a real job a side output is one more RecordWriterOutput (selected by its OutputTag in a
 * BroadcastingOutputCollector) that pushes every record with that tag unchanged; the singleton
 * test chain has only the main output, which would drop them. The operator instance is created
 * by the real factory on the task side (the factory travels serialized in the StreamConfig), so
 * the captured lines go to a static sink.
 */
public class CaptureFactory<OUT> implements StreamOperatorFactory<OUT> {
    private static final long serialVersionUID = 1L;

    private final StreamOperatorFactory<OUT> inner;

    public CaptureFactory(StreamOperatorFactory<OUT> inner) {
        this.inner = inner;
    }

    @Override
    public <T extends StreamOperator<OUT>> T createStreamOperator(StreamOperatorParameters<OUT> p) {
        StreamOperatorParameters<OUT> wrapped =
                new StreamOperatorParameters<>(
                        p.getContainingTask(),
                        p.getStreamConfig(),
                        new SideCapturingOutput<>(p.getOutput()),
                        p::getProcessingTimeService,
                        p.getOperatorEventDispatcher(),
                        p.getMailboxExecutor());
        return inner.createStreamOperator(wrapped);
    }

    @Override
    public void setChainingStrategy(ChainingStrategy strategy) {
        inner.setChainingStrategy(strategy);
    }

    @Override
    public ChainingStrategy getChainingStrategy() {
        return inner.getChainingStrategy();
    }

    @Override
    public boolean isOutputTypeConfigurable() {
        return inner.isOutputTypeConfigurable();
    }

    @Override
    public void setOutputType(TypeInformation<OUT> type, ExecutionConfig executionConfig) {
        inner.setOutputType(type, executionConfig);
    }

    @Override
    public boolean isInputTypeConfigurable() {
        return inner.isInputTypeConfigurable();
    }

    @Override
    public void setInputType(TypeInformation<?> type, ExecutionConfig executionConfig) {
        inner.setInputType(type, executionConfig);
    }

    @Override
    @SuppressWarnings("rawtypes")
    public Class<? extends StreamOperator> getStreamOperatorClass(ClassLoader classLoader) {
        return inner.getStreamOperatorClass(classLoader);
    }

    @Override
    public OperatorAttributes getOperatorAttributes() {
        return inner.getOperatorAttributes();
    }

    /** Forwards to the real output, except side outputs, which go to the task output queue as lines (Main.side). */
    static final class SideCapturingOutput<T> implements Output<StreamRecord<T>> {
        private final Output<StreamRecord<T>> out;

        SideCapturingOutput(Output<StreamRecord<T>> out) {
            this.out = out;
        }

        @Override
        public void collect(StreamRecord<T> record) {
            Main.countOutput();
            out.collect(record);
        }

        @Override
        public <X> void collect(OutputTag<X> outputTag, StreamRecord<X> record) {
            Main.countOutput();
            Main.side(outputTag.getId(), record);
        }

        @Override
        public void emitWatermark(Watermark mark) {
            out.emitWatermark(mark);
        }

        @Override
        public void emitWatermarkStatus(WatermarkStatus watermarkStatus) {
            out.emitWatermarkStatus(watermarkStatus);
        }

        @Override
        public void emitLatencyMarker(LatencyMarker latencyMarker) {
            out.emitLatencyMarker(latencyMarker);
        }

        @Override
        public void emitRecordAttributes(RecordAttributes recordAttributes) {
            out.emitRecordAttributes(recordAttributes);
        }

        @Override
        public void emitWatermark(WatermarkEvent watermark) {
            out.emitWatermark(watermark);
        }

        @Override
        public void close() {
            out.close();
        }
    }
}
