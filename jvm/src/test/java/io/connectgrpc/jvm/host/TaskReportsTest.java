package io.connectgrpc.jvm.host;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.io.InputStream;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Consumer;

import io.connectgrpc.jvm.host.proto.HostMessage;
import io.connectgrpc.jvm.host.proto.PluginMetricValue;
import io.connectgrpc.jvm.host.proto.TaskMetrics;

import org.apache.kafka.common.MetricName;
import org.apache.kafka.common.metrics.Gauge;
import org.apache.kafka.common.metrics.Sensor;
import org.apache.kafka.common.metrics.stats.Avg;
import org.apache.kafka.common.metrics.stats.CumulativeSum;
import org.apache.kafka.common.metrics.stats.Frequencies;
import org.apache.kafka.common.metrics.stats.Max;
import org.apache.kafka.common.metrics.stats.Value;
import org.apache.kafka.common.utils.Time;
import org.apache.kafka.connect.runtime.ConnectMetrics;
import org.apache.kafka.connect.runtime.ConnectMetricsRegistry;
import org.apache.kafka.connect.runtime.TaskStatus;
import org.apache.kafka.connect.runtime.TopicStatus;
import org.apache.kafka.connect.runtime.distributed.DistributedConfig;
import org.apache.kafka.connect.storage.MemoryStatusBackingStore;
import org.apache.kafka.connect.util.ConnectorTaskId;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * What a host relays of its task besides its statuses: the topics Kafka's task records
 * ({@link TopicRelayStore}) and the task's metrics, read from Kafka's own {@link ConnectMetrics}
 * as Kafka's task metric groups lay them out ({@link TaskReports}).
 */
class TaskReportsTest {

    private static final ConnectorTaskId TASK = new ConnectorTaskId("reported", 0);

    @Test
    void aTopicIsRelayedOnceToItsTasksListenerUntilForgotten() {
        TopicRelayStore store = new TopicRelayStore(new MemoryStatusBackingStore());
        List<String> relayed = new ArrayList<>();
        List<String> others = new ArrayList<>();
        Consumer<String> listener = relayed::add;
        store.listen(TASK, listener);
        store.listen(new ConnectorTaskId("reported", 1), others::add);

        assertNull(store.getTopic("reported", "orders"), "nothing recorded yet: Kafka's task puts it");
        store.put(new TopicStatus("orders", TASK, 1L));
        assertEquals(List.of("orders"), relayed);
        assertTrue(others.isEmpty(), "a topic goes to the task that used it");
        assertNotNull(store.getTopic("reported", "orders"), "relayed: Kafka's task does not put it again");
        assertNull(store.getTopic("other", "orders"), "another connector has its own records");

        store.forget("reported", List.of("orders"));  // the driver's records were reset
        assertNull(store.getTopic("reported", "orders"), "forgotten: the next use relays it again");
        store.put(new TopicStatus("orders", TASK, 2L));
        assertEquals(List.of("orders", "orders"), relayed);

        store.unlisten(TASK, listener);
        assertNull(store.getTopic("reported", "orders"), "what a stopped task relayed is forgotten");
        store.put(new TopicStatus("refunds", TASK, 3L));
        assertEquals(List.of("orders", "orders"), relayed, "no listener: nothing relayed");
        assertNull(store.getTopic("reported", "refunds"), "and nothing kept: a later listener gets it");
    }

    @Test
    void eachConnectorsTopicsAreKeptApartWhateverTheirNames() {
        // kept by connector then topic, as Kafka's stores keep them: no joined key for two
        // names to run into (nor one connector's name to prefix another's)
        TopicRelayStore store = new TopicRelayStore(new MemoryStatusBackingStore());
        ConnectorTaskId joined = new ConnectorTaskId("a\u0000b", 0);
        ConnectorTaskId prefix = new ConnectorTaskId("a", 0);
        store.listen(joined, topic -> { });
        store.listen(prefix, topic -> { });
        store.put(new TopicStatus("c", joined, 1L));

        assertNull(store.getTopic("a", "b\u0000c"), "connector a never used topic b\\0c");
        assertEquals(List.of(), List.copyOf(store.getAllTopics("a")));
        store.put(new TopicStatus("d", prefix, 2L));
        assertEquals(List.of("c"), store.getAllTopics("a\u0000b").stream().map(TopicStatus::topic).toList());
        assertEquals(List.of("d"), store.getAllTopics("a").stream().map(TopicStatus::topic).toList());

        store.deleteTopic("a", "d");
        assertNull(store.getTopic("a", "d"));
        assertNotNull(store.getTopic("a\u0000b", "c"), "another connector's topic stays");
    }

    @Test
    void statusesAreTheHerdersStoresAndTheHerderTakesTheRelayingStore() {
        MemoryStatusBackingStore statuses = new MemoryStatusBackingStore();
        TopicRelayStore store = new TopicRelayStore(statuses);
        store.put(new TaskStatus(TASK, TaskStatus.State.RUNNING, "worker", 0));
        assertEquals(TaskStatus.State.RUNNING, statuses.get(TASK).state());
        assertEquals(TaskStatus.State.RUNNING, store.get(TASK).state());
    }

    @Test
    @Timeout(30)
    void theTasksMetricsAreSentAsIncrementsWithEachBatchAndCommit() throws Exception {
        ConnectMetrics connect = new ConnectMetrics("reports-worker", config(), Time.SYSTEM, "reports-cluster");
        ConnectMetricsRegistry registry = connect.registry();
        String connector = TASK.connector();
        String task = Integer.toString(TASK.task());
        // the task's groups and sensors, as Kafka's WorkerTask and WorkerSourceTask make them
        ConnectMetrics.MetricGroup taskGroup = connect.group(registry.taskGroupName(),
                registry.connectorTagName(), connector, registry.taskTagName(), task);
        Sensor batchSize = taskGroup.sensor("batch-size");
        batchSize.add(taskGroup.metricName(registry.taskBatchSizeMax), new Max());
        Sensor commitTime = taskGroup.sensor("commit-time");
        commitTime.add(taskGroup.metricName(registry.taskCommitTimeMax), new Max());
        commitTime.add(taskGroup.metricName(registry.taskCommitTimeAvg), new Avg());
        Sensor commits = taskGroup.sensor("offset-commit-completion");
        commits.add(Frequencies.forBooleanValues(taskGroup.metricName(registry.taskCommitFailurePercentage),
                taskGroup.metricName(registry.taskCommitSuccessPercentage)));
        ConnectMetrics.MetricGroup source = connect.group(registry.sourceTaskGroupName(),
                registry.connectorTagName(), connector, registry.taskTagName(), task);
        Sensor polled = source.sensor("source-record-poll");
        polled.add(source.metricName(registry.sourceRecordPollTotal), new CumulativeSum());
        ConnectMetrics.MetricGroup errors = connect.group(registry.taskErrorHandlingGroupName(),
                registry.connectorTagName(), connector, registry.taskTagName(), task);
        Sensor lastError = errors.sensor("last-error-timestamp");
        lastError.add(errors.metricName(registry.lastErrorTimestamp), new Value());
        // a metric of one of the task's plugins (KIP-877), as Kafka's PluginMetrics names it,
        // and one of another task's
        AtomicLong seen = new AtomicLong(4);
        connect.metrics().addMetric(connect.metrics().metricName("records-seen", "plugins", "Records seen",
                Map.of("connector", connector, "task", task, "transformation", "count")),
                (Gauge<Long>) (config, now) -> seen.get());
        connect.metrics().addMetric(connect.metrics().metricName("records-seen", "plugins", "",
                Map.of("connector", connector, "task", "1", "transformation", "count")),
                (Gauge<Long>) (config, now) -> 99L);

        try (ServerSocket server = new ServerSocket(0, 1, InetAddress.getLoopbackAddress());
             DriverLink link = DriverLink.connect("127.0.0.1", server.getLocalPort(), 10_000);
             Socket driver = server.accept()) {
            // not started: its reports are the test's to make, none on the reporting thread's time
            TaskReports reports = new TaskReports(link, connect, TASK, false);
            reports.observe();
            try {
                // the relay's stats stay out of Kafka's task group (its JMX MBean, reporters)
                List<String> inTaskGroup = connect.metrics().metrics().keySet().stream()
                        .filter(name -> registry.taskGroupName().equals(name.group()))
                        .map(MetricName::name).filter(name -> name.startsWith("connect-grpc")).toList();
                assertEquals(List.of(), inTaskGroup);
                List<String> relayed = connect.metrics().metrics().keySet().stream()
                        .filter(name -> TaskReports.RELAY_GROUP.equals(name.group()))
                        .map(MetricName::name).sorted().toList();
                assertEquals(List.of("connect-grpc-relayed-batch-size", "connect-grpc-relayed-commit-failures",
                        "connect-grpc-relayed-commit-time"), relayed);
                polled.record(3);
                batchSize.record(3);
                commitTime.record(12);
                commits.record(1.0);
                commits.record(0.0);
                lastError.record(1_700_000_000_000.0);
                reports.topicUsed("orders");
                reports.report();
                polled.record(2);
                batchSize.record(2);
                reports.report();
                reports.report();  // nothing changed: nothing sent

                InputStream in = driver.getInputStream();
                List<HostMessage> messages = new ArrayList<>();
                driver.setSoTimeout(5_000);
                while (messages.stream().filter(HostMessage::hasTaskMetrics).count() < 2) {
                    messages.add(HostMessage.parseDelimitedFrom(in));
                }
                List<String> topics = messages.stream().filter(HostMessage::hasTopicsUsed)
                        .flatMap(m -> m.getTopicsUsed().getTopicsList().stream()).toList();
                assertEquals(List.of("orders"), topics);
                List<TaskMetrics> reported = messages.stream().filter(HostMessage::hasTaskMetrics)
                        .map(HostMessage::getTaskMetrics).toList();
                TaskMetrics first = reported.get(0);
                assertEquals(Map.of("source-record-poll-total", 3.0), first.getIncrementsMap());
                assertEquals(Map.of("last-error-timestamp", 1_700_000_000_000.0), first.getGaugesMap());
                assertEquals(List.of(3.0), first.getBatchSizesList());
                assertEquals(List.of(12.0), first.getCommitTimesMsList());
                assertEquals(1L, first.getCommitFailures());
                TaskMetrics second = reported.get(1);
                assertEquals(Map.of("source-record-poll-total", 2.0), second.getIncrementsMap());
                assertEquals(List.of(2.0), second.getBatchSizesList());
                assertTrue(second.getGaugesMap().isEmpty(), "an unchanged gauge is not sent again");
                assertEquals(1, first.getPluginMetrics().getMetricsCount(), "the task's plugins' only");
                PluginMetricValue plugin = first.getPluginMetrics().getMetrics(0);
                assertEquals("records-seen", plugin.getName());
                assertEquals("Records seen", plugin.getDescription());
                assertEquals(Map.of("connector", connector, "task", task, "transformation", "count"),
                        plugin.getTagsMap());
                assertEquals(4.0, plugin.getValue());
                assertFalse(second.hasPluginMetrics(), "unchanged: not sent again");
                taskGroup.close();  // the task stopped: the stats leave with its sensors
                assertTrue(connect.metrics().metrics().keySet().stream()
                        .noneMatch(name -> TaskReports.RELAY_GROUP.equals(name.group())));
            } finally {
                reports.close();
            }
        } finally {
            connect.stop();
        }
    }

    private static DistributedConfig config() {
        Map<String, String> props = new HashMap<>();
        props.put("bootstrap.servers", "127.0.0.1:9");
        props.put("group.id", "reports-test");
        props.put("config.storage.topic", "reports-configs");
        props.put("offset.storage.topic", "reports-offsets");
        props.put("status.storage.topic", "reports-status");
        props.put("key.converter", "org.apache.kafka.connect.storage.StringConverter");
        props.put("value.converter", "org.apache.kafka.connect.storage.StringConverter");
        return new DistributedConfig(props);
    }
}
