package io.connectgrpc.jvm.host;

import java.io.IOException;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.DoubleConsumer;

import io.connectgrpc.jvm.host.proto.HostMessage;
import io.connectgrpc.jvm.host.proto.PluginMetricValue;
import io.connectgrpc.jvm.host.proto.PluginMetricValues;
import io.connectgrpc.jvm.host.proto.TaskMetrics;
import io.connectgrpc.jvm.host.proto.TopicsUsed;

import org.apache.kafka.common.MetricName;
import org.apache.kafka.common.metrics.KafkaMetric;
import org.apache.kafka.common.metrics.MeasurableStat;
import org.apache.kafka.common.metrics.MetricConfig;
import org.apache.kafka.common.metrics.Metrics;
import org.apache.kafka.common.metrics.Sensor;
import org.apache.kafka.connect.runtime.ConnectMetrics;
import org.apache.kafka.connect.runtime.ConnectMetricsRegistry;
import org.apache.kafka.connect.util.ConnectorTaskId;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * What a hosted task's Kafka worker knows of it that the driver exports: the topics it uses
 * (KIP-558, from {@link TopicRelayStore}) and its metrics and its plugins' own (KIP-877), read
 * from the Kafka worker's metrics registry, sent to the driver by a thread of its own ({@code TopicsUsed} as soon as a topic
 * comes, {@code TaskMetrics} every {@link #REPORT_MS} ms while they change), so that no
 * task or producer thread waits on the connection.
 *
 * <p>Kafka's cumulative task metrics are read as they are and sent as increments. Its
 * batch-size and commit-time sensors keep only an average and a maximum, which a histogram
 * cannot be made of: a stat of this class is added to each of the task's two sensors (and to
 * its offset-commit-completion sensor, for failures), which gets every value they record.
 * Those sensors exist from the task's construction, which happens before Kafka's worker runs
 * it; what they recorded before the stats were added (between the start call's return and
 * {@link #start}) is not seen. The stats are registered under a group of their own
 * ({@link #RELAY_GROUP}), not the task's. The topics are taken from before the task starts
 * (the session listens for them first).
 */
final class TaskReports implements AutoCloseable {

    private static final Logger log = LoggerFactory.getLogger(TaskReports.class);

    /** How often the task's metrics are read and, when they changed, sent. */
    static final long REPORT_MS = 1_000L;
    /** The most batch sizes or commit times kept between two reports (then dropped, counted). */
    static final int MAX_OBSERVATIONS = 10_000;
    /** How Kafka's {@code ConnectMetrics.MetricGroup} names its sensors: prefix, group id, ';'. */
    static final String SENSOR_PREFIX = "connect-sensor-group: ";

    /** Kafka's cumulative metrics of a source task, of a sink task, and of both (errors). */
    static final List<String> SOURCE_TOTALS = List.of("source-record-poll-total", "source-record-write-total");
    static final List<String> SINK_TOTALS = List.of("sink-record-read-total", "sink-record-send-total");
    static final List<String> ERROR_TOTALS = List.of(
            "total-record-failures", "total-record-errors", "total-records-skipped", "total-retries",
            "total-errors-logged", "deadletterqueue-produce-requests", "deadletterqueue-produce-failures");
    static final String LAST_ERROR = "last-error-timestamp";
    /** The group of Kafka's registry that plugins' own metrics (KIP-877) are in. */
    static final String PLUGINS_GROUP = "plugins";
    /**
     * The group of the stats added to the task's sensors: a sensor registers a metric for each
     * stat, and one in Kafka's task group would show as an attribute of its
     * {@code connector-task-metrics} MBean (and to any metric reporter), which users monitor.
     */
    static final String RELAY_GROUP = "connect-grpc-relay";

    private final DriverLink link;
    private final Metrics metrics;
    private final ConnectorTaskId id;
    /** The cumulative metrics read, by Kafka name, and what was last sent of each. */
    private final Map<String, MetricName> totals = new LinkedHashMap<>();
    private final Map<String, Double> sent = new HashMap<>();
    private final MetricName lastError;
    private final Map<String, String> tags;
    /** The prefix of the names of the task's sensors in Kafka's registry. */
    private final String sensors;
    private double lastErrorSent;
    private final Observations batchSizes = new Observations(false);
    private final Observations commitTimes = new Observations(false);
    private final Observations commitFailures = new Observations(true);
    private final BlockingQueue<String> topics = new LinkedBlockingQueue<>();
    /** The task's plugins' metrics as last sent. */
    private Map<MetricName, Double> pluginsSent = Map.of();
    private final String connectorTag;
    private final String taskTag;
    private final Thread thread;
    private volatile boolean closing;

    TaskReports(DriverLink link, ConnectMetrics connectMetrics, ConnectorTaskId id, boolean sink) {
        this.link = link;
        this.metrics = connectMetrics.metrics();
        this.id = id;
        ConnectMetricsRegistry registry = connectMetrics.registry();
        connectorTag = registry.connectorTagName();
        taskTag = registry.taskTagName();
        Map<String, String> tags = new LinkedHashMap<>();
        tags.put(registry.connectorTagName(), id.connector());
        tags.put(registry.taskTagName(), Integer.toString(id.task()));
        String group = sink ? registry.sinkTaskGroupName() : registry.sourceTaskGroupName();
        for (String name : sink ? SINK_TOTALS : SOURCE_TOTALS) {
            totals.put(name, new MetricName(name, group, "", tags));
        }
        String errors = registry.taskErrorHandlingGroupName();
        for (String name : ERROR_TOTALS) {
            totals.put(name, new MetricName(name, errors, "", tags));
        }
        lastError = new MetricName(LAST_ERROR, errors, "", tags);
        sensors = SENSOR_PREFIX + new ConnectMetrics.MetricGroupId(registry.taskGroupName(), tags) + ";";
        this.tags = tags;
        this.thread = new Thread(this::run, "connect-grpc-task-reports-" + id);
        this.thread.setDaemon(true);
    }

    /**
     * Starts reporting on the task, which Kafka's worker was just asked to start (its metric
     * groups exist): the stats are added to its sensors and the reporting thread starts.
     */
    void start() {
        observe();
        thread.start();
    }

    /** Adds the stats to the task's batch-size, commit-time and offset-commit-completion sensors. */
    void observe() {
        observe("batch-size", "connect-grpc-relayed-batch-size", batchSizes);
        observe("commit-time", "connect-grpc-relayed-commit-time", commitTimes);
        observe("offset-commit-completion", "connect-grpc-relayed-commit-failures", commitFailures);
    }

    /** A topic the task used (from Kafka's task thread or its producer's callback). */
    void topicUsed(String topic) {
        topics.add(topic);
    }

    private void observe(String sensor, String stat, Observations observations) {
        String sensorName = sensors + sensor;
        Sensor found = metrics.getSensor(sensorName);
        if (found == null) {
            log.debug("Task {} has no sensor {}: its values are not relayed", id, sensorName);
            return;
        }
        try {
            found.add(new MetricName(stat, RELAY_GROUP, "", tags), observations);
        } catch (IllegalArgumentException e) {
            // an earlier instance's stat is still there (its group not yet closed)
            log.debug("Could not observe sensor {} of task {}", sensorName, id, e);
        }
    }

    private void run() {
        long next = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(REPORT_MS);
        try {
            while (!closing) {
                long waitNs = Math.max(0L, next - System.nanoTime());
                String topic = topics.poll(waitNs, TimeUnit.NANOSECONDS);
                if (topic != null) {
                    sendTopics(topic);
                }
                if (System.nanoTime() >= next) {
                    report();
                    next = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(REPORT_MS);
                }
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        } catch (IOException e) {
            // the driver is gone: the session sees its connection close and stops the task
            log.debug("Could not relay task {}'s reports to the driver", id, e);
        }
    }

    private void sendTopics(String first) throws IOException {
        Set<String> names = new LinkedHashSet<>();
        names.add(first);
        String more;
        while ((more = topics.poll()) != null) {
            names.add(more);
        }
        link.send(HostMessage.newBuilder().setTopicsUsed(TopicsUsed.newBuilder().addAllTopics(names)).build());
    }

    /**
     * Reads the task's metrics and sends what changed since the last report, with the topics
     * that came meanwhile. A metric Kafka's worker no longer has (its task stopped) is skipped.
     */
    synchronized void report() throws IOException {
        String topic = topics.poll();
        if (topic != null) {
            sendTopics(topic);
        }
        TaskMetrics.Builder report = TaskMetrics.newBuilder();
        for (Map.Entry<String, MetricName> total : totals.entrySet()) {
            Double value = read(total.getValue());
            if (value == null) {
                continue;
            }
            double before = sent.getOrDefault(total.getKey(), 0.0);
            if (value > before) {
                report.putIncrements(total.getKey(), value - before);
                sent.put(total.getKey(), value);
            }
        }
        Double error = read(lastError);
        if (error != null && error > 0 && error != lastErrorSent) {
            report.putGauges(LAST_ERROR, error);
            lastErrorSent = error;
        }
        batchSizes.drainTo(report::addBatchSizes);
        commitTimes.drainTo(report::addCommitTimesMs);
        report.setCommitFailures(commitFailures.takeCount());
        report.setDropped(batchSizes.takeDropped() + commitTimes.takeDropped());
        Map<MetricName, Double> plugins = pluginMetrics();
        if (!plugins.equals(pluginsSent)) {
            PluginMetricValues.Builder values = PluginMetricValues.newBuilder();
            plugins.forEach((name, value) -> values.addMetrics(PluginMetricValue.newBuilder()
                    .setName(name.name()).setDescription(name.description())
                    .putAllTags(name.tags()).setValue(value)));
            report.setPluginMetrics(values);
            pluginsSent = plugins;
        }
        TaskMetrics built = report.build();
        if (!built.equals(TaskMetrics.getDefaultInstance())) {
            link.send(HostMessage.newBuilder().setTaskMetrics(built).build());
        }
    }

    /** The metrics the task's plugins registered (KIP-877) that have a number for a value. */
    private Map<MetricName, Double> pluginMetrics() {
        Map<MetricName, Double> found = new LinkedHashMap<>();
        String task = Integer.toString(id.task());
        for (Map.Entry<MetricName, KafkaMetric> entry : metrics.metrics().entrySet()) {
            MetricName name = entry.getKey();
            if (!PLUGINS_GROUP.equals(name.group())
                    || !id.connector().equals(name.tags().get(connectorTag))
                    || !task.equals(name.tags().get(taskTag))) {
                continue;
            }
            Object value;
            try {
                value = entry.getValue().metricValue();
            } catch (RuntimeException e) {
                // a plugin's gauge that throws is left out of this report
                log.debug("Could not read metric {} of task {}", name, id, e);
                continue;
            }
            if (value instanceof Number number) {
                found.put(name, number.doubleValue());
            }
        }
        return found;
    }

    private Double read(MetricName name) {
        KafkaMetric metric = metrics.metric(name);
        if (metric == null) {
            return null;
        }
        Object value = metric.metricValue();
        return value instanceof Number number ? number.doubleValue() : null;
    }

    /**
     * Sends the last report (the task stopped, or is about to) and ends the thread; the stats
     * leave Kafka's registry with the task's metric group.
     */
    @Override
    public void close() {
        closing = true;
        thread.interrupt();
        try {
            thread.join(REPORT_MS);
            report();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        } catch (IOException e) {
            log.debug("Could not send task {}'s last report", id, e);
        }
    }

    /**
     * A stat added to one of Kafka's sensors: keeps each value the sensor records until the
     * next report takes them ({@code countZeros}: counts the zeros only, Kafka's commit
     * failures).
     */
    private static final class Observations implements MeasurableStat {
        private final boolean countZeros;
        private final ConcurrentLinkedQueue<Double> values = new ConcurrentLinkedQueue<>();
        private final AtomicLong kept = new AtomicLong();
        private final AtomicLong dropped = new AtomicLong();
        private final AtomicLong zeros = new AtomicLong();

        Observations(boolean countZeros) {
            this.countZeros = countZeros;
        }

        @Override
        public void record(MetricConfig config, double value, long timeMs) {
            if (countZeros) {
                if (value == 0.0) {
                    zeros.incrementAndGet();
                }
                return;
            }
            if (kept.incrementAndGet() > MAX_OBSERVATIONS) {
                kept.decrementAndGet();
                dropped.incrementAndGet();
                return;
            }
            values.add(value);
        }

        @Override
        public double measure(MetricConfig config, long now) {
            return countZeros ? zeros.get() : kept.get();
        }

        void drainTo(DoubleConsumer sink) {
            Double value;
            while ((value = values.poll()) != null) {
                kept.decrementAndGet();
                sink.accept(value);
            }
        }

        long takeCount() {
            return zeros.getAndSet(0L);
        }

        long takeDropped() {
            return dropped.getAndSet(0L);
        }
    }
}
