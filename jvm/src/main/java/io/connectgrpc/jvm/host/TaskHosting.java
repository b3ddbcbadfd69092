package io.connectgrpc.jvm.host;

import java.net.InetAddress;
import java.net.UnknownHostException;
import java.util.function.BooleanSupplier;

import io.connectgrpc.jvm.host.proto.StartTask;
import io.connectgrpc.jvm.host.proto.WarmWorker;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Where a JVM task host starts: connects to the worker's driver, serves its tasks
 * ({@link TaskSession}: one at a time, the host parked between two) and returns once the
 * driver let it go. It runs as a long-running Spark task in
 * an executor's JVM ({@link TaskHostFunction}) or, when the worker has no Spark task slot
 * free for it, in a thread of the driver's own JVM ({@link #startInDriver}).
 *
 * <p>It never throws: a host that fails is a host the driver loses (its connection closes),
 * which the driver's task state machine handles; a Spark task that failed would be retried by
 * Spark with a token that was already used.
 */
public final class TaskHosting {

    private static final Logger log = LoggerFactory.getLogger(TaskHosting.class);

    /** How long a host tries to reach the driver. */
    static final int CONNECT_TIMEOUT_MS = 30_000;
    /** The executor id of the driver's JVM, as Spark names it. */
    static final String DRIVER_EXECUTOR_ID = "driver";

    private TaskHosting() {
    }

    /**
     * Serves tasks until the driver lets the host go (see the class comment), with their Kafka
     * worker from {@code workers}.
     */
    static void serve(String address, int port, String token, String executorId, BooleanSupplier interrupted,
                      TaskSession.Workers workers) {
        try (DriverLink link = DriverLink.connect(address, port, CONNECT_TIMEOUT_MS)) {
            new TaskSession(link, interrupted, workers).run(token, executorId, hostName());
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        } catch (Exception | LinkageError e) {
            log.error("A task host ended on an error", e);
        }
    }

    /**
     * Starts a host in a thread of this JVM (the driver's), for Python through py4j; returns at
     * once. The host ends when its connection to the driver closed (or a stop was not clean).
     */
    public static void startInDriver(String address, int port, String token) {
        // the driver reads the worker's plugin.path itself (its scan is the catalogue's)
        TaskSession.Workers workers = workers(KafkaWorkers.SHARED, false);
        Thread thread = new Thread(
                () -> serve(address, port, token, DRIVER_EXECUTOR_ID, () -> false, workers),
                "connect-grpc-task-host");
        thread.setDaemon(true);
        thread.start();
    }

    /**
     * The Kafka workers of {@code registry} for a host's tasks and for the build ahead of its
     * first ({@code WarmWorker}), their {@code plugin.path} the copies the worker shipped
     * ({@link ShippedPluginPath}) when {@code inExecutor}: a StartTask and a WarmWorker of one
     * worker come out with the same properties, so that the task finds the worker built ahead.
     * The driver's JVM reads the worker's plugin.path itself (its scan is the catalogue's).
     */
    static TaskSession.Workers workers(KafkaWorkers registry, boolean inExecutor) {
        return new TaskSession.Workers() {
            @Override
            public KafkaTaskWorker forStart(StartTask start) throws Exception {
                StartTask local = inExecutor ? ShippedPluginPath.inExecutor(start) : start;
                return registry.get(local.getWorkerId(), local.getWorkerPropertiesMap(),
                        local.getPluginScanPropertiesMap());
            }

            @Override
            public boolean warm(WarmWorker warm) throws Exception {
                WarmWorker local = inExecutor ? ShippedPluginPath.inExecutor(warm) : warm;
                return registry.warm(local.getWorkerId(), local.getWorkerPropertiesMap(),
                        local.getPluginScanPropertiesMap());
            }
        };
    }

    /** This machine's name, as Python's {@code socket.gethostname()} gives it. */
    static String hostName() {
        try {
            return InetAddress.getLocalHost().getHostName();
        } catch (UnknownHostException e) {
            String fromEnv = System.getenv("HOSTNAME");
            return fromEnv == null ? "" : fromEnv;
        }
    }
}
