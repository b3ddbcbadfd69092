package io.connectgrpc.jvm.host;

import java.io.IOException;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicLong;

import io.connectgrpc.jvm.host.proto.CheckDone;
import io.connectgrpc.jvm.host.proto.CheckRequest;
import io.connectgrpc.jvm.host.proto.HostMessage;

import org.apache.kafka.connect.errors.ConnectException;

/**
 * The checks an exactly-once source task makes around the creation of its transactional
 * producer (Kafka's {@code startExactlyOnceSourceTask} pre- and post-producer checks), asked
 * of the driver: it answers once it fenced the connector's earlier task generations, as it
 * does before any exactly-once source task starts, and once it checked the task is still its
 * own. A check runs on Kafka's task thread and waits for the answer, at most
 * {@link #TIMEOUT_MS}, or until the session ends ({@link #failAll}).
 */
final class DriverChecks {

    /** How long a check waits for the driver: fencing waits for the cluster's leader. */
    static final long TIMEOUT_MS = 300_000L;

    private final DriverLink link;
    private final AtomicLong ids = new AtomicLong();
    private final Map<Long, CompletableFuture<String>> pending = new ConcurrentHashMap<>();
    private volatile String closed;

    DriverChecks(DriverLink link) {
        this.link = link;
    }

    /** The check as Kafka's worker runs it: returns when passed, throws when not. */
    Runnable check(CheckRequest.Check check) {
        return () -> ask(check);
    }

    private void ask(CheckRequest.Check check) {
        long id = ids.incrementAndGet();
        CompletableFuture<String> answer = new CompletableFuture<>();
        pending.put(id, answer);
        try {
            String why = closed;
            if (why != null) {
                throw new ConnectException(why);
            }
            link.send(HostMessage.newBuilder()
                    .setCheckRequest(CheckRequest.newBuilder().setId(id).setCheck(check))
                    .build());
            String error = answer.get(TIMEOUT_MS, TimeUnit.MILLISECONDS);
            if (!error.isEmpty()) {
                throw new ConnectException(error);
            }
        } catch (IOException e) {
            throw new ConnectException("The worker's driver could not be asked to check " + check, e);
        } catch (TimeoutException e) {
            throw new ConnectException("The worker's driver did not answer the check " + check + " within "
                    + TIMEOUT_MS + " ms");
        } catch (ExecutionException e) {
            throw new ConnectException(e.getCause().getMessage(), e.getCause());
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new ConnectException("Interrupted while waiting for the check " + check, e);
        } finally {
            pending.remove(id);
        }
    }

    /** The driver's answer. */
    void answered(CheckDone done) {
        CompletableFuture<String> answer = pending.get(done.getId());
        if (answer != null) {
            answer.complete(done.getError());
        }
    }

    /** Fails every check waiting now and every later one with {@code why}. */
    void failAll(String why) {
        closed = why;
        pending.values().forEach(answer -> answer.completeExceptionally(new ConnectException(why)));
    }
}
