package io.connectgrpc.jvm.host;

import java.util.Iterator;
import java.util.List;

import org.apache.spark.SparkEnv;
import org.apache.spark.TaskContext;
import org.apache.spark.api.java.JavaFutureAction;
import org.apache.spark.api.java.JavaSparkContext;
import org.apache.spark.api.java.function.VoidFunction;

/**
 * A JVM task host as a long-running Spark task: the one partition's function serves tasks in
 * the executor's JVM, with no Python worker, one after the other, until the driver lets it go
 * (between two it is parked on its Spark task slot). Spark does not interrupt
 * the thread when the job is cancelled (unless {@code spark.job.interruptOnCancel}), so the
 * host looks at {@link TaskContext#isInterrupted()} while it waits.
 *
 * <p>Only the driver's address, a port and the one-off token travel in the job's closure; the
 * task's configs come over the connection, once the token was accepted. Its Kafka worker's
 * {@code plugin.path} is the copy the worker shipped where there is one
 * ({@link ShippedPluginPath}), for its tasks' starts and for the build ahead of its first
 * ({@code WarmWorker}, to a host launched ahead of any task).
 */
public final class TaskHostFunction implements VoidFunction<Iterator<Integer>> {

    private static final long serialVersionUID = 1L;

    private final String address;
    private final int port;
    private final String token;

    TaskHostFunction(String address, int port, String token) {
        this.address = address;
        this.port = port;
        this.token = token;
    }

    @Override
    public void call(Iterator<Integer> partition) {
        TaskContext context = TaskContext.get();
        SparkEnv env = SparkEnv.get();
        String executorId = env == null ? TaskHosting.DRIVER_EXECUTOR_ID : env.executorId();
        // On a cluster the worker shipped its plugins with the application; in local mode
        // there is no copy, and this JVM is the driver's, which reads plugin.path itself (and
        // whose Kafka worker the driver built ahead already).
        TaskHosting.serve(address, port, token, executorId, context::isInterrupted,
                TaskHosting.workers(KafkaWorkers.SHARED, true));
    }

    /**
     * Launches a host as a Spark job of one task, for Python through py4j. The job carries the
     * job group, tags and scheduler pool the calling thread set; cancelling it ends the host.
     */
    public static JavaFutureAction<Void> launch(JavaSparkContext context, String address, int port, String token) {
        return context.parallelize(List.of(0), 1).foreachPartitionAsync(new TaskHostFunction(address, port, token));
    }
}
