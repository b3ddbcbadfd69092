package io.connectgrpc.jvm.plugins;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Base64;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * PreviewPipeline of Java connectors: Kafka's own JsonConverter, StringConverter, SMTs and
 * predicates, built from a connector config of Kafka's FileStream connectors (fetched by
 * {@code make install}) as Kafka's worker builds a task's, answered through the host's JSON.
 */
class PipelinePreviewTest {

    private static final String SINK = "org.apache.kafka.connect.file.FileStreamSinkConnector";
    private static final String SOURCE = "org.apache.kafka.connect.file.FileStreamSourceConnector";
    private static final String JSON = "org.apache.kafka.connect.json.JsonConverter";
    private static final String STRING = "org.apache.kafka.connect.storage.StringConverter";

    private static PipelinePreview previewer;

    @BeforeAll
    static void open() {
        assumeTrue(SharedScan.fetchedPath().isPresent(), SharedScan.fetchedMissingMessage());
        previewer = new PipelinePreview(SharedScan.catalogue());
    }

    @AfterAll
    static void close() {
        if (previewer != null) {
            previewer.close();
        }
    }

    private static Map<String, String> sinkConfig(String... more) {
        Map<String, String> config = new LinkedHashMap<>();
        config.put("name", "preview-sink");
        config.put("connector.class", SINK);
        config.put("topics", "orders");
        config.put("file", "/tmp/never-written");
        config.put("key.converter", STRING);
        config.put("value.converter", JSON);
        config.put("value.converter.schemas.enable", "false");
        for (int i = 0; i < more.length; i += 2) {
            config.put(more[i], more[i + 1]);
        }
        return config;
    }

    private static Map<String, Object> raw(String text) {
        return Map.of("raw", Base64.getEncoder().encodeToString(text.getBytes(StandardCharsets.UTF_8)));
    }

    private static Map<String, Object> consumed(String topic, long offset, String key, String value) {
        Map<String, Object> record = new HashMap<>();
        record.put("topic", topic);
        record.put("partition", 0);
        record.put("offset", offset);
        record.put("key", key == null ? null : raw(key));
        record.put("value", value == null ? null : raw(value));
        record.put("headers", List.of(List.of("trace", raw("abc"))));
        return record;
    }

    /** The answer as Python reads it: through the host's JSON. */
    private static List<Map<String, Object>> preview(String type, Map<String, String> config,
                                                     List<Map<String, Object>> records) {
        Map<String, Object> request = Map.of("type", type, "config", config,
                "worker", Map.of("key.converter", "org.apache.kafka.connect.converters.ByteArrayConverter",
                        "value.converter", "org.apache.kafka.connect.converters.ByteArrayConverter"),
                "records", records);
        Map<String, Object> answer = Json.readObject(Json.write(previewer.preview(request)));
        assertTrue(answer.containsKey("records"), answer.toString());
        @SuppressWarnings("unchecked")
        List<Map<String, Object>> previews = (List<Map<String, Object>>) answer.get("records");
        return previews;
    }

    @SuppressWarnings("unchecked")
    private static List<Map<String, Object>> stages(Map<String, Object> preview) {
        return (List<Map<String, Object>>) preview.get("stages");
    }

    @SuppressWarnings("unchecked")
    private static Map<String, Object> map(Object value) {
        return (Map<String, Object>) value;
    }

    private static String json(Map<String, Object> view, String side) {
        return (String) map(view.get(side)).get("json");
    }

    private static String text(Object datum) {
        return new String(Base64.getDecoder().decode((String) map(datum).get("raw")), StandardCharsets.UTF_8);
    }

    @Test
    void aSinkRecordGoesThroughKafkasConvertersThenItsTransformationChain() {
        Map<String, String> config = sinkConfig(
                "transforms", "insert,rename,drop",
                "transforms.insert.type", "org.apache.kafka.connect.transforms.InsertField$Value",
                "transforms.insert.static.field", "origin",
                "transforms.insert.static.value", "shop",
                "transforms.rename.type", "org.apache.kafka.connect.transforms.ReplaceField$Value",
                "transforms.rename.renames", "qty:quantity",
                "transforms.rename.predicate", "isOrders",
                "transforms.drop.type", "org.apache.kafka.connect.transforms.Filter",
                "transforms.drop.predicate", "isOrders",
                "transforms.drop.negate", "true",
                "predicates", "isOrders",
                "predicates.isOrders.type", "org.apache.kafka.connect.transforms.predicates.TopicNameMatches",
                "predicates.isOrders.pattern", "orders");
        List<Map<String, Object>> previews = preview("sink", config, List.of(
                consumed("orders", 7, "k1", "{\"qty\":2}"),
                consumed("returns", 8, "k2", "{\"qty\":3}")));

        Map<String, Object> kept = previews.get(0);
        assertEquals("DELIVERED", kept.get("outcome"));
        List<Map<String, Object>> stages = stages(kept);
        assertEquals(List.of("KEY_CONVERTER", "VALUE_CONVERTER", "HEADER_CONVERTER", "TRANSFORMATION",
                "TRANSFORMATION", "TRANSFORMATION"), stages.stream().map(s -> s.get("stage")).toList());
        assertEquals(STRING, stages.get(0).get("class_name"));
        Map<String, Object> afterKey = map(stages.get(0).get("record"));
        assertEquals("\"k1\"", json(afterKey, "key"));
        assertEquals("{\"type\":\"string\",\"optional\":true}", map(afterKey.get("key")).get("schema"));
        assertEquals("{\"qty\":2}", text(afterKey.get("value")), "the value is still bytes");
        Map<String, Object> afterHeaders = map(stages.get(2).get("record"));
        List<?> header = (List<?>) ((List<?>) afterHeaders.get("headers")).get(0);
        assertEquals("\"abc\"", map(header.get(1)).get("json"));
        assertEquals("org.apache.kafka.connect.transforms.InsertField$Value", stages.get(3).get("class_name"));
        assertEquals("APPLIED", stages.get(4).get("verdict"));
        assertEquals("isOrders", stages.get(4).get("predicate"));
        assertEquals(true, stages.get(4).get("predicate_matched"));
        assertEquals("SKIPPED_BY_PREDICATE", stages.get(5).get("verdict"), "negated: orders is kept");
        Map<String, Object> output = map(kept.get("output"));
        assertEquals(Map.of("origin", "shop", "quantity", 2), Json.readObject(json(output, "value")));
        assertEquals(7, ((Number) output.get("offset")).intValue());

        Map<String, Object> dropped = previews.get(1);
        assertEquals("DROPPED", dropped.get("outcome"));
        List<Map<String, Object>> droppedStages = stages(dropped);
        assertEquals("SKIPPED_BY_PREDICATE", droppedStages.get(4).get("verdict"));
        assertEquals("DROPPED", droppedStages.get(5).get("verdict"));
        assertNull(droppedStages.get(5).get("record"));
        assertNull(dropped.get("output"));
    }

    private static Map<String, String> castConfig(String tolerance, String... more) {
        List<String> settings = new ArrayList<>(List.of(
                "transforms", "cast",
                "transforms.cast.type", "org.apache.kafka.connect.transforms.Cast$Value",
                "transforms.cast.spec", "qty:int32",
                "errors.tolerance", tolerance));
        settings.addAll(List.of(more));
        return sinkConfig(settings.toArray(String[]::new));
    }

    @Test
    void aFailingTransformationSkipsTheRecordUnderToleranceAllWithItsDeadLetterHeaders() {
        Map<String, String> config = castConfig("all",
                "errors.deadletterqueue.topic.name", " orders-dlq ",
                "errors.deadletterqueue.context.headers.enable", "true");
        List<Map<String, Object>> previews = preview("sink", config, List.of(
                consumed("orders", 3, "k", "{\"qty\":\"many\"}"),
                consumed("orders", 4, "k", "{\"qty\":\"5\"}")));
        Map<String, Object> failed = previews.get(0);
        assertEquals("FAILED", failed.get("outcome"));
        Map<String, Object> last = stages(failed).get(3);
        assertEquals("FAILED", last.get("verdict"));
        assertEquals("cast", last.get("alias"));
        Map<String, Object> failure = map(failed.get("failure"));
        assertEquals("TRANSFORMATION", failure.get("stage"));
        assertEquals("org.apache.kafka.connect.transforms.Cast$Value", failure.get("class_name"));
        assertEquals("org.apache.kafka.connect.errors.DataException", failure.get("exception_class"));
        assertEquals("RECORD_SKIPPED", failure.get("action"));
        assertEquals("orders-dlq", failure.get("dead_letter_topic"));
        Map<String, String> headers = new LinkedHashMap<>();
        for (Object pair : (List<?>) failure.get("dead_letter_headers")) {
            List<?> entry = (List<?>) pair;
            headers.put((String) entry.get(0), entry.get(1) == null ? null
                    : new String(Base64.getDecoder().decode((String) entry.get(1)), StandardCharsets.UTF_8));
        }
        assertEquals("orders", headers.get("__connect.errors.topic"));
        assertEquals("0", headers.get("__connect.errors.partition"));
        assertEquals("3", headers.get("__connect.errors.offset"));
        assertEquals("preview-sink", headers.get("__connect.errors.connector.name"));
        assertEquals("0", headers.get("__connect.errors.task.id"));
        assertEquals("TRANSFORMATION", headers.get("__connect.errors.stage"));
        assertEquals("org.apache.kafka.connect.transforms.Cast$Value", headers.get("__connect.errors.class.name"));
        assertEquals("org.apache.kafka.connect.errors.DataException",
                headers.get("__connect.errors.exception.class.name"));
        assertTrue(headers.get("__connect.errors.exception.stacktrace").contains("at org.apache.kafka"));
        // the next record is a first one again, and goes through
        assertEquals("DELIVERED", previews.get(1).get("outcome"));
        assertEquals("{\"qty\":5}", json(map(previews.get(1).get("output")), "value"));
    }

    @Test
    void aFailingConverterFailsTheTaskUnderToleranceNone() {
        List<Map<String, Object>> previews = preview("sink", castConfig("none"), List.of(
                consumed("orders", 1, "k", "not json")));
        Map<String, Object> failed = previews.get(0);
        assertEquals("FAILED", failed.get("outcome"));
        List<Map<String, Object>> stages = stages(failed);
        assertEquals(2, stages.size(), stages.toString());
        assertEquals("VALUE_CONVERTER", stages.get(1).get("stage"));
        assertEquals("FAILED", stages.get(1).get("verdict"));
        Map<String, Object> failure = map(failed.get("failure"));
        assertEquals("VALUE_CONVERTER", failure.get("stage"));
        assertEquals(JSON, failure.get("class_name"));
        assertEquals("TASK_FAILS", failure.get("action"));
        assertEquals("", failure.get("dead_letter_topic"));
        assertEquals(List.of(), failure.get("dead_letter_headers"));
    }

    @Test
    void aSourceSampleIsTransformedThenConvertedToBytes() {
        Map<String, String> config = new LinkedHashMap<>();
        config.put("name", "preview-source");
        config.put("connector.class", SOURCE);
        config.put("topic", "lines");
        config.put("file", "/tmp/never-read");
        config.put("key.converter", STRING);
        config.put("value.converter", JSON);
        config.put("transforms", "insert");
        config.put("transforms.insert.type", "org.apache.kafka.connect.transforms.InsertField$Value");
        config.put("transforms.insert.static.field", "origin");
        config.put("transforms.insert.static.value", "file");
        Map<String, Object> sample = new HashMap<>();
        sample.put("topic", "lines");
        sample.put("key", Map.of("json", "\"k\""));
        sample.put("value", Map.of("json", "{\"schema\":{\"type\":\"struct\",\"fields\":[{\"field\":\"line\","
                + "\"type\":\"string\"}],\"optional\":false},\"payload\":{\"line\":\"hello\"}}"));
        sample.put("headers", List.of(List.of("n", Map.of("json", "1"))));
        List<Map<String, Object>> previews = preview("source", config, List.of(sample));
        Map<String, Object> delivered = previews.get(0);
        assertEquals("DELIVERED", delivered.get("outcome"), delivered.toString());
        Map<String, Object> input = map(delivered.get("input"));
        assertEquals("{\"line\":\"hello\"}", json(input, "value"));
        assertTrue(((String) map(input.get("value")).get("schema")).contains("\"type\":\"struct\""));
        assertNull(input.get("offset"));
        List<Map<String, Object>> stages = stages(delivered);
        assertEquals(List.of("TRANSFORMATION", "HEADER_CONVERTER", "KEY_CONVERTER", "VALUE_CONVERTER"),
                stages.stream().map(s -> s.get("stage")).toList());
        assertEquals("org.apache.kafka.connect.storage.SimpleHeaderConverter", stages.get(1).get("class_name"));
        Map<String, Object> output = map(delivered.get("output"));
        assertEquals("k", text(output.get("key")));
        String value = text(output.get("value"));
        assertTrue(value.startsWith("{\"schema\":{\"type\":\"struct\""), value);
        assertTrue(value.endsWith("\"payload\":{\"line\":\"hello\",\"origin\":\"file\"}}"), value);
        List<?> header = (List<?>) ((List<?>) output.get("headers")).get(0);
        assertEquals("1", text(header.get(1)));
    }

    @Test
    void aConverterThatCannotBeBuiltIsAConfigError() {
        Map<String, Object> request = Map.of("type", "sink",
                "config", sinkConfig("value.converter", "com.example.NoSuchConverter"),
                "worker", Map.of(), "records", List.of(consumed("orders", 0, "k", "{}")));
        Map<String, Object> answer = previewer.preview(request);
        assertTrue(String.valueOf(answer.get("config_error")).contains("com.example.NoSuchConverter"),
                answer.toString());
    }
}
