package io.connectgrpc.jvm.host;

import java.io.IOException;
import java.util.function.Supplier;

import io.connectgrpc.jvm.host.proto.HostMessage;
import io.connectgrpc.jvm.host.proto.TaskEvent;

import org.apache.kafka.connect.runtime.TaskStatus;
import org.apache.kafka.connect.util.ConnectorTaskId;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Kafka's status events of one task, relayed to the driver (whose task state machine makes
 * the statuses): startup, pause, resume, failure with its trace, shutdown. Each event first
 * goes to the Kafka worker's own status store (its herder's listener), which Kafka's worker
 * metrics read. Called from Kafka's task thread.
 */
final class StatusRelay implements TaskStatus.Listener {

    private static final Logger log = LoggerFactory.getLogger(StatusRelay.class);

    private final TaskStatus.Listener store;
    private final DriverLink link;
    private final Supplier<String> version;
    private volatile boolean shutDown;
    private volatile boolean failed;

    /**
     * @param store the Kafka worker's status listener (its herder's)
     * @param version the task plugin's version, once Kafka's worker made the task
     */
    StatusRelay(TaskStatus.Listener store, DriverLink link, Supplier<String> version) {
        this.store = store;
        this.link = link;
        this.version = version;
    }

    @Override
    public void onStartup(ConnectorTaskId id) {
        store.onStartup(id);
        send(TaskEvent.newBuilder().setKind(TaskEvent.Kind.KIND_STARTED).setVersion(version()));
    }

    @Override
    public void onPause(ConnectorTaskId id) {
        store.onPause(id);
        send(TaskEvent.newBuilder().setKind(TaskEvent.Kind.KIND_PAUSED).setVersion(version()));
    }

    @Override
    public void onResume(ConnectorTaskId id) {
        store.onResume(id);
        send(TaskEvent.newBuilder().setKind(TaskEvent.Kind.KIND_RESUMED));
    }

    @Override
    public void onFailure(ConnectorTaskId id, Throwable cause) {
        failed = true;
        store.onFailure(id, cause);
        send(TaskEvent.newBuilder().setKind(TaskEvent.Kind.KIND_FAILED).setTrace(Traces.statusTrace(cause)));
    }

    @Override
    public void onShutdown(ConnectorTaskId id) {
        shutDown = true;
        store.onShutdown(id);
        send(TaskEvent.newBuilder().setKind(TaskEvent.Kind.KIND_SHUTDOWN));
    }

    @Override
    public void onDeletion(ConnectorTaskId id) {
        store.onDeletion(id);
    }

    @Override
    public void onRestart(ConnectorTaskId id) {
        store.onRestart(id);
    }

    /** Whether the task's thread ended: it shut down, or failed. */
    boolean ended() {
        return shutDown || failed;
    }

    /** A failure the relay itself saw outside Kafka's worker (its start threw). */
    void failedToStart(Throwable cause) {
        failed = true;
        send(TaskEvent.newBuilder().setKind(TaskEvent.Kind.KIND_FAILED).setTrace(Traces.statusTrace(cause)));
    }

    private String version() {
        try {
            String answer = version.get();
            return answer == null ? "" : answer;
        } catch (RuntimeException e) {
            return "";
        }
    }

    private void send(TaskEvent.Builder event) {
        try {
            link.send(HostMessage.newBuilder().setTaskEvent(event).build());
        } catch (IOException e) {
            // the driver is gone: the session sees its connection close and stops the task
            log.debug("Could not relay a task event to the driver", e);
        }
    }
}
