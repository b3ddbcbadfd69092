package io.connectgrpc.jvm.connectors;

import java.io.IOException;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;

import org.apache.kafka.common.config.ConfigDef;
import org.apache.kafka.common.metrics.PluginMetrics;
import org.apache.kafka.common.metrics.internals.PluginMetricsImpl;
import org.apache.kafka.connect.connector.Connector;
import org.apache.kafka.connect.connector.ConnectorContext;
import org.apache.kafka.connect.runtime.ConnectorConfig;
import org.apache.kafka.connect.runtime.TaskConfig;
import org.apache.kafka.connect.runtime.TooManyTasksException;
import org.apache.kafka.connect.runtime.isolation.Plugins;
import org.apache.kafka.connect.sink.SinkConnectorContext;
import org.apache.kafka.connect.sink.SinkTask;
import org.apache.kafka.connect.source.SourceConnector;
import org.apache.kafka.connect.source.SourceConnectorContext;
import org.apache.kafka.connect.storage.OffsetStorageReader;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One connector instance of a worker, in its lifecycle: made and initialized with its
 * context, started, asked for task configs, stopped, and started again, until it is
 * released. Every call on the plugin runs with the plugin's class loader as the thread's
 * context class loader (as Kafka's {@code WorkerConnector} runs it) and with Kafka's logging
 * context for the connector. Calls on one instance are serialized; the context's events
 * are taken by {@link #nextEvent(long)} from any thread, without waiting for them.
 */
final class HostedConnector {

    private static final Logger log = LoggerFactory.getLogger(HostedConnector.class);

    /** The event {@link #nextEvent(long)} answers once the instance is released. */
    static final Map<String, Object> RELEASED = Map.of("event", "released");
    private static final Map<String, Object> RECONFIGURE = Map.of("event", "reconfigure");

    private enum State { INITIALIZED, STARTED, STOPPED, RELEASED }

    final String name;
    final Instance instance;
    private final Plugins plugins;
    private final PluginMetricsImpl pluginMetrics;
    private final OffsetReaders.Reader offsetReader;
    private final BlockingQueue<Map<String, Object>> events = new LinkedBlockingQueue<>();
    private volatile State state = State.INITIALIZED;
    /** The config of the last start: task configs and the offsets reader read it. */
    private volatile Map<String, String> config = Map.of();

    HostedConnector(String name, Instance instance, Plugins plugins, PluginMetricsImpl pluginMetrics,
            OffsetReaders readers) {
        this.name = name;
        this.instance = instance;
        this.plugins = plugins;
        this.pluginMetrics = pluginMetrics;
        this.offsetReader = instance.isSource() ? readers.readerFor(name, () -> config) : null;
        ConnectorContext context = instance.isSource() ? new SourceContext() : new SinkContext();
        inPlugin(() -> {
            instance.connector().initialize(context);
            return null;
        });
    }

    private <T> T inPlugin(InPlugin.Work<T> work) {
        return InPlugin.run(plugins, instance.loader(), name, work);
    }

    /** Starts the connector with its config; nothing if it is started already. */
    synchronized void start(Map<String, String> startConfig) {
        requireNotReleased();
        if (state == State.STARTED) {
            return;
        }
        config = Map.copyOf(withoutNullValues(startConfig));
        inPlugin(() -> {
            instance.connector().start(startConfig);
            return null;
        });
        state = State.STARTED;
        log.info("Started connector {} ({} {})", name, instance.className(), instance.version());
    }

    /**
     * The task configs of the started connector as Kafka's {@code Worker.connectorTaskConfigs}
     * gives them: each a copy carrying the connector's task class ({@code task.class}) and the
     * connector's {@code topics} and {@code topics.regex} when it has them, and no more of them
     * than {@code maxTasks} unless the config sets {@code tasks.max.enforce=false} (KIP-1004:
     * Kafka's {@link TooManyTasksException} otherwise; a warning when not enforced).
     */
    synchronized List<Map<String, String>> taskConfigs(int maxTasks) {
        requireNotReleased();
        if (state != State.STARTED) {
            throw new IllegalStateException("Connector " + name + " is not started: it has no task configs");
        }
        return inPlugin(() -> {
            String taskClass = instance.connector().taskClass().getName();
            List<Map<String, String>> generated = instance.connector().taskConfigs(maxTasks);
            if (generated.size() > maxTasks) {
                if (enforcesTasksMax(config)) {
                    throw new TooManyTasksException(name, generated.size(), maxTasks);
                }
                log.warn("The connector {} generated {} task configs, more than tasks.max ({}); they all run "
                        + "because tasks.max.enforce=false, which Kafka Connect deprecates: the connector should "
                        + "respect the maxTasks it is given", name, generated.size(), maxTasks);
            }
            List<Map<String, String>> configs = new ArrayList<>(generated.size());
            for (Map<String, String> generatedConfig : generated) {
                Map<String, String> taskConfig = new HashMap<>(generatedConfig);
                taskConfig.put(TaskConfig.TASK_CLASS_CONFIG, taskClass);
                copyIfPresent(SinkTask.TOPICS_CONFIG, taskConfig);
                copyIfPresent(SinkTask.TOPICS_REGEX_CONFIG, taskConfig);
                configs.add(taskConfig);
            }
            return configs;
        });
    }

    private void copyIfPresent(String key, Map<String, String> taskConfig) {
        if (config.containsKey(key)) {
            taskConfig.put(key, config.get(key));
        }
    }

    /** Stops the connector if it is started (a pause, a stop, a restart). */
    synchronized void stop() {
        requireNotReleased();
        if (state != State.STARTED) {
            return;
        }
        state = State.STOPPED;
        inPlugin(() -> {
            instance.connector().stop();
            return null;
        });
        log.info("Stopped connector {}", name);
    }

    /**
     * Forgets the instance: stops it if it is still started (a failure is logged), closes its
     * metrics and its offsets reader, and ends the wait of {@link #nextEvent(long)}.
     */
    synchronized void release() {
        if (state == State.RELEASED) {
            return;
        }
        try {
            stop();
        } catch (RuntimeException | LinkageError e) {
            log.warn("Connector {} failed to stop as it was released", name, e);
        } finally {
            state = State.RELEASED;
            try {
                pluginMetrics.close();
            } catch (IOException | RuntimeException e) {
                log.warn("The plugin metrics of connector {} did not close", name, e);
            }
            if (offsetReader != null) {
                offsetReader.close();
            }
            events.clear();
            events.offer(RELEASED);
        }
    }

    /**
     * The next event of the connector's context ({@code {"event": "reconfigure"}},
     * {@code {"event": "error", "error": ...}}), waiting at most {@code timeoutMs} for one:
     * null when none came, {@link #RELEASED} once the instance is released.
     */
    Map<String, Object> nextEvent(long timeoutMs) throws InterruptedException {
        if (state == State.RELEASED && events.isEmpty()) {
            return RELEASED;
        }
        return events.poll(Math.max(0L, timeoutMs), TimeUnit.MILLISECONDS);
    }

    private void requireNotReleased() {
        if (state == State.RELEASED) {
            throw new IllegalStateException("Connector " + name + " has been released");
        }
    }

    /**
     * Whether KIP-1004's limit is enforced: Kafka's {@code tasks.max.enforce}, a BOOLEAN parsed
     * by Kafka's {@link ConfigDef} (a value Kafka's validation would refuse is refused here).
     */
    static boolean enforcesTasksMax(Map<String, String> config) {
        String value = config.get(ConnectorConfig.TASKS_MAX_ENFORCE_CONFIG);
        if (value == null) {
            return ConnectorConfig.TASKS_MAX_ENFORCE_DEFAULT;
        }
        return (Boolean) ConfigDef.parseType(ConnectorConfig.TASKS_MAX_ENFORCE_CONFIG, value, ConfigDef.Type.BOOLEAN);
    }

    private static Map<String, String> withoutNullValues(Map<String, String> values) {
        Map<String, String> copy = new LinkedHashMap<>();
        values.forEach((key, value) -> {
            if (key != null && value != null) {
                copy.put(key, value);
            }
        });
        return copy;
    }

    private void queue(Map<String, Object> event) {
        if (state != State.RELEASED) {
            events.offer(event);
        }
    }

    /** The context Kafka's worker gives a connector: its calls become events for Python. */
    private abstract class Context implements ConnectorContext {

        @Override
        public void requestTaskReconfiguration() {
            queue(RECONFIGURE);
        }

        @Override
        public void raiseError(Exception error) {
            log.error("Connector {} raised an error", name, error);
            Map<String, Object> event = new LinkedHashMap<>();
            event.put("event", "error");
            event.put("error", Answers.error(error));
            queue(Collections.unmodifiableMap(event));
        }

        @Override
        public PluginMetrics pluginMetrics() {
            return pluginMetrics;
        }
    }

    private final class SourceContext extends Context implements SourceConnectorContext {

        @Override
        public OffsetStorageReader offsetStorageReader() {
            return offsetReader;
        }
    }

    private final class SinkContext extends Context implements SinkConnectorContext {
    }

    /** A connector instance, its class loader and what it says of itself. */
    record Instance(String className, Connector connector, ClassLoader loader, String version) {

        boolean isSource() {
            return connector instanceof SourceConnector;
        }

        String kind() {
            return isSource() ? "source" : "sink";
        }
    }
}
