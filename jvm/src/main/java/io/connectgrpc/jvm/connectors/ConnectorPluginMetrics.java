package io.connectgrpc.jvm.connectors;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

import org.apache.kafka.common.MetricName;
import org.apache.kafka.common.metrics.KafkaMetric;
import org.apache.kafka.common.metrics.Metrics;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The metrics a connector registered through its context's {@code PluginMetrics} (KIP-877),
 * read from the host's registry for the worker to export: Kafka's worker tags a connector's
 * plugin metrics with its name only ({@code connector}, in group {@code plugins}), and the
 * host's registry holds no task's, so those are the connector's.
 */
final class ConnectorPluginMetrics {

    private static final Logger log = LoggerFactory.getLogger(ConnectorPluginMetrics.class);

    /** The group of Kafka's registry that plugins' own metrics are in. */
    static final String GROUP = "plugins";
    /** The tag Kafka's worker gives a connector's plugin metrics. */
    static final String CONNECTOR_TAG = "connector";

    private ConnectorPluginMetrics() {
    }

    /**
     * Each metric of the connector that has a number for a value, as {@code {"name",
     * "description", "tags", "value"}} (the tags Kafka's, the connector's included); a gauge
     * that throws is left out.
     */
    static List<Map<String, Object>> read(Metrics metrics, String connector) {
        List<Map<String, Object>> found = new ArrayList<>();
        for (Map.Entry<MetricName, KafkaMetric> entry : metrics.metrics().entrySet()) {
            MetricName name = entry.getKey();
            if (!GROUP.equals(name.group()) || !connector.equals(name.tags().get(CONNECTOR_TAG))) {
                continue;
            }
            Object value;
            try {
                value = entry.getValue().metricValue();
            } catch (RuntimeException e) {
                log.debug("Could not read metric {} of connector {}", name, connector, e);
                continue;
            }
            if (value instanceof Number number) {
                Map<String, Object> metric = new LinkedHashMap<>();
                metric.put("name", name.name());
                metric.put("description", name.description());
                metric.put("tags", new LinkedHashMap<>(name.tags()));
                metric.put("value", number.doubleValue());
                found.add(metric);
            }
        }
        return found;
    }
}
