package io.connectgrpc.jvm.logs;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.net.URL;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.atomic.AtomicReference;
import java.util.stream.IntStream;

import org.apache.kafka.connect.runtime.isolation.PluginClassLoader;
import org.apache.logging.log4j.Level;
import org.apache.logging.log4j.ThreadContext;
import org.apache.logging.log4j.core.Logger;
import org.apache.logging.log4j.core.LoggerContext;
import org.apache.logging.log4j.core.config.Configuration;
import org.apache.logging.log4j.core.config.DefaultConfiguration;
import org.apache.logging.log4j.core.config.LoggerConfig;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * The configuration filter's quick answer (a logger already taken, a call no level lets
 * through: DENY at once) against the plain rule, over random sequences: tables of levels set
 * and replaced, log4j's own levels changed and its configuration replaced, the bridge given
 * somewhere to send lines and losing it, calls from threads in Kafka's logging context or a
 * plugin's class loader or neither, of every level, through several of log4j's overloads. The
 * plain rule, written out here: while the bridge has somewhere to send lines, a line it takes
 * ({@link LogBridge#takes}) is logged by the worker's table (a {@link JavaLogLevels} of its
 * own, applied the same tables), any other by log4j's level for the logger (the longest
 * dotted LoggerConfig name it falls under, as this test set them); every logger a taken call
 * named, at any level, is listed.
 */
@Timeout(60)
class BridgeFilterDifferentialTest {

    private static final List<String> NAMESPACES = List.of(
            "root", "ROOT", "org", "org.apache.kafka", "org.apache.kafka.connect", "org.apache.kafka.connect.runtime",
            "org.apache.kafka.clients", "org.apache.kafkaesque", "io.connectgrpc", "io.connectgrpc.jvm", "io.debezium",
            "io.debezium.connector", "com.example", "com.example.plugin.Thing", "org.apache.spark", "a", "a.b", "x");
    private static final List<String> LOGGERS = List.of(
            "org.apache.kafka.connect.runtime.WorkerSinkTask", "org.apache.kafka.connect.runtime.WorkerTask",
            "org.apache.kafka.connect.file.FileStreamSinkTask", "org.apache.kafka.clients.NetworkClient",
            "org.apache.kafka", "org.apache.kafkaesque.Thing", "io.connectgrpc.jvm.host.TaskSession",
            "io.debezium.connector.postgresql.PostgresConnectorTask", "io.debezium.util.Threads",
            "com.example.plugin.Thing", "com.example.plugin.Things", "com.examples.Other", "org.apache.spark.SparkContext",
            "org.apache.spark.scheduler.DAGScheduler", "a.b", "a.bc.d", "a.b.c", "x", "y.z");
    /**
     * Many more loggers than the bridge's cache has slots, under namespaces that tables set
     * apart: loggers that share a slot must not answer for each other.
     */
    private static final List<String> MANY = IntStream.range(0, 3_000)
            .mapToObj(i -> List.of("com.example.plugin.Thing", "io.debezium.", "org.apache.kafka.connect.runtime.", "a.b.")
                    .get(i % 4) + "L" + i)
            .toList();
    /** log4j's LoggerConfig names the test sets levels on (dotted: "a.b" covers "a.b.c", not "a.bc"). */
    private static final List<String> CONFIGURED = List.of(
            "org.apache.kafka", "org.apache.kafka.connect.runtime", "org.apache.kafka.connect.runtime.WorkerSinkTask",
            "io.debezium", "com.example", "org.apache.spark", "a", "a.b", "x");
    private static final Level[] LEVELS = {
        Level.OFF, Level.FATAL, Level.ERROR, Level.WARN, Level.INFO, Level.DEBUG, Level.TRACE, Level.ALL};
    private static final String[] CONTEXTS = {null, "[orders|task-0] ", "[orders|worker] "};

    private LoggerContext context;
    private LogBridge bridge;
    private JavaLogLevels reference;
    private PluginClassLoader plugin;
    private ClassLoader before;
    /** log4j's levels as this test set them: LoggerConfig name -> level ("" is root). */
    private final Map<String, Level> configured = new HashMap<>();
    private final Set<String> taken = new TreeSet<>();
    /** The loggers called, held: log4j's registry holds them weakly, and lists only those alive. */
    private final Map<String, Logger> loggers = new HashMap<>();

    @BeforeEach
    void bridgeInAContextOfItsOwn() throws Exception {
        context = new LoggerContext("differential-test-" + System.nanoTime());
        context.start(fresh(Level.WARN));
        bridge = new LogBridge(new JavaLogLevels(), new RateLimiter());
        bridge.installInto(context);
        reference = new JavaLogLevels();
        plugin = new PluginClassLoader(new URL("file:/plugins/x/"), new URL[0], getClass().getClassLoader());
        before = Thread.currentThread().getContextClassLoader();
    }

    @AfterEach
    void clear() throws Exception {
        Thread.currentThread().setContextClassLoader(before);
        plugin.close();
        ThreadContext.clearMap();
        context.stop();
    }

    /** A configuration as Spark's, without its console: only {@code root}'s level. */
    private Configuration fresh(Level root) {
        DefaultConfiguration configuration = new DefaultConfiguration();
        for (String name : List.copyOf(configuration.getRootLogger().getAppenders().keySet())) {
            configuration.getRootLogger().removeAppender(name);
        }
        configuration.getRootLogger().setLevel(root);
        configured.clear();
        configured.put("", root);
        return configuration;
    }

    @Test
    void theQuickAnswerIsThePlainRulesOverRandomSequences() throws Exception {
        Random random = new Random(20_135L);
        long version = 0L;
        AutoCloseable attached = null;
        List<String> namesSeen = new ArrayList<>();
        int quick = 0;
        int calls = 0;
        for (int step = 0; step < 400_000; step++) {
            int event = random.nextInt(1_000);
            if (event < 3) {
                // a table of levels, sometimes not newer than the one in force (not applied)
                long next = random.nextInt(4) == 0 ? version - random.nextInt(2) : version + 1 + random.nextInt(3);
                List<Map.Entry<String, String>> entries = new ArrayList<>();
                for (int i = random.nextInt(5); i > 0; i--) {
                    entries.add(Map.entry(pick(random, NAMESPACES), LEVELS[random.nextInt(LEVELS.length)].name()));
                }
                assertEquals(reference.apply(next, entries), bridge.levels().apply(next, entries));
                version = Math.max(version, next);
            } else if (event < 5) {
                setLog4jLevel(pick(random, CONFIGURED), LEVELS[random.nextInt(LEVELS.length)]);
            } else if (event < 6) {
                setLog4jLevel("", LEVELS[random.nextInt(LEVELS.length)]);
            } else if (event < 7 && random.nextInt(4) == 0) {
                context.setConfiguration(fresh(LEVELS[1 + random.nextInt(LEVELS.length - 2)]));
            } else if (event < 9) {
                if (attached == null) {
                    attached = bridge.attachTask("orders", 0, new LogQueue(16));
                } else {
                    attached.close();
                    attached = null;
                }
            } else if (event < 40) {
                String mdc = CONTEXTS[random.nextInt(CONTEXTS.length)];
                if (mdc == null) {
                    ThreadContext.remove(LogBridge.CONTEXT_KEY);
                } else {
                    ThreadContext.put(LogBridge.CONTEXT_KEY, mdc);
                }
                Thread.currentThread().setContextClassLoader(random.nextBoolean() ? plugin : before);
            }

            String name = random.nextBoolean() ? pick(random, LOGGERS) : pick(random, MANY);
            Logger logger = loggers.computeIfAbsent(name, context::getLogger);
            Level level = LEVELS[random.nextInt(LEVELS.length)];
            boolean takes = attached != null && LogBridge.takes(name, ThreadContext.get(LogBridge.CONTEXT_KEY),
                    Thread.currentThread().getContextClassLoader());
            boolean expected = takes
                    ? reference.levelOf(name).intLevel() >= level.intLevel()
                    : log4jLevel(name).intLevel() >= level.intLevel();
            if (bridge.deniedEitherWay(logger, level)) {
                quick++;
                assertFalse(expected, () -> "quick DENY of " + level + " on " + name + " where the plain rule logs it");
            }
            boolean decided = switch (random.nextInt(5)) {
                case 0 -> logger.isEnabled(level);
                case 1 -> logger.isEnabled(level, null, "Writing line to {}: {}", "stdout", "a record");
                case 2 -> logger.isEnabled(level, null, "{} {} {} {} {}", "a", "b", 3, 4L, 5L);
                case 3 -> logger.isEnabled(level, null, (Object) "an object", null);
                default -> logger.isEnabled(level, null, "{}", new Object[] {"varargs"});
            };
            calls++;
            assertEquals(expected, decided, () -> level + " on " + name + " (taken: " + takes + ", worker's "
                    + reference.levelOf(name) + ", log4j's " + log4jLevel(name) + ")");
            if (takes && taken.add(name)) {
                namesSeen.add(name);
            }
            if (step % 5_000 == 0) {
                assertListed();
            }
        }
        assertListed();
        if (attached != null) {
            attached.close();
        }
        // the quick answer was given, and the full decision too: both sides were compared
        assertTrue(quick > calls / 20, "quick DENY " + quick + " of " + calls);
        assertTrue(namesSeen.size() > MANY.size() / 2, "listed " + namesSeen.size());
    }

    @Test
    void aLoggerFirstCalledOffATasksThreadIsListedOnceATaskCallsIt() throws Exception {
        AutoCloseable attached = bridge.attachTask("orders", 0, new LogQueue(16));
        Logger library = context.getLogger("com.example.Library");
        assertFalse(library.isTraceEnabled());
        assertFalse(bridge.loggerNames().contains("com.example.Library"), "not taken off a task's thread");
        ThreadContext.put(LogBridge.CONTEXT_KEY, "[orders|task-0] ");
        assertFalse(library.isTraceEnabled());
        assertTrue(bridge.loggerNames().contains("com.example.Library"), "a disabled call on a task's thread lists it");
        assertTrue(bridge.deniedEitherWay(library, Level.TRACE));
        assertFalse(bridge.deniedEitherWay(library, Level.INFO), "INFO: the worker's level lets a taken line through");
        assertTrue(library.isInfoEnabled());

        bridge.levels().apply(1L, List.of(Map.entry("com.example", "TRACE")));
        assertFalse(bridge.deniedEitherWay(library, Level.TRACE), "a newer table: the cached level is not used");
        assertTrue(library.isTraceEnabled());
        ThreadContext.clearMap();
        assertFalse(library.isTraceEnabled(), "off a task's thread log4j's WARN decides");
        setLog4jLevel("com.example", Level.TRACE);
        bridge.levels().apply(2L, List.of());
        assertTrue(library.isTraceEnabled(), "log4j's own level, changed, is read as it is now");
        assertFalse(bridge.deniedEitherWay(library, Level.TRACE));
        attached.close();
    }

    @Test
    void threadsOfTasksAndOfSparkSharingTheLoggersEachGetThePlainRulesAnswer() throws Exception {
        assertTrue(bridge.levels().apply(1L, List.of(Map.entry("io.debezium", "DEBUG"), Map.entry("a.b", "ERROR"),
                Map.entry("org.apache.kafka.connect.runtime", "TRACE"), Map.entry("com.example", "WARN"))));
        assertTrue(reference.apply(1L, List.of(Map.entry("io.debezium", "DEBUG"), Map.entry("a.b", "ERROR"),
                Map.entry("org.apache.kafka.connect.runtime", "TRACE"), Map.entry("com.example", "WARN"))));
        setLog4jLevel("com.example", Level.DEBUG);
        setLog4jLevel("org.apache.kafka.connect.runtime.WorkerSinkTask", Level.ERROR);
        List<Logger> all = new ArrayList<>();
        for (String name : MANY) {
            all.add(context.getLogger(name));
        }
        for (String name : LOGGERS) {
            all.add(context.getLogger(name));
        }
        AutoCloseable attached = bridge.attachTask("orders", 0, new LogQueue(16));
        AtomicReference<String> wrong = new AtomicReference<>();
        List<Thread> threads = new ArrayList<>();
        for (int t = 0; t < 4; t++) {
            boolean tasks = t % 2 == 0;
            long seed = 7L * t;
            Thread thread = new Thread(() -> {
                Random random = new Random(seed);
                if (tasks) {
                    ThreadContext.put(LogBridge.CONTEXT_KEY, "[orders|task-" + seed + "] ");
                }
                for (int i = 0; i < 100_000 && wrong.get() == null; i++) {
                    Logger logger = all.get(random.nextInt(all.size()));
                    Level level = LEVELS[random.nextInt(LEVELS.length)];
                    boolean takes = LogBridge.takes(logger.getName(), ThreadContext.get(LogBridge.CONTEXT_KEY), null);
                    boolean expected = (takes ? reference.levelOf(logger.getName()) : log4jLevel(logger.getName()))
                            .intLevel() >= level.intLevel();
                    if (logger.isEnabled(level, null, "{} {}", "a", "b") != expected) {
                        wrong.compareAndSet(null, level + " on " + logger.getName() + " (taken: " + takes + ")");
                    }
                }
            });
            thread.setContextClassLoader(before);
            threads.add(thread);
            thread.start();
        }
        for (Thread thread : threads) {
            thread.join();
        }
        attached.close();
        assertNull(wrong.get(), "a thread got another answer than the plain rule's");
    }

    private void assertListed() {
        Set<String> listed = new TreeSet<>(bridge.loggerNames());
        Set<String> expected = new TreeSet<>(taken);
        for (Logger logger : context.getLoggers()) {
            if (LogBridge.takes(logger.getName(), null, null)) {
                expected.add(logger.getName());
            }
        }
        assertEquals(expected, listed);
    }

    /** Sets log4j's level of the LoggerConfig {@code name} ("" for root), as log4j's Configurator does. */
    private void setLog4jLevel(String name, Level level) {
        Configuration configuration = context.getConfiguration();
        LoggerConfig config = name.isEmpty() ? configuration.getRootLogger() : configuration.getLoggerConfig(name);
        if (!config.getName().equals(name)) {
            config = new LoggerConfig(name, level, true);
            configuration.addLogger(name, config);
        } else {
            config.setLevel(level);
        }
        context.updateLoggers();
        configured.put(name, level);
    }

    /** log4j's level of the logger {@code name} by the levels this test set. */
    private Level log4jLevel(String name) {
        String best = "";
        for (String config : configured.keySet()) {
            if (config.length() > best.length() && (name.equals(config) || name.startsWith(config + "."))) {
                best = config;
            }
        }
        return configured.get(best);
    }

    private static String pick(Random random, List<String> from) {
        return from.get(random.nextInt(from.size()));
    }
}
