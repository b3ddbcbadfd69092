package io.connectgrpc.jvm.plugins;

import java.util.Map;

import org.apache.kafka.connect.runtime.WorkerConfig;

/**
 * A Kafka Connect worker config for hosting plugins inside connect-grpc's worker, whose own
 * control plane (Python) knows the Kafka cluster.
 *
 * <p>Kafka's {@link WorkerConfig#kafkaClusterId()} asks the cluster for its id the first time
 * it is called, and Kafka's {@code Worker} calls it when it is built: the host is given the id
 * instead, so that building the plugin catalogue or validating a config never needs a broker.
 */
final class HostWorkerConfig extends WorkerConfig {

    private final String clusterId;

    HostWorkerConfig(Map<String, String> props, String clusterId) {
        super(baseConfigDef(), props);
        this.clusterId = clusterId;
    }

    @Override
    public String kafkaClusterId() {
        return clusterId;
    }
}
