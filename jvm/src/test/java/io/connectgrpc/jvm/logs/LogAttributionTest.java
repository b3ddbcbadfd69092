package io.connectgrpc.jvm.logs;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.net.URL;
import java.util.List;
import java.util.concurrent.atomic.AtomicLong;

import io.connectgrpc.jvm.host.proto.LogRecord;

import org.apache.kafka.connect.runtime.isolation.PluginClassLoader;
import org.apache.logging.log4j.Level;
import org.apache.logging.log4j.ThreadContext;
import org.apache.logging.log4j.core.LoggerContext;
import org.apache.logging.log4j.core.config.DefaultConfiguration;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Whose a line logged outside Kafka's logging context is: Debezium's MDC, once seen beside
 * Kafka's context on a task's thread; the one task of a JVM that is not the driver's; else
 * nobody's.
 */
@Timeout(30)
class LogAttributionTest {

    private static final String COORDINATOR = "io.debezium.pipeline.ChangeEventSourceCoordinator";
    private static final String NETWORK = "org.apache.kafka.clients.NetworkClient";

    private final AtomicLong nanos = new AtomicLong(1_000_000_000L);
    private LoggerContext context;
    private LogBridge bridge;
    private DriverLogs driver;
    private PluginClassLoader plugin;
    private ClassLoader before;

    @BeforeEach
    void bridgeInAContextOfItsOwn() throws Exception {
        DefaultConfiguration configuration = new DefaultConfiguration();
        configuration.getRootLogger().setLevel(Level.WARN);
        context = new LoggerContext("attribution-test-" + System.nanoTime());
        context.start(configuration);
        bridge = new LogBridge(new JavaLogLevels(), new RateLimiter(30_000L, 16, nanos::get));
        bridge.installInto(context);
        driver = new DriverLogs(bridge, 100);
        // Debezium's threads carry its plugin's class loader (they inherit it from the task's)
        plugin = new PluginClassLoader(new URL("file:/plugins/debezium/"), new URL[0], getClass().getClassLoader());
        before = Thread.currentThread().getContextClassLoader();
        Thread.currentThread().setContextClassLoader(plugin);
    }

    @AfterEach
    void clear() throws Exception {
        Thread.currentThread().setContextClassLoader(before);
        plugin.close();
        ThreadContext.clearMap();
        driver.close();
        context.stop();
    }

    /** Logs {@code message} with exactly the MDC {@code keysAndValues}. */
    private void log(String logger, String message, String... keysAndValues) {
        ThreadContext.clearMap();
        for (int i = 0; i < keysAndValues.length; i += 2) {
            ThreadContext.put(keysAndValues[i], keysAndValues[i + 1]);
        }
        context.getLogger(logger).info(message);
        ThreadContext.clearMap();
    }

    private static String who(LogRecord record) {
        return record.getConnector() + "/" + (record.hasTask() ? record.getTask() : "-") + "/" + record.getInferredFrom();
    }

    @Test
    void debeziumsContextSeenOnATasksThreadNamesTheTaskOfItsOwnThreadsLines() throws Exception {
        LogQueue task = new LogQueue(10);
        bridge.attachTask("inventory", 0, task);
        // Debezium's task thread: Kafka's context and Debezium's both
        log(COORDINATOR, "Starting PostgresConnectorTask", LogBridge.CONTEXT_KEY, "[inventory|task-0] ",
                LogBridge.DEBEZIUM_NAME_KEY, "dbserver1", LogBridge.DEBEZIUM_TASK_KEY, "0",
                "dbz.connectorContext", "task");
        // its coordinator thread: Debezium's context only
        log(COORDINATOR, "Snapshot ended", LogBridge.DEBEZIUM_NAME_KEY, "dbserver1",
                LogBridge.DEBEZIUM_TASK_KEY, "0", "dbz.connectorContext", "snapshot");
        // a scope of Debezium's that names no task
        log(COORDINATOR, "Metrics registered", LogBridge.DEBEZIUM_NAME_KEY, "dbserver1");
        // a logical name no task's thread showed
        log(COORDINATOR, "Connected", LogBridge.DEBEZIUM_NAME_KEY, "dbserver2", LogBridge.DEBEZIUM_TASK_KEY, "0");

        List<LogRecord> sent = task.take(10, 0L);
        assertEquals(List.of("Starting PostgresConnectorTask", "Snapshot ended"),
                sent.stream().map(LogRecord::getMessage).toList(), "the task's lines go to its connection");
        assertEquals("inventory/0/", who(sent.get(0)));
        assertEquals("inventory/0/debezium_context", who(sent.get(1)));
        List<LogRecord> rest = LogBridgeTest.parse(driver.drain(10, 0L));
        assertEquals(2, rest.size(), rest.toString());
        assertEquals("inventory/-/debezium_context", who(rest.get(0)));
        assertEquals("/-/", who(rest.get(1)), "not guessed");
    }

    @Test
    void aDebeziumContextSeenWithTwoKafkaContextsNamesNobody() {
        bridge.attribute(new ConnectorContext("a", 0), "shared", "0", null);
        bridge.attribute(new ConnectorContext("b", 0), "shared", "0", null);
        LogBridge.Attribution either = bridge.attribute(ConnectorContext.NONE, "shared", "0", null);
        assertEquals(ConnectorContext.NONE, either.context());
        assertEquals(LogBridge.Inferred.NONE, either.inferred());

        bridge.attribute(new ConnectorContext("c", 0), "two-tasks", "0", null);
        bridge.attribute(new ConnectorContext("c", 1), "two-tasks", "1", null);
        assertEquals(new ConnectorContext("c", 1), bridge.attribute(ConnectorContext.NONE, "two-tasks", "1", null).context());
        assertEquals(new ConnectorContext("c", -1), bridge.attribute(ConnectorContext.NONE, "two-tasks", null, null).context(),
                "the connector, which both tasks agree on");
        assertEquals(new ConnectorContext("c", -1), bridge.attribute(ConnectorContext.NONE, "two-tasks", "7", null).context());
    }

    @Test
    void aKafkaClientsThreadNamesTheHostedTaskWhoseDefaultClientIdItCarries() throws Exception {
        LogQueue orders = new LogQueue(10);
        bridge.attachTask("orders-eu", 3, orders);
        bridge.attachTask("orders-eu", 4, new LogQueue(10));
        assertEquals(new LogBridge.Attribution(new ConnectorContext("orders-eu", 3), LogBridge.Inferred.KAFKA_CLIENT_ID),
                bridge.attribute(ConnectorContext.NONE, null, null, "kafka-producer-network-thread | connector-producer-orders-eu-3"));
        assertEquals(new ConnectorContext("orders-eu", 4), bridge.attribute(ConnectorContext.NONE, null, null,
                "kafka-admin-client-thread | connector-adminclient-orders-eu-4").context());
        for (String thread : List.of("kafka-producer-network-thread | connector-producer-orders-eu-5",
                "kafka-producer-network-thread | my-own-client-id", "kafka-producer-network-thread | connector-producer-orders",
                "kafka-producer-network-thread | connector-producer-orders-eu-x", "connector-producer-orders-eu-3", "main")) {
            assertEquals(ConnectorContext.NONE, bridge.attribute(ConnectorContext.NONE, null, null, thread).context(), thread);
        }
        Thread network = new Thread(() -> context.getLogger("org.apache.kafka.clients.Metadata").info("Cluster ID: x"),
                "kafka-producer-network-thread | connector-producer-orders-eu-3");
        network.start();
        network.join();
        assertEquals("orders-eu/3/kafka_client_id", who(orders.take(10, 0L).get(0)));
    }

    @Test
    void anExecutorsJvmWithOneTaskNamesItForLinesWithoutAContext() throws Exception {
        LogQueue orders = new LogQueue(10);
        AutoCloseable first = bridge.attachTask("orders", 2, orders);
        log(NETWORK, "with the driver's queue: the driver's JVM, not attributed");
        assertEquals("/-/", who(LogBridgeTest.parse(driver.drain(10, 0L)).get(0)));

        driver.close();  // an executor's JVM
        log(NETWORK, "the one task's");
        assertEquals("orders/2/only_task", who(orders.take(10, 0L).get(0)));

        LogQueue other = new LogQueue(10);
        AutoCloseable second = bridge.attachTask("payments", 0, other);
        log(NETWORK, "two tasks: nobody's");
        List<LogRecord> sent = orders.take(10, 0L);
        sent.addAll(other.take(10, 0L));
        assertEquals(1, sent.size());
        assertEquals("/-/", who(sent.get(0)));
        log(NETWORK, "Kafka's context still decides", LogBridge.CONTEXT_KEY, "[payments|task-0] ");
        assertEquals("payments/0/", who(other.take(10, 0L).get(0)));

        first.close();
        log(NETWORK, "one task again");
        assertEquals("payments/0/only_task", who(other.take(10, 0L).get(0)));
        second.close();
        assertTrue(orders.isEmpty());
        assertFalse(bridge.active());
    }
}
