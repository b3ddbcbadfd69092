package io.connectgrpc.jvm.connectors;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

import org.apache.kafka.common.metrics.Gauge;
import org.apache.kafka.common.metrics.Metrics;
import org.apache.kafka.common.metrics.internals.PluginMetricsImpl;
import org.junit.jupiter.api.Test;

/**
 * A connector's own metrics as the host reads them: registered through Kafka's
 * {@link PluginMetricsImpl} with the tags Kafka's worker gives a connector, told apart from
 * another connector's, and gone once the connector's PluginMetrics is closed.
 */
class ConnectorPluginMetricsTest {

    private static LinkedHashMap<String, String> tags(String key, String value) {
        LinkedHashMap<String, String> tags = new LinkedHashMap<>();
        tags.put(key, value);
        return tags;
    }

    @Test
    void readsTheConnectorsNumericMetricsWithTheirTagsAndNoOtherConnectors() throws IOException {
        try (Metrics metrics = new Metrics()) {
            PluginMetricsImpl mine = new PluginMetricsImpl(metrics, Map.of("connector", "mine"));
            PluginMetricsImpl other = new PluginMetricsImpl(metrics, Map.of("connector", "other"));
            mine.addMetric(mine.metricName("polls", "How often it polled", tags("unit", "calls")),
                    (Gauge<Long>) (config, now) -> 7L);
            mine.addMetric(mine.metricName("label", "Not a number", new LinkedHashMap<>()),
                    (Gauge<String>) (config, now) -> "text");
            mine.addMetric(mine.metricName("broken", "Throws", new LinkedHashMap<>()),
                    (Gauge<Long>) (config, now) -> {
                        throw new IllegalStateException("broken gauge");
                    });
            other.addMetric(other.metricName("polls", "", new LinkedHashMap<>()),
                    (Gauge<Long>) (config, now) -> 1L);

            List<Map<String, Object>> read = ConnectorPluginMetrics.read(metrics, "mine");

            assertEquals(1, read.size(), read::toString);
            Map<String, Object> polls = read.get(0);
            assertEquals("polls", polls.get("name"));
            assertEquals("How often it polled", polls.get("description"));
            assertEquals(Map.of("connector", "mine", "unit", "calls"), polls.get("tags"));
            assertEquals(7.0, polls.get("value"));

            mine.close();
            assertTrue(ConnectorPluginMetrics.read(metrics, "mine").isEmpty());
            assertEquals(1, ConnectorPluginMetrics.read(metrics, "other").size());
            other.close();
        }
    }
}
