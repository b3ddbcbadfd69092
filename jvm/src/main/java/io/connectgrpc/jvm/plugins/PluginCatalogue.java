package io.connectgrpc.jvm.plugins;

import java.lang.reflect.Field;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

import org.apache.kafka.clients.CommonClientConfigs;
import org.apache.kafka.common.config.provider.ConfigProvider;
import org.apache.kafka.common.utils.Time;
import org.apache.kafka.common.utils.internals.AppInfoParser;
import org.apache.kafka.connect.connector.policy.ConnectorClientConfigOverridePolicy;
import org.apache.kafka.connect.runtime.ConnectMetrics;
import org.apache.kafka.connect.runtime.Worker;
import org.apache.kafka.connect.runtime.WorkerConfig;
import org.apache.kafka.connect.runtime.isolation.PluginDesc;
import org.apache.kafka.connect.runtime.isolation.PluginScanResult;
import org.apache.kafka.connect.runtime.isolation.Plugins;
import org.apache.kafka.connect.runtime.rest.RestRequestTimeout;
import org.apache.kafka.connect.runtime.rest.entities.ConfigInfos;
import org.apache.kafka.connect.runtime.rest.entities.ConfigKeyInfo;
import org.apache.kafka.connect.runtime.rest.entities.PluginInfo;
import org.apache.kafka.connect.runtime.rest.resources.ConnectorPluginsResource;
import org.apache.kafka.connect.runtime.standalone.StandaloneHerder;
import org.apache.kafka.connect.storage.MemoryOffsetBackingStore;
import org.apache.kafka.connect.util.FutureCallback;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The plugins of a {@code plugin.path}, found and described by Kafka Connect's own classes.
 *
 * <p>Kafka's {@link Plugins} scans the path as a Kafka Connect worker does (one isolated
 * {@code PluginClassLoader} per plugin location under a {@code DelegatingClassLoader}, the
 * classpath's plugins beside them, {@code plugin.discovery} as KIP-898 defines it). The listing
 * and the config definitions (KIP-769) come from Kafka's REST resource for
 * {@code /connector-plugins}, and validation from its herder, so that both are what a Kafka
 * Connect worker of the same release answers. That herder is a {@link StandaloneHerder} that is
 * never started: only its validation and plugin-config methods are used, which need a
 * {@link Worker} built (not started) over the same {@link Plugins}.
 *
 * <p>Kafka's REST API lists no config providers; the catalogue adds them from the same scan
 * (Kafka's type name {@code configprovider}, no config definition: {@link ConfigProvider}
 * declares none).
 */
public final class PluginCatalogue implements AutoCloseable {

    private static final Logger log = LoggerFactory.getLogger(PluginCatalogue.class);

    /** The id Kafka's worker would ask the cluster for; nothing here reaches a cluster. */
    static final String UNKNOWN_CLUSTER_ID = "connect-grpc-plugin-host";
    static final String WORKER_ID = "connect-grpc-plugin-host";
    /** Kafka's REST resource waits at most this long for the herder (its default is 90 s). */
    static final long REQUEST_TIMEOUT_MS = 90_000L;
    private static final String DEFAULT_CONVERTER = "org.apache.kafka.connect.json.JsonConverter";

    private final Map<String, String> workerProps;
    private final Plugins plugins;
    private final StandaloneHerder herder;
    private final ConnectorPluginsResource resource;
    /** {@link #describe()}'s answer: the plugins are fixed once scanned. */
    private volatile List<PluginDescription> described;

    private PluginCatalogue(Map<String, String> workerProps) {
        this.workerProps = workerProps;
        this.plugins = new Plugins(workerProps);
        WorkerConfig config = new HostWorkerConfig(reportingNothing(workerProps), UNKNOWN_CLUSTER_ID);
        ConnectorClientConfigOverridePolicy policy = plugins.newPlugin(
                config.getString(WorkerConfig.CONNECTOR_CLIENT_POLICY_CLASS_CONFIG),
                config,
                ConnectorClientConfigOverridePolicy.class);
        Worker worker = new Worker(WORKER_ID, Time.SYSTEM, plugins, config, new NoOffsets(), policy);
        // Kafka's metrics register the worker's app-info MBean whatever the reporters; this
        // worker runs nothing, so it is taken back at once (Kafka's own undo, which the
        // herder's stop repeats harmlessly)
        AppInfoParser.unregisterAppInfo(ConnectMetrics.JMX_PREFIX, WORKER_ID, worker.metrics().metrics());
        this.herder = new StandaloneHerder(worker, UNKNOWN_CLUSTER_ID, policy);
        this.resource = new ConnectorPluginsResource(
                herder, RestRequestTimeout.constant(REQUEST_TIMEOUT_MS, REQUEST_TIMEOUT_MS));
    }

    /**
     * Scans the plugin path of a Kafka Connect worker config ({@code plugin.path},
     * {@code plugin.discovery} and any other worker property). A worker config must name its
     * converters and bootstrap servers: they default to JsonConverter and a placeholder
     * address, which nothing here connects to.
     *
     * @throws org.apache.kafka.connect.errors.ConnectException as Kafka Connect's start would
     *     (for example {@code hybrid_fail} with a plugin that lacks a ServiceLoader manifest)
     */
    public static PluginCatalogue open(Map<String, String> workerProperties) {
        Map<String, String> props = new HashMap<>(workerProperties);
        props.putIfAbsent(WorkerConfig.KEY_CONVERTER_CLASS_CONFIG, DEFAULT_CONVERTER);
        props.putIfAbsent(WorkerConfig.VALUE_CONVERTER_CLASS_CONFIG, DEFAULT_CONVERTER);
        props.putIfAbsent(WorkerConfig.BOOTSTRAP_SERVERS_CONFIG, "localhost:9092");
        long started = System.nanoTime();
        PluginCatalogue catalogue = new PluginCatalogue(Map.copyOf(props));
        log.info("Scanned plugin.path {} ({}) in {} ms",
                props.get(WorkerConfig.PLUGIN_PATH_CONFIG),
                props.getOrDefault(WorkerConfig.PLUGIN_DISCOVERY_CONFIG, "default discovery"),
                TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - started));
        return catalogue;
    }

    /** The worker properties the catalogue was built with. */
    public Map<String, String> workerProperties() {
        return workerProps;
    }

    /** Kafka's {@link Plugins}, for hosting what the catalogue lists. */
    public Plugins plugins() {
        return plugins;
    }

    /**
     * Every plugin, as Kafka's {@code GET /connector-plugins?connectorsOnly=false} lists them,
     * then the config providers, each with where it was found and its config definition.
     * Built once: it instantiates every plugin for its config definition.
     */
    public List<PluginDescription> describe() {
        List<PluginDescription> answer = described;
        if (answer == null) {
            answer = List.copyOf(describeOnce());
            described = answer;
        }
        return answer;
    }

    private List<PluginDescription> describeOnce() {
        Map<String, PluginDesc<?>> found = new HashMap<>();
        scanResult().forEach(desc -> found.put(key(desc.className(), desc.typeName(), desc.version()), desc));
        List<PluginDescription> described = new ArrayList<>();
        for (PluginInfo info : resource.listConnectorPlugins(false)) {
            PluginDesc<?> desc = found.get(key(info.className(), info.type().toString(), info.version()));
            described.add(new PluginDescription(
                    info,
                    desc == null ? null : desc.location(),
                    resource.getConnectorConfigDef(info.className(), info.version())));
        }
        for (PluginDesc<ConfigProvider> desc : scanResult().configProviders()) {
            described.add(new PluginDescription(new PluginInfo(desc), desc.location(), null));
        }
        return described;
    }

    /** The config definition of one plugin (KIP-769), as Kafka's REST API returns it. */
    public List<ConfigKeyInfo> configDefinition(String pluginName, String version) {
        return resource.getConnectorConfigDef(pluginName, version);
    }

    /**
     * Validates a connector config as Kafka Connect's {@code PUT .../config/validate} and
     * {@code POST /connectors} do: the framework's ConfigDef (enriched with the config's
     * transformations, predicates and converters) merged with the connector's own
     * {@code config()} and {@code validate()}, and the client overrides checked by the worker's
     * {@code connector.client.config.override.policy}.
     *
     * @throws Exception what Kafka's herder fails with (its REST API answers 400 for a
     *     {@code BadRequestException}, 500 for anything else)
     */
    public ConfigInfos validate(Map<String, String> connectorConfig) throws Exception {
        Objects.requireNonNull(connectorConfig, "connectorConfig");
        FutureCallback<ConfigInfos> result = new FutureCallback<>();
        herder.validateConnectorConfig(connectorConfig, result, false);
        try {
            return result.get(REQUEST_TIMEOUT_MS, TimeUnit.MILLISECONDS);
        } catch (ExecutionException e) {
            // What the herder failed with, as its REST API would report it: a plugin's
            // LinkageError (a class it needs is missing) included.
            if (e.getCause() instanceof Exception cause) {
                throw cause;
            }
            if (e.getCause() instanceof Error cause) {
                throw cause;
            }
            throw e;
        } catch (TimeoutException e) {
            throw new TimeoutException("validation took longer than " + REQUEST_TIMEOUT_MS + " ms");
        }
    }

    @Override
    public void close() {
        // Stops the never-started herder's executor and the worker's metrics; nothing else runs.
        herder.stop();
    }

    /**
     * The worker properties with no metric reporter. Kafka's {@link Worker} registers its
     * worker metrics with every reporter ({@code metric.reporters}: JMX by default) under
     * names that carry no worker id, so that this never-started worker's would replace, and
     * on its close remove, those of the Kafka worker that runs the JVM's Java tasks (and a
     * user's reporters would count a worker that runs nothing).
     */
    private static Map<String, String> reportingNothing(Map<String, String> workerProps) {
        Map<String, String> props = new HashMap<>(workerProps);
        props.put(CommonClientConfigs.METRIC_REPORTER_CLASSES_CONFIG, "");
        return props;
    }

    private static String key(String className, String type, String version) {
        return className + "\u0000" + type + "\u0000" + version;
    }

    /**
     * The scan Kafka's {@link Plugins} made. It keeps it private and exposes every kind of plugin
     * but config providers, which Kafka's worker only ever loads by name: reading its field is
     * the one way to list them without scanning the path a second time.
     */
    private PluginScanResult scanResult() {
        try {
            Field field = Plugins.class.getDeclaredField("scanResult");
            field.setAccessible(true);
            return (PluginScanResult) field.get(plugins);
        } catch (ReflectiveOperationException | RuntimeException e) {
            log.warn("Kafka's Plugins no longer exposes its scan; config providers are not listed", e);
            return new PluginScanResult(List.of());
        }
    }

    /** The offsets store Kafka's {@link Worker} is built with; validation reads no offsets. */
    private static final class NoOffsets extends MemoryOffsetBackingStore {
        @Override
        public Set<Map<String, Object>> connectorPartitions(String connectorName) {
            return Set.of();
        }
    }
}
