package io.connectgrpc.jvm.plugins;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Base64;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;

import com.fasterxml.jackson.databind.JsonNode;

import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.common.header.internals.RecordHeaders;
import org.apache.kafka.common.record.TimestampType;
import org.apache.kafka.connect.connector.ConnectRecord;
import org.apache.kafka.connect.data.Schema;
import org.apache.kafka.connect.data.SchemaAndValue;
import org.apache.kafka.connect.header.Header;
import org.apache.kafka.connect.header.Headers;
import org.apache.kafka.connect.json.JsonConverter;
import org.apache.kafka.connect.runtime.errors.DeadLetterQueueReporter;
import org.apache.kafka.connect.runtime.errors.ProcessingContext;
import org.apache.kafka.connect.runtime.errors.Stage;
import org.apache.kafka.connect.sink.SinkRecord;
import org.apache.kafka.connect.util.ConnectorTaskId;

/**
 * A pipeline preview's records in and out as JSON ({@link PipelinePreview}): the input
 * records a request carries, each point of a record's way as a view, Connect data rendered as
 * connect-grpc's Python preview renders it, and a failed sink record's dead-letter headers.
 *
 * <p>A datum is JSON null, {@code {"raw": base64}} (bytes), {@code {"json": text}} (a source
 * sample's JSON, read as Connect data) or, in an answer, {@code {"json": payload, "schema":
 * schema}}: the payload as Kafka's JsonConverter writes it without schemas (decimals as
 * numbers), the schema as its envelope writes it, "" for schemaless data.
 */
final class PreviewRecords {

    private static final Base64.Encoder BASE64 = Base64.getEncoder();
    private static final Base64.Decoder UNBASE64 = Base64.getDecoder();

    private PreviewRecords() {
    }

    /** Kafka's JsonConverter as the preview reads samples and renders data with. */
    static JsonConverter jsonConverter(boolean schemasEnable) {
        JsonConverter converter = new JsonConverter();
        converter.configure(Map.of(
                "schemas.enable", String.valueOf(schemasEnable),
                "decimal.format", "NUMERIC",
                "replace.null.with.default", "false"), false);
        return converter;
    }

    // ---- input ----------------------------------------------------------------------------

    /** A sink's input record: bytes as a task's consumer hands them to Kafka's worker. */
    static ConsumerRecord<byte[], byte[]> consumed(Map<String, Object> record) {
        RecordHeaders headers = new RecordHeaders();
        for (List<Object> header : headerList(record)) {
            headers.add((String) header.get(0), raw(header.get(1)));
        }
        Long timestamp = longOrNull(record.get("timestamp"));
        TimestampType type = timestamp == null ? TimestampType.NO_TIMESTAMP_TYPE
                : TimestampType.forName(String.valueOf(record.getOrDefault("timestamp_type", "CreateTime")));
        byte[] key = raw(record.get("key"));
        byte[] value = raw(record.get("value"));
        return new ConsumerRecord<>((String) record.get("topic"), intOrZero(record.get("partition")),
                longOrNull(record.get("offset")) == null ? 0L : longOrNull(record.get("offset")),
                timestamp == null ? ConsumerRecord.NO_TIMESTAMP : timestamp, type,
                key == null ? ConsumerRecord.NULL_SIZE : key.length,
                value == null ? ConsumerRecord.NULL_SIZE : value.length,
                key, value, headers, Optional.empty());
    }

    @SuppressWarnings("unchecked")
    static List<List<Object>> headerList(Map<String, Object> record) {
        Object headers = record.get("headers");
        return headers == null ? List.of() : (List<List<Object>>) headers;
    }

    /**
     * A source sample's key, value or header value as Connect data: an envelope
     * ({@code {"schema", "payload"}} and nothing else) through a JsonConverter with schemas,
     * any other JSON through one without, bytes as schemaless bytes.
     */
    static SchemaAndValue sampleData(Object datum, JsonConverter envelopes, JsonConverter plain) {
        if (datum == null) {
            return SchemaAndValue.NULL;
        }
        Map<?, ?> fields = (Map<?, ?>) datum;
        if (fields.containsKey("raw")) {
            return new SchemaAndValue(null, raw(datum));
        }
        String text = (String) fields.get("json");
        byte[] bytes = text.getBytes(StandardCharsets.UTF_8);
        JsonNode node;
        try {
            node = Json.MAPPER.readTree(text);
        } catch (Exception e) {
            throw new IllegalArgumentException("not JSON: " + e.getMessage(), e);
        }
        boolean envelope = node != null && node.isObject() && node.size() == 2
                && node.has("schema") && node.has("payload");
        return (envelope ? envelopes : plain).toConnectData("", bytes);
    }

    static byte[] raw(Object datum) {
        if (datum == null) {
            return null;
        }
        return UNBASE64.decode((String) ((Map<?, ?>) datum).get("raw"));
    }

    static Long longOrNull(Object number) {
        return number == null ? null : ((Number) number).longValue();
    }

    static Integer intOrNull(Object number) {
        return number == null ? null : ((Number) number).intValue();
    }

    private static int intOrZero(Object number) {
        return number == null ? 0 : ((Number) number).intValue();
    }

    // ---- output -----------------------------------------------------------------------------

    static Map<String, Object> rawDatum(byte[] bytes) {
        if (bytes == null) {
            return null;
        }
        return Map.of("raw", BASE64.encodeToString(bytes));
    }

    /** Renders records and data as the Python preview's {@code DataRenderer} does. */
    static final class Renderer {
        private final JsonConverter json = jsonConverter(false);

        /** A record at a point of the pipeline: Connect data (and Connect headers) rendered. */
        Map<String, Object> record(ConnectRecord<?> record) {
            Long offset = record instanceof SinkRecord sink ? sink.kafkaOffset() : null;
            return view(record.topic(), record.kafkaPartition(), offset, record.timestamp(),
                    data(record.topic(), record.keySchema(), record.key()),
                    data(record.topic(), record.valueSchema(), record.value()),
                    headers(record.topic(), record.headers()));
        }

        List<List<Object>> headers(String topic, Headers headers) {
            List<List<Object>> rendered = new ArrayList<>();
            if (headers != null) {
                for (Header header : headers) {
                    rendered.add(pair(header.key(), data(topic, header.schema(), header.value())));
                }
            }
            return rendered;
        }

        Object data(String topic, Schema schema, Object value) {
            if (schema == null && (value == null || value instanceof byte[])) {
                return rawDatum((byte[]) value);
            }
            String payload;
            try {
                byte[] written = json.fromConnectData(topic, schema, value);
                payload = written == null ? "null" : new String(written, StandardCharsets.UTF_8);
            } catch (RuntimeException e) {
                // data its schema does not describe: shown all the same, as text
                payload = Json.write(String.valueOf(value));
            }
            Map<String, Object> datum = new LinkedHashMap<>();
            datum.put("json", payload);
            datum.put("schema", schema == null ? "" : json.asJsonSchema(schema).toString());
            return datum;
        }
    }

    static Map<String, Object> view(String topic, Integer partition, Long offset, Long timestamp,
                                    Object key, Object value, List<List<Object>> headers) {
        Map<String, Object> view = new LinkedHashMap<>();
        view.put("topic", topic);
        view.put("partition", partition);
        view.put("offset", offset);
        view.put("timestamp", timestamp);
        view.put("key", key);
        view.put("value", value);
        view.put("headers", headers);
        return view;
    }

    /** A stage's view: what it did and the record after it (null when it failed or dropped it). */
    static Map<String, Object> stage(String stage, String className, String verdict, Object record, String alias,
                                     String predicate, boolean predicateMatched) {
        Map<String, Object> view = new LinkedHashMap<>();
        view.put("stage", stage);
        view.put("class_name", className);
        view.put("verdict", verdict);
        view.put("record", record);
        view.put("alias", alias);
        view.put("predicate", predicate);
        view.put("predicate_matched", predicateMatched);
        return view;
    }

    /** A converter's stage, which applied. */
    static Map<String, Object> applied(Stage stage, Object converter, Map<String, Object> record) {
        return stage(stage.name(), converter.getClass().getName(), "APPLIED", record, "", "", false);
    }

    /** One record's way: its input, its stages, what became of it. */
    static Map<String, Object> recordPreview(Map<String, Object> input, List<Map<String, Object>> stages,
                                             String outcome, Object output, Map<String, Object> failure) {
        Map<String, Object> answer = new LinkedHashMap<>();
        answer.put("input", input);
        answer.put("stages", stages);
        answer.put("outcome", outcome);
        answer.put("output", output);
        answer.put("failure", failure);
        return answer;
    }

    static List<List<Object>> rawHeaders(Iterable<org.apache.kafka.common.header.Header> headers) {
        List<List<Object>> rendered = new ArrayList<>();
        for (org.apache.kafka.common.header.Header header : headers) {
            rendered.add(pair(header.key(), rawDatum(header.value())));
        }
        return rendered;
    }

    static List<Object> pair(String key, Object value) {
        List<Object> pair = new ArrayList<>(2);
        pair.add(key);
        pair.add(value);
        return pair;
    }

    // ---- dead-letter headers ----------------------------------------------------------------

    /**
     * The {@code __connect.errors.*} headers Kafka's {@link DeadLetterQueueReporter} gives the
     * failed record ({@code populateContextHeaders}, which its API keeps to itself and which
     * needs a reporter built over a producer): its names, in its order, each value its UTF-8
     * text, the message null when the exception has none.
     */
    static List<List<Object>> deadLetterHeaders(ProcessingContext<ConsumerRecord<byte[], byte[]>> context,
                                                ConnectorTaskId task) {
        List<List<Object>> headers = new ArrayList<>();
        ConsumerRecord<byte[], byte[]> original = context.original();
        if (original != null) {
            headers.add(text(DeadLetterQueueReporter.ERROR_HEADER_ORIG_TOPIC, original.topic()));
            headers.add(text(DeadLetterQueueReporter.ERROR_HEADER_ORIG_PARTITION, String.valueOf(original.partition())));
            headers.add(text(DeadLetterQueueReporter.ERROR_HEADER_ORIG_OFFSET, String.valueOf(original.offset())));
        }
        headers.add(text(DeadLetterQueueReporter.ERROR_HEADER_CONNECTOR_NAME, task.connector()));
        headers.add(text(DeadLetterQueueReporter.ERROR_HEADER_TASK_ID, String.valueOf(task.task())));
        headers.add(text(DeadLetterQueueReporter.ERROR_HEADER_STAGE, context.stage().name()));
        headers.add(text(DeadLetterQueueReporter.ERROR_HEADER_EXECUTING_CLASS, context.executingClass().getName()));
        Throwable error = context.error();
        if (error != null) {
            headers.add(text(DeadLetterQueueReporter.ERROR_HEADER_EXCEPTION, error.getClass().getName()));
            headers.add(text(DeadLetterQueueReporter.ERROR_HEADER_EXCEPTION_MESSAGE, error.getMessage()));
            ByteArrayOutputStream trace = new ByteArrayOutputStream();
            try (PrintStream stream = new PrintStream(trace, true, StandardCharsets.UTF_8)) {
                error.printStackTrace(stream);
            }
            headers.add(pair(DeadLetterQueueReporter.ERROR_HEADER_EXCEPTION_STACK_TRACE,
                    BASE64.encodeToString(trace.toByteArray())));
        }
        return headers;
    }

    private static List<Object> text(String key, String value) {
        return pair(key, value == null ? null : BASE64.encodeToString(value.getBytes(StandardCharsets.UTF_8)));
    }
}
