package io.connectgrpc.jvm.host;

import java.util.Collection;
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
 */
final class TopicRelayStore implements StatusBackingStore {

    private final StatusBackingStore statuses;
    /** What was relayed, by (connector, topic). */
    private final Map<String, TopicStatus> relayed = new ConcurrentHashMap<>();
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
            relayed.values().removeIf(status -> status.connector().equals(id.connector())
                    && status.task() == id.task());
        }
    }

    /** Forgets that {@code topics} of {@code connector} were relayed (the driver's were reset). */
    void forget(String connector, Collection<String> topics) {
        for (String topic : topics) {
            relayed.remove(key(connector, topic));
        }
    }

    @Override
    public TopicStatus getTopic(String connector, String topic) {
        return relayed.get(key(connector, topic));
    }

    @Override
    public void put(TopicStatus status) {
        Consumer<String> listener = listeners.get(new ConnectorTaskId(status.connector(), status.task()));
        if (listener == null) {
            return;  // no session relays the task's topics: its next use asks again
        }
        relayed.put(key(status.connector(), status.topic()), status);
        listener.accept(status.topic());
    }

    @Override
    public Collection<TopicStatus> getAllTopics(String connector) {
        String prefix = connector + '\u0000';
        return relayed.entrySet().stream()
                .filter(entry -> entry.getKey().startsWith(prefix))
                .map(Map.Entry::getValue)
                .toList();
    }

    @Override
    public void deleteTopic(String connector, String topic) {
        relayed.remove(key(connector, topic));
    }

    private static String key(String connector, String topic) {
        return connector + '\u0000' + topic;
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
