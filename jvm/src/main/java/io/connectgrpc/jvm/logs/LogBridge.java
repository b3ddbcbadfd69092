package io.connectgrpc.jvm.logs;

import java.util.Collection;
import java.util.Collections;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;

import org.apache.kafka.connect.runtime.isolation.PluginClassLoader;
import org.apache.kafka.connect.util.LoggingContext;
import org.apache.logging.log4j.Level;
import org.apache.logging.log4j.LogManager;
import org.apache.logging.log4j.ThreadContext;
import org.apache.logging.log4j.core.Appender;
import org.apache.logging.log4j.core.LogEvent;
import org.apache.logging.log4j.core.LoggerContext;
import org.apache.logging.log4j.core.config.Configuration;
import org.apache.logging.log4j.core.config.LoggerConfig;
import org.apache.logging.log4j.core.filter.Filterable;
import org.apache.logging.log4j.core.impl.Log4jContextFactory;
import org.apache.logging.log4j.message.Message;

/**
 * Hands the log lines of Kafka Connect's Java plugins, and of the Kafka runtime that hosts them,
 * to the connect-grpc worker, whose log (structlog) writes them as its own events, connector and
 * task named, resolved secrets masked. One per JVM ({@link #shared}), installed into the JVM's
 * log4j 2 (Spark's logging; Kafka's and the plugins' slf4j calls reach it through Spark's
 * log4j-slf4j2-impl):
 *
 * <ul>
 *   <li>Which lines it takes: those logged on a thread in Kafka Connect's logging context (MDC
 *       {@code connector.context}: a task's thread, a call on a connector), whatever their
 *       logger; those of the loggers under {@link #NAMESPACES} (Kafka Connect's runtime and
 *       Kafka's clients, this JVM side's own classes); and those logged on a thread whose context
 *       class loader is a plugin's (Kafka's {@code PluginClassLoader}: a plugin's own threads
 *       inherit it). Spark's own lines are never taken: they stay in Spark's log as before.</li>
 *   <li>Levels: a configuration filter ({@link BridgeFilter}) decides for a line it takes, by
 *       the worker's table ({@link JavaLogLevels}), before log4j's own levels (Spark's root is at
 *       WARN); it answers NEUTRAL for any other line, which log4j decides as before, and for
 *       every line while the bridge has nowhere to send them (no driver queue, no task hosted
 *       here).</li>
 *   <li>Where a line goes: an appender on the root logger ({@link BridgeAppender}) holds back
 *       repeats ({@link RateLimiter}) and queues the line for its destination: the task's
 *       connection to the driver when this JVM hosts the task it names, else the driver's own
 *       queue in the driver's JVM ({@link DriverLogs}), else (an executor's line with no task
 *       named, e.g. a Kafka client's network thread) a connection of the same connector, or any.
 *       A taken line with a destination is kept out of the JVM's other appenders
 *       ({@link TakenFilter}); one with none (no task hosted here any more) stays in Spark's
 *       log.</li>
 * </ul>
 *
 * <p>Nothing here waits for the worker: a full queue drops the line and counts it. The bridge
 * never logs through log4j itself.
 */
public final class LogBridge {

    /** The loggers always taken: Kafka Connect's runtime and Kafka's clients, and this JVM side's. */
    static final List<String> NAMESPACES = List.of("org.apache.kafka", "io.connectgrpc");
    /** The name of the bridge's appender in a log4j configuration. */
    static final String APPENDER_NAME = "connect-grpc-bridge";
    /** Kafka's MDC key of its logging context. */
    static final String CONTEXT_KEY = LoggingContext.CONNECTOR_CONTEXT;
    /** How many logger names seen are remembered, for the worker's list of loggers. */
    static final int MAX_SEEN = 10_000;

    private static LogBridge shared;

    private final JavaLogLevels levels;
    private final RateLimiter limiter;
    private final Map<String, LogQueue> tasks = new ConcurrentHashMap<>();
    private volatile LogQueue driver;
    private final Set<String> seen = ConcurrentHashMap.newKeySet();
    /** The names last added to or found in {@link #seen}, by their hash's low bits. */
    private final String[] recentlySeen = new String[256];
    private final AtomicLong unrouted = new AtomicLong();
    private final Set<LoggerContext> contexts = Collections.newSetFromMap(new IdentityHashMap<>());

    LogBridge(JavaLogLevels levels, RateLimiter limiter) {
        this.levels = levels;
        this.limiter = limiter;
    }

    /** The JVM's bridge, installed into its log4j contexts on first use. */
    public static synchronized LogBridge shared() {
        if (shared == null) {
            LogBridge bridge = new LogBridge(new JavaLogLevels(), new RateLimiter());
            for (LoggerContext context : jvmContexts()) {
                bridge.installInto(context);
            }
            shared = bridge;
        }
        return shared;
    }

    /** The log4j contexts of this JVM: the one its classes log to, and any other the factory keeps. */
    private static Collection<LoggerContext> jvmContexts() {
        Set<LoggerContext> found = Collections.newSetFromMap(new IdentityHashMap<>());
        if (LogManager.getContext(false) instanceof LoggerContext context) {
            found.add(context);
        }
        if (LogManager.getFactory() instanceof Log4jContextFactory factory) {
            found.addAll(factory.getSelector().getLoggerContexts());
        }
        return found;
    }

    /** The levels of the loggers it takes. */
    public JavaLogLevels levels() {
        return levels;
    }

    /**
     * Installs the bridge into {@code context}'s configuration, and into every later one (a
     * reconfiguration replaces the configuration). Idempotent.
     */
    public void installInto(LoggerContext context) {
        synchronized (contexts) {
            if (contexts.add(context)) {
                context.addPropertyChangeListener(change -> {
                    if (LoggerContext.PROPERTY_CONFIG.equals(change.getPropertyName())
                            && change.getNewValue() instanceof Configuration configuration) {
                        installInto(context, configuration);
                    }
                });
            }
        }
        installInto(context, context.getConfiguration());
    }

    private synchronized void installInto(LoggerContext context, Configuration configuration) {
        if (configuration.getAppender(APPENDER_NAME) != null) {
            return;
        }
        BridgeAppender appender = new BridgeAppender(APPENDER_NAME, this);
        appender.start();
        for (Appender other : configuration.getAppenders().values()) {
            if (other instanceof Filterable filterable) {
                TakenFilter taken = new TakenFilter(this);
                taken.start();
                filterable.addFilter(taken);
            }
        }
        configuration.addAppender(appender);
        configuration.getRootLogger().addAppender(appender, null, null);
        for (LoggerConfig logger : configuration.getLoggers().values()) {
            if (!logger.isAdditive() && logger != configuration.getRootLogger()) {
                logger.addAppender(appender, null, null);  // its lines never reach the root's appenders
            }
        }
        BridgeFilter filter = new BridgeFilter(this);
        filter.start();
        configuration.addFilter(filter);
        context.updateLoggers(configuration);
    }

    /** Whether the bridge takes a line of {@code logger} logged now on this thread. */
    boolean takes(String logger, String context) {
        return takes(logger, context, Thread.currentThread().getContextClassLoader());
    }

    /**
     * {@link #takes(String, String)} with this thread's logging context, which is looked up
     * last: the configuration filter asks for every logging call, those of disabled levels
     * included (several per record in a task's path), and the thread's class loader or the
     * logger's name usually decides without that thread-local lookup.
     */
    boolean takesHere(String logger) {
        return Thread.currentThread().getContextClassLoader() instanceof PluginClassLoader
                || inNamespaces(logger)
                || ThreadContext.get(CONTEXT_KEY) != null;
    }

    static boolean takes(String logger, String context, ClassLoader threadLoader) {
        return context != null || inNamespaces(logger) || threadLoader instanceof PluginClassLoader;
    }

    private static boolean inNamespaces(String logger) {
        if (logger != null) {
            for (String namespace : NAMESPACES) {
                if (logger.startsWith(namespace)
                        && (logger.length() == namespace.length() || logger.charAt(namespace.length()) == '.')) {
                    return true;
                }
            }
        }
        return false;
    }

    /**
     * Whether the bridge has somewhere to send lines (the driver's queue, or a task hosted
     * here): while it has not, log4j decides every line by Spark's configuration, as before.
     */
    boolean active() {
        return driver != null || !tasks.isEmpty();
    }

    /** Whether a taken line of {@code level} from {@code logger} is logged (the logger is remembered). */
    boolean enabled(String logger, Level level) {
        if (logger == null) {
            return false;
        }
        remember(logger);
        return levels.enabled(logger, level);
    }

    /**
     * Adds {@code logger} to the loggers seen. This runs for every logging call a task makes,
     * disabled levels included: a logger met recently is found in {@link #recentlySeen}
     * without a lookup in the set (a racy cache of the very name instances log4j passes: a
     * stale or lost slot only costs that lookup).
     */
    private void remember(String logger) {
        int slot = logger.hashCode() & (recentlySeen.length - 1);
        if (recentlySeen[slot] == logger) {
            return;
        }
        if (!seen.contains(logger) && seen.size() < MAX_SEEN) {
            seen.add(logger);
        }
        recentlySeen[slot] = logger;
    }

    /** Where a line of {@code context} goes from this JVM; null when nowhere. */
    LogQueue route(ConnectorContext context) {
        if (context.task() >= 0) {
            LogQueue task = tasks.get(key(context.connector(), context.task()));
            if (task != null) {
                return task;
            }
        }
        LogQueue toDriver = driver;
        if (toDriver != null) {
            return toDriver;
        }
        LogQueue any = null;
        String prefix = context.connector() + "\u0000";
        for (Map.Entry<String, LogQueue> entry : tasks.entrySet()) {
            if (!context.connector().isEmpty() && entry.getKey().startsWith(prefix)) {
                return entry.getValue();
            }
            if (any == null) {
                any = entry.getValue();
            }
        }
        return any;
    }

    /** Queues a taken line for the worker (unless held back as a repeat). */
    void publish(LogEvent event) {
        String contextValue = event.getContextData().getValue(CONTEXT_KEY);
        ConnectorContext context = ConnectorContext.parse(contextValue);
        LogQueue target = route(context);
        if (target == null) {
            unrouted.incrementAndGet();
            return;
        }
        long suppressed = 0L;
        Level level = event.getLevel();
        if (level == null || level.intLevel() > Level.FATAL.intLevel()) {
            Message message = event.getMessage();
            String pattern = message == null ? "" : message.getFormat();
            if (pattern == null) {
                pattern = message.getFormattedMessage();
            }
            suppressed = limiter.admit(event.getLoggerName() + '\u0000' + level + '\u0000' + contextValue + '\u0000' + pattern);
            if (suppressed < 0L) {
                return;
            }
        }
        target.offer(LogRecords.of(event, context, suppressed));
    }

    /** Sends the lines of a task hosted in this JVM to {@code queue} until the result is closed. */
    public AutoCloseable attachTask(String connector, int task, LogQueue queue) {
        String key = key(connector, task);
        tasks.put(key, queue);
        return () -> tasks.remove(key, queue);
    }

    /** Sends the lines no hosted task takes to {@code queue} (the driver's), until the result is closed. */
    AutoCloseable attachDriver(LogQueue queue) {
        driver = queue;
        return () -> {
            synchronized (this) {
                if (driver == queue) {
                    driver = null;
                }
            }
        };
    }

    /**
     * The loggers the worker lists as this JVM's, with their levels: those of its log4j contexts
     * under {@link #NAMESPACES}, and every logger seen logging a line the bridge takes (at any
     * level: a plugin's loggers, once they were used).
     */
    Map<String, Level> knownLoggers() {
        Map<String, Level> known = new TreeMap<>();
        List<LoggerContext> installed;
        synchronized (contexts) {
            installed = List.copyOf(contexts);
        }
        for (LoggerContext context : installed) {
            for (org.apache.logging.log4j.core.Logger logger : context.getLoggers()) {
                if (takes(logger.getName(), null, null)) {
                    known.put(logger.getName(), levels.levelOf(logger.getName()));
                }
            }
        }
        for (String name : seen) {
            known.put(name, levels.levelOf(name));
        }
        return known;
    }

    /** How many taken lines had nowhere to go (no task hosted here, no driver queue). */
    long unrouted() {
        return unrouted.get();
    }

    private static String key(String connector, int task) {
        return connector + "\u0000" + task;
    }
}
