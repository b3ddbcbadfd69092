package io.connectgrpc.jvm.host;

import java.lang.reflect.Constructor;
import java.lang.reflect.InvocationTargetException;
import java.util.HashMap;
import java.util.Map;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.core.type.TypeReference;
import com.fasterxml.jackson.databind.ObjectMapper;

import io.connectgrpc.jvm.host.proto.StartTask;
import io.connectgrpc.jvm.plugins.JavaPluginHost;

import org.apache.kafka.clients.CommonClientConfigs;
import org.apache.kafka.common.utils.Time;
import org.apache.kafka.connect.connector.policy.ConnectorClientConfigOverridePolicy;
import org.apache.kafka.connect.json.JsonConverter;
import org.apache.kafka.connect.json.JsonConverterConfig;
import org.apache.kafka.connect.runtime.TaskStatus;
import org.apache.kafka.connect.runtime.Worker;
import org.apache.kafka.connect.runtime.WorkerConfig;
import org.apache.kafka.connect.runtime.distributed.DistributedConfig;
import org.apache.kafka.connect.runtime.isolation.Plugins;
import org.apache.kafka.connect.runtime.standalone.StandaloneConfig;
import org.apache.kafka.connect.runtime.standalone.StandaloneHerder;
import org.apache.kafka.connect.storage.KafkaOffsetBackingStore;
import org.apache.kafka.connect.storage.MemoryConfigBackingStore;
import org.apache.kafka.connect.storage.MemoryStatusBackingStore;
import org.apache.kafka.connect.storage.OffsetBackingStore;
import org.apache.kafka.connect.storage.StatusBackingStore;
import org.apache.kafka.connect.util.ConnectUtils;
import org.apache.kafka.connect.util.SharedTopicAdmin;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Kafka Connect's own {@link Worker}, one per JVM and connect-grpc worker, which runs the
 * Java tasks that JVM hosts: converters, transformations and predicates, error tolerance and
 * the dead-letter queue, source offsets in the worker's offsets topic, the sink's consumer
 * group {@code connect-<name>}, client overrides and topic creation are all Kafka's.
 *
 * <p>It is built as Kafka's {@code ConnectDistributed} builds its worker: a
 * {@link DistributedConfig} of the worker's properties, the JVM's one plugin scan
 * ({@link JavaPluginHost#shared}), a {@link KafkaOffsetBackingStore} on the worker's offsets
 * topic over a shared admin client, and the connector client override policy the worker
 * names; it is started once, by the first task that needs it or, as Kafka Connect builds its
 * worker at its own start, ahead of any task ({@link #warm}), and stopped when the connect-grpc
 * worker stops ({@link #shutdown}) or the JVM ends. A connect-grpc standalone worker's (its
 * properties name {@code offset.storage.file.filename}) is built as Kafka's
 * {@code ConnectStandalone} builds its worker instead, its source offsets kept by the
 * connect-grpc worker and relayed to it ({@link RelayedOffsetStore}).
 *
 * <p>No Kafka herder runs here (connect-grpc's is the control plane). Kafka's worker still
 * needs one for its tasks' status store and its metrics: a {@link StandaloneHerder} that is
 * built and never started, whose in-memory status store is kept current by
 * {@link StatusRelay} (it is the herder's own status listener), and which hands the tasks a
 * store that relays the topics they use to their drivers ({@link TopicRelayStore}).
 */
public final class KafkaTaskWorker implements AutoCloseable {

    private static final Logger log = LoggerFactory.getLogger(KafkaTaskWorker.class);
    private static final ObjectMapper JSON = new ObjectMapper();

    private static final TypeReference<Map<String, String>> STRING_MAP = new TypeReference<>() { };
    /**
     * What a stop may take beyond the worker's {@code task.shutdown.graceful.timeout.ms}: the
     * close of its offsets topic's clients and its shared admin client, once its tasks and its
     * offset committer are stopped (Kafka bounds those by the timeout).
     */
    static final long STOP_MARGIN_MS = 5_000L;

    private final Map<String, String> properties;
    private final Worker worker;
    private final StandaloneHerder herder;
    private final TopicRelayStore topics;
    private final AutoCloseable resources;
    private final long shutdownTimeoutMs;
    /** The offsets its tasks read and write, when the connect-grpc worker keeps them (else null). */
    private final RelayedOffsetStore relayedOffsets;

    /**
     * A started Kafka worker over {@code offsets} (built, not started: the worker starts it).
     *
     * @param resources closed after the worker stops (the shared admin client)
     */
    KafkaTaskWorker(String workerId, Map<String, String> properties, WorkerConfig config, Plugins plugins,
                    OffsetBackingStore offsets, AutoCloseable resources) {
        this.properties = Map.copyOf(properties);
        this.resources = resources;
        ConnectorClientConfigOverridePolicy policy = plugins.newPlugin(
                config.getString(WorkerConfig.CONNECTOR_CLIENT_POLICY_CLASS_CONFIG),
                config,
                ConnectorClientConfigOverridePolicy.class);
        this.worker = new Worker(workerId, Time.SYSTEM, plugins, config, offsets, policy);
        // Building the herder hands it to the worker (Kafka's herders do so in their
        // constructor); it is never started. Its status store relays the tasks' topics.
        this.topics = new TopicRelayStore(new MemoryStatusBackingStore());
        this.herder = herder(worker, config.kafkaClusterId(), topics, policy);
        this.shutdownTimeoutMs = config.getLong(WorkerConfig.TASK_SHUTDOWN_GRACEFUL_TIMEOUT_MS_CONFIG);
        this.relayedOffsets = offsets instanceof RelayedOffsetStore relayed ? relayed : null;
        worker.start();
    }

    /**
     * Builds and starts the Kafka worker of a connect-grpc worker, as Kafka's
     * {@code ConnectDistributed} does.
     *
     * @param workerProperties the worker's properties, in Kafka Connect's names
     * @param scanProperties what the JVM's plugin scan is opened with
     */
    static KafkaTaskWorker open(String workerId, Map<String, String> workerProperties,
                                Map<String, String> scanProperties) {
        Plugins plugins = JavaPluginHost.shared(json(scanProperties)).catalogue().plugins();
        if (workerProperties.containsKey(StandaloneConfig.OFFSET_STORAGE_FILE_FILENAME_CONFIG)) {
            return openKeepingOffsetsInWorker(workerId, workerProperties, plugins);
        }
        DistributedConfig config = new DistributedConfig(workerProperties);
        String clusterId = config.kafkaClusterId();
        String clientIdBase = ConnectUtils.clientIdBase(config);
        Map<String, Object> adminProps = new HashMap<>(config.originals());
        ConnectUtils.addMetricsContextProperties(adminProps, config, clusterId);
        adminProps.put(CommonClientConfigs.CLIENT_ID_CONFIG, clientIdBase + "shared-admin");
        SharedTopicAdmin admin = new SharedTopicAdmin(adminProps);
        try {
            KafkaOffsetBackingStore offsets = new KafkaOffsetBackingStore(admin, () -> clientIdBase,
                    plugins.newInternalConverter(true, JsonConverter.class.getName(),
                            Map.of(JsonConverterConfig.SCHEMAS_ENABLE_CONFIG, "false")));
            offsets.configure(config);
            long started = System.nanoTime();
            KafkaTaskWorker built = new KafkaTaskWorker(workerId, workerProperties, config, plugins, offsets, admin);
            log.info("Started Kafka Connect's worker for connect-grpc worker {} in {} ms", workerId,
                    (System.nanoTime() - started) / 1_000_000);
            return built;
        } catch (RuntimeException | Error e) {
            admin.close();
            throw e;
        }
    }

    /**
     * The Kafka worker of a connect-grpc standalone worker, as Kafka's {@code ConnectStandalone}
     * builds its own ({@link StandaloneConfig}: no connector-specific offsets topics, no
     * exactly-once sources), except for the offsets: the connect-grpc worker keeps them in its
     * own offsets file, which this JVM never opens ({@code offset.storage.file.filename} only
     * says which mode the worker is in), and its tasks read and write them through a
     * {@link RelayedOffsetStore}.
     */
    private static KafkaTaskWorker openKeepingOffsetsInWorker(String workerId, Map<String, String> workerProperties,
                                                              Plugins plugins) {
        StandaloneConfig config = new StandaloneConfig(workerProperties);
        long started = System.nanoTime();
        KafkaTaskWorker built = new KafkaTaskWorker(workerId, workerProperties, config, plugins,
                new RelayedOffsetStore(), () -> { });
        log.info("Started Kafka Connect's worker for connect-grpc standalone worker {} in {} ms", workerId,
                (System.nanoTime() - started) / 1_000_000);
        return built;
    }

    /**
     * The Kafka worker of the task's connect-grpc worker in this JVM, built and started by the
     * first task that needs it unless it was built ahead ({@link #warm}, or a host's
     * {@code WarmWorker}: the task then waits for that build; one that failed is made again
     * here, so that the task reports why). A worker id that comes back with other properties
     * (a worker restarted with a new config while its executors live on) gets a new Kafka
     * worker; the old one is stopped, with whatever tasks of the old incarnation it still ran
     * ({@link KafkaWorkers}).
     */
    static KafkaTaskWorker forStart(StartTask start) throws Exception {
        return KafkaWorkers.SHARED.get(start.getWorkerId(), start.getWorkerPropertiesMap(),
                start.getPluginScanPropertiesMap());
    }

    /**
     * Builds the Kafka worker of a connect-grpc worker in a thread of its own, ahead of its
     * first task, as Kafka Connect builds its worker at its own start (its config, the
     * cluster id through an admin client, the offsets topic read: seconds the first task would
     * otherwise wait); returns at once. Nothing when one is built or being built from these
     * properties. A build that fails is logged, and the first task builds it again. For Python,
     * through py4j (the maps as JSON objects of strings).
     */
    public static void warm(String workerId, String workerPropertiesJson, String scanPropertiesJson) {
        Map<String, String> properties = map(workerPropertiesJson, "worker properties");
        Map<String, String> scan = map(scanPropertiesJson, "plugin scan properties");
        KafkaWorkers.SHARED.warmInBackground(workerId, properties, scan);
    }

    /**
     * Stops the worker, waiting at most {@code task.shutdown.graceful.timeout.ms} and
     * {@link #STOP_MARGIN_MS} more, as Kafka Connect's herder bounds its own stop: Kafka's
     * worker bounds its tasks' and offset committer's waits by that timeout, but then closes its
     * offsets topic's producer with no bound, and that producer never gives up a write
     * ({@code delivery.timeout.ms} is the maximum), so a worker whose Kafka cluster is gone
     * with an offset write pending would never stop. It is left to stop in a daemon thread of
     * its own (the JVM's end ends it).
     *
     * @return whether it stopped in time
     */
    boolean stop() {
        Thread stopping = new Thread(this::closeQuietly, "connect-grpc-kafka-worker-stop");
        stopping.setDaemon(true);
        stopping.start();
        long boundMs = shutdownTimeoutMs + STOP_MARGIN_MS;
        try {
            stopping.join(boundMs);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        if (stopping.isAlive()) {
            log.warn("Kafka Connect's worker for connect-grpc worker {} did not stop within {} ms "
                    + "(its clients still wait for the Kafka cluster); it is left to stop on its own",
                    worker.workerId(), boundMs);
            return false;
        }
        return true;
    }

    /**
     * Stops the Kafka worker of a connect-grpc worker in this JVM, if there is one (the
     * connect-grpc worker is stopping: its tasks were stopped before), waiting at most its
     * stop's bound ({@link #stop}); one still being built is stopped once built. For Python,
     * through py4j.
     */
    public static void shutdown(String workerId) {
        KafkaWorkers.SHARED.shutdown(workerId);
    }

    Worker worker() {
        return worker;
    }

    /** The herder's status listener: it keeps the status store Kafka's worker reads current. */
    TaskStatus.Listener statusStore() {
        return herder;
    }

    /**
     * The source offsets its tasks read and write when the connect-grpc worker keeps them
     * itself (a standalone worker); null when they are in Kafka's offsets topic.
     */
    RelayedOffsetStore relayedOffsets() {
        return relayedOffsets;
    }

    /** The status store Kafka's tasks record the topics they use in (KIP-558). */
    TopicRelayStore topics() {
        return topics;
    }

    /**
     * Kafka's standalone herder over {@code statuses}. Its public constructor makes an
     * in-memory status store of its own, which Kafka's worker would hand its tasks: the
     * constructor that takes the store is package-private (Kafka's tests use it), so it is
     * called reflectively; Kafka's public one calls it with these same arguments.
     */
    static StandaloneHerder herder(Worker worker, String clusterId, StatusBackingStore statuses,
                                   ConnectorClientConfigOverridePolicy policy) {
        try {
            Constructor<StandaloneHerder> constructor = StandaloneHerder.class.getDeclaredConstructor(
                    Worker.class, String.class, String.class, StatusBackingStore.class,
                    MemoryConfigBackingStore.class, ConnectorClientConfigOverridePolicy.class, Time.class);
            constructor.setAccessible(true);
            return constructor.newInstance(worker, worker.workerId(), clusterId, statuses,
                    new MemoryConfigBackingStore(worker.configTransformer()), policy, Time.SYSTEM);
        } catch (InvocationTargetException e) {
            if (e.getCause() instanceof RuntimeException runtime) {
                throw runtime;
            }
            throw new IllegalStateException("Kafka's StandaloneHerder could not be built", e.getCause());
        } catch (ReflectiveOperationException e) {
            throw new IllegalStateException(
                    "Kafka's StandaloneHerder no longer has the constructor that takes a status store", e);
        }
    }

    /** Kafka Connect's {@code task.shutdown.graceful.timeout.ms} of this worker. */
    long shutdownTimeoutMs() {
        return shutdownTimeoutMs;
    }

    @Override
    public void close() {
        try {
            // the never-started herder stops what it holds: the worker (its tasks, uncleanly,
            // if any are left, and its offset store) and the worker's metrics
            herder.stop();
        } finally {
            try {
                resources.close();
            } catch (Exception e) {
                log.warn("Could not close the Kafka worker's admin client", e);
            }
        }
    }

    private void closeQuietly() {
        try {
            close();
        } catch (RuntimeException e) {
            log.warn("Could not stop Kafka Connect's worker for connect-grpc worker {}", worker.workerId(), e);
        }
    }

    private static Map<String, String> map(String json, String what) {
        try {
            Map<String, String> read = JSON.readValue(json, STRING_MAP);
            if (read == null) {
                throw new IllegalArgumentException("the " + what + " must be a JSON object of strings, got null");
            }
            return read;
        } catch (JsonProcessingException e) {
            throw new IllegalArgumentException("the " + what + " must be a JSON object of strings", e);
        }
    }

    private static String json(Map<String, String> properties) {
        try {
            return JSON.writeValueAsString(properties);
        } catch (JsonProcessingException e) {
            throw new IllegalStateException("cannot write the plugin scan's properties as JSON", e);
        }
    }
}
