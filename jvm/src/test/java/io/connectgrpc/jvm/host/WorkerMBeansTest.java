package io.connectgrpc.jvm.host;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.management.ManagementFactory;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.stream.Collectors;

import javax.management.MalformedObjectNameException;
import javax.management.ObjectName;

import io.connectgrpc.jvm.plugins.PluginCatalogue;

import org.apache.kafka.connect.runtime.distributed.DistributedConfig;
import org.apache.kafka.connect.storage.MemoryOffsetBackingStore;
import org.junit.jupiter.api.Test;

/**
 * The JVM's MBeans of Kafka Connect's workers ({@code kafka.connect:*}): the plugin catalogue's
 * worker, which only validates, shows none, so that those of the worker that runs the JVM's
 * tasks are the only ones, whichever was built first and whichever is closed first.
 */
class WorkerMBeansTest {

    private static final String WORKER_ID = "mbeans-test-worker";

    @Test
    void onlyTheWorkerThatRunsTasksShowsKafkasWorkerMBeans() throws Exception {
        Path work = Files.createTempDirectory("connect-grpc-mbeans-test");
        Map<String, String> scan = Map.of("plugin.path", work.toString(), "plugin.discovery", "service_load");
        Set<String> before = connectMBeans();
        PluginCatalogue catalogue = PluginCatalogue.open(scan);
        KafkaTaskWorker worker = null;
        try {
            assertEquals(before, connectMBeans(), "the catalogue's worker registered MBeans");

            worker = taskWorker(catalogue);
            Set<String> workers = connectMBeans();
            assertTrue(workers.contains("kafka.connect:id=" + WORKER_ID + ",type=app-info"), workers::toString);
            assertTrue(workers.contains("kafka.connect:type=connect-worker-metrics"), workers::toString);
            assertFalse(workers.stream().anyMatch(name -> name.contains("connect-grpc-plugin-host")),
                    workers::toString);

            // the catalogue's close leaves the task worker's MBeans registered
            catalogue.close();
            catalogue = null;
            assertEquals(workers, connectMBeans());
        } finally {
            if (worker != null) {
                worker.close();
            }
            if (catalogue != null) {
                catalogue.close();
            }
            Files.deleteIfExists(work);
        }
        Set<String> after = connectMBeans();
        assertFalse(after.stream().anyMatch(name -> name.contains(WORKER_ID)), after::toString);
    }

    /** A worker that runs tasks over the catalogue's plugins, as the driver's JVM builds it. */
    private static KafkaTaskWorker taskWorker(PluginCatalogue catalogue) {
        Map<String, String> props = new HashMap<>();
        props.put("bootstrap.servers", "127.0.0.1:9");  // nothing there: nothing is sent
        props.put("group.id", "mbeans-test");
        props.put("config.storage.topic", "mbeans-test-configs");
        props.put("offset.storage.topic", "mbeans-test-offsets");
        props.put("status.storage.topic", "mbeans-test-status");
        props.put("key.converter", "org.apache.kafka.connect.storage.StringConverter");
        props.put("value.converter", "org.apache.kafka.connect.storage.StringConverter");
        DistributedConfig config = new DistributedConfig(props);
        TaskSessionTest.givenClusterId(config, "mbeans-test-cluster");
        return new KafkaTaskWorker(WORKER_ID, props, config, catalogue.plugins(),
                new MemoryOffsetBackingStore() {
                    @Override
                    public Set<Map<String, Object>> connectorPartitions(String connectorName) {
                        return Set.of();
                    }
                }, () -> { });
    }

    private static Set<String> connectMBeans() throws MalformedObjectNameException {
        return ManagementFactory.getPlatformMBeanServer().queryNames(new ObjectName("kafka.connect:*"), null)
                .stream().map(ObjectName::getCanonicalName).collect(Collectors.toCollection(TreeSet::new));
    }
}
