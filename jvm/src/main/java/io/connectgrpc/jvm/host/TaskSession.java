package io.connectgrpc.jvm.host;

import java.io.IOException;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.locks.ReentrantLock;
import java.util.function.BooleanSupplier;
import java.util.function.Consumer;

import com.google.protobuf.InvalidProtocolBufferException;

import io.connectgrpc.jvm.host.proto.CheckRequest;
import io.connectgrpc.jvm.host.proto.DriverMessage;
import io.connectgrpc.jvm.host.proto.Hello;
import io.connectgrpc.jvm.host.proto.HostMessage;
import io.connectgrpc.jvm.host.proto.StartTask;
import io.connectgrpc.jvm.host.proto.Stopped;
import io.connectgrpc.jvm.host.proto.TargetState;
import io.connectgrpc.jvm.host.proto.TaskType;
import io.connectgrpc.jvm.host.proto.WarmWorker;
import io.connectgrpc.jvm.host.proto.WorkerWarmed;

import org.apache.kafka.connect.errors.ConnectException;
import org.apache.kafka.connect.runtime.Worker;
import org.apache.kafka.connect.storage.AppliedConnectorConfig;
import org.apache.kafka.connect.storage.ClusterConfigState;
import org.apache.kafka.connect.util.ConnectorTaskId;
import org.apache.kafka.connect.util.LoggingContext;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A host's tasks, one after the other, from the host's end of its connection to the driver:
 * says hello, starts a task on the JVM's Kafka worker when told, relays its status events,
 * pauses and resumes it, and stops it when told, when its connection to the driver closes, or
 * when the Spark task hosting it is cancelled ({@code interrupted}: Spark does not interrupt
 * the thread, so the session looks every {@link #POLL_MS} ms).
 *
 * <p>A task the driver stopped cleanly leaves the host parked: it waits on the same connection
 * for the driver's next StartTask (of any task), so that a later start is one message rather
 * than a Spark job and a connection; the driver closes the connection of a host it does not
 * keep. A stop that was not clean (Kafka's worker gave up on the task's thread), a closed
 * connection or a cancelled Spark task ends the session. A host launched ahead of any task
 * may be told first to build the JVM's Kafka worker ({@code WarmWorker}), which it does on a
 * thread of its own while it waits, so that its first task finds the worker built.
 *
 * <p>The task runs in Kafka's worker's own thread; this session's thread only serves the
 * protocol. A task id has one owner in a JVM: a session that starts a task which an earlier
 * session of this JVM still runs (the driver gave that host up and hosted the task again)
 * stops the earlier instance first, and the earlier session then leaves the task alone.
 *
 * <p>Reports: the topics the task uses (KIP-558, relayed by its Kafka worker's status store,
 * {@link TopicRelayStore}) and its metrics and its plugins' are sent to the driver by a
 * {@link TaskReports} of the session's, from before the task starts until it stopped; the
 * driver's {@code ForgetTopics} makes the store forget topics whose records were reset.
 *
 * <p>Logs: the session applies the worker's log levels it is sent (with StartTask, then
 * SetLogLevels) to the JVM's Java loggers, and relays the task's log lines to the driver
 * ({@link LogRelay}); its own thread logs in Kafka's logging context of the task, as Kafka's
 * worker's calls for a task do, so that its lines name the task too.
 */
final class TaskSession {

    private static final Logger log = LoggerFactory.getLogger(TaskSession.class);

    /** How often the session looks whether its Spark task was cancelled. */
    static final long POLL_MS = 100L;
    /** What a stop that was not bounded by the driver may take beyond Kafka's own bound. */
    static final long STOP_MARGIN_MS = 1_000L;
    /** How long a stop waits for the task's log lines to be sent before it answers Stopped. */
    static final long LOG_FLUSH_MS = 1_000L;

    /** Which session owns each task of this JVM, by worker id and task id. */
    private static final Map<String, TaskSession> OWNERS = new ConcurrentHashMap<>();
    /** Serialises a task's hand-over from one session to the next. */
    private static final Map<String, ReentrantLock> HAND_OVERS = new ConcurrentHashMap<>();
    /** Runs Kafka's stops, so that a session's wait for one is bounded. */
    private static final ExecutorService STOPS = Executors.newCachedThreadPool(runnable -> {
        Thread thread = new Thread(runnable, "connect-grpc-task-stop");
        thread.setDaemon(true);
        return thread;
    });

    /** Gives the Kafka worker a task's StartTask runs on, and builds one ahead of any task. */
    @FunctionalInterface
    interface Workers {
        KafkaTaskWorker forStart(StartTask start) throws Exception;

        /**
         * Builds the Kafka worker a WarmWorker names, on the caller's thread, unless one is
         * built or being built from the same properties (then waits for it); returns whether
         * this call built it. Throws what the build threw. A host whose JVM builds none ahead
         * refuses it.
         */
        default boolean warm(WarmWorker warm) throws Exception {
            throw new UnsupportedOperationException("this host builds no Kafka worker ahead of its tasks");
        }
    }

    /** The reader's mark that the driver closed the connection. */
    private static final Object CLOSED = new Object();

    private final DriverLink link;
    private final BooleanSupplier interrupted;
    private final Workers workers;
    private final BlockingQueue<Object> inbox = new LinkedBlockingQueue<>();
    private DriverChecks checks;
    /** Relays the source offsets of the session's tasks when their worker keeps them itself. */
    private final DriverOffsets offsetWrites;
    /** Where the task's connector's offsets were loaded, while it runs (else null). */
    private RelayedOffsetStore offsetsAttached;

    private KafkaTaskWorker kafka;
    private ConnectorTaskId id;
    private String owner;
    private StatusRelay relay;
    private LogRelay logs;
    private LoggingContext logging;
    private TaskReports reports;
    private Consumer<String> topicsUsed;

    TaskSession(DriverLink link, BooleanSupplier interrupted, Workers workers) {
        this.link = link;
        this.interrupted = interrupted;
        this.workers = workers;
        this.checks = new DriverChecks(link);
        this.offsetWrites = new DriverOffsets(link);
    }

    /** Serves tasks until the connection closes, the Spark task is cancelled or a stop was not clean. */
    void run(String token, String executorId, String host) throws IOException, InterruptedException {
        link.send(HostMessage.newBuilder()
                .setHello(Hello.newBuilder().setToken(token).setExecutorId(executorId).setHost(host))
                .build());
        Thread reader = new Thread(this::read, "connect-grpc-task-host-reader");
        reader.setDaemon(true);
        reader.start();
        // named after its task while it serves one: a Spark executor's pooled thread gets its
        // own name back
        String name = Thread.currentThread().getName();
        try {
            while (serve()) {
                endTask(name);  // parked: the next StartTask, if any, is another task's
            }
        } finally {
            endTask(name);
        }
    }

    /** Forgets the task that stopped: the session is as new, its connection kept. */
    private void endTask(String threadName) {
        if (logs != null) {
            logs.close();
            logs = null;
        }
        if (logging != null) {
            logging.close();
            logging = null;
        }
        if (offsetsAttached != null) {
            offsetsAttached.detach(id.connector(), offsetWrites);
            offsetsAttached = null;
        }
        kafka = null;
        id = null;
        owner = null;
        relay = null;
        reports = null;
        topicsUsed = null;
        checks = new DriverChecks(link);
        Thread.currentThread().setName(threadName);
    }

    private void read() {
        try {
            primeParsing();
        } catch (RuntimeException | LinkageError e) {
            // only the first message's parse is slower: the session reads on
            log.debug("Could not parse a sample StartTask ahead of the driver's first message", e);
        }
        try {
            DriverMessage message;
            while ((message = link.receive()) != null) {
                if (message.getMessageCase() == DriverMessage.MessageCase.OFFSETS_WRITTEN) {
                    // here, not in the inbox: a task's last commit is waited for during its stop
                    offsetWrites.answered(message.getOffsetsWritten());
                } else {
                    inbox.add(message);
                }
            }
        } catch (IOException e) {
            log.debug("The connection to the driver broke", e);
        }
        offsetWrites.failAll("The connection to the worker's driver closed: source offsets cannot be stored");
        inbox.add(CLOSED);
    }

    /**
     * Parses a StartTask with each of its maps once, on the reading thread, before the
     * driver's first message: a JVM's first parse of one builds the protocol's descriptors and
     * protobuf's own (the maps' entries need them), hundreds of milliseconds of a cold JVM's
     * CPU that the first task's start would otherwise wait for. A host launched ahead of its
     * first task pays it while parked; another pays it as before, since the reading thread
     * reads the driver's first message only after it. Returns the parsed copy.
     */
    static DriverMessage primeParsing() {
        DriverMessage sample = DriverMessage.newBuilder().setStartTask(StartTask.newBuilder()
                .putWorkerProperties("k", "v")
                .putPluginScanProperties("k", "v")
                .putConnectorConfig("k", "v")
                .putTaskConfig("k", "v"))
                .build();
        try {
            return DriverMessage.parseFrom(sample.toByteArray());
        } catch (InvalidProtocolBufferException e) {
            throw new IllegalStateException("a message just built parses", e);
        }
    }

    /**
     * Serves one task; returns true when the driver stopped it cleanly (the host may take
     * another), false when the session is to end.
     */
    private boolean serve() throws InterruptedException {
        while (true) {
            Object next = inbox.poll(POLL_MS, TimeUnit.MILLISECONDS);
            if (interrupted.getAsBoolean()) {
                if (id != null) {
                    log.info("The Spark task hosting task {} was cancelled: stopping the task", id);
                } else {
                    log.info("The Spark task of a parked task host was cancelled: the host ends");
                }
                stop(defaultStopWaitMs());
                return false;
            }
            if (next == null) {
                continue;
            }
            if (next == CLOSED) {
                if (id != null) {
                    log.info("The driver closed the connection of task {}: stopping the task", id);
                }
                stop(defaultStopWaitMs());
                return false;
            }
            DriverMessage message = (DriverMessage) next;
            switch (message.getMessageCase()) {
                case START_TASK -> start(message.getStartTask());
                case WARM_WORKER -> warm(message.getWarmWorker());
                case SET_TARGET_STATE -> setTarget(message.getSetTargetState().getTargetState());
                case STOP_TASK -> {
                    long waitMs = Math.max(0L, message.getStopTask().getTimeoutMs() - STOP_MARGIN_MS);
                    Stopped stopped = stop(waitMs);
                    if (logs != null) {
                        logs.flush(LOG_FLUSH_MS);  // the stop's lines before the answer
                    }
                    try {
                        link.send(HostMessage.newBuilder().setStopped(stopped).build());
                    } catch (IOException e) {
                        log.debug("Could not tell the driver that task {} stopped", id, e);
                        return false;
                    }
                    // a task whose thread Kafka's worker gave up on may still run here
                    return stopped.getClean();
                }
                case CHECK_DONE -> checks.answered(message.getCheckDone());
                case SET_LOG_LEVELS -> LogRelay.applyLevels(message.getSetLogLevels());
                case FORGET_TOPICS -> {
                    if (kafka != null) {
                        kafka.topics().forget(id.connector(), message.getForgetTopics().getTopicsList());
                    }
                }
                default -> log.warn("Ignoring a message the host does not know: {}", message.getMessageCase());
            }
        }
    }

    /**
     * Builds the JVM's Kafka worker the driver named, ahead of the host's first task (a host
     * launched ahead of any), on a thread of its own: the session serves its connection
     * meanwhile, and a StartTask read before the build ended waits for it in its own
     * {@code forStart} rather than build another. Answers WorkerWarmed. A build that failed is
     * logged, its root cause on the first line, and changes nothing else: the first task
     * builds the worker itself and reports its own failure.
     */
    private void warm(WarmWorker warm) {
        long read = System.nanoTime();
        String workerId = warm.getWorkerId();
        Thread thread = new Thread(() -> {
            WorkerWarmed.Builder answer = WorkerWarmed.newBuilder();
            try {
                answer.setBuilt(workers.warm(warm));
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                answer.setError("Interrupted while the Kafka worker of connect-grpc worker " + workerId + " was built");
            } catch (Exception | LinkageError e) {
                Throwable failure = e instanceof ExecutionException && e.getCause() != null ? e.getCause() : e;
                log.warn("Could not build Kafka Connect's worker for connect-grpc worker {} ahead of the host's first "
                        + "task: {} (its first task builds it again)", workerId, Traces.headline(failure), failure);
                answer.setError(Traces.statusTrace(failure));
            }
            answer.setTookMs((System.nanoTime() - read) / 1_000_000L);
            try {
                link.send(HostMessage.newBuilder().setWorkerWarmed(answer).build());
            } catch (IOException e) {
                log.debug("Could not tell the driver that the Kafka worker of connect-grpc worker {} was built",
                        workerId, e);
            }
        }, "connect-grpc-kafka-worker-warm");
        thread.setDaemon(true);
        thread.start();
    }

    private void start(StartTask start) {
        if (id != null) {
            log.warn("Ignoring a second StartTask for task {} on one connection", id);
            return;
        }
        id = new ConnectorTaskId(start.getConnector(), start.getTask());
        owner = start.getWorkerId() + "\u0000" + id;
        Thread.currentThread().setName("connect-grpc-task-host-" + id);
        // the levels first, then the relay: the task's first lines are logged at them, and sent
        LogRelay.applyLevels(start.getLogLevels());
        logs = LogRelay.start(link, id.connector(), id.task());
        try {
            kafka = workers.forStart(start);
        } catch (Exception | LinkageError e) {
            relay = new StatusRelay(new NoStore(), link, () -> "");
            relay.failedToStart(e);
            return;
        }
        // after the JVM's Kafka worker is built (its first build scans plugin.path, the JVM's
        // work, not this task's)
        logging = LoggingContext.forTask(id);
        Worker worker = kafka.worker();
        ConnectorTaskId task = id;
        relay = new StatusRelay(kafka.statusStore(), link, () -> worker.taskVersion(task));
        ReentrantLock handOver = HAND_OVERS.computeIfAbsent(owner, key -> new ReentrantLock());
        handOver.lock();
        try {
            TaskSession previous = OWNERS.put(owner, this);
            if (previous != null || worker.taskIds().contains(id)) {
                log.info("Task {} still runs in this JVM for a host the driver gave up: stopping it first", id);
                worker.stopAndAwaitTask(id);
            }
            // the task's topics are relayed from its first record on
            reports = new TaskReports(link, worker.metrics(), id, start.getTaskType() == TaskType.TASK_TYPE_SINK);
            topicsUsed = reports::topicUsed;
            kafka.topics().listen(id, topicsUsed);
            attachOffsets(start);
            startOnWorker(worker, start);
            reports.start();
        } catch (Exception | LinkageError e) {
            // Kafka's worker reports what fails inside it; this is what failed around it
            relay.failedToStart(e);
        } finally {
            handOver.unlock();
        }
    }

    /**
     * A source task of a worker that keeps its offsets itself reads them from what its start
     * carries, and relays what it commits over this session's connection.
     */
    private void attachOffsets(StartTask start) {
        RelayedOffsetStore store = kafka.relayedOffsets();
        if (start.getOffsetsKeptByWorker() != (store != null)) {
            throw new ConnectException("StartTask.offsets_kept_by_worker is " + start.getOffsetsKeptByWorker()
                    + " but this JVM's Kafka worker for connect-grpc worker " + start.getWorkerId()
                    + (store == null ? " keeps source offsets in Kafka's offsets topic"
                                     : " relays source offsets to the worker"));
        }
        if (store == null || start.getTaskType() != TaskType.TASK_TYPE_SOURCE) {
            return;
        }
        store.load(id.connector(), start.getSourceOffsetsList());
        store.attach(id.connector(), offsetWrites);
        offsetsAttached = store;
    }

    private void startOnWorker(Worker worker, StartTask start) {
        Map<String, String> connectorConfig = start.getConnectorConfigMap();
        Map<String, String> taskConfig = start.getTaskConfigMap();
        org.apache.kafka.connect.runtime.TargetState target = kafkaState(start.getTargetState());
        String connector = start.getConnector();
        ClusterConfigState snapshot = new ClusterConfigState(
                ClusterConfigState.NO_OFFSET,
                null,
                Map.of(connector, start.getTaskCount()),
                Map.of(connector, connectorConfig),
                Map.of(connector, target),
                Map.of(id, taskConfig),
                Map.of(),
                Map.of(),
                Map.of(connector, new AppliedConnectorConfig(connectorConfig)),
                Set.of(),
                Set.of());
        switch (start.getTaskType()) {
            case TASK_TYPE_SINK ->
                    worker.startSinkTask(id, snapshot, connectorConfig, taskConfig, relay, target);
            case TASK_TYPE_SOURCE -> {
                if (start.getExactlyOnce()) {
                    worker.startExactlyOnceSourceTask(id, snapshot, connectorConfig, taskConfig, relay, target,
                            checks.check(CheckRequest.Check.CHECK_PRE_PRODUCER),
                            checks.check(CheckRequest.Check.CHECK_POST_PRODUCER));
                } else {
                    worker.startSourceTask(id, snapshot, connectorConfig, taskConfig, relay, target);
                }
            }
            default -> throw new IllegalArgumentException(
                    "StartTask.task_type must be TASK_TYPE_SOURCE or TASK_TYPE_SINK, got " + start.getTaskType());
        }
        // A start that failed inside Kafka's worker was reported by it (onFailure) already.
    }

    private void setTarget(TargetState state) {
        if (kafka == null || OWNERS.get(owner) != this) {
            return;
        }
        // Kafka's worker moves every task of the connector it runs, as Kafka Connect's herder
        // moves a connector's tasks together; connect-grpc pauses a connector's tasks together.
        kafka.worker().setTargetState(id.connector(), kafkaState(state), (error, result) -> { });
    }

    /** Stops the task (if it started and this session still owns it), waiting {@code waitMs}. */
    private Stopped stop(long waitMs) {
        checks.failAll("the task is stopping");
        if (kafka == null || relay == null) {
            return Stopped.newBuilder().setClean(true).build();
        }
        ReentrantLock handOver = HAND_OVERS.get(owner);
        handOver.lock();
        try {
            if (!OWNERS.remove(owner, this)) {
                return Stopped.newBuilder().setClean(true).build();  // another session owns it now
            }
            Worker worker = kafka.worker();
            ConnectorTaskId task = id;
            if (reports != null) {
                // the task's metrics are read before Kafka's worker removes them with the task
                reportQuietly();
            }
            Future<?> stopped = STOPS.submit(() -> worker.stopAndAwaitTask(task));
            try {
                stopped.get(waitMs, TimeUnit.MILLISECONDS);
            } catch (TimeoutException e) {
                return notClean("Task " + id + " had not stopped after " + waitMs + " ms");
            } catch (ExecutionException e) {
                return notClean(Traces.statusTrace(e.getCause()));
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                return notClean("Interrupted while stopping task " + id);
            }
            if (!relay.ended()) {
                return notClean("Task " + id + " did not stop within task.shutdown.graceful.timeout.ms ("
                        + kafka.shutdownTimeoutMs() + " ms): Kafka Connect's worker cancelled it");
            }
            return Stopped.newBuilder().setClean(true).build();
        } finally {
            endReports();
            handOver.unlock();
        }
    }

    private void reportQuietly() {
        try {
            reports.report();
        } catch (IOException e) {
            log.debug("Could not send task {}'s metrics", id, e);
        }
    }

    /** The task stopped (or is left to Kafka's worker): its last report, and no more topics. */
    private void endReports() {
        if (reports != null) {
            kafka.topics().unlisten(id, topicsUsed);
            reports.close();
            reports = null;
        }
    }

    private long defaultStopWaitMs() {
        return (kafka == null ? 0L : kafka.shutdownTimeoutMs()) + STOP_MARGIN_MS;
    }

    private static Stopped notClean(String why) {
        log.warn("{}", why.lines().findFirst().orElse(why));
        return Stopped.newBuilder().setClean(false).setTrace(why).build();
    }

    private static org.apache.kafka.connect.runtime.TargetState kafkaState(TargetState state) {
        return state == TargetState.TARGET_STATE_PAUSED
                ? org.apache.kafka.connect.runtime.TargetState.PAUSED
                : org.apache.kafka.connect.runtime.TargetState.STARTED;
    }

    /** The status store of a session whose Kafka worker could not be built: nothing to keep. */
    private static final class NoStore implements org.apache.kafka.connect.runtime.TaskStatus.Listener {
        @Override
        public void onStartup(ConnectorTaskId id) {
        }

        @Override
        public void onPause(ConnectorTaskId id) {
        }

        @Override
        public void onResume(ConnectorTaskId id) {
        }

        @Override
        public void onFailure(ConnectorTaskId id, Throwable cause) {
        }

        @Override
        public void onShutdown(ConnectorTaskId id) {
        }

        @Override
        public void onDeletion(ConnectorTaskId id) {
        }

        @Override
        public void onRestart(ConnectorTaskId id) {
        }
    }
}
