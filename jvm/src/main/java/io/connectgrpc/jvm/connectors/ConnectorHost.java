package io.connectgrpc.jvm.connectors;

import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;

import io.connectgrpc.jvm.plugins.JavaPluginHost;

import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.metrics.Metrics;
import org.apache.kafka.common.metrics.internals.PluginMetricsImpl;
import org.apache.kafka.connect.connector.Connector;
import org.apache.kafka.connect.errors.ConnectException;
import org.apache.kafka.connect.json.JsonConverter;
import org.apache.kafka.connect.json.JsonConverterConfig;
import org.apache.kafka.connect.runtime.isolation.PluginUtils;
import org.apache.kafka.connect.runtime.isolation.Plugins;
import org.apache.kafka.connect.sink.SinkConnector;
import org.apache.kafka.connect.source.ConnectorTransactionBoundaries;
import org.apache.kafka.connect.source.ExactlyOnceSupport;
import org.apache.kafka.connect.source.SourceConnector;
import org.apache.kafka.connect.storage.ConverterConfig;
import org.apache.kafka.connect.storage.ConverterType;
import org.apache.kafka.connect.storage.OffsetUtils;
import org.apache.maven.artifact.versioning.VersionRange;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A worker's Kafka Connect connector instances, for Python through py4j (PySpark's driver
 * JVM gateway): Kafka's {@link Plugins} (the JVM's one scan of the worker's
 * {@code plugin.path}, {@link JavaPluginHost#shared(String)}) makes each instance in its
 * plugin's class loader, and every call on a plugin runs with that loader as the thread's
 * context class loader, as Kafka's worker runs it.
 *
 * <p>Only strings, ints and booleans cross the gateway. Every method answers a JSON object,
 * {@code {"ok": <value>}} or {@code {"error": {"class", "message", "root_class",
 * "root_message", "trace"}}} (see {@link Answers}): a plugin's exception, a
 * {@link LinkageError} included, is an answer, never a broken gateway.
 *
 * <pre>
 *   host = jvm.io.connectgrpc.jvm.connectors.ConnectorHost.open(host_properties, worker)
 *   handle = json.loads(host.create("my-connector", class_name, None))["ok"]["handle"]
 *   host.start(handle, json.dumps(config)); host.taskConfigs(handle, 1); host.stop(handle)
 *   # or both at once: host.createAndStart("my-connector", class_name, None, json.dumps(config))
 *   host.nextEvent(handle, 1000)   # the connector context's events, one at a time
 *   host.release(handle)
 * </pre>
 *
 * <p>A connector instance (a handle) lives from {@link #create} to {@link #release}: Kafka's
 * {@code WorkerConnector} lifecycle, its target states driven from Python. What Kafka's worker
 * asks of a fresh instance that is never started ({@link #alterSourceOffsets},
 * {@link #alterSinkOffsets}, {@link #exactlyOnceSupport}, {@link #canDefineTransactionBoundaries},
 * {@link #describe}) makes one for the call.
 */
public final class ConnectorHost implements AutoCloseable {

    private static final Logger log = LoggerFactory.getLogger(ConnectorHost.class);

    private final Plugins plugins;
    private final OffsetReaders offsetReaders;
    private final Metrics metrics = new Metrics();
    private final AtomicInteger handles = new AtomicInteger();
    private final Map<Integer, HostedConnector> hosted = new ConcurrentHashMap<>();
    /** Kafka's worker reads altered source offsets through its internal converters (KIP-875). */
    private final JsonConverter offsetConverter = new JsonConverter();

    ConnectorHost(Plugins plugins, Map<String, Object> worker) {
        this.plugins = plugins;
        this.offsetReaders = new OffsetReaders(worker);
        offsetConverter.configure(Map.of(
                JsonConverterConfig.SCHEMAS_ENABLE_CONFIG, "false",
                ConverterConfig.TYPE_CONFIG, ConverterType.KEY.getName()));
    }

    /**
     * A worker's host.
     *
     * @param hostPropertiesJson the worker properties of the JVM's plugin scan (those the
     *     catalogue is opened with: {@code plugin.path}, {@code plugin.discovery}, ...)
     * @param workerJson what the source connectors' offsets reader needs of the worker (see
     *     {@link OffsetReaders}); {@code {}} gives a host whose readers refuse to read
     * @throws org.apache.kafka.connect.errors.ConnectException when the scan fails, as Kafka
     *     Connect's start would
     */
    public static ConnectorHost open(String hostPropertiesJson, String workerJson) {
        Plugins plugins = JavaPluginHost.shared(hostPropertiesJson).catalogue().plugins();
        return new ConnectorHost(plugins, Answers.object(workerJson, "the worker settings"));
    }

    /**
     * What a connector class is: {@code {"class", "kind": "source"|"sink", "version",
     * "task_class"}}, from a fresh instance.
     *
     * @param versionRange {@code connector.plugin.version} (KIP-891), or null for the latest
     */
    public String describe(String className, String versionRange) {
        return Answers.answer(() -> {
            HostedConnector.Instance instance = instantiate(className, className, versionRange);
            Map<String, Object> description = describe(instance);
            Class<?> taskClass = InPlugin.run(plugins, instance.loader(), null, () -> instance.connector().taskClass());
            description.put("task_class", taskClass == null ? null : taskClass.getName());
            return description;
        });
    }

    /**
     * Makes a connector instance and initializes it with its context, as Kafka's worker does
     * when it starts a connector: answers {@code {"handle", "class", "kind", "version"}}.
     */
    public String create(String connectorName, String className, String versionRange) {
        return Answers.answer(() -> createInstance(connectorName, className, versionRange));
    }

    private Map<String, Object> createInstance(String connectorName, String className, String versionRange)
            throws Exception {
        HostedConnector.Instance instance = instantiate(connectorName, className, versionRange);
        int handle = handles.incrementAndGet();
        PluginMetricsImpl pluginMetrics = new PluginMetricsImpl(metrics, Map.of("connector", connectorName));
        HostedConnector connector;
        try {
            connector = new HostedConnector(connectorName, instance, plugins, pluginMetrics, offsetReaders);
        } catch (RuntimeException | LinkageError e) {
            pluginMetrics.close();
            throw e;
        }
        hosted.put(handle, connector);
        Map<String, Object> answer = describe(instance);
        answer.put("handle", handle);
        return answer;
    }

    /**
     * {@link #create} then {@link #start} in one call, which is what a connector's start
     * asks for: one round trip through the gateway rather than two on the path of every
     * create and restart. Answers what {@link #create} answers, once the instance started; an
     * instance whose start failed is released, and the answer is the start's error.
     */
    public String createAndStart(String connectorName, String className, String versionRange,
                                 String configJson) {
        return Answers.answer(() -> {
            Map<String, String> config = Answers.stringMap(configJson, "the connector config");
            Map<String, Object> created = createInstance(connectorName, className, versionRange);
            int handle = (Integer) created.get("handle");
            try {
                connector(handle).start(config);
            } catch (Exception | LinkageError e) {
                HostedConnector failed = hosted.remove(handle);
                if (failed != null) {
                    failed.release();
                }
                throw e;
            }
            return created;
        });
    }

    /** Starts the instance with its connector config (a JSON object of strings). */
    public String start(int handle, String configJson) {
        return Answers.answer(() -> {
            connector(handle).start(Answers.stringMap(configJson, "the connector config"));
            return true;
        });
    }

    /** The started instance's task configs, each with {@code task.class} (KIP-1004 checked). */
    public String taskConfigs(int handle, int maxTasks) {
        return Answers.answer(() -> connector(handle).taskConfigs(maxTasks));
    }

    /** Stops the instance if it is started. */
    public String stop(int handle) {
        return Answers.answer(() -> {
            connector(handle).stop();
            return true;
        });
    }

    /** Stops the instance if it is still started, and forgets it. Releasing twice is nothing. */
    public String release(int handle) {
        return Answers.answer(() -> {
            HostedConnector connector = hosted.remove(handle);
            if (connector != null) {
                connector.release();
            }
            return true;
        });
    }

    /**
     * The next event of the instance's context, waiting at most {@code timeoutMs}: {@code
     * {"event": "reconfigure"}} ({@code requestTaskReconfiguration}), {@code {"event":
     * "error", "error": {...}}} ({@code raiseError}), null when none came, and {@code
     * {"event": "released"}} once the instance is released (or unknown).
     */
    public String nextEvent(int handle, int timeoutMs) {
        return Answers.answer(() -> {
            HostedConnector connector = hosted.get(handle);
            return connector == null ? HostedConnector.RELEASED : connector.nextEvent(timeoutMs);
        });
    }

    /**
     * The metrics the instance registered through its context's {@code PluginMetrics}
     * (KIP-877) that have a number for a value: a list of {@code {"name", "description",
     * "tags", "value"}}, empty once the instance is released (Kafka's close removed them).
     */
    public String pluginMetrics(int handle) {
        return Answers.answer(() -> {
            HostedConnector connector = hosted.get(handle);
            return connector == null ? List.of() : ConnectorPluginMetrics.read(metrics, connector.name);
        });
    }

    /**
     * A source connector's answer to {@code exactlyOnceSupport(config)} on a fresh instance:
     * {@code "SUPPORTED"}, {@code "UNSUPPORTED"} or null (not declared).
     */
    public String exactlyOnceSupport(String className, String versionRange, String configJson) {
        return Answers.answer(() -> {
            Map<String, String> config = Answers.stringMap(configJson, "the connector config");
            HostedConnector.Instance instance = instantiate(config.get("name"), className, versionRange);
            ExactlyOnceSupport support = InPlugin.run(plugins, instance.loader(), config.get("name"),
                    () -> source(instance).exactlyOnceSupport(config));
            return support == null ? null : support.name();
        });
    }

    /** A source connector's {@code canDefineTransactionBoundaries(config)} on a fresh instance. */
    public String canDefineTransactionBoundaries(String className, String versionRange, String configJson) {
        return Answers.answer(() -> {
            Map<String, String> config = Answers.stringMap(configJson, "the connector config");
            HostedConnector.Instance instance = instantiate(config.get("name"), className, versionRange);
            ConnectorTransactionBoundaries boundaries = InPlugin.run(plugins, instance.loader(), config.get("name"),
                    () -> source(instance).canDefineTransactionBoundaries(config));
            return boundaries == null ? null : boundaries.name();
        });
    }

    /**
     * KIP-875's hook on a fresh instance, as Kafka's worker calls it before it alters or resets a
     * source connector's offsets: {@code offsetsJson} is {@code [{"partition": {...}, "offset":
     * {...} | null}]} (null resets), each read through Kafka's internal JSON converter as
     * Kafka's worker normalizes them. Answers the hook's boolean; its exception (an
     * {@link UnsupportedOperationException}: no external change of offsets; any other: the
     * offsets refused) is the error answer.
     */
    public String alterSourceOffsets(String className, String versionRange, String configJson, String offsetsJson) {
        return Answers.answer(() -> {
            Map<String, String> config = Answers.stringMap(configJson, "the connector config");
            Map<Map<String, ?>, Map<String, ?>> offsets = new HashMap<>();
            for (Map<String, Object> entry : Answers.objects(offsetsJson, "the offsets")) {
                Map<String, ?> partition = normalized(entry.get("partition"), "partition");
                offsets.put(partition, entry.get("offset") == null ? null : normalized(entry.get("offset"), "offset"));
            }
            HostedConnector.Instance instance = instantiate(config.get("name"), className, versionRange);
            return InPlugin.run(plugins, instance.loader(), config.get("name"),
                    () -> source(instance).alterOffsets(config, offsets));
        });
    }

    /**
     * KIP-875's hook of a sink connector on a fresh instance: {@code offsetsJson} is {@code
     * [{"topic", "partition", "offset": n | null}]} (null resets).
     */
    public String alterSinkOffsets(String className, String versionRange, String configJson, String offsetsJson) {
        return Answers.answer(() -> {
            Map<String, String> config = Answers.stringMap(configJson, "the connector config");
            Map<TopicPartition, Long> offsets = new HashMap<>();
            for (Map<String, Object> entry : Answers.objects(offsetsJson, "the offsets")) {
                TopicPartition partition = new TopicPartition(
                        String.valueOf(entry.get("topic")), ((Number) entry.get("partition")).intValue());
                Object offset = entry.get("offset");
                offsets.put(partition, offset == null ? null : ((Number) offset).longValue());
            }
            HostedConnector.Instance instance = instantiate(config.get("name"), className, versionRange);
            if (!(instance.connector() instanceof SinkConnector sink)) {
                throw new ConnectException(className + " is not a sink connector");
            }
            return InPlugin.run(plugins, instance.loader(), config.get("name"),
                    () -> sink.alterOffsets(config, offsets));
        });
    }

    /** Releases every instance and stops the offsets readers. */
    @Override
    public void close() {
        for (Integer handle : List.copyOf(hosted.keySet())) {
            release(handle);
        }
        offsetReaders.close();
        metrics.close();
    }

    private HostedConnector connector(int handle) {
        HostedConnector connector = hosted.get(handle);
        if (connector == null) {
            throw new IllegalStateException("no connector instance " + handle + " (released, or never created)");
        }
        return connector;
    }

    /**
     * A new instance of the connector class in the version asked for, in its plugin's class
     * loader, as Kafka's worker makes one (its loader found first, then the instance made with
     * that loader as the context class loader).
     */
    private HostedConnector.Instance instantiate(String connectorName, String className, String versionRange)
            throws Exception {
        if (className == null || className.isBlank()) {
            throw new ConnectException("connector " + connectorName + " names no connector class");
        }
        VersionRange range = PluginUtils.connectorVersionRequirement(versionRange);
        ClassLoader loader;
        try {
            loader = plugins.connectorLoader(className, range);
        } catch (Exception e) {
            throw new ConnectException("No class loader for connector " + connectorName + " of class "
                    + className + ": " + e.getMessage(), e);
        }
        return InPlugin.run(plugins, loader, null, () -> {
            Connector connector;
            try {
                connector = plugins.newConnector(className, range);
            } catch (Exception e) {
                throw new ConnectException("Cannot make an instance of class " + className + " for connector "
                        + connectorName + ": " + e.getMessage(), e);
            }
            if (!(connector instanceof SourceConnector) && !(connector instanceof SinkConnector)) {
                throw new ConnectException(className + " is neither a SourceConnector nor a SinkConnector: Kafka "
                        + "Connect runs only those");
            }
            String version = connector.version();
            log.debug("Made an instance of {} {} for connector {}", className, version, connectorName);
            return new HostedConnector.Instance(connector.getClass().getName(), connector, loader, version);
        });
    }

    private static Map<String, Object> describe(HostedConnector.Instance instance) {
        Map<String, Object> description = new LinkedHashMap<>();
        description.put("class", instance.className());
        description.put("kind", instance.kind());
        description.put("version", instance.version());
        return description;
    }

    private static SourceConnector source(HostedConnector.Instance instance) {
        if (instance.connector() instanceof SourceConnector source) {
            return source;
        }
        throw new ConnectException(instance.className() + " is not a source connector");
    }

    /**
     * A source partition or offset as Kafka's worker hands it to {@code alterOffsets}: checked
     * by Kafka's {@link OffsetUtils} (primitive values only), then written and read back by its
     * internal JSON converter, so that integers are {@code Long}s as the connector's tasks
     * read them.
     */
    @SuppressWarnings("unchecked")
    private Map<String, ?> normalized(Object value, String what) {
        if (!(value instanceof Map<?, ?> map)) {
            throw new ConnectException("A source " + what + " must be a JSON object, got " + value);
        }
        OffsetUtils.validateFormat((Map<Object, Object>) map);
        byte[] written = offsetConverter.fromConnectData("", null, map);
        return (Map<String, ?>) offsetConverter.toConnectData("", written).value();
    }
}
