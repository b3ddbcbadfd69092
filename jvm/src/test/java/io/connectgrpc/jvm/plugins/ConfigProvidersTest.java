package io.connectgrpc.jvm.plugins;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;

import org.junit.jupiter.api.Test;

/**
 * The worker's Java config providers, built by Kafka's {@code Plugins} from the scan and
 * configured with their {@code param.*} settings: Kafka's own FileConfigProvider (on the
 * classpath of the scan) stands for any provider of {@code plugin.path}.
 */
class ConfigProvidersTest {

    private static final String FILE_PROVIDER = "org.apache.kafka.common.config.provider.FileConfigProvider";

    @Test
    void aProviderIsBuiltOnceWithItsParamsAndLooksUpAPathsKeys() throws IOException {
        Path secrets = Files.createTempDirectory(SharedScan.work(), "secrets");
        Path file = secrets.resolve("db.properties");
        Files.writeString(file, "password=s3cret\nuser=app\n");
        Path elsewhere = Files.createTempDirectory(SharedScan.work(), "elsewhere");
        Path outside = elsewhere.resolve("other.properties");
        Files.writeString(outside, "password=not-for-you\n");
        try (ConfigProviders providers = new ConfigProviders(SharedScan.catalogue().plugins())) {
            Map<String, String> params = Map.of("allowed.paths", secrets.toString());
            assertEquals(Map.of("class", FILE_PROVIDER), providers.open("vault", FILE_PROVIDER, params));
            Map<String, Object> found = providers.get("vault", FILE_PROVIDER, params, file.toString(),
                    List.of("password", "missing"));
            assertEquals(Map.of("password", "s3cret"), found.get("data"));
            assertTrue(found.containsKey("ttl"));
            assertNull(found.get("ttl"));
            // its allowed.paths hold: Kafka's provider finds nothing outside them
            Map<String, Object> refused = providers.get("vault", FILE_PROVIDER, params, outside.toString(),
                    List.of("password"));
            assertEquals(Map.of(), refused.get("data"));
        }
    }

    @Test
    void aClassThatIsNoConfigProviderOfTheScanIsAnErrorNamingIt() {
        try (ConfigProviders providers = new ConfigProviders(SharedScan.catalogue().plugins())) {
            Map<String, Object> answer = providers.open("vault", "com.example.NoSuchProvider", Map.of());
            @SuppressWarnings("unchecked")
            Map<String, Object> error = (Map<String, Object>) answer.get("error");
            assertTrue(String.valueOf(error.get("message")).contains("com.example.NoSuchProvider"), error.toString());
            Map<String, Object> lookup = providers.get("vault", "com.example.NoSuchProvider", Map.of(), "/x",
                    List.of("k"));
            assertFalse(lookup.containsKey("data"), lookup.toString());
        }
    }
}
