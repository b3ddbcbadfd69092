package io.connectgrpc.jvm.connectors;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;

import com.fasterxml.jackson.core.type.TypeReference;

import org.apache.kafka.connect.runtime.isolation.Plugins;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * A worker's connector instances in the JVM, as Python drives them through the gateway:
 * strings in, JSON answers out. The connectors are tiny ones the test compiles
 * ({@link TinyConnectors}), found by Kafka's own {@link Plugins} in a plugin directory.
 */
class ConnectorHostTest {

    private static Path work;
    private static ConnectorHost host;

    @BeforeAll
    static void scan() throws IOException {
        work = Files.createTempDirectory("connect-grpc-connectors-test");
        Path plugins = TinyConnectors.build(work);
        host = new ConnectorHost(
                new Plugins(Map.of("plugin.path", plugins.toString(), "plugin.discovery", "service_load")),
                Map.of());
    }

    @AfterAll
    static void cleanUp() throws IOException {
        host.close();
        try (Stream<Path> walk = Files.walk(work)) {
            walk.sorted(Comparator.reverseOrder()).forEach(path -> path.toFile().delete());
        }
    }

    private static Object ok(String answer) {
        Map<String, Object> parsed = parse(answer);
        assertTrue(parsed.containsKey("ok"), () -> "expected an ok answer, got " + answer);
        return parsed.get("ok");
    }

    @SuppressWarnings("unchecked")
    private static Map<String, Object> error(String answer) {
        Map<String, Object> parsed = parse(answer);
        assertTrue(parsed.containsKey("error"), () -> "expected an error answer, got " + answer);
        return (Map<String, Object>) parsed.get("error");
    }

    private static Map<String, Object> parse(String answer) {
        try {
            return Answers.MAPPER.readValue(answer, new TypeReference<Map<String, Object>>() { });
        } catch (IOException e) {
            throw new AssertionError("not JSON: " + answer, e);
        }
    }

    @SuppressWarnings("unchecked")
    private static int create(String name, String className) {
        Map<String, Object> created = (Map<String, Object>) ok(host.create(name, className, null));
        return (Integer) created.get("handle");
    }

    private static String json(Object value) {
        return Answers.write(value);
    }

    private static String events(String name) {
        return System.getProperty("tiny." + name, "");
    }

    @Test
    @SuppressWarnings("unchecked")
    void aConnectorLivesItsLifecycleInItsPluginsClassLoader() {
        Map<String, Object> created = (Map<String, Object>) ok(host.create("life", TinyConnectors.SOURCE, null));
        assertEquals("source", created.get("kind"));
        assertEquals("1.2.3", created.get("version"));
        assertEquals(TinyConnectors.SOURCE, created.get("class"));
        int handle = (Integer) created.get("handle");
        ok(host.start(handle, json(Map.of("name", "life", "tasks.max", "1"))));
        List<Map<String, String>> configs = (List<Map<String, String>>) ok(host.taskConfigs(handle, 1));
        assertEquals(List.of(Map.of("n", "0", "task.class", "tiny.life.LifeSourceTask")), configs);
        ok(host.stop(handle));
        ok(host.stop(handle));  // stopped already: nothing
        ok(host.start(handle, json(Map.of("name", "life"))));
        ok(host.release(handle));  // still started: stopped first
        ok(host.release(handle));
        // the context was initialized once, and no call ran outside the plugin's class loader
        assertEquals("initialize,start,taskConfigs,stop,start,stop", events("life"));
        assertTrue(error(host.start(handle, json(Map.of()))).get("message").toString().contains("released"));
    }

    @Test
    @SuppressWarnings("unchecked")
    void taskConfigsCarryTheTaskClassAndTheConnectorsTopicsAsKafkasWorkerGivesThem() {
        int handle = create("sink", TinyConnectors.SINK);
        ok(host.start(handle, json(Map.of("name", "sink", "topics", "a,b", "generate", "2"))));
        List<Map<String, String>> configs = (List<Map<String, String>>) ok(host.taskConfigs(handle, 2));
        assertEquals(List.of(
                Map.of("n", "0", "task.class", "tiny.life.LifeSinkTask", "topics", "a,b"),
                Map.of("n", "1", "task.class", "tiny.life.LifeSinkTask", "topics", "a,b")), configs);
        ok(host.release(handle));
    }

    @Test
    @SuppressWarnings("unchecked")
    void moreTaskConfigsThanTasksMaxAreRefusedUnlessTheLimitIsNotEnforced() {
        int handle = create("too-many", TinyConnectors.SOURCE);
        ok(host.start(handle, json(Map.of("name", "too-many", "generate", "3"))));
        Map<String, Object> refused = error(host.taskConfigs(handle, 2));
        assertEquals("org.apache.kafka.connect.runtime.TooManyTasksException", refused.get("class"));
        assertTrue(refused.get("message").toString().startsWith(
                "The connector too-many has generated 3 tasks, which is greater than 2"), refused.toString());
        ok(host.release(handle));

        int lenient = create("too-many-allowed", TinyConnectors.SOURCE);
        ok(host.start(lenient, json(Map.of("name", "too-many-allowed", "generate", "3",
                "tasks.max.enforce", "FALSE"))));
        assertEquals(3, ((List<Object>) ok(host.taskConfigs(lenient, 2))).size());
        ok(host.release(lenient));

        int bad = create("too-many-bad", TinyConnectors.SOURCE);
        ok(host.start(bad, json(Map.of("name", "too-many-bad", "generate", "3", "tasks.max.enforce", "maybe"))));
        assertEquals("org.apache.kafka.common.config.ConfigException", error(host.taskConfigs(bad, 2)).get("class"));
        ok(host.release(bad));
    }

    @Test
    void aStartThatThrowsIsAnAnswerWithTheRootCauseAndTheWholeTrace() {
        int handle = create("fails", TinyConnectors.SOURCE);
        Map<String, Object> failed = error(host.start(handle, json(Map.of("name", "fails", "fail.start", "disk gone"))));
        assertEquals("java.lang.IllegalStateException", failed.get("class"));
        assertEquals("java.io.IOException", failed.get("root_class"));
        assertEquals("disk gone", failed.get("root_message"));
        String trace = failed.get("trace").toString();
        assertTrue(trace.startsWith("java.lang.IllegalStateException: start refused"), trace);
        assertTrue(trace.contains("at tiny.life.LifeSource.start"), trace);
        assertTrue(trace.contains("Caused by: java.io.IOException: disk gone"), trace);
        // not started: asking for task configs is refused, and stopping is nothing
        assertTrue(error(host.taskConfigs(handle, 1)).get("message").toString().contains("not started"));
        ok(host.stop(handle));
        ok(host.release(handle));
        assertEquals("initialize,start", events("fails"));
    }

    @Test
    @SuppressWarnings("unchecked")
    void createAndStartAnswersTheCreatedInstanceOnceItStarted() {
        Map<String, Object> created = (Map<String, Object>) ok(host.createAndStart(
                "at-once", TinyConnectors.SOURCE, null, json(Map.of("name", "at-once", "tasks.max", "1"))));
        assertEquals("source", created.get("kind"));
        assertEquals("1.2.3", created.get("version"));
        int handle = (Integer) created.get("handle");
        assertEquals(1, ((List<Object>) ok(host.taskConfigs(handle, 1))).size());
        ok(host.release(handle));
        assertEquals("initialize,start,taskConfigs,stop", events("at-once"));
    }

    @Test
    void createAndStartReleasesAnInstanceWhoseStartFailedAndAnswersTheStartsError() {
        Map<String, Object> failed = error(host.createAndStart("fails-at-once", TinyConnectors.SOURCE, null,
                json(Map.of("name", "fails-at-once", "fail.start", "disk gone"))));
        assertEquals("java.lang.IllegalStateException", failed.get("class"));
        assertEquals("disk gone", failed.get("root_message"));
        // the instance is gone: the next handle's predecessor is unknown
        int next = create("after-failed", TinyConnectors.SOURCE);
        assertTrue(error(host.start(next - 1, json(Map.of()))).get("message").toString()
                .contains("no connector instance"));
        ok(host.release(next));
        assertEquals("initialize,start", events("fails-at-once"));
        Map<String, Object> unknown = error(host.createAndStart("nowhere", "tiny.nowhere.Connector", null, "{}"));
        assertTrue(unknown.get("message").toString().contains("tiny.nowhere.Connector"), unknown.toString());
    }

    @Test
    void aPluginsLinkageErrorIsAnAnswerNotABrokenGateway() {
        int handle = create("linkage", TinyConnectors.LINKAGE);
        Map<String, Object> failed = error(host.start(handle, json(Map.of("name", "linkage"))));
        assertEquals("java.lang.NoClassDefFoundError", failed.get("class"));
        assertTrue(failed.get("message").toString().contains("tiny/gone/Missing"), failed.toString());
        ok(host.release(handle));
    }

    @Test
    void anUnknownClassOrVersionIsAnAnswer() {
        Map<String, Object> unknown = error(host.create("nowhere", "tiny.nowhere.Connector", null));
        assertTrue(unknown.get("message").toString().contains("tiny.nowhere.Connector"), unknown.toString());
        Map<String, Object> version = error(host.create("versioned", TinyConnectors.SOURCE, "[9.0,)"));
        assertTrue(version.get("trace").toString().contains("[9.0,)"), version.toString());
        assertEquals("1.2.3", ((Map<?, ?>) ok(host.describe(TinyConnectors.SOURCE, "[1.0,2.0)"))).get("version"));
        assertEquals("tiny.life.LifeSinkTask", ((Map<?, ?>) ok(host.describe(TinyConnectors.SINK, null))).get("task_class"));
    }

    @Test
    @SuppressWarnings("unchecked")
    void theContextsCallsBecomeEventsPythonTakesInTurn() {
        int handle = create("events", TinyConnectors.SOURCE);
        assertNull(ok(host.nextEvent(handle, 10)));  // none yet: the wait ends
        ok(host.start(handle, json(Map.of("name", "events", "reconfigure", "yes", "raise", "lost the database"))));
        assertEquals(Map.of("event", "reconfigure"), ok(host.nextEvent(handle, 1000)));
        Map<String, Object> raised = (Map<String, Object>) ok(host.nextEvent(handle, 1000));
        assertEquals("error", raised.get("event"));
        Map<String, Object> cause = (Map<String, Object>) raised.get("error");
        assertEquals("org.apache.kafka.connect.errors.ConnectException", cause.get("root_class"));
        assertEquals("lost the database", cause.get("root_message"));
        assertTrue(cause.get("trace").toString().contains("at tiny.life.LifeSource.start"), cause.toString());
        ok(host.release(handle));
        assertEquals(Map.of("event", "released"), ok(host.nextEvent(handle, 1000)));
    }

    @Test
    void theMetricsAConnectorRegistersThroughItsContextAreAnsweredUntilItIsReleased() {
        int handle = create("metered", TinyConnectors.SOURCE);
        assertEquals(List.of(), ok(host.pluginMetrics(handle)));
        ok(host.start(handle, json(Map.of("name", "metered", "metric", "polls"))));
        // tagged as Kafka's worker tags a connector's plugin metrics
        assertEquals(List.of(Map.of("name", "polls", "description", "tiny",
                        "tags", Map.of("connector", "metered"), "value", 42.0)),
                ok(host.pluginMetrics(handle)));
        ok(host.release(handle));
        assertEquals(List.of(), ok(host.pluginMetrics(handle)));
    }

    @Test
    void aSourceConnectorsOffsetReaderSaysWhyItCannotReadWithoutAnOffsetsTopic() {
        int handle = create("reader", TinyConnectors.SOURCE);
        Map<String, Object> failed = error(host.start(handle, json(Map.of("name", "reader", "read.offset", "/f"))));
        assertEquals("java.lang.UnsupportedOperationException", failed.get("class"));
        assertTrue(failed.get("message").toString().contains("offset.storage.topic"), failed.toString());
        ok(host.release(handle));
    }

    @Test
    void alterOffsetsIsAskedOfAFreshInstanceWithTheOffsetsKafkasWorkerWouldGiveIt() {
        String offsets = json(List.of(
                Map.of("partition", Map.of("file", "/a"), "offset", Map.of("position", 5)),
                java.util.Collections.singletonMap("partition", Map.of("file", "/b"))));
        Map<String, String> config = Map.of("name", "alter-accept", "alter", "true");
        assertEquals(true, ok(host.alterSourceOffsets(TinyConnectors.SOURCE, null, json(config), offsets)));
        // a small integer reaches the connector as a Long, as Kafka's worker normalizes it
        assertTrue(events("alter-accept").startsWith("types Long,alter "), events("alter-accept"));
        assertTrue(events("alter-accept").contains("{file=/b}=null"), events("alter-accept"));

        assertEquals(false, ok(host.alterSourceOffsets(TinyConnectors.SOURCE, null,
                json(Map.of("name", "alter-framework", "alter", "false")), offsets)));

        Map<String, Object> unsupported = error(host.alterSourceOffsets(TinyConnectors.SOURCE, null,
                json(Map.of("name", "alter-unsupported", "alter", "unsupported")), offsets));
        assertEquals("java.lang.UnsupportedOperationException", unsupported.get("class"));

        Map<String, Object> rejected = error(host.alterSourceOffsets(TinyConnectors.SOURCE, null,
                json(Map.of("name", "alter-reject", "alter", "reject")), offsets));
        assertEquals("org.apache.kafka.connect.errors.ConnectException", rejected.get("class"));
        assertEquals("position must be a Long", rejected.get("message"));

        // a partition that is not a map of primitives is refused by Kafka's own check
        Map<String, Object> nested = error(host.alterSourceOffsets(TinyConnectors.SOURCE, null, json(config),
                json(List.of(Map.of("partition", Map.of("file", List.of(1)), "offset", Map.of("position", 1))))));
        assertEquals("org.apache.kafka.connect.errors.DataException", nested.get("class"));
    }

    @Test
    void aSinkConnectorsAlterOffsetsGetsTopicPartitions() {
        String offsets = json(List.of(sinkOffset("t", 0, 42L), java.util.Collections.singletonMap("topic", "t")));
        Map<String, Object> missingPartition = error(host.alterSinkOffsets(TinyConnectors.SINK, null,
                json(Map.of("name", "sink-alter")), offsets));
        assertNotNull(missingPartition.get("class"));
        String good = json(List.of(sinkOffset("t", 0, 42L), sinkOffset("t", 1, null)));
        assertEquals(true, ok(host.alterSinkOffsets(TinyConnectors.SINK, null,
                json(Map.of("name", "sink-alter2")), good)));
        assertEquals("alter {t-0=42, t-1=null}", events("sink-alter2"));
        assertEquals("java.lang.IllegalArgumentException", error(host.alterSinkOffsets(TinyConnectors.SINK, null,
                json(Map.of("name", "sink-alter3")), "not json")).get("class"));
    }

    private static Map<String, Object> sinkOffset(String topic, int partition, Long offset) {
        Map<String, Object> entry = new java.util.LinkedHashMap<>();
        entry.put("topic", topic);
        entry.put("partition", partition);
        entry.put("offset", offset);
        return entry;
    }

    @Test
    void exactlyOnceDeclarationsAreAskedOfAFreshInstance() {
        assertEquals("SUPPORTED", ok(host.exactlyOnceSupport(TinyConnectors.SOURCE, null, json(Map.of("name", "e")))));
        assertNull(ok(host.exactlyOnceSupport(TinyConnectors.SOURCE, null, json(Map.of("name", "e", "undeclared", "")))));
        assertEquals("SUPPORTED", ok(host.canDefineTransactionBoundaries(TinyConnectors.SOURCE, null,
                json(Map.of("name", "e")))));
        assertTrue(error(host.exactlyOnceSupport(TinyConnectors.SINK, null, json(Map.of("name", "e"))))
                .get("message").toString().contains("not a source connector"));
    }
}
