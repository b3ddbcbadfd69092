package io.connectgrpc.jvm.host;

import java.io.IOException;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;

import io.connectgrpc.jvm.host.proto.HostMessage;
import io.connectgrpc.jvm.host.proto.OffsetEntry;
import io.connectgrpc.jvm.host.proto.OffsetsWrite;
import io.connectgrpc.jvm.host.proto.OffsetsWritten;

import org.apache.kafka.connect.errors.ConnectException;

/**
 * A session's relay of source offsets to its driver (a worker that keeps them itself): each
 * write is an {@link OffsetsWrite} whose future completes with the driver's
 * {@link OffsetsWritten}. The answers are taken on the session's reading thread, not its
 * serving one, since a task's last commit runs while the session waits for the task's stop.
 */
final class DriverOffsets implements RelayedOffsetStore.Relay {

    private final DriverLink link;
    private final AtomicLong ids = new AtomicLong();
    private final Map<Long, CompletableFuture<Void>> pending = new ConcurrentHashMap<>();
    private volatile String closed;

    DriverOffsets(DriverLink link) {
        this.link = link;
    }

    @Override
    public CompletableFuture<Void> write(List<OffsetEntry> entries) throws IOException {
        long id = ids.incrementAndGet();
        CompletableFuture<Void> answer = new CompletableFuture<>();
        answer.whenComplete((ignored, error) -> pending.remove(id));
        pending.put(id, answer);
        String why = closed;
        if (why != null) {
            answer.completeExceptionally(new ConnectException(why));
            return answer;
        }
        try {
            link.send(HostMessage.newBuilder()
                    .setOffsetsWrite(OffsetsWrite.newBuilder().setId(id).addAllEntries(entries))
                    .build());
        } catch (IOException e) {
            pending.remove(id);
            throw e;
        }
        return answer;
    }

    /** The driver's answer. */
    void answered(OffsetsWritten written) {
        CompletableFuture<Void> answer = pending.get(written.getId());
        if (answer == null) {
            return;
        }
        if (written.getError().isEmpty()) {
            answer.complete(null);
        } else {
            answer.completeExceptionally(new ConnectException(
                    "The worker could not store the source offsets: " + written.getError()));
        }
    }

    /** Fails every write waiting now and every later one with {@code why}. */
    void failAll(String why) {
        closed = why;
        pending.values().forEach(answer -> answer.completeExceptionally(new ConnectException(why)));
    }
}
