package io.connectgrpc.jvm.host;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.lang.reflect.Field;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayDeque;
import java.util.Comparator;
import java.util.Deque;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.stream.Stream;

import com.fasterxml.jackson.databind.ObjectMapper;

import io.connectgrpc.jvm.host.proto.CheckDone;
import io.connectgrpc.jvm.host.proto.CheckRequest;
import io.connectgrpc.jvm.host.proto.DriverMessage;
import io.connectgrpc.jvm.host.proto.Hello;
import io.connectgrpc.jvm.host.proto.HostMessage;
import io.connectgrpc.jvm.host.proto.LogLevel;
import io.connectgrpc.jvm.host.proto.LogLevels;
import io.connectgrpc.jvm.host.proto.LogRecord;
import io.connectgrpc.jvm.host.proto.SetTargetState;
import io.connectgrpc.jvm.host.proto.StartTask;
import io.connectgrpc.jvm.host.proto.StopTask;
import io.connectgrpc.jvm.host.proto.Stopped;
import io.connectgrpc.jvm.host.proto.TargetState;
import io.connectgrpc.jvm.host.proto.TaskEvent;
import io.connectgrpc.jvm.host.proto.TaskType;
import io.connectgrpc.jvm.host.proto.WarmWorker;
import io.connectgrpc.jvm.host.proto.WorkerWarmed;
import io.connectgrpc.jvm.plugins.JavaPluginHost;

import org.apache.kafka.connect.errors.ConnectException;
import org.apache.kafka.connect.runtime.WorkerConfig;
import org.apache.kafka.connect.runtime.distributed.DistributedConfig;
import org.apache.kafka.connect.storage.MemoryOffsetBackingStore;
import org.apache.kafka.connect.util.ConnectorTaskId;
import org.apache.logging.log4j.LogManager;
import org.apache.logging.log4j.Logger;
import org.apache.logging.log4j.ThreadContext;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * The host's end of the task-host protocol against a test driver speaking it over a real
 * socket, with Kafka Connect's own {@code Worker} running tiny tasks ({@link TinyTasks}). No
 * broker: the worker's config is given its cluster id, its offsets live in memory, and the
 * tiny source tasks produce nothing, so that their clients never need to reach one.
 */
class TaskSessionTest {

    private static final String TOKEN = "a-one-off-token";
    /** Kafka Connect's task.shutdown.graceful.timeout.ms of the tests' worker: long enough for an
     * idle task to stop on a loaded machine (CI runs these beside pytest), short for the stubborn one. */
    private static final long GRACEFUL_MS = 2_000L;
    private static final int READ_TIMEOUT_MS = 20_000;

    private static Path work;
    private static JavaPluginHost plugins;
    private static KafkaTaskWorker kafka;
    /** The properties of the tests' Kafka workers. */
    private static Map<String, String> workerProps;

    @BeforeAll
    static void startWorker() throws IOException {
        work = Files.createTempDirectory("connect-grpc-host-test");
        Path pluginPath = work.resolve("plugins");
        TinyTasks.build(work, pluginPath);
        Map<String, String> scan = Map.of(
                "plugin.path", pluginPath.toString(), "plugin.discovery", "service_load");
        plugins = JavaPluginHost.open(new ObjectMapper().writeValueAsString(scan));
        Map<String, String> props = new HashMap<>(scan);
        props.put("bootstrap.servers", "127.0.0.1:9");  // nothing there: nothing is sent
        props.put("group.id", "host-test");
        props.put("config.storage.topic", "host-test-configs");
        props.put("offset.storage.topic", "host-test-offsets");
        props.put("status.storage.topic", "host-test-status");
        props.put("key.converter", "org.apache.kafka.connect.storage.StringConverter");
        props.put("value.converter", "org.apache.kafka.connect.storage.StringConverter");
        props.put("task.shutdown.graceful.timeout.ms", Long.toString(GRACEFUL_MS));
        workerProps = Map.copyOf(props);
        kafka = brokerless("host-test-worker", props);
    }

    /** A started Kafka worker that needs no broker: its cluster id given, its offsets in memory. */
    private static KafkaTaskWorker brokerless(String workerId, Map<String, String> props) {
        DistributedConfig config = new DistributedConfig(props);
        givenClusterId(config, "host-test-cluster");
        return new KafkaTaskWorker(workerId, props, config, plugins.catalogue().plugins(), new MemoryOffsets(),
                () -> { });
    }

    @AfterAll
    static void stopWorker() throws IOException {
        if (kafka != null) {
            kafka.close();
        }
        if (plugins != null) {
            plugins.close();
        }
        try (Stream<Path> walk = Files.walk(work)) {
            walk.sorted(Comparator.reverseOrder()).forEach(path -> path.toFile().delete());
        }
    }

    @Test
    void theReadingThreadParsesAStartTaskWithEachMapBeforeTheDriversFirstMessage() {
        // what a host launched ahead of its first task builds while parked: every map's entry
        DriverMessage parsed = TaskSession.primeParsing();
        assertEquals(Map.of("k", "v"), parsed.getStartTask().getWorkerPropertiesMap());
        assertEquals(Map.of("k", "v"), parsed.getStartTask().getPluginScanPropertiesMap());
        assertEquals(Map.of("k", "v"), parsed.getStartTask().getConnectorConfigMap());
        assertEquals(Map.of("k", "v"), parsed.getStartTask().getTaskConfigMap());
    }

    @Test
    @Timeout(60)
    void startsPausesResumesAndStopsATaskWithKafkasWorker() throws Exception {
        try (TestDriver driver = TestDriver.start()) {
            Hello hello = driver.next().getHello();
            assertEquals(TOKEN, hello.getToken());
            assertEquals("executor-7", hello.getExecutorId());
            assertEquals(TaskHosting.hostName(), hello.getHost());

            driver.send(start("lifecycle", TaskType.TASK_TYPE_SOURCE, "idle", TargetState.TARGET_STATE_STARTED));
            TaskEvent started = driver.nextEvent();
            assertEquals(TaskEvent.Kind.KIND_STARTED, started.getKind());
            assertEquals(TinyTasks.VERSION, started.getVersion());
            assertTrue(kafka.worker().taskIds().contains(new ConnectorTaskId("lifecycle", 0)));

            driver.send(target(TargetState.TARGET_STATE_PAUSED));
            assertEquals(TaskEvent.Kind.KIND_PAUSED, driver.nextEvent().getKind());
            driver.send(target(TargetState.TARGET_STATE_STARTED));
            assertEquals(TaskEvent.Kind.KIND_RESUMED, driver.nextEvent().getKind());

            driver.send(DriverMessage.newBuilder().setStopTask(StopTask.newBuilder().setTimeoutMs(10_000)).build());
            assertEquals(TaskEvent.Kind.KIND_SHUTDOWN, driver.nextEvent().getKind());
            Stopped stopped = driver.next().getStopped();
            assertTrue(stopped.getClean(), stopped.getTrace());
            assertFalse(kafka.worker().taskIds().contains(new ConnectorTaskId("lifecycle", 0)));
            assertFalse(driver.hostEnded(200), "a host whose task stopped cleanly is parked");
            driver.closeConnection();
            assertTrue(driver.hostEnded(5_000), "a parked host ends when the driver lets it go");
        }
    }

    @Test
    @Timeout(60)
    void aParkedHostServesTheNextTaskOnItsConnection() throws Exception {
        try (TestDriver driver = TestDriver.start()) {
            driver.next();
            driver.send(start("first-task", TaskType.TASK_TYPE_SOURCE, "idle", TargetState.TARGET_STATE_STARTED));
            assertEquals(TaskEvent.Kind.KIND_STARTED, driver.nextEvent().getKind());
            Stopped stopped = driver.stop();
            assertTrue(stopped.getClean(), stopped.getTrace());

            // another connector's exactly-once task: its checks are its own (the first task's
            // stop failed the first task's)
            StartTask next = start("next-task", TaskType.TASK_TYPE_SOURCE, "idle", TargetState.TARGET_STATE_STARTED)
                    .getStartTask().toBuilder().setExactlyOnce(true).build();
            driver.send(DriverMessage.newBuilder().setStartTask(next).build());
            CheckRequest check = driver.next().getCheckRequest();
            assertEquals(CheckRequest.Check.CHECK_PRE_PRODUCER, check.getCheck());
            driver.send(DriverMessage.newBuilder().setCheckDone(
                    CheckDone.newBuilder().setId(check.getId()).setError("not fenced")).build());
            TaskEvent failed = driver.nextEvent();
            assertEquals(TaskEvent.Kind.KIND_FAILED, failed.getKind());
            assertTrue(failed.getTrace().contains("not fenced"), failed.getTrace());
            assertTrue(driver.stop().getClean());

            driver.send(start("next-task", TaskType.TASK_TYPE_SOURCE, "idle", TargetState.TARGET_STATE_STARTED));
            assertEquals(TaskEvent.Kind.KIND_STARTED, driver.nextEvent().getKind());
            assertTrue(kafka.worker().taskIds().contains(new ConnectorTaskId("next-task", 0)));
            driver.closeConnection();
            assertTrue(driver.hostEnded(10_000), "the host ends when the driver is gone");
            assertFalse(kafka.worker().taskIds().contains(new ConnectorTaskId("next-task", 0)));
        }
    }

    @Test
    @Timeout(60)
    void aTaskStartedPausedSaysSoAndResumesWhenTold() throws Exception {
        try (TestDriver driver = TestDriver.start()) {
            driver.next();
            driver.send(start("paused", TaskType.TASK_TYPE_SOURCE, "idle", TargetState.TARGET_STATE_PAUSED));
            TaskEvent paused = driver.nextEvent();
            assertEquals(TaskEvent.Kind.KIND_PAUSED, paused.getKind());
            driver.send(target(TargetState.TARGET_STATE_STARTED));
            assertEquals(TaskEvent.Kind.KIND_STARTED, driver.nextEvent().getKind());
            driver.stop();
        }
    }

    @Test
    @Timeout(60)
    void aStartTellingOffsetsKeptByTheWorkerToAKafkaWorkerOnTheOffsetsTopicFailsNamingTheField() throws Exception {
        // this JVM's Kafka worker was built for a worker with an offsets topic
        try (TestDriver driver = TestDriver.start()) {
            driver.next();
            StartTask start = start("mode-mismatch", TaskType.TASK_TYPE_SOURCE, "idle", TargetState.TARGET_STATE_STARTED)
                    .getStartTask().toBuilder().setOffsetsKeptByWorker(true).build();
            driver.send(DriverMessage.newBuilder().setStartTask(start).build());
            TaskEvent failed = driver.nextEvent();
            assertEquals(TaskEvent.Kind.KIND_FAILED, failed.getKind());
            assertTrue(failed.getTrace().lines().findFirst().orElse("").contains("StartTask.offsets_kept_by_worker"),
                    failed.getTrace());
            assertFalse(kafka.worker().taskIds().contains(new ConnectorTaskId("mode-mismatch", 0)));
            assertTrue(driver.stop().getClean());
        }
    }

    @Test
    @Timeout(60)
    void aFailureIsRelayedWithItsRootCauseOnTheFirstLineOfItsTrace() throws Exception {
        for (TaskType type : new TaskType[] {TaskType.TASK_TYPE_SOURCE, TaskType.TASK_TYPE_SINK}) {
            String name = "failing-" + type.getNumber();
            try (TestDriver driver = TestDriver.start()) {
                driver.next();
                driver.send(start(name, type, "fail-start", TargetState.TARGET_STATE_STARTED));
                TaskEvent failed = driver.nextEvent();
                assertEquals(TaskEvent.Kind.KIND_FAILED, failed.getKind());
                String headline = failed.getTrace().lines().findFirst().orElse("");
                String wrapper = type == TaskType.TASK_TYPE_SINK ? "tiny sink failed to start" : "tiny failed to start";
                assertEquals(wrapper + ": java.lang.IllegalStateException: the tiny cause", headline);
                assertTrue(failed.getTrace().contains("at tiny.tasks.Tiny"), failed.getTrace());
                Stopped stopped = driver.stop();
                assertTrue(stopped.getClean(), stopped.getTrace());
            }
        }
    }

    @Test
    @Timeout(60)
    void aTaskThatKeepsItsThreadIsCancelledAfterKafkasGracefulTimeout() throws Exception {
        try (TestDriver driver = TestDriver.start()) {
            driver.next();
            driver.send(start("stubborn", TaskType.TASK_TYPE_SOURCE, "ignore-stop", TargetState.TARGET_STATE_STARTED));
            assertEquals(TaskEvent.Kind.KIND_STARTED, driver.nextEvent().getKind());
            long began = System.nanoTime();
            Stopped stopped = driver.stop();
            long tookMs = (System.nanoTime() - began) / 1_000_000;
            assertFalse(stopped.getClean());
            assertTrue(stopped.getTrace().contains("task.shutdown.graceful.timeout.ms (" + GRACEFUL_MS + " ms)"),
                    stopped.getTrace());
            assertTrue(tookMs < 5_000, "the stop took " + tookMs + " ms");
            assertTrue(driver.hostEnded(5_000));
            assertFalse(kafka.worker().taskIds().contains(new ConnectorTaskId("stubborn", 0)));
        }
    }

    @Test
    @Timeout(60)
    void theHostStopsItsTaskWhenTheDriverGoesAway() throws Exception {
        try (TestDriver driver = TestDriver.start()) {
            driver.next();
            driver.send(start("orphan", TaskType.TASK_TYPE_SOURCE, "idle", TargetState.TARGET_STATE_STARTED));
            assertEquals(TaskEvent.Kind.KIND_STARTED, driver.nextEvent().getKind());
            driver.closeConnection();
            assertTrue(driver.hostEnded(10_000), "the host ends when the driver is gone");
            assertFalse(kafka.worker().taskIds().contains(new ConnectorTaskId("orphan", 0)));
        }
    }

    @Test
    @Timeout(60)
    void aCancelledSparkTaskStopsItsTaskAndEnds() throws Exception {
        try (TestDriver driver = TestDriver.start()) {
            driver.next();
            driver.send(start("cancelled", TaskType.TASK_TYPE_SOURCE, "idle", TargetState.TARGET_STATE_STARTED));
            assertEquals(TaskEvent.Kind.KIND_STARTED, driver.nextEvent().getKind());
            driver.interrupted.set(true);
            assertEquals(TaskEvent.Kind.KIND_SHUTDOWN, driver.nextEvent().getKind());
            assertNull(driver.nextOrEnd(), "the host closes its connection");
            assertTrue(driver.hostEnded(5_000));
            assertFalse(kafka.worker().taskIds().contains(new ConnectorTaskId("cancelled", 0)));
        }
    }

    @Test
    @Timeout(60)
    void aSecondHostOfATaskStopsTheFirstOnesInstanceAndTheFirstLeavesItAlone() throws Exception {
        ConnectorTaskId id = new ConnectorTaskId("rehosted", 0);
        try (TestDriver first = TestDriver.start(); TestDriver second = TestDriver.start()) {
            first.next();
            first.send(start("rehosted", TaskType.TASK_TYPE_SOURCE, "idle", TargetState.TARGET_STATE_STARTED));
            assertEquals(TaskEvent.Kind.KIND_STARTED, first.nextEvent().getKind());
            second.next();
            second.send(start("rehosted", TaskType.TASK_TYPE_SOURCE, "idle", TargetState.TARGET_STATE_STARTED));
            // the first instance shuts down, then the second starts
            assertEquals(TaskEvent.Kind.KIND_SHUTDOWN, first.nextEvent().getKind());
            assertEquals(TaskEvent.Kind.KIND_STARTED, second.nextEvent().getKind());
            first.closeConnection();
            assertTrue(first.hostEnded(10_000));
            assertTrue(kafka.worker().taskIds().contains(id), "the first host left the second's task alone");
            second.stop();
            assertFalse(kafka.worker().taskIds().contains(id));
        }
    }

    @Test
    @Timeout(60)
    void anExactlyOnceSourceAsksTheDriverBeforeItsProducerAndFailsWithTheAnswer() throws Exception {
        try (TestDriver driver = TestDriver.start()) {
            driver.next();
            StartTask start = start("exactly-once", TaskType.TASK_TYPE_SOURCE, "idle", TargetState.TARGET_STATE_STARTED)
                    .getStartTask().toBuilder().setExactlyOnce(true).build();
            driver.send(DriverMessage.newBuilder().setStartTask(start).build());
            CheckRequest check = driver.next().getCheckRequest();
            assertEquals(CheckRequest.Check.CHECK_PRE_PRODUCER, check.getCheck());
            driver.send(DriverMessage.newBuilder().setCheckDone(
                    CheckDone.newBuilder().setId(check.getId()).setError("the connector's tasks are not fenced yet"))
                    .build());
            TaskEvent failed = driver.nextEvent();
            assertEquals(TaskEvent.Kind.KIND_FAILED, failed.getKind());
            assertTrue(failed.getTrace().lines().findFirst().orElse("").contains("the connector's tasks are not fenced yet"),
                    failed.getTrace());
            driver.stop();
        }
    }

    @Test
    @Timeout(60)
    void theTasksLogLinesGoToTheDriverAtTheWorkersLevels() throws Exception {
        // the test's JVM logs Kafka's slf4j calls with slf4j-simple: the lines here are logged
        // through log4j, as Spark's JVM logs them, in Kafka's logging context of the task
        Logger plugin = LogManager.getLogger("org.apache.kafka.connect.file.SessionTestLines");
        long version = System.nanoTime();  // the JVM's one table: newer than any other test's
        try (TestDriver driver = TestDriver.start()) {
            driver.next();
            StartTask start = start("logs", TaskType.TASK_TYPE_SOURCE, "idle", TargetState.TARGET_STATE_STARTED)
                    .getStartTask().toBuilder().setLogLevels(levels(version, "org.apache.kafka.connect.file", "DEBUG"))
                    .build();
            driver.send(DriverMessage.newBuilder().setStartTask(start).build());
            assertEquals(TaskEvent.Kind.KIND_STARTED, driver.nextEvent().getKind());

            ThreadContext.put("connector.context", "[logs|task-0] ");
            try {
                plugin.debug("Opened {} for reading", "/data/in");
                LogRecord opened = driver.nextLog();
                assertEquals("Opened /data/in for reading", opened.getMessage());
                assertEquals(LogRecord.Level.LEVEL_DEBUG, opened.getLevel());
                assertEquals("org.apache.kafka.connect.file.SessionTestLines", opened.getLogger());
                assertEquals("logs", opened.getConnector());
                assertEquals(0, opened.getTask());

                driver.send(DriverMessage.newBuilder()
                        .setSetLogLevels(levels(version + 1, "org.apache.kafka.connect.file", "ERROR")).build());
                // the levels apply once the session read them: an ERROR line marks that moment
                long deadline = System.nanoTime() + 10_000_000_000L;
                while (plugin.isWarnEnabled() && System.nanoTime() < deadline) {
                    Thread.sleep(10L);
                }
                plugin.warn("Couldn't find file {}", "/data/in");
                plugin.error("the line after");
                assertEquals("the line after", driver.nextLog().getMessage(), "the WARN line was not sent");
            } finally {
                ThreadContext.clearMap();
            }
            driver.stop();
        } finally {
            LogRelay.applyLevels(levels(version + 2, "root", "INFO"));
        }
    }

    // a host launched ahead of its first task builds the JVM's Kafka worker when told (WarmWorker)

    @Test
    @Timeout(60)
    void aWarmWorkerBuildsTheKafkaWorkerOnceAndTheNextStartTaskRunsOnItWithoutBuildingAgain() throws Exception {
        CountedBuilds builds = new CountedBuilds();
        KafkaWorkers registry = new KafkaWorkers(builds);
        String workerId = "warm-once";
        try (TestDriver driver = TestDriver.start(TaskHosting.workers(registry, false))) {
            driver.next();
            driver.send(warm(workerId, workerProps));
            WorkerWarmed warmed = driver.nextWarmed();
            assertTrue(warmed.getBuilt());
            assertEquals("", warmed.getError());
            assertEquals(1, builds.count.get());
            driver.send(warm(workerId, workerProps));
            assertFalse(driver.nextWarmed().getBuilt(), "built already: not again");

            driver.send(startOn(workerId, workerProps, "warmed-task"));
            assertEquals(TaskEvent.Kind.KIND_STARTED, driver.nextEvent().getKind());
            assertEquals(1, builds.count.get(), "the task runs on the worker built ahead");
            assertTrue(builds.built.get(0).worker().taskIds().contains(new ConnectorTaskId("warmed-task", 0)));
            assertTrue(driver.stop().getClean());
        } finally {
            registry.shutdown(workerId);
        }
    }

    @Test
    @Timeout(60)
    void aStartTaskReadWhileTheWorkerIsBuiltAheadWaitsForThatBuildAndTheSessionServesMeanwhile() throws Exception {
        CountDownLatch gate = new CountDownLatch(1);
        CountedBuilds builds = new CountedBuilds(gate);
        KafkaWorkers registry = new KafkaWorkers(builds);
        String workerId = "warm-slow";
        try (TestDriver driver = TestDriver.start(TaskHosting.workers(registry, false))) {
            driver.next();
            driver.send(warm(workerId, workerProps));
            assertTrue(builds.started.await(10, TimeUnit.SECONDS));
            // the build holds its own thread: the session still answers (a stop, with no task)
            assertTrue(driver.stop().getClean());
            driver.send(startOn(workerId, workerProps, "waiting-task"));
            Thread.sleep(300L);
            assertEquals(1, builds.count.get(), "the task waits for the build under way");
            gate.countDown();
            // the answer and the task's start, in either order
            HostMessage first = driver.next();
            HostMessage second = driver.next();
            WorkerWarmed warmed = first.hasWorkerWarmed() ? first.getWorkerWarmed() : second.getWorkerWarmed();
            TaskEvent started = first.hasTaskEvent() ? first.getTaskEvent() : second.getTaskEvent();
            assertTrue(warmed.getBuilt(), warmed.toString());
            assertTrue(warmed.getTookMs() >= 300L, warmed.toString());
            assertEquals(TaskEvent.Kind.KIND_STARTED, started.getKind());
            assertEquals(1, builds.count.get());
            assertTrue(driver.stop().getClean());
        } finally {
            gate.countDown();
            registry.shutdown(workerId);
        }
    }

    @Test
    @Timeout(60)
    void aStartTaskWithOtherWorkerPropertiesRunsOnAWorkerBuiltFromThem() throws Exception {
        CountedBuilds builds = new CountedBuilds();
        KafkaWorkers registry = new KafkaWorkers(builds);
        String workerId = "warm-other";
        Map<String, String> other = new HashMap<>(workerProps);
        other.put("offset.flush.interval.ms", "12345");
        try (TestDriver driver = TestDriver.start(TaskHosting.workers(registry, false))) {
            driver.next();
            driver.send(warm(workerId, workerProps));
            assertTrue(driver.nextWarmed().getBuilt());
            driver.send(startOn(workerId, other, "other-task"));
            assertEquals(TaskEvent.Kind.KIND_STARTED, driver.nextEvent().getKind());
            assertEquals(2, builds.count.get());
            assertEquals(other, builds.properties.get(1));
            assertTrue(builds.built.get(1).worker().taskIds().contains(new ConnectorTaskId("other-task", 0)));
            assertTrue(driver.stop().getClean());
        } finally {
            registry.shutdown(workerId);
        }
    }

    @Test
    @Timeout(60)
    void aWarmBuildThatFailsIsReportedWithItsRootCauseAndTheNextStartTaskBuildsTheWorker() throws Exception {
        CountedBuilds builds = new CountedBuilds();
        builds.failNext = new ConnectException("Could not read the offsets topic",
                new IllegalStateException("the root cause"));
        KafkaWorkers registry = new KafkaWorkers(builds);
        String workerId = "warm-failed";
        try (TestDriver driver = TestDriver.start(TaskHosting.workers(registry, false))) {
            driver.next();
            driver.send(warm(workerId, workerProps));
            WorkerWarmed failed = driver.nextWarmed();
            assertFalse(failed.getBuilt());
            assertEquals("Could not read the offsets topic: java.lang.IllegalStateException: the root cause",
                    failed.getError().lines().findFirst().orElse(""));

            driver.send(startOn(workerId, workerProps, "after-failed-warm"));
            assertEquals(TaskEvent.Kind.KIND_STARTED, driver.nextEvent().getKind());
            assertEquals(2, builds.count.get(), "the task built the worker itself");
            assertTrue(driver.stop().getClean());
        } finally {
            registry.shutdown(workerId);
        }
    }

    @Test
    @Timeout(60)
    void aHostThatBuildsNoWorkerAheadAnswersWhyAndServesOn() throws Exception {
        try (TestDriver driver = TestDriver.start()) {
            driver.next();
            driver.send(warm("host-test-worker", workerProps));
            WorkerWarmed refused = driver.nextWarmed();
            assertFalse(refused.getBuilt());
            assertTrue(refused.getError().startsWith("java.lang.UnsupportedOperationException"), refused.getError());
            driver.send(start("after-refused-warm", TaskType.TASK_TYPE_SOURCE, "idle",
                    TargetState.TARGET_STATE_STARTED));
            assertEquals(TaskEvent.Kind.KIND_STARTED, driver.nextEvent().getKind());
            assertTrue(driver.stop().getClean());
        }
    }

    private static DriverMessage warm(String workerId, Map<String, String> props) {
        return DriverMessage.newBuilder().setWarmWorker(WarmWorker.newBuilder()
                .setWorkerId(workerId)
                .putAllWorkerProperties(props)
                .putPluginScanProperties("plugin.discovery", "service_load"))
                .build();
    }

    private static DriverMessage startOn(String workerId, Map<String, String> props, String connector) {
        StartTask start = start(connector, TaskType.TASK_TYPE_SOURCE, "idle", TargetState.TARGET_STATE_STARTED)
                .getStartTask().toBuilder()
                .setWorkerId(workerId)
                .putAllWorkerProperties(props)
                .putPluginScanProperties("plugin.discovery", "service_load")
                .build();
        return DriverMessage.newBuilder().setStartTask(start).build();
    }

    /** Kafka workers built without a broker, counted; the next build fails when told, or waits for a gate. */
    private static final class CountedBuilds implements KafkaWorkers.Builder {
        final AtomicInteger count = new AtomicInteger();
        final List<KafkaTaskWorker> built = new CopyOnWriteArrayList<>();
        final List<Map<String, String>> properties = new CopyOnWriteArrayList<>();
        final CountDownLatch started = new CountDownLatch(1);
        final CountDownLatch gate;
        volatile RuntimeException failNext;

        CountedBuilds() {
            this(new CountDownLatch(0));
        }

        CountedBuilds(CountDownLatch gate) {
            this.gate = gate;
        }

        @Override
        public KafkaTaskWorker open(String workerId, Map<String, String> props, Map<String, String> scan) {
            count.incrementAndGet();
            properties.add(props);
            started.countDown();
            try {
                gate.await();
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new IllegalStateException(e);
            }
            RuntimeException failure = failNext;
            if (failure != null) {
                failNext = null;
                throw failure;
            }
            KafkaTaskWorker worker = brokerless(workerId, props);
            built.add(worker);
            return worker;
        }
    }

    private static LogLevels levels(long version, String namespace, String level) {
        return LogLevels.newBuilder().setVersion(version)
                .addLevels(LogLevel.newBuilder().setNamespace(namespace).setLevel(level)).build();
    }

    /**
     * Kafka's worker config asks the cluster for its id the first time it is needed, and keeps
     * it; with no broker, the test gives it the id first (DistributedConfig is final, and its
     * lookup has no other seam).
     */
    static void givenClusterId(WorkerConfig config, String clusterId) {
        try {
            Field field = WorkerConfig.class.getDeclaredField("kafkaClusterId");
            field.setAccessible(true);
            field.set(config, clusterId);
        } catch (ReflectiveOperationException e) {
            throw new IllegalStateException("Kafka's WorkerConfig no longer keeps its cluster id in a field", e);
        }
    }

    private static DriverMessage start(String connector, TaskType type, String mode, TargetState target) {
        boolean sink = type == TaskType.TASK_TYPE_SINK;
        Map<String, String> connectorConfig = new HashMap<>(Map.of(
                "name", connector,
                "connector.class", sink ? TinyTasks.SINK_CONNECTOR : TinyTasks.SOURCE_CONNECTOR,
                "tasks.max", "1",
                "tiny.mode", mode));
        Map<String, String> taskConfig = new HashMap<>(Map.of(
                "task.class", sink ? TinyTasks.SINK_TASK : TinyTasks.SOURCE_TASK,
                "tiny.mode", mode));
        if (sink) {
            connectorConfig.put("topics", "tiny-topic");
            taskConfig.put("topics", "tiny-topic");
        }
        return DriverMessage.newBuilder().setStartTask(StartTask.newBuilder()
                .setConnector(connector)
                .setTask(0)
                .setWorkerId("host-test-worker")
                .putAllConnectorConfig(connectorConfig)
                .putAllTaskConfig(taskConfig)
                .setTaskCount(1)
                .setTargetState(target)
                .setTaskType(type))
                .build();
    }

    private static DriverMessage target(TargetState state) {
        return DriverMessage.newBuilder().setSetTargetState(SetTargetState.newBuilder().setTargetState(state)).build();
    }

    /** The driver's end of one connection, with the host serving it on a thread of its own. */
    private static final class TestDriver implements AutoCloseable {

        /** What the host's {@code TaskContext.isInterrupted()} would say. */
        final AtomicBoolean interrupted;
        private final ServerSocket server;
        private final Thread host;
        private final Socket socket;
        private final InputStream in;
        private final OutputStream out;
        /** What was read while another kind of message was waited for. */
        private final Deque<HostMessage> messages = new ArrayDeque<>();
        private final Deque<LogRecord> logs = new ArrayDeque<>();

        private TestDriver(ServerSocket server, Thread host, Socket socket, AtomicBoolean interrupted)
                throws IOException {
            this.interrupted = interrupted;
            this.server = server;
            this.host = host;
            this.socket = socket;
            socket.setSoTimeout(READ_TIMEOUT_MS);
            this.in = socket.getInputStream();
            this.out = socket.getOutputStream();
        }

        static TestDriver start() throws IOException {
            return start(start -> kafka);
        }

        static TestDriver start(TaskSession.Workers workers) throws IOException {
            ServerSocket server = new ServerSocket(0, 1, InetAddress.getLoopbackAddress());
            server.setSoTimeout(READ_TIMEOUT_MS);
            AtomicBoolean interrupted = new AtomicBoolean();
            int port = server.getLocalPort();
            Thread host = new Thread(() -> {
                try (DriverLink link = DriverLink.connect("127.0.0.1", port, READ_TIMEOUT_MS)) {
                    new TaskSession(link, interrupted::get, workers).run(TOKEN, "executor-7", TaskHosting.hostName());
                } catch (IOException | InterruptedException e) {
                    throw new IllegalStateException(e);
                }
            }, "test-task-host");
            host.setDaemon(true);
            host.start();
            return new TestDriver(server, host, server.accept(), interrupted);
        }

        HostMessage next() throws IOException {
            HostMessage message = nextOrEnd();
            if (message == null) {
                throw new IOException("the host closed the connection");
            }
            return message;
        }

        /**
         * The host's next message that is not a log line (those are kept for nextLog) nor a
         * report of the task's topics or metrics (TaskReportsTest's) or of its JVM's loggers
         * (LogRelayTest's).
         */
        HostMessage nextOrEnd() throws IOException {
            if (!messages.isEmpty()) {
                return messages.poll();
            }
            HostMessage message;
            while ((message = HostMessage.parseDelimitedFrom(in)) != null
                    && (message.hasLogRecord() || isReport(message))) {
                if (message.hasLogRecord()) {
                    logs.add(message.getLogRecord());
                }
            }
            return message;
        }

        private static boolean isReport(HostMessage message) {
            return message.hasTaskMetrics() || message.hasTopicsUsed() || message.hasLoggersSeen();
        }

        /** The host's next log line (other messages are kept for next). */
        LogRecord nextLog() throws IOException {
            if (!logs.isEmpty()) {
                return logs.poll();
            }
            HostMessage message;
            while ((message = HostMessage.parseDelimitedFrom(in)) != null && !message.hasLogRecord()) {
                if (!isReport(message)) {
                    messages.add(message);
                }
            }
            if (message == null) {
                throw new IOException("the host closed the connection");
            }
            return message.getLogRecord();
        }

        WorkerWarmed nextWarmed() throws IOException {
            HostMessage message = next();
            assertTrue(message.hasWorkerWarmed(), "expected WorkerWarmed, got " + message);
            return message.getWorkerWarmed();
        }

        TaskEvent nextEvent() throws IOException {
            HostMessage message = next();
            assertTrue(message.hasTaskEvent(), "expected a task event, got " + message);
            return message.getTaskEvent();
        }

        void send(DriverMessage message) throws IOException {
            message.writeDelimitedTo(out);
            out.flush();
        }

        Stopped stop() throws IOException {
            send(DriverMessage.newBuilder().setStopTask(StopTask.newBuilder().setTimeoutMs(10_000)).build());
            HostMessage message;
            Set<HostMessage.MessageCase> events = Set.of(HostMessage.MessageCase.TASK_EVENT);
            do {
                message = next();
            } while (events.contains(message.getMessageCase()));
            assertTrue(message.hasStopped(), "expected Stopped, got " + message);
            return message.getStopped();
        }

        boolean hostEnded(long ms) throws InterruptedException {
            host.join(ms);
            return !host.isAlive();
        }

        void closeConnection() throws IOException {
            socket.close();
        }

        @Override
        public void close() throws IOException {
            socket.close();
            server.close();
        }
    }

    /** The worker's offsets, in memory: the tiny tasks commit none. */
    private static final class MemoryOffsets extends MemoryOffsetBackingStore {
        @Override
        public Set<Map<String, Object>> connectorPartitions(String connectorName) {
            return Set.of();
        }
    }
}
