package io.connectgrpc.jvm.host;

import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.Consumer;

import org.apache.kafka.connect.runtime.ConnectorStatus;
import org.apache.kafka.connect.runtime.TaskStatus;
import org.apache.kafka.connect.runtime.TopicStatus;
import org.apache.kafka.connect.runtime.WorkerConfig;
import org.apache.kafka.connect.storage.StatusBackingStore;
import org.apache.kafka.connect.util.ConnectorTaskId;

/**
 * The status store Kafka's worker hands its tasks (its herder's), which relays the topics the
 * tasks use (KIP-558) to the driver that owns each task; everything else is the herder's
 * in-memory store's.
 *
 * <p>Kafka's task asks {@link #getTopic} for every record it writes or converts, and calls
 * {@link #put(TopicStatus)} only when there is no record: a topic is relayed once per
 * connector, then answered from memory. The records themselves live in the driver's status
 * topic, where a user resets them: the driver then tells the host to {@link #forget} them,
 * and the next use relays them again, so that the driver records them again, as a running
 * Python task does. What a task relayed is forgotten too when it stops in this JVM
 * ({@link #unlisten}), so that the connector's other tasks here relay it again when they use
 * it.
 *
 * <p>{@link #getTopic} runs for every record a task converts or writes, so what was relayed is
 * kept by connector, then by topic, and looked up with the very strings Kafka's task passes
 * (their hashes cached in them), as Kafka's own status stores keep it: no key is built per
 * record.
 */
final class TopicRelayStore implements StatusBackingStore {

    private final StatusBackingStore statuses;
    /** What was relayed, by connector, then by topic. */
    private final Map<String, Map<String, TopicStatus>> relayed = new ConcurrentHashMap<>();
    /** Who relays the topics of each task this JVM runs for the worker. */
    private final Map<ConnectorTaskId, Consumer<String>> listeners = new ConcurrentHashMap<>();

    TopicRelayStore(StatusBackingStore statuses) {
        this.statuses = statuses;
    }

    /** Relays the topics of task {@code id} to {@code listener} until {@link #unlisten}. */
    void listen(ConnectorTaskId id, Consumer<String> listener) {
        listeners.put(id, listener);
    }

    /**
     * Stops relaying task {@code id}'s topics to {@code listener} (if it is still the one), and
     * forgets what the task relayed.
     */
    void unlisten(ConnectorTaskId id, Consumer<String> listener) {
        if (listeners.remove(id, listener)) {
            // a connector none of whose topics are left is dropped (a put racing with this
            // may go to the dropped map: that topic is then relayed again at its next use)
            relayed.computeIfPresent(id.connector(), (connector, topics) -> {
                topics.values().removeIf(status -> status.task() == id.task());
                return topics.isEmpty() ? null : topics;
            });
        }
    }

    /** Forgets that {@code topics} of {@code connector} were relayed (the driver's were reset). */
    void forget(String connector, Collection<String> topics) {
        Map<String, TopicStatus> relayedTopics = relayed.get(connector);
        if (relayedTopics != null) {
            relayedTopics.keySet().removeAll(topics);
        }
    }

    @Override
    public TopicStatus getTopic(String connector, String topic) {
        Map<String, TopicStatus> topics = relayed.get(connector);
        return topics == null ? null : topics.get(topic);
    }

    @Override
    public void put(TopicStatus status) {
        Consumer<String> listener = listeners.get(new ConnectorTaskId(status.connector(), status.task()));
        if (listener == null) {
            return;  // no session relays the task's topics: its next use asks again
        }
        relayed.computeIfAbsent(status.connector(), connector -> new ConcurrentHashMap<>())
                .put(status.topic(), status);
        listener.accept(status.topic());
    }

    @Override
    public Collection<TopicStatus> getAllTopics(String connector) {
        Map<String, TopicStatus> topics = relayed.get(connector);
        return topics == null ? List.of() : List.copyOf(topics.values());
    }

    @Override
    public void deleteTopic(String connector, String topic) {
        Map<String, TopicStatus> topics = relayed.get(connector);
        if (topics != null) {
            topics.remove(topic);
        }
    }

    // the rest is the herder's store's

    @Override
    public void configure(WorkerConfig config) {
        statuses.configure(config);
    }

    @Override
    public void start() {
        statuses.start();
    }

    @Override
    public void stop() {
        statuses.stop();
    }

    @Override
    public void put(ConnectorStatus status) {
        statuses.put(status);
    }

    @Override
    public void putSafe(ConnectorStatus status) {
        statuses.putSafe(status);
    }

    @Override
    public void put(TaskStatus status) {
        statuses.put(status);
    }

    @Override
    public void putSafe(TaskStatus status) {
        statuses.putSafe(status);
    }

    @Override
    public TaskStatus get(ConnectorTaskId id) {
        return statuses.get(id);
    }

    @Override
    public ConnectorStatus get(String connector) {
        return statuses.get(connector);
    }

    @Override
    public Collection<TaskStatus> getAll(String connector) {
        return statuses.getAll(connector);
    }

    @Override
    public Set<String> connectors() {
        return statuses.connectors();
    }

    @Override
    public void flush() {
        statuses.flush();
    }
}
