package io.connectgrpc.jvm.host;

import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutionException;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A JVM's Kafka workers ({@link KafkaTaskWorker}), one per connect-grpc worker id, built or
 * being built, with the worker properties each is built from: a task whose properties match
 * runs on the worker built, or waits for the build under way (a task never builds a second
 * one beside it); a build that failed removes its entry, so that the next caller builds it
 * anew and sees its own failure; other properties (a worker restarted with a new config while
 * the JVM lives on) replace the entry, the old worker stopped once built. The JVM's own is
 * {@link #SHARED}; tests make theirs with a builder of their own.
 */
final class KafkaWorkers {

    private static final Logger log = LoggerFactory.getLogger(KafkaWorkers.class);

    /** Builds and starts a Kafka worker ({@link KafkaTaskWorker#open} in a real JVM). */
    @FunctionalInterface
    interface Builder {
        KafkaTaskWorker open(String workerId, Map<String, String> workerProperties, Map<String, String> scanProperties);
    }

    /** This JVM's Kafka workers. */
    static final KafkaWorkers SHARED = new KafkaWorkers(KafkaTaskWorker::open);

    /** A Kafka worker, built or being built, and the worker properties it is built from. */
    private record Building(Map<String, String> properties, CompletableFuture<KafkaTaskWorker> worker) {
        Building(Map<String, String> properties) {
            this(Map.copyOf(properties), new CompletableFuture<>());
        }
    }

    private final Builder builder;
    private final Map<String, Building> workers = new ConcurrentHashMap<>();

    KafkaWorkers(Builder builder) {
        this.builder = builder;
    }

    /**
     * The Kafka worker of {@code workerId} built from these properties: the one built, or
     * being built (waited for), else one built here, on the caller's thread. A build under way
     * elsewhere that fails is made again here, so that the caller gets its own failure.
     */
    KafkaTaskWorker get(String workerId, Map<String, String> workerProperties, Map<String, String> scanProperties)
            throws InterruptedException {
        while (true) {
            Building mine = new Building(workerProperties);
            Building current = claim(workerId, mine);
            if (current == mine) {
                return build(workerId, mine, scanProperties);
            }
            try {
                return current.worker().get();
            } catch (ExecutionException e) {
                // its builder failed (and removed it): this caller builds it anew
            }
        }
    }

    /**
     * Builds the worker ahead of its first task, on the caller's thread, unless one is built or
     * being built from the same properties (then waits for it). Returns whether this call
     * built it; throws what its build (or the one it waited for) threw, which changes nothing
     * else: the entry is gone, and the first task builds it again.
     */
    boolean warm(String workerId, Map<String, String> workerProperties, Map<String, String> scanProperties)
            throws InterruptedException, ExecutionException {
        Building mine = new Building(workerProperties);
        Building current = claim(workerId, mine);
        if (current == mine) {
            build(workerId, mine, scanProperties);
            return true;
        }
        current.worker().get();
        return false;
    }

    /**
     * Builds the worker ahead of its first task in a thread of its own, the entry claimed on
     * the caller's thread (a task, or a {@link #shutdown}, called after this returns finds it);
     * returns at once. Nothing when one is built or being built from these properties. A build
     * that fails is logged, and the first task builds it again.
     */
    void warmInBackground(String workerId, Map<String, String> workerProperties, Map<String, String> scanProperties) {
        Building mine = new Building(workerProperties);
        if (claim(workerId, mine) != mine) {
            return;
        }
        Thread thread = new Thread(() -> {
            try {
                build(workerId, mine, scanProperties);
            } catch (RuntimeException | Error e) {
                log.warn("Could not build Kafka Connect's worker for connect-grpc worker {} ahead of its tasks; "
                        + "its first Java task builds it again", workerId, e);
            }
        }, "connect-grpc-kafka-worker-warm");
        thread.setDaemon(true);
        thread.start();
    }

    /**
     * {@code mine} if this caller is to build the worker (the entry is now {@code mine}), else
     * the entry built or being built from the same properties. An entry of other properties
     * is replaced, and its worker stopped once built.
     */
    private Building claim(String workerId, Building mine) {
        while (true) {
            Building current = workers.putIfAbsent(workerId, mine);
            if (current == null) {
                return mine;
            }
            if (current.properties().equals(mine.properties())) {
                return current;
            }
            if (workers.replace(workerId, current, mine)) {
                log.info("connect-grpc worker {} came back with other properties: a new Kafka worker", workerId);
                closeWhenBuilt(current);
                return mine;
            }
        }
    }

    /** Builds the worker of the entry this caller claimed; a failure removes the entry. */
    private KafkaTaskWorker build(String workerId, Building mine, Map<String, String> scanProperties) {
        try {
            mine.worker().complete(builder.open(workerId, mine.properties(), scanProperties));
        } catch (RuntimeException | Error e) {
            workers.remove(workerId, mine);
            mine.worker().completeExceptionally(e);
            throw e;
        }
        return mine.worker().join();
    }

    /** Stops the entry's worker now if it is built, else once it is (if it ever is). */
    private static void closeWhenBuilt(Building building) {
        CompletableFuture<KafkaTaskWorker> worker = building.worker();
        if (!worker.isDone()) {
            worker.thenAccept(KafkaTaskWorker::stop);
        } else if (!worker.isCompletedExceptionally()) {
            worker.join().stop();
        }
    }

    /**
     * Stops the Kafka worker of {@code workerId}, if there is one, waiting at most its stop's
     * bound ({@link KafkaTaskWorker#stop}); one still being built is stopped once built.
     */
    void shutdown(String workerId) {
        Building current = workers.remove(workerId);
        if (current != null) {
            closeWhenBuilt(current);
        }
    }
}
