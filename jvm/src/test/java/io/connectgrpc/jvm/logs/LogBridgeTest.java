package io.connectgrpc.jvm.logs;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.net.URL;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicLong;

import com.fasterxml.jackson.databind.ObjectMapper;

import io.connectgrpc.jvm.host.proto.LogRecord;

import org.apache.kafka.connect.runtime.isolation.PluginClassLoader;
import org.apache.logging.log4j.Level;
import org.apache.logging.log4j.ThreadContext;
import org.apache.logging.log4j.core.LogEvent;
import org.apache.logging.log4j.core.Logger;
import org.apache.logging.log4j.core.LoggerContext;
import org.apache.logging.log4j.core.appender.AbstractAppender;
import org.apache.logging.log4j.core.config.Configuration;
import org.apache.logging.log4j.core.config.DefaultConfiguration;
import org.apache.logging.log4j.core.config.Property;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * The bridge in a log4j context of its own, configured as Spark's driver is (root at WARN, a
 * console appender, here one that records what reaches it): which lines it takes, at which
 * levels, where they go, what Spark's appender still gets, repeats held back, the driver's
 * drain and its list of loggers.
 */
@Timeout(30)
class LogBridgeTest {

    private static final String TASK_LOGGER = "org.apache.kafka.connect.file.FileStreamSourceTask";
    private static final String RUNTIME_LOGGER = "org.apache.kafka.connect.runtime.WorkerSourceTask";
    private static final String SPARK_LOGGER = "org.apache.spark.SparkContext";

    private final AtomicLong nanos = new AtomicLong(1_000_000_000L);
    private LoggerContext context;
    private Recorder console;
    private LogBridge bridge;
    private DriverLogs driver;

    @BeforeEach
    void sparkLikeContext() {
        context = new LoggerContext("bridge-test-" + System.nanoTime());
        context.start(sparkLike());
        console = (Recorder) context.getConfiguration().getAppender("console");
        bridge = new LogBridge(new JavaLogLevels(), new RateLimiter(30_000L, 16, nanos::get));
        bridge.installInto(context);
        driver = new DriverLogs(bridge, 100);
    }

    @AfterEach
    void clear() throws Exception {
        ThreadContext.clearMap();
        driver.close();
        context.stop();
    }

    private static Configuration sparkLike() {
        DefaultConfiguration configuration = new DefaultConfiguration();
        for (String name : List.copyOf(configuration.getRootLogger().getAppenders().keySet())) {
            configuration.getRootLogger().removeAppender(name);
        }
        Recorder console = new Recorder("console");
        console.start();
        configuration.addAppender(console);
        configuration.getRootLogger().addAppender(console, null, null);
        configuration.getRootLogger().setLevel(Level.WARN);
        return configuration;
    }

    private Logger logger(String name) {
        return context.getLogger(name);
    }

    private List<LogRecord> drained() throws Exception {
        return parse(driver.drain(100, 0L));
    }

    static List<LogRecord> parse(byte[] data) throws IOException {
        List<LogRecord> records = new ArrayList<>();
        ByteArrayInputStream in = new ByteArrayInputStream(data);
        LogRecord record;
        while ((record = LogRecord.parseDelimitedFrom(in)) != null) {
            records.add(record);
        }
        return records;
    }

    @Test
    void takesKafkasAndThisSidesLoggersALoggingContextAndPluginThreadsButNotSparks() throws Exception {
        assertTrue(LogBridge.takes(RUNTIME_LOGGER, null, null));
        assertTrue(LogBridge.takes("org.apache.kafka", null, null));
        assertTrue(LogBridge.takes("io.connectgrpc.jvm.host.TaskSession", null, null));
        assertFalse(LogBridge.takes("org.apache.kafkaesque.Thing", null, null));
        assertFalse(LogBridge.takes(SPARK_LOGGER, null, null));
        assertTrue(LogBridge.takes("com.zaxxer.hikari.HikariPool", "[orders|task-0] ", null));
        try (PluginClassLoader plugin = new PluginClassLoader(new URL("file:/plugins/x/"), new URL[0],
                getClass().getClassLoader())) {
            assertTrue(LogBridge.takes("io.debezium.relational.Snapshotter", null, plugin));
        }
        assertFalse(LogBridge.takes("io.debezium.relational.Snapshotter", null, getClass().getClassLoader()));
    }

    @Test
    void takesHereDecidesAsTakesWithThisThreadsContextAndClassLoader() throws Exception {
        assertTrue(bridge.takesHere(RUNTIME_LOGGER));
        assertFalse(bridge.takesHere("org.apache.kafkaesque.Thing"));
        assertFalse(bridge.takesHere(SPARK_LOGGER));
        assertFalse(bridge.takesHere(null));
        ThreadContext.put(LogBridge.CONTEXT_KEY, "[orders|task-0] ");
        assertTrue(bridge.takesHere("com.zaxxer.hikari.HikariPool"));
        ThreadContext.clearMap();
        assertFalse(bridge.takesHere("io.debezium.relational.Snapshotter"));
        Thread thread = Thread.currentThread();
        ClassLoader before = thread.getContextClassLoader();
        try (PluginClassLoader plugin = new PluginClassLoader(new URL("file:/plugins/x/"), new URL[0],
                getClass().getClassLoader())) {
            thread.setContextClassLoader(plugin);
            assertTrue(bridge.takesHere("io.debezium.relational.Snapshotter"));
        } finally {
            thread.setContextClassLoader(before);
        }
    }

    @Test
    void aTasksLinesGoToTheDriverNamedAndSparksStayInItsLog() throws Exception {
        ThreadContext.put(LogBridge.CONTEXT_KEY, "[orders|task-3] ");
        logger(RUNTIME_LOGGER).info("{} Source task finished initialization and start", "WorkerSourceTask{id=orders-3}");
        logger("com.example.Library").warn("a library's warning on the task's thread");
        ThreadContext.clearMap();
        logger(SPARK_LOGGER).warn("Spark's own warning");
        logger(SPARK_LOGGER).info("Spark's own info, below its WARN");
        logger("org.apache.kafka.clients.NetworkClient").debug("below INFO: not taken");

        List<LogRecord> records = drained();
        assertEquals(2, records.size(), records.toString());
        LogRecord first = records.get(0);
        assertEquals(RUNTIME_LOGGER, first.getLogger());
        assertEquals(LogRecord.Level.LEVEL_INFO, first.getLevel());
        assertEquals("WorkerSourceTask{id=orders-3} Source task finished initialization and start", first.getMessage());
        assertEquals("orders", first.getConnector());
        assertEquals(3, first.getTask());
        assertEquals(Thread.currentThread().getName(), first.getThread());
        assertEquals("com.example.Library", records.get(1).getLogger());
        assertEquals(LogRecord.Level.LEVEL_WARN, records.get(1).getLevel());
        assertEquals(List.of("Spark's own warning"), console.messages(), "Spark's appender keeps Spark's lines only");
    }

    @Test
    void theWorkersLevelsDecideForTakenLoggersOnly() throws Exception {
        Logger task = logger(TASK_LOGGER);
        task.debug("Opened {} for reading", "/data/in");
        assertTrue(drained().isEmpty(), "INFO by default");
        assertTrue(bridge.levels().apply(1L, List.of(Map.entry("org.apache.kafka.connect.file", "DEBUG"))));
        assertTrue(task.isDebugEnabled());
        assertFalse(logger(RUNTIME_LOGGER).isDebugEnabled());
        assertFalse(logger(SPARK_LOGGER).isInfoEnabled(), "Spark's levels stay Spark's");
        task.debug("Opened {} for reading", "/data/in");
        logger(RUNTIME_LOGGER).debug("not under the namespace set");
        assertEquals(List.of("Opened /data/in for reading"), messages(drained()));

        assertTrue(bridge.levels().apply(2L, List.of(Map.entry("org.apache.kafka.connect.file", "ERROR"))));
        task.warn("Couldn't find file {}", "/data/in");
        task.error("a failure");
        assertEquals(List.of("a failure"), messages(drained()));
        assertTrue(console.messages().isEmpty(), "a line held back by the worker's level goes nowhere");

        assertTrue(bridge.levels().apply(3L, List.of(Map.entry("root", "OFF"))));
        task.error("off");
        logger(SPARK_LOGGER).error("Spark's error");
        assertTrue(drained().isEmpty());
        assertEquals(List.of("Spark's error"), console.messages());
    }

    @Test
    void theLevelTableIsTheWorkersLongestNamespaceFirstAndNewerOnly() {
        JavaLogLevels levels = new JavaLogLevels();
        assertEquals(Level.INFO, levels.levelOf("anything"));
        assertTrue(levels.apply(4L, List.of(
                Map.entry("a.b", "DEBUG"), Map.entry("ROOT", "WARN"), Map.entry("a", "ERROR"),
                Map.entry("a.b.c", "trace"), Map.entry("x", "LOUD"))));
        assertEquals(Level.WARN, levels.levelOf("z"), "root's set replaced a.b's");
        assertEquals(Level.ERROR, levels.levelOf("a.b"));
        assertEquals(Level.TRACE, levels.levelOf("a.b.cd"), "a plain prefix, as Kafka Connect's sets");
        assertEquals(Level.WARN, levels.levelOf("x.y"), "an unknown level name is skipped");
        assertFalse(levels.apply(4L, List.of()), "not newer");
        assertFalse(levels.apply(3L, List.of()));
        assertEquals(Level.ERROR, levels.levelOf("a.b"));
        assertTrue(levels.apply(5L, List.of(Map.entry("a", "DEBUG"), Map.entry("a.b", "WARN"), Map.entry("a", "ERROR"))));
        assertEquals(Level.ERROR, levels.levelOf("a.b"), "a later set on a covers a.b");
        assertEquals(4L + 1L, levels.version());
    }

    @Test
    void kafkasLoggingContextNamesTheConnectorAndTask() {
        assertEquals(new ConnectorContext("orders", 0), ConnectorContext.parse("[orders|task-0] "));
        assertEquals(new ConnectorContext("orders", -1), ConnectorContext.parse("[orders|worker] "));
        assertEquals(new ConnectorContext("orders", 12), ConnectorContext.parse("[orders|task-12|offsets] "));
        assertEquals(new ConnectorContext("a|b", 1), ConnectorContext.parse("[a|b|task-1] "));
        assertEquals(new ConnectorContext("task-x", -1), ConnectorContext.parse("[task-x|worker] "));
        assertEquals(ConnectorContext.NONE, ConnectorContext.parse(null));
        assertEquals(ConnectorContext.NONE, ConnectorContext.parse("orders"));
        assertEquals(ConnectorContext.NONE, ConnectorContext.parse("[] "));
    }

    @Test
    void aRepeatedLineIsHeldBackThenCarriesTheCount() throws Exception {
        ThreadContext.put(LogBridge.CONTEXT_KEY, "[orders|task-0] ");
        Logger task = logger(TASK_LOGGER);
        for (int i = 0; i < 4; i++) {
            task.warn("Couldn't find file {} for FileStreamSourceTask", "/data/in-" + i);
        }
        task.warn("another pattern");
        ThreadContext.put(LogBridge.CONTEXT_KEY, "[orders|task-1] ");
        task.warn("Couldn't find file {} for FileStreamSourceTask", "/data/in");
        task.fatal("a fatal line is never held back");
        task.fatal("a fatal line is never held back");
        assertEquals(List.of("Couldn't find file /data/in-0 for FileStreamSourceTask", "another pattern",
                "Couldn't find file /data/in for FileStreamSourceTask", "a fatal line is never held back",
                "a fatal line is never held back"), messages(drained()));

        nanos.addAndGet(30_000_000_000L);
        ThreadContext.put(LogBridge.CONTEXT_KEY, "[orders|task-0] ");
        task.warn("Couldn't find file {} for FileStreamSourceTask", "/data/in-9");
        List<LogRecord> later = drained();
        assertEquals(1, later.size());
        assertEquals(3L, later.get(0).getSuppressed());
        assertTrue(console.messages().isEmpty(), "held back, not handed to Spark's log");
    }

    @Test
    void aHostedTasksLinesGoToItsQueueTheRestToTheDriverOrAnyTaskWithoutIt() throws Exception {
        LogQueue task = new LogQueue(10);
        AutoCloseable attached = bridge.attachTask("orders", 0, task);
        Logger runtime = logger(RUNTIME_LOGGER);
        ThreadContext.put(LogBridge.CONTEXT_KEY, "[orders|task-0] ");
        runtime.info("the task's");
        ThreadContext.put(LogBridge.CONTEXT_KEY, "[orders|worker] ");
        runtime.info("the connector's");
        ThreadContext.clearMap();
        runtime.info("nobody's");
        assertEquals(List.of("the task's"), messages(task.take(10, 0L)));
        assertEquals(List.of("the connector's", "nobody's"), messages(drained()));

        driver.close();  // an executor's JVM: no driver queue
        runtime.info("a network thread's");
        assertEquals(List.of("a network thread's"), messages(task.take(10, 0L)));
        attached.close();
        runtime.warn("nowhere to go");
        runtime.info("below Spark's WARN");
        assertTrue(task.isEmpty());
        assertEquals(List.of("nowhere to go"), console.messages(),
                "with nowhere to send lines, Spark's configuration decides them all, as before");
    }

    @Test
    void aFullQueueDropsAndTheNextLineSaysHowMany() throws Exception {
        LogQueue small = new LogQueue(2);
        AutoCloseable attached = bridge.attachTask("orders", 0, small);
        ThreadContext.put(LogBridge.CONTEXT_KEY, "[orders|task-0] ");
        Logger runtime = logger(RUNTIME_LOGGER);
        for (int i = 0; i < 5; i++) {
            runtime.info("line " + i);
        }
        assertEquals(List.of("line 0", "line 1"), messages(small.take(10, 0L)));
        runtime.info("line 5");
        List<LogRecord> next = small.take(10, 0L);
        assertEquals("line 5", next.get(0).getMessage());
        assertEquals(3L, next.get(0).getDropped());
        attached.close();
    }

    @Test
    void aThrowableComesWithItsCauses() throws Exception {
        logger(RUNTIME_LOGGER).error("failed", new IllegalStateException("outer", new java.io.IOException("disk gone")));
        LogRecord record = drained().get(0);
        assertEquals(LogRecord.Level.LEVEL_ERROR, record.getLevel());
        assertTrue(record.getThrown().startsWith("java.lang.IllegalStateException: outer"), record.getThrown());
        assertTrue(record.getThrown().contains("Caused by: java.io.IOException: disk gone"), record.getThrown());
        assertFalse(record.hasTask());
        assertEquals("", record.getConnector());
    }

    @Test
    void aPluginsOwnThreadIsTakenByItsClassLoader() throws Exception {
        Thread thread = new Thread(() -> logger("io.debezium.pipeline.ChangeEventSourceCoordinator").info("Snapshot ended"));
        try (PluginClassLoader plugin = new PluginClassLoader(new URL("file:/plugins/x/"), new URL[0],
                getClass().getClassLoader())) {
            thread.setContextClassLoader(plugin);
            thread.start();
            thread.join();
        }
        assertEquals(List.of("Snapshot ended"), messages(drained()));
    }

    @Test
    void theDriverListsTheLoggersItTakesAndSaysWhichALevelChanged() throws Exception {
        logger(TASK_LOGGER).debug("seen at any level");
        logger(SPARK_LOGGER).warn("never listed");
        ThreadContext.put(LogBridge.CONTEXT_KEY, "[orders|task-0] ");
        logger("com.example.Library").trace("seen on a task's thread");
        ThreadContext.clearMap();
        ObjectMapper json = new ObjectMapper();
        @SuppressWarnings("unchecked")
        Map<String, String> listed = json.readValue(driver.loggers(), Map.class);
        assertEquals("INFO", listed.get(TASK_LOGGER));
        assertEquals("INFO", listed.get("com.example.Library"));
        assertNull(listed.get(SPARK_LOGGER));

        String changed = driver.setLevels(7L, "[[\"org.apache.kafka.connect\", \"DEBUG\"]]", "org.apache.kafka.connect");
        assertEquals(List.of(TASK_LOGGER), json.readValue(changed, List.class));
        assertEquals("[]", driver.setLevels(7L, "[[\"org.apache.kafka.connect\", \"WARN\"]]", "org.apache.kafka.connect"),
                "a table no newer is not applied");
        assertEquals("[]", driver.setLevels(8L, "[[\"org.apache.kafka.connect\", \"DEBUG\"]]", "org.apache.kafka.connect"),
                "no level changed");
        changed = driver.setLevels(9L, "[[\"root\", \"ERROR\"]]", "root");
        assertEquals(List.of("com.example.Library", TASK_LOGGER), json.readValue(changed, List.class));
        assertNotNull(json.readValue(driver.loggers(), Map.class).get(TASK_LOGGER));
    }

    @Test
    void aNewConfigurationGetsTheBridgeToo() throws Exception {
        context.setConfiguration(sparkLike());
        console = (Recorder) context.getConfiguration().getAppender("console");
        logger(RUNTIME_LOGGER).info("after a reconfiguration");
        logger(SPARK_LOGGER).warn("Spark's");
        assertEquals(List.of("after a reconfiguration"), messages(drained()));
        assertEquals(List.of("Spark's"), console.messages());
    }

    private static List<String> messages(List<LogRecord> records) {
        return records.stream().map(LogRecord::getMessage).toList();
    }

    /** An appender that records what reaches it (Spark's console's stand-in). */
    static final class Recorder extends AbstractAppender {

        private final List<String> seen = new CopyOnWriteArrayList<>();

        Recorder(String name) {
            super(name, null, null, true, Property.EMPTY_ARRAY);
        }

        @Override
        public void append(LogEvent event) {
            seen.add(event.getMessage().getFormattedMessage());
        }

        List<String> messages() {
            List<String> copy = List.copyOf(seen);
            seen.clear();
            return copy;
        }
    }
}
