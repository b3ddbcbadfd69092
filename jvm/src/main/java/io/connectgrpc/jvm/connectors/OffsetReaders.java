package io.connectgrpc.jvm.connectors;

import java.util.Collection;
import java.util.HashMap;
import java.util.Map;
import java.util.Set;
import java.util.function.Supplier;

import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.IsolationLevel;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.connect.json.JsonConverter;
import org.apache.kafka.connect.json.JsonConverterConfig;
import org.apache.kafka.connect.runtime.SourceConnectorConfig;
import org.apache.kafka.connect.runtime.distributed.DistributedConfig;
import org.apache.kafka.connect.storage.CloseableOffsetStorageReader;
import org.apache.kafka.connect.storage.ConnectorOffsetBackingStore;
import org.apache.kafka.connect.storage.ConverterConfig;
import org.apache.kafka.connect.storage.ConverterType;
import org.apache.kafka.connect.storage.KafkaOffsetBackingStore;
import org.apache.kafka.connect.storage.OffsetStorageReaderImpl;
import org.apache.kafka.connect.util.LoggingContext;
import org.apache.kafka.connect.util.TopicAdmin;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The offsets a source connector reads through its context's {@code offsetStorageReader()},
 * from the worker's offsets topic (and the connector's own {@code offsets.storage.topic}),
 * read by Kafka's classes as Kafka's worker gives them to a connector: an
 * {@link OffsetStorageReaderImpl} over a {@link ConnectorOffsetBackingStore} that reads the
 * connector's topic first and the worker's after it.
 *
 * <p>The topics are written by connect-grpc's Python worker, in Kafka Connect's format, so a
 * store here only reads: one read-only {@link KafkaOffsetBackingStore} of the worker's topic
 * for the whole worker, and one of a connector's own topic per connector that has one. None
 * is started until a connector reads an offset (most connectors never do): then it reads the
 * topic to its end, and each read after that catches up with the topic before it answers.
 *
 * <p>The worker settings it is given: {@code bootstrap.servers}, {@code offset.storage.topic}
 * and its {@code offset.storage.partitions} and {@code offset.storage.replication.factor}
 * (used only if a connector's own topic must be created), {@code exactly.once.source.support}
 * (enabled: the readers see committed offsets only), {@code worker.id}, {@code
 * offset.storage.file.filename} instead of the topic on a standalone worker (a reader then
 * refuses to read, saying so), and {@code client}, the
 * worker's client properties: each of the readers' consumers and admin clients is given those
 * its Java client knows by name (the Python worker's are librdkafka's, mostly the same names).
 */
final class OffsetReaders implements AutoCloseable {

    private static final Logger log = LoggerFactory.getLogger(OffsetReaders.class);

    static final String OFFSET_TOPIC = DistributedConfig.OFFSET_STORAGE_TOPIC_CONFIG;
    /** Given instead of the topic by a standalone worker, whose offsets are in this file. */
    static final String OFFSET_FILE = "offset.storage.file.filename";

    private final Map<String, Object> settings;
    private final JsonConverter keyConverter = internalConverter(true);
    private final JsonConverter valueConverter = internalConverter(false);
    private DistributedConfig workerConfig;
    private KafkaOffsetBackingStore workerStore;
    private TopicAdmin workerAdmin;
    private boolean closed;

    OffsetReaders(Map<String, Object> settings) {
        this.settings = Map.copyOf(settings);
    }

    /** A connector's reader; {@code config} gives the connector's config when it first reads. */
    Reader readerFor(String connector, Supplier<Map<String, String>> config) {
        return new Reader(connector, config);
    }

    private String setting(String key) {
        Object value = settings.get(key);
        return value == null ? null : value.toString();
    }

    /** The worker's topic's store, started by the first read of any connector. */
    private synchronized KafkaOffsetBackingStore workerStore() {
        if (closed) {
            throw new IllegalStateException("the worker's offsets readers are closed");
        }
        if (workerStore == null) {
            String topic = setting(OFFSET_TOPIC);
            String file = setting(OFFSET_FILE);
            if ((topic == null || topic.isBlank()) && file != null) {
                // the file is the Python worker's, in its own format, written as its tasks commit
                throw new UnsupportedOperationException("A connector's offsetStorageReader() is not available on a "
                        + "standalone connect-grpc worker: its source offsets are in the worker's offsets file ("
                        + OFFSET_FILE + "=" + file + "), which only its tasks and the offsets calls read");
            }
            if (topic == null || topic.isBlank()) {
                throw new UnsupportedOperationException("This worker hosts connectors without an offsets topic "
                        + "(no offset.storage.topic was given to its connector host): there are no source offsets "
                        + "to read");
            }
            TopicAdmin admin = new TopicAdmin(adminProperties("worker"));
            KafkaOffsetBackingStore store = KafkaOffsetBackingStore.readOnlyStore(
                    topic, consumer("worker"), admin, keyConverter);
            try {
                store.configure(workerConfig());
                store.start();
            } catch (RuntimeException e) {
                admin.close();
                throw e;
            }
            log.info("Reading source offsets from the worker's offsets topic {}", topic);
            workerAdmin = admin;
            workerStore = store;
        }
        return workerStore;
    }

    /**
     * A Kafka worker config for Kafka's stores: they read the offsets topic's settings and
     * whether exactly-once source support is on from it. It names the worker's offsets topic
     * and placeholders for the topics the stores never touch.
     */
    private synchronized DistributedConfig workerConfig() {
        if (workerConfig == null) {
            Map<String, String> props = new HashMap<>();
            clientProperties(AdminClientConfig.configNames()).forEach((key, value) -> props.put(key, String.valueOf(value)));
            props.put(DistributedConfig.GROUP_ID_CONFIG, orDefault("group.id", "connect-grpc"));
            props.put(OFFSET_TOPIC, setting(OFFSET_TOPIC));
            props.put(DistributedConfig.CONFIG_TOPIC_CONFIG, "connect-grpc-unused-config-topic");
            props.put(DistributedConfig.STATUS_STORAGE_TOPIC_CONFIG, "connect-grpc-unused-status-topic");
            props.put(DistributedConfig.KEY_CONVERTER_CLASS_CONFIG, JsonConverter.class.getName());
            props.put(DistributedConfig.VALUE_CONVERTER_CLASS_CONFIG, JsonConverter.class.getName());
            props.put(DistributedConfig.EXACTLY_ONCE_SOURCE_SUPPORT_CONFIG,
                    orDefault(DistributedConfig.EXACTLY_ONCE_SOURCE_SUPPORT_CONFIG, "disabled"));
            copySetting(DistributedConfig.OFFSET_STORAGE_PARTITIONS_CONFIG, props);
            copySetting(DistributedConfig.OFFSET_STORAGE_REPLICATION_FACTOR_CONFIG, props);
            workerConfig = new DistributedConfig(props);
        }
        return workerConfig;
    }

    private void copySetting(String key, Map<String, String> props) {
        String value = setting(key);
        if (value != null) {
            props.put(key, value);
        }
    }

    private String orDefault(String key, String fallback) {
        String value = setting(key);
        return value == null || value.isBlank() ? fallback : value;
    }

    /** The worker's client properties a Java client of these {@code names} knows. */
    private Map<String, Object> clientProperties(Set<String> names) {
        Map<String, Object> props = new HashMap<>();
        Object client = settings.get("client");
        if (client instanceof Map<?, ?> given) {
            given.forEach((key, value) -> {
                if (names.contains(String.valueOf(key)) && value != null) {
                    props.put(String.valueOf(key), value);
                }
            });
        }
        String bootstrap = setting(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG);
        if (bootstrap != null) {
            props.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        }
        return props;
    }

    private String clientId(String purpose) {
        return "connect-grpc-" + orDefault("worker.id", "worker") + "-offsets-reader-" + purpose;
    }

    private Map<String, Object> adminProperties(String purpose) {
        Map<String, Object> props = clientProperties(AdminClientConfig.configNames());
        props.put(ConsumerConfig.CLIENT_ID_CONFIG, clientId(purpose) + "-admin");
        return props;
    }

    private KafkaConsumer<byte[], byte[]> consumer(String purpose) {
        Map<String, Object> props = clientProperties(ConsumerConfig.configNames());
        props.put(ConsumerConfig.CLIENT_ID_CONFIG, clientId(purpose));
        props.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
        props.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
        props.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
        props.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
        if ("enabled".equalsIgnoreCase(setting(DistributedConfig.EXACTLY_ONCE_SOURCE_SUPPORT_CONFIG))) {
            // what Kafka's worker sets on its offsets consumers with exactly-once source support
            props.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, IsolationLevel.READ_COMMITTED.toString());
        }
        return new KafkaConsumer<>(props);
    }

    /** Stops the worker's store (the connectors' own stores are stopped by their readers). */
    @Override
    public synchronized void close() {
        closed = true;
        if (workerStore != null) {
            try {
                workerStore.stop();
            } finally {
                workerAdmin.close();
                workerStore = null;
            }
        }
    }

    private static JsonConverter internalConverter(boolean isKey) {
        // Kafka's worker reads and writes offsets with a JsonConverter without schemas
        JsonConverter converter = new JsonConverter();
        converter.configure(Map.of(
                JsonConverterConfig.SCHEMAS_ENABLE_CONFIG, "false",
                ConverterConfig.TYPE_CONFIG, (isKey ? ConverterType.KEY : ConverterType.VALUE).getName()));
        return converter;
    }

    /**
     * A connector's reader: builds and starts its stores at the first read, and stops its own
     * topic's store when it is closed (the connector released).
     */
    final class Reader implements CloseableOffsetStorageReader {

        private final String connector;
        private final Supplier<Map<String, String>> config;
        private ConnectorOffsetBackingStore store;
        private OffsetStorageReaderImpl reader;
        private boolean readerClosed;

        private Reader(String connector, Supplier<Map<String, String>> config) {
            this.connector = connector;
            this.config = config;
        }

        private synchronized OffsetStorageReaderImpl open() {
            if (readerClosed) {
                throw new IllegalStateException("The offsets reader of connector " + connector + " is closed");
            }
            if (reader == null) {
                KafkaOffsetBackingStore worker = workerStore();
                String workerTopic = setting(OFFSET_TOPIC);
                String own = config.get().get(SourceConnectorConfig.OFFSETS_TOPIC_CONFIG);
                ConnectorOffsetBackingStore opened;
                if (own == null || own.isBlank() || own.trim().equals(workerTopic)) {
                    opened = ConnectorOffsetBackingStore.withOnlyWorkerStore(
                            () -> LoggingContext.forConnector(connector), worker, workerTopic);
                } else {
                    String topic = own.trim();
                    TopicAdmin admin = new TopicAdmin(adminProperties(connector));
                    KafkaOffsetBackingStore connectorStore = KafkaOffsetBackingStore.readOnlyStore(
                            topic, consumer(connector), admin, keyConverter);
                    opened = ConnectorOffsetBackingStore.withConnectorAndWorkerStores(
                            () -> LoggingContext.forConnector(connector), worker, connectorStore, topic, admin);
                }
                opened.configure(workerConfig());
                opened.start();
                store = opened;
                reader = new OffsetStorageReaderImpl(opened, connector, keyConverter, valueConverter);
            }
            return reader;
        }

        @Override
        public <T> Map<String, Object> offset(Map<String, T> partition) {
            return open().offset(partition);
        }

        @Override
        public <T> Map<Map<String, T>, Map<String, Object>> offsets(Collection<Map<String, T>> partitions) {
            return open().offsets(partitions);
        }

        @Override
        public synchronized void close() {
            readerClosed = true;
            if (reader != null) {
                reader.close();
                store.stop();
                reader = null;
                store = null;
            }
        }
    }
}
