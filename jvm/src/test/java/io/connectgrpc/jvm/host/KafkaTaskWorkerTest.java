package io.connectgrpc.jvm.host;

import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.Map;

import com.fasterxml.jackson.databind.ObjectMapper;

import io.connectgrpc.jvm.host.proto.StartTask;

import org.apache.kafka.common.config.ConfigException;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * The build of a connect-grpc worker's Kafka worker ahead of its first task
 * ({@link KafkaTaskWorker#warm}), where it needs no broker: a build that fails. (One that
 * succeeds, and the tasks that then run on it, are tested with a broker, in Python's
 * integration tests of Java tasks.)
 */
class KafkaTaskWorkerTest {

    private static final ObjectMapper JSON = new ObjectMapper();

    @Test
    @Timeout(120)
    void aWarmBuildThatFailedIsMadeAgainByTheFirstTaskWhichReportsWhy() throws Exception {
        // no converters nor group.id: Kafka's DistributedConfig refuses them before any network call
        Map<String, String> props = Map.of("bootstrap.servers", "127.0.0.1:9");
        String workerId = "warm-test-refused";
        KafkaTaskWorker.warm(workerId, JSON.writeValueAsString(props), "{}");
        StartTask start = StartTask.newBuilder().setWorkerId(workerId).putAllWorkerProperties(props).build();
        // the task's own build's failure, not the warm build's (which a task would not see)
        ConfigException refused = assertThrows(ConfigException.class, () -> KafkaTaskWorker.forStart(start));
        assertTrue(refused.getMessage().startsWith("Missing required configuration"), refused.getMessage());
        KafkaTaskWorker.shutdown(workerId);  // nothing was built: nothing to stop
    }

    @Test
    void warmRefusesPropertiesThatAreNotAJsonObjectOfStrings() {
        IllegalArgumentException refused = assertThrows(IllegalArgumentException.class,
                () -> KafkaTaskWorker.warm("warm-test-json", "[\"bootstrap.servers\"]", "{}"));
        assertTrue(refused.getMessage().contains("worker properties"), refused.getMessage());
        refused = assertThrows(IllegalArgumentException.class,
                () -> KafkaTaskWorker.warm("warm-test-json", "{}", "null"));
        assertTrue(refused.getMessage().contains("plugin scan properties"), refused.getMessage());
    }
}
