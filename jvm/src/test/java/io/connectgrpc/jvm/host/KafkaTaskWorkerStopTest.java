package io.connectgrpc.jvm.host;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

import org.apache.kafka.connect.runtime.distributed.DistributedConfig;
import org.apache.kafka.connect.runtime.isolation.Plugins;
import org.apache.kafka.connect.storage.MemoryOffsetBackingStore;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * The stop of a JVM's Kafka worker is bounded by its {@code task.shutdown.graceful.timeout.ms}
 * and {@link KafkaTaskWorker#STOP_MARGIN_MS}, as Kafka Connect's herder bounds its own: Kafka's
 * worker closes its offsets topic's producer with no bound, and with the Kafka cluster gone and
 * an offset write pending that close never returns. Here the offsets store's stop blocks as
 * that close does.
 */
class KafkaTaskWorkerStopTest {

    private static final long GRACEFUL_MS = 1_000L;

    private static Path work;
    private static Plugins plugins;

    @BeforeAll
    static void scan() throws Exception {
        work = Files.createTempDirectory("connect-grpc-stop-test");
        plugins = new Plugins(Map.of("plugin.path", work.toString(), "plugin.discovery", "service_load"));
    }

    @AfterAll
    static void clean() throws Exception {
        Files.deleteIfExists(work);
    }

    @Test
    void aWorkerWhoseOffsetStoreNeverClosesStopsWithinItsBound() throws Exception {
        StuckOffsets offsets = new StuckOffsets();
        KafkaTaskWorker worker = worker("stop-test-stuck", offsets);
        try {
            long started = System.nanoTime();
            assertFalse(worker.stop());
            long tookMs = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - started);
            // Kafka's stop reached the store and is still in it: the bound is what returned
            assertTrue(offsets.stopping.await(0, TimeUnit.MILLISECONDS));
            assertEquals(1L, offsets.release.getCount());
            assertTrue(tookMs >= GRACEFUL_MS + KafkaTaskWorker.STOP_MARGIN_MS - 100, tookMs + " ms");
            assertTrue(tookMs < GRACEFUL_MS + KafkaTaskWorker.STOP_MARGIN_MS + 3_000, tookMs + " ms");
        } finally {
            offsets.release.countDown();
        }
    }

    @Test
    void aWorkerThatStopsCleanlySaysSoAtOnce() {
        KafkaTaskWorker worker = worker("stop-test-clean", new StuckOffsets(true));
        long started = System.nanoTime();
        assertTrue(worker.stop());
        assertTrue(TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - started) < GRACEFUL_MS + 3_000);
    }

    private static KafkaTaskWorker worker(String workerId, MemoryOffsetBackingStore offsets) {
        Map<String, String> props = new HashMap<>();
        props.put("bootstrap.servers", "127.0.0.1:9");  // nothing there: nothing is sent
        props.put("group.id", workerId);
        props.put("config.storage.topic", workerId + "-configs");
        props.put("offset.storage.topic", workerId + "-offsets");
        props.put("status.storage.topic", workerId + "-status");
        props.put("key.converter", "org.apache.kafka.connect.storage.StringConverter");
        props.put("value.converter", "org.apache.kafka.connect.storage.StringConverter");
        props.put("task.shutdown.graceful.timeout.ms", Long.toString(GRACEFUL_MS));
        DistributedConfig config = new DistributedConfig(props);
        TaskSessionTest.givenClusterId(config, "stop-test-cluster");
        return new KafkaTaskWorker(workerId, props, config, plugins, offsets, () -> { });
    }

    /** Offsets in memory whose stop waits, as a producer's close waits for a write it cannot send. */
    private static final class StuckOffsets extends MemoryOffsetBackingStore {
        final CountDownLatch stopping = new CountDownLatch(1);
        final CountDownLatch release;

        StuckOffsets() {
            this(false);
        }

        StuckOffsets(boolean released) {
            this.release = new CountDownLatch(released ? 0 : 1);
        }

        @Override
        public Set<Map<String, Object>> connectorPartitions(String connectorName) {
            return Set.of();
        }

        @Override
        public void stop() {
            stopping.countDown();
            try {
                release.await();
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
            super.stop();
        }
    }
}
