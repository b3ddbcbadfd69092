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
import org.apache.logging.log4j.util.ReadOnlyStringMap;

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
 *       here). A call that neither way lets through, of a logger it has taken a line of, it
 *       answers DENY at once ({@link #deniedEitherWay}): the same outcome, without the
 *       thread's class loader and context.</li>
 *   <li>Where a line goes: an appender on the root logger ({@link BridgeAppender}) holds back
 *       repeats ({@link RateLimiter}) and queues the line for its destination: the task's
 *       connection to the driver when this JVM hosts the task it names, else the driver's own
 *       queue in the driver's JVM ({@link DriverLogs}), else (an executor's line with no task
 *       named, e.g. a Kafka client's network thread) a connection of the same connector, or any.
 *       A taken line with a destination is kept out of the JVM's other appenders
 *       ({@link TakenFilter}); one with none (no task hosted here any more) stays in Spark's
 *       log.</li>
 *   <li>Whose a line is: the connector and task Kafka's logging context names. A line logged
 *       outside it (on a thread the plugin started itself, or outside the scopes Kafka sets)
 *       is attributed only where that is sound ({@link #attribute}): by Debezium's own MDC
 *       (its connector's logical name and task id), once a line on a task's thread showed
 *       both Debezium's and Kafka's contexts; by the client id in the name of a Kafka
 *       client's thread, the one Kafka's worker gives the clients of a task hosted here;
 *       else, in a JVM other than the driver's that hosts exactly one task, to that task.
 *       Otherwise it stays unattributed.</li>
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
    /** Debezium's MDC keys of its logging context (its {@code io.debezium.util.LoggingContext}). */
    static final String DEBEZIUM_NAME_KEY = "dbz.connectorLogicalName";
    static final String DEBEZIUM_TASK_KEY = "dbz.taskId";
    /** How many Debezium contexts are remembered (one per Debezium task, and per connector). */
    static final int MAX_DEBEZIUM = 1_000;
    /**
     * The client ids Kafka's worker gives a task's clients, before the task's id
     * ({@code <connector>-<task>}): its producer's, its consumer's, its admin client's. A Kafka
     * client names its threads {@code "<what> | <client id>"}.
     */
    static final List<String> CLIENT_ID_PREFIXES = List.of("connector-producer-", "connector-consumer-", "connector-adminclient-");
    private static final String CLIENT_THREAD_SEPARATOR = " | ";
    /** A Debezium context seen with two different Kafka contexts: not used to attribute. */
    private static final ConnectorContext AMBIGUOUS = new ConnectorContext("\u0000", -1);

    /** How a line's connector and task were found (the {@code inferred_from} of its record). */
    enum Inferred {
        /** Kafka's logging context named them, or nothing did. */
        NONE(""),
        /** Debezium's MDC, as seen beside Kafka's context on a task's thread. */
        DEBEZIUM_CONTEXT("debezium_context"),
        /** The client id in a Kafka client's thread name, that of a task hosted here. */
        KAFKA_CLIENT_ID("kafka_client_id"),
        /** The one task a JVM other than the driver's hosts. */
        ONLY_TASK("only_task");

        final String wire;

        Inferred(String wire) {
            this.wire = wire;
        }
    }

    /** A line's connector and task, and how they were found. */
    record Attribution(ConnectorContext context, Inferred inferred) {
    }

    /** A task hosted in this JVM: whose, and the queue of its connection. */
    private record Hosted(ConnectorContext task, LogQueue queue) {
    }

    /** A logger remembered ({@link #seen}), and its level ({@link Level#intLevel}) by {@code table}. */
    private record Listed(org.apache.logging.log4j.core.Logger logger, JavaLogLevels.Table table, int level) {
    }

    private static LogBridge shared;

    private final JavaLogLevels levels;
    private final RateLimiter limiter;
    private final Map<String, Hosted> tasks = new ConcurrentHashMap<>();
    /** Debezium's contexts (logical name and task id) and the Kafka contexts seen with them. */
    private final Map<String, ConnectorContext> debezium = new ConcurrentHashMap<>();
    private volatile LogQueue driver;
    private final Set<String> seen = ConcurrentHashMap.newKeySet();
    /**
     * The loggers last remembered, by their identity hash's low bits, with their level by the
     * table then in force: what answers the configuration filter's most frequent question
     * ({@link #deniedEitherWay}), and a taken line's level without a lookup in {@link #seen} or
     * the table. A racy cache of the very logger instances log4j passes, of immutable entries:
     * a stale or lost slot only costs the full decision. Keyed by the logger rather than its
     * name, so that the quick answer reads nothing of a call that log4j's own check does not
     * (the name's string, its hash), but the logger's header and this cache's slot.
     */
    private final Listed[] listed = new Listed[1024];
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

    /**
     * Whether a taken line of {@code level} from {@code logger} is logged, by the worker's levels
     * ({@link JavaLogLevels#enabled}); the logger is remembered, and cached in {@link #listed}.
     */
    boolean enabled(org.apache.logging.log4j.core.Logger logger, Level level) {
        if (logger == null || logger.getName() == null) {
            return false;
        }
        JavaLogLevels.Table table = levels.current();
        int slot = System.identityHashCode(logger) & (listed.length - 1);
        Listed known = listed[slot];
        if (known == null || known.logger() != logger || known.table() != table) {
            if (known == null || known.logger() != logger) {
                remember(logger.getName());
            }
            known = new Listed(logger, table, table.levelOf(logger.getName()).intLevel());
            listed[slot] = known;
        }
        return level != null && known.level() >= level.intLevel();
    }

    /**
     * Whether a call of {@code level} on {@code logger} is not logged whether the bridge takes
     * it or not, as far as the bridge knows without looking at the thread: the logger is in
     * {@link #listed} with the table in force (so it is remembered already: the call has
     * nothing to add to the loggers seen), its level by that table is less verbose than the
     * call (a taken line is denied), and so is its level in log4j's configuration (which
     * decides a line not taken, and every line while the bridge is not {@link #active}). The
     * configuration filter asks this first, for every logging call: on a task's record path
     * most calls are trace and debug checks that no level lets through, answered so with a
     * few field reads; false sends a call to the full decision, which gives the same answer.
     */
    boolean deniedEitherWay(org.apache.logging.log4j.core.Logger logger, Level level) {
        Level configured = logger.getLevel();
        if (level == null || configured == null || level.intLevel() <= configured.intLevel()) {
            return false;
        }
        Listed known = listed[System.identityHashCode(logger) & (listed.length - 1)];
        return known != null && known.logger() == logger && known.table() == levels.current()
                && level.intLevel() > known.level();
    }

    /** Adds {@code logger} to the loggers seen (up to {@link #MAX_SEEN}). */
    private void remember(String logger) {
        if (!seen.contains(logger) && seen.size() < MAX_SEEN) {
            seen.add(logger);
        }
    }

    /** Where a line of {@code context} goes from this JVM; null when nowhere. */
    LogQueue route(ConnectorContext context) {
        if (context.task() >= 0) {
            Hosted task = tasks.get(key(context.connector(), context.task()));
            if (task != null) {
                return task.queue();
            }
        }
        LogQueue toDriver = driver;
        if (toDriver != null) {
            return toDriver;
        }
        LogQueue any = null;
        String prefix = context.connector() + "\u0000";
        for (Map.Entry<String, Hosted> entry : tasks.entrySet()) {
            if (!context.connector().isEmpty() && entry.getKey().startsWith(prefix)) {
                return entry.getValue().queue();
            }
            if (any == null) {
                any = entry.getValue().queue();
            }
        }
        return any;
    }

    /** Queues a taken line for the worker (unless held back as a repeat). */
    void publish(LogEvent event) {
        ReadOnlyStringMap data = event.getContextData();
        String contextValue = data.getValue(CONTEXT_KEY);
        Attribution attribution = attribute(ConnectorContext.parse(contextValue),
                data.getValue(DEBEZIUM_NAME_KEY), data.getValue(DEBEZIUM_TASK_KEY), event.getThreadName());
        ConnectorContext context = attribution.context();
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
        target.offer(LogRecords.of(event, context, suppressed).setInferredFrom(attribution.inferred().wire));
    }

    /**
     * Whose a line is: the context Kafka's logging context names ({@code kafka}), if it names a
     * connector. Else, when the line carries Debezium's MDC ({@code dbzName}, the connector's
     * logical name, and {@code dbzTask}, its task id, either null when absent), the Kafka
     * context a line with the same Debezium context had on a task's thread: with the task when
     * the task ids match, else the connector alone (unless two Kafka contexts were seen with
     * it). Else, when the line's thread is a Kafka client's ({@code thread}: "... | client id")
     * whose client id is the one Kafka's worker gives a client of a task hosted here, that
     * task (a client id set by the connector's config names no task, and is not matched).
     * Else, in a JVM that is not the driver's and hosts exactly one task, that task: every
     * line it takes is then of that task's work (Kafka's worker in the JVM, its clients, its
     * plugin's threads). Else none. A line naming a connector with Debezium's MDC teaches the
     * bridge that Debezium context.
     */
    Attribution attribute(ConnectorContext kafka, String dbzName, String dbzTask, String thread) {
        if (!kafka.connector().isEmpty()) {
            if (dbzName != null) {
                if (dbzTask != null) {
                    learn(debeziumKey(dbzName, dbzTask), kafka);
                }
                learn(debeziumKey(dbzName, null), new ConnectorContext(kafka.connector(), -1));
            }
            return new Attribution(kafka, Inferred.NONE);
        }
        if (dbzName != null) {
            ConnectorContext known = debezium.get(debeziumKey(dbzName, dbzTask));
            if (known == null || known == AMBIGUOUS) {
                known = debezium.get(debeziumKey(dbzName, null));
            }
            if (known != null && known != AMBIGUOUS) {
                return new Attribution(known, Inferred.DEBEZIUM_CONTEXT);
            }
        }
        ConnectorContext client = clientTask(thread);
        if (client != null) {
            return new Attribution(client, Inferred.KAFKA_CLIENT_ID);
        }
        if (driver == null) {
            ConnectorContext only = null;
            int count = 0;
            for (Hosted hosted : tasks.values()) {
                only = hosted.task();
                count++;
            }
            if (count == 1) {
                return new Attribution(only, Inferred.ONLY_TASK);
            }
        }
        return new Attribution(ConnectorContext.NONE, Inferred.NONE);
    }

    /** The hosted task whose Kafka client's thread {@code thread} is, by its default client id; null if none. */
    private ConnectorContext clientTask(String thread) {
        int at = thread == null ? -1 : thread.lastIndexOf(CLIENT_THREAD_SEPARATOR);
        if (at < 0) {
            return null;
        }
        String clientId = thread.substring(at + CLIENT_THREAD_SEPARATOR.length());
        for (String prefix : CLIENT_ID_PREFIXES) {
            if (clientId.startsWith(prefix)) {
                String taskId = clientId.substring(prefix.length());
                int dash = taskId.lastIndexOf('-');
                if (dash <= 0) {
                    return null;
                }
                Hosted hosted = tasks.get(key(taskId.substring(0, dash), parseTask(taskId.substring(dash + 1))));
                return hosted == null ? null : hosted.task();
            }
        }
        return null;
    }

    private static int parseTask(String text) {
        try {
            return Integer.parseInt(text);
        } catch (NumberFormatException e) {
            return -1;
        }
    }

    private void learn(String key, ConnectorContext context) {
        ConnectorContext known = debezium.get(key);
        if (known == null) {
            if (debezium.size() < MAX_DEBEZIUM) {
                known = debezium.putIfAbsent(key, context);
            }
            if (known == null) {
                return;
            }
        }
        if (!known.equals(context)) {
            debezium.put(key, AMBIGUOUS);
        }
    }

    /** The key of a Debezium context: its logical name, and its task id ("*" for any). */
    private static String debeziumKey(String name, String task) {
        return name + "\u0000" + (task == null ? "*" : "#" + task);
    }

    /** Sends the lines of a task hosted in this JVM to {@code queue} until the result is closed. */
    public AutoCloseable attachTask(String connector, int task, LogQueue queue) {
        String key = key(connector, task);
        Hosted hosted = new Hosted(new ConnectorContext(connector, task), queue);
        tasks.put(key, hosted);
        return () -> tasks.remove(key, hosted);
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

    /** The names of {@link #knownLoggers}: the loggers a host tells the driver of. */
    public Set<String> loggerNames() {
        return knownLoggers().keySet();
    }

    /** How many taken lines had nowhere to go (no task hosted here, no driver queue). */
    long unrouted() {
        return unrouted.get();
    }

    private static String key(String connector, int task) {
        return connector + "\u0000" + task;
    }
}
