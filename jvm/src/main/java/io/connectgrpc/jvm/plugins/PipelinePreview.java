package io.connectgrpc.jvm.plugins;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Future;
import java.util.concurrent.atomic.AtomicLong;

import org.apache.kafka.clients.CommonClientConfigs;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.header.internals.RecordHeaders;
import org.apache.kafka.common.utils.Time;
import org.apache.kafka.common.utils.internals.AppInfoParser;
import org.apache.kafka.connect.connector.ConnectRecord;
import org.apache.kafka.connect.data.SchemaAndValue;
import org.apache.kafka.connect.header.ConnectHeaders;
import org.apache.kafka.connect.header.Header;
import org.apache.kafka.connect.header.Headers;
import org.apache.kafka.connect.json.JsonConverter;
import org.apache.kafka.connect.runtime.ConnectMetrics;
import org.apache.kafka.connect.runtime.ConnectorConfig;
import org.apache.kafka.connect.runtime.SinkConnectorConfig;
import org.apache.kafka.connect.runtime.TransformationStage;
import org.apache.kafka.connect.runtime.WorkerConfig;
import org.apache.kafka.connect.runtime.errors.ErrorHandlingMetrics;
import org.apache.kafka.connect.runtime.errors.ErrorReporter;
import org.apache.kafka.connect.runtime.errors.Operation;
import org.apache.kafka.connect.runtime.errors.ProcessingContext;
import org.apache.kafka.connect.runtime.errors.RetryWithToleranceOperator;
import org.apache.kafka.connect.runtime.errors.Stage;
import org.apache.kafka.connect.runtime.isolation.LoaderSwap;
import org.apache.kafka.connect.runtime.isolation.PluginUtils;
import org.apache.kafka.connect.runtime.isolation.Plugins;
import org.apache.kafka.connect.sink.SinkRecord;
import org.apache.kafka.connect.source.SourceRecord;
import org.apache.kafka.connect.storage.Converter;
import org.apache.kafka.connect.storage.HeaderConverter;
import org.apache.kafka.connect.util.ConnectUtils;
import org.apache.kafka.connect.util.ConnectorTaskId;

/**
 * PreviewPipeline of a Java connector: records run through the converters, transformations
 * and predicates a task of the connector would get from Kafka's worker, one stage at a time,
 * each stage's output kept, nothing written (connect-grpc's {@code pipeline/preview.py} does
 * the same for Python connectors, and answers in the same terms).
 *
 * <p>The plugins are built as Kafka's {@code Worker.startTask} builds a task's
 * ({@link TaskPipeline}), in the connector's class loader: the connector config's converters ({@code *.converter},
 * {@code *.converter.*}, KIP-891's {@code *.converter.plugin.version}), else the worker's, and
 * {@link ConnectorConfig#transformationStages}. Each stage runs under Kafka's
 * {@link RetryWithToleranceOperator} of the connector's {@code errors.*} settings, one per
 * record (each record is previewed as the first its task saw), in the order of Kafka's
 * {@code WorkerSinkTask} (key, value, header converters, then the transformations) and
 * {@code AbstractWorkerSourceTask} (the transformations, then header, key, value
 * converters). Its retry timeout is zero: a retriable failure ends the record as it would
 * once {@code errors.retry.timeout} ran out. Its reporter keeps the failed record's context,
 * whose stage, class and error the answer shows, with a sink's dead-letter headers.
 */
final class PipelinePreview implements AutoCloseable {

    static final String WORKER_ID = "connect-grpc-pipeline-preview";
    /** The task whose dead-letter headers a preview shows. */
    static final int PREVIEW_TASK = 0;

    private final Plugins plugins;
    private final Map<String, String> hostProperties;
    private final ConnectMetrics metrics;
    /** Tells the metric groups of concurrent previews of one connector apart. */
    private final AtomicLong previews = new AtomicLong();

    PipelinePreview(PluginCatalogue catalogue) {
        this.plugins = catalogue.plugins();
        this.hostProperties = catalogue.workerProperties();
        this.metrics = new ConnectMetrics(WORKER_ID, workerConfig(Map.of()), Time.SYSTEM,
                PluginCatalogue.UNKNOWN_CLUSTER_ID);
        // registered whatever the reporters; a preview's metrics are nobody's to read
        AppInfoParser.unregisterAppInfo(ConnectMetrics.JMX_PREFIX, WORKER_ID, metrics.metrics());
    }

    /** A Kafka Connect worker config of the host's properties and the worker's converters. */
    private WorkerConfig workerConfig(Map<String, String> converters) {
        Map<String, String> props = new HashMap<>(hostProperties);
        props.putAll(converters);
        props.put(CommonClientConfigs.METRIC_REPORTER_CLASSES_CONFIG, "");
        return new HostWorkerConfig(props, PluginCatalogue.UNKNOWN_CLUSTER_ID);
    }

    @Override
    public void close() {
        metrics.stop();
    }

    /**
     * The preview a request asks for: {@code {"type": "sink"|"source", "config": {...},
     * "worker": {...}, "records": [...]}} ({@link PreviewRecords}); answers {@code {"records":
     * [...]}}, or {@code {"config_error": message}} when a plugin cannot be built.
     */
    @SuppressWarnings("unchecked")
    Map<String, Object> preview(Map<String, Object> request) {
        boolean sink = "sink".equals(request.get("type"));
        Map<String, String> config = (Map<String, String>) request.get("config");
        Map<String, String> worker = (Map<String, String>) request.getOrDefault("worker", Map.of());
        List<Map<String, Object>> records = (List<Map<String, Object>>) request.get("records");
        String name = config.getOrDefault(ConnectorConfig.NAME_CONFIG, "");
        ConnectorTaskId task = new ConnectorTaskId(name, PREVIEW_TASK);
        // the metrics' own task id: concurrent previews of one connector never share a group
        ConnectorTaskId metricsId = new ConnectorTaskId(name + "-preview-" + previews.incrementAndGet(), PREVIEW_TASK);
        ClassLoader loader;
        try {
            loader = plugins.connectorLoader(config.get(ConnectorConfig.CONNECTOR_CLASS_CONFIG),
                    PluginUtils.connectorVersionRequirement(config.get(ConnectorConfig.CONNECTOR_VERSION)));
        } catch (Exception | LinkageError e) {
            return configError(e);
        }
        try (LoaderSwap swap = plugins.withClassLoader(loader)) {
            TaskPipeline<?> built;
            try {
                built = sink ? TaskPipeline.<SinkRecord>of(plugins, new SinkConnectorConfig(plugins, config),
                        workerConfig(worker), metricsId, metrics)
                        : TaskPipeline.<SourceRecord>of(plugins, new ConnectorConfig(plugins, config),
                        workerConfig(worker), metricsId, metrics);
            } catch (Exception | LinkageError e) {
                return configError(e);
            }
            try (ErrorHandlingMetrics errorMetrics = new ErrorHandlingMetrics(metricsId, metrics)) {
                List<Map<String, Object>> answers = new ArrayList<>(records.size());
                Runner runner = new Runner(built, errorMetrics, task);
                for (Map<String, Object> record : records) {
                    answers.add(sink ? runner.sink(PreviewRecords.consumed(record))
                            : runner.source(runner.sourceRecord(record)));
                }
                Map<String, Object> answer = new LinkedHashMap<>();
                answer.put("type", sink ? "sink" : "source");
                answer.put("records", answers);
                return answer;
            } finally {
                built.close();
            }
        }
    }

    private static Map<String, Object> configError(Throwable e) {
        Throwable root = e;
        while (root.getCause() != null && root.getCause() != root) {
            root = root.getCause();
        }
        String message = e.getMessage();
        if (root != e) {
            message = message + " (caused by " + root.getClass().getName() + ": " + root.getMessage() + ")";
        }
        return Map.of("config_error", e.getClass().getName() + ": " + message);
    }

    /** Runs records through one connector's plugins, stage by stage. */
    private final class Runner {
        private final TaskPipeline<?> built;
        private final ErrorHandlingMetrics errorMetrics;
        private final ConnectorTaskId task;
        private final PreviewRecords.Renderer render = new PreviewRecords.Renderer();
        private final JsonConverter envelopes = PreviewRecords.jsonConverter(true);
        private final JsonConverter plain = PreviewRecords.jsonConverter(false);

        Runner(TaskPipeline<?> built, ErrorHandlingMetrics errorMetrics, ConnectorTaskId task) {
            this.built = built;
            this.errorMetrics = errorMetrics;
            this.task = task;
        }

        // ---- sink: key, value, header converters, then transformations (WorkerSinkTask) ----

        @SuppressWarnings("unchecked")
        Map<String, Object> sink(ConsumerRecord<byte[], byte[]> msg) {
            Attempt<ConsumerRecord<byte[], byte[]>> attempt = new Attempt<>(new ProcessingContext<>(msg));
            String topic = msg.topic();
            Long offset = msg.offset();
            Long timestamp = ConnectUtils.checkAndConvertTimestamp(msg.timestamp());
            List<List<Object>> rawHeaders = PreviewRecords.rawHeaders(msg.headers());
            Map<String, Object> input = PreviewRecords.view(topic, msg.partition(), offset, timestamp,
                    PreviewRecords.rawDatum(msg.key()), PreviewRecords.rawDatum(msg.value()), rawHeaders);
            List<Map<String, Object>> stages = new ArrayList<>();
            Converter keyConverter = built.key();
            SchemaAndValue key = attempt.run(() -> keyConverter.toConnectData(topic, msg.headers(), msg.key()),
                    Stage.KEY_CONVERTER, keyConverter.getClass());
            if (attempt.failed()) {
                return attempt.answer(input, stages, "", "");
            }
            Object keyData = render.data(topic, key.schema(), key.value());
            stages.add(PreviewRecords.applied(Stage.KEY_CONVERTER, keyConverter, PreviewRecords.view(topic, msg.partition(), offset,
                    timestamp, keyData, PreviewRecords.rawDatum(msg.value()), rawHeaders)));
            Converter valueConverter = built.value();
            SchemaAndValue value = attempt.run(() -> valueConverter.toConnectData(topic, msg.headers(), msg.value()),
                    Stage.VALUE_CONVERTER, valueConverter.getClass());
            if (attempt.failed()) {
                return attempt.answer(input, stages, "", "");
            }
            Object valueData = render.data(topic, value.schema(), value.value());
            stages.add(PreviewRecords.applied(Stage.VALUE_CONVERTER, valueConverter, PreviewRecords.view(topic, msg.partition(),
                    offset, timestamp, keyData, valueData, rawHeaders)));
            HeaderConverter headerConverter = built.header();
            Headers headers = attempt.run(() -> headersIn(headerConverter, msg), Stage.HEADER_CONVERTER,
                    headerConverter.getClass());
            if (attempt.failed()) {
                return attempt.answer(input, stages, "", "");
            }
            SinkRecord record = new SinkRecord(topic, msg.partition(), key.schema(), key.value(), value.schema(),
                    value.value(), msg.offset(), timestamp, msg.timestampType(), headers);
            stages.add(PreviewRecords.applied(Stage.HEADER_CONVERTER, headerConverter, render.record(record)));
            return transformed(attempt, input, stages, record,
                    (List<TransformationStage<SinkRecord>>) (List<?>) built.stages(), null);
        }

        private Headers headersIn(HeaderConverter converter, ConsumerRecord<byte[], byte[]> msg) {
            ConnectHeaders result = new ConnectHeaders();
            for (org.apache.kafka.common.header.Header header : msg.headers()) {
                result.add(header.key(), converter.toConnectHeader(msg.topic(), header.key(), header.value()));
            }
            return result;
        }

        // ---- source: transformations, then header, key, value converters ---------------------

        SourceRecord sourceRecord(Map<String, Object> sample) {
            SchemaAndValue key = PreviewRecords.sampleData(sample.get("key"), envelopes, plain);
            SchemaAndValue value = PreviewRecords.sampleData(sample.get("value"), envelopes, plain);
            ConnectHeaders headers = new ConnectHeaders();
            for (List<Object> header : PreviewRecords.headerList(sample)) {
                headers.add((String) header.get(0), PreviewRecords.sampleData(header.get(1), envelopes, plain));
            }
            return new SourceRecord(Map.of(), Map.of(), (String) sample.get("topic"),
                    PreviewRecords.intOrNull(sample.get("partition")), key.schema(), key.value(), value.schema(),
                    value.value(), PreviewRecords.longOrNull(sample.get("timestamp")), headers);
        }

        @SuppressWarnings("unchecked")
        Map<String, Object> source(SourceRecord original) {
            Map<String, Object> input = render.record(original);
            List<Map<String, Object>> stages = new ArrayList<>();
            Attempt<SourceRecord> attempt = new Attempt<>(new ProcessingContext<>(original));
            return transformed(attempt, input, stages, original,
                    (List<TransformationStage<SourceRecord>>) (List<?>) built.stages(), this::sourceConverted);
        }

        private Map<String, Object> sourceConverted(Attempt<SourceRecord> attempt, Map<String, Object> input,
                                                    List<Map<String, Object>> stages, SourceRecord record) {
            String topic = record.topic();
            Integer partition = record.kafkaPartition();
            Long timestamp = ConnectUtils.checkAndConvertTimestamp(record.timestamp());
            HeaderConverter headerConverter = built.header();
            RecordHeaders headers = attempt.run(() -> headersOut(headerConverter, record), Stage.HEADER_CONVERTER,
                    headerConverter.getClass());
            if (attempt.failed()) {
                return attempt.answer(input, stages, "", "");
            }
            List<List<Object>> rawHeaders = PreviewRecords.rawHeaders(headers);
            Object keyData = render.data(topic, record.keySchema(), record.key());
            Object valueData = render.data(topic, record.valueSchema(), record.value());
            stages.add(PreviewRecords.applied(Stage.HEADER_CONVERTER, headerConverter,
                    PreviewRecords.view(topic, partition, null, timestamp, keyData, valueData, rawHeaders)));
            Converter keyConverter = built.key();
            byte[] key = attempt.run(() -> keyConverter.fromConnectData(topic, headers, record.keySchema(),
                    record.key()), Stage.KEY_CONVERTER, keyConverter.getClass());
            if (attempt.failed()) {
                return attempt.answer(input, stages, "", "");
            }
            keyData = PreviewRecords.rawDatum(key);
            stages.add(PreviewRecords.applied(Stage.KEY_CONVERTER, keyConverter,
                    PreviewRecords.view(topic, partition, null, timestamp, keyData, valueData, rawHeaders)));
            Converter valueConverter = built.value();
            byte[] value = attempt.run(() -> valueConverter.fromConnectData(topic, headers, record.valueSchema(),
                    record.value()), Stage.VALUE_CONVERTER, valueConverter.getClass());
            if (attempt.failed()) {
                return attempt.answer(input, stages, "", "");
            }
            Map<String, Object> output = PreviewRecords.view(topic, partition, null, timestamp, keyData,
                    PreviewRecords.rawDatum(value), rawHeaders);
            stages.add(PreviewRecords.applied(Stage.VALUE_CONVERTER, valueConverter, output));
            return PreviewRecords.recordPreview(input, stages, "DELIVERED", output, null);
        }

        private RecordHeaders headersOut(HeaderConverter converter, SourceRecord record) {
            RecordHeaders result = new RecordHeaders();
            if (record.headers() != null) {
                for (Header header : record.headers()) {
                    result.add(header.key(), converter.fromConnectHeader(record.topic(), header.key(),
                            header.schema(), header.value()));
                }
            }
            return result;
        }

        // ---- transformations (TransformationChain) ----------------------------------------------

        private <T, R extends ConnectRecord<R>> Map<String, Object> transformed(
                Attempt<T> attempt, Map<String, Object> input, List<Map<String, Object>> stages, R record,
                List<TransformationStage<R>> chain, Then<T, R> then) {
            R current = record;
            for (TransformationStage<R> stage : chain) {
                TransformationStage.StageInfo info = stage.transformationStageInfo();
                String alias = info.transform().alias();
                String predicateAlias = info.predicate() == null ? "" : info.predicate().alias();
                TaskPipeline.StageParts<R> parts = TaskPipeline.StageParts.of(stage);
                boolean[] applies = {true};
                R before = current;
                R result = attempt.run(() -> {
                    applies[0] = parts.applies(plugins, before);
                    return applies[0] ? parts.apply(plugins, before) : before;
                }, Stage.TRANSFORMATION, stage.transformClass());
                String className = stage.transformClass().getName();
                if (attempt.failed()) {
                    stages.add(PreviewRecords.stage(Stage.TRANSFORMATION.name(), className, "FAILED", null, alias,
                            predicateAlias, false));
                    return attempt.answer(input, stages, alias, predicateAlias);
                }
                String verdict = !applies[0] ? "SKIPPED_BY_PREDICATE" : result == null ? "DROPPED" : "APPLIED";
                stages.add(PreviewRecords.stage(Stage.TRANSFORMATION.name(), className, verdict,
                        result == null ? null : render.record(result), alias, predicateAlias,
                        parts.predicate() != null && applies[0]));
                if (result == null) {
                    return PreviewRecords.recordPreview(input, stages, "DROPPED", null, null);
                }
                current = result;
            }
            if (then != null) {
                return then.convert(attempt, input, stages, current);
            }
            Object last = stages.isEmpty() ? render.record(current) : stages.get(stages.size() - 1).get("record");
            return PreviewRecords.recordPreview(input, stages, "DELIVERED", last, null);
        }

        /** One record's way under a RetryWithToleranceOperator of its own. */
        private final class Attempt<T> implements ErrorReporter<T> {
            private final ProcessingContext<T> context;
            private final RetryWithToleranceOperator<T> operator;
            /** What the operator threw: the task fails. */
            private Throwable taskFailure;

            Attempt(ProcessingContext<T> context) {
                this.context = context;
                ConnectorConfig config = built.config();
                // a retriable failure is not retried: the record ends as once the timeout ran out
                this.operator = new RetryWithToleranceOperator<>(0L, config.errorMaxDelayInMillis(),
                        config.errorToleranceType(), Time.SYSTEM, errorMetrics);
                operator.reporters(List.of(this));
            }

            @Override
            public Future<RecordMetadata> report(ProcessingContext<T> failed) {
                return CompletableFuture.completedFuture(null);
            }

            <V> V run(Operation<V> operation, Stage stage, Class<?> executing) {
                try {
                    return operator.execute(context, operation, stage, executing);
                } catch (Throwable e) {
                    // "Tolerance exceeded" (errors.tolerance=none), or what the operator does
                    // not handle (an Error): Kafka's task fails
                    taskFailure = e;
                    if (context.error() == null) {
                        context.currentContext(stage, executing);
                        context.error(e);
                    }
                    return null;
                }
            }

            boolean failed() {
                return taskFailure != null || context.failed();
            }

            @SuppressWarnings("unchecked")
            Map<String, Object> answer(Map<String, Object> input, List<Map<String, Object>> stages, String alias,
                                       String predicate) {
                if (stages.isEmpty() || !"FAILED".equals(stages.get(stages.size() - 1).get("verdict"))) {
                    stages.add(PreviewRecords.stage(context.stage().name(), context.executingClass().getName(),
                            "FAILED", null, alias, predicate, false));
                }
                Throwable error = context.error();
                Map<String, Object> failure = new LinkedHashMap<>();
                failure.put("stage", context.stage().name());
                failure.put("class_name", context.executingClass().getName());
                failure.put("exception_class", error.getClass().getName());
                failure.put("message", error.getMessage() == null ? "" : error.getMessage());
                failure.put("action", taskFailure != null ? "TASK_FAILS" : "RECORD_SKIPPED");
                String dlqTopic = "";
                List<List<Object>> dlqHeaders = List.of();
                if (built.config() instanceof SinkConnectorConfig sink && !sink.dlqTopicName().isEmpty()) {
                    dlqTopic = sink.dlqTopicName();
                    if (sink.isDlqContextHeadersEnabled()) {
                        dlqHeaders = PreviewRecords.deadLetterHeaders(
                                (ProcessingContext<ConsumerRecord<byte[], byte[]>>) context, task);
                    }
                }
                failure.put("dead_letter_topic", dlqTopic);
                failure.put("dead_letter_headers", dlqHeaders);
                return PreviewRecords.recordPreview(input, stages, "FAILED", null, failure);
            }
        }
    }

    /** What follows a source record's transformations: its converters. */
    @FunctionalInterface
    private interface Then<T, R> {
        Map<String, Object> convert(Runner.Attempt<T> attempt, Map<String, Object> input,
                                    List<Map<String, Object>> stages, R record);
    }
}
