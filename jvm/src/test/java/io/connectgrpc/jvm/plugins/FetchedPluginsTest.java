package io.connectgrpc.jvm.plugins;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.stream.Collectors;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import org.apache.kafka.connect.runtime.rest.entities.ConfigInfo;
import org.apache.kafka.connect.runtime.rest.entities.ConfigInfos;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * The plugins {@code make install} fetched (Kafka's connect-file and Debezium's PostgreSQL
 * connector), as Kafka Connect 4.4.0's own classes find, describe and validate them.
 */
class FetchedPluginsTest {

    private Path fetched;

    /** Each test, not the class, is skipped: Surefire reports a test skipped with its reason. */
    @BeforeEach
    void fetchedPlugins() {
        assumeTrue(SharedScan.fetchedPath().isPresent(), SharedScan.fetchedMissingMessage());
        fetched = SharedScan.fetchedPath().orElseThrow();
    }

    private static PluginDescription plugin(String className, String type) {
        return SharedScan.plugin(className, type).orElseThrow(
                () -> new AssertionError(type + " " + className + " not found in " + SharedScan.catalogue().describe()));
    }

    private static Set<String> keys(PluginDescription plugin) {
        return plugin.config().stream().map(key -> key.name()).collect(Collectors.toSet());
    }

    @Test
    void debeziumPostgresConnectorIsListedWithItsVersionAndConfig() {
        PluginDescription postgres = plugin("io.debezium.connector.postgresql.PostgresConnector", "source");
        assertEquals("3.6.1.Final", postgres.version());
        assertTrue(postgres.location().endsWith("/debezium-connector-postgres/"), postgres.location());
        assertTrue(keys(postgres).containsAll(List.of(
                "database.hostname", "database.port", "database.user", "topic.prefix", "plugin.name")),
                keys(postgres).toString());
        // Debezium's transformations and converters come from the same plugin location.
        assertEquals("3.6.1.Final", plugin("io.debezium.transforms.ExtractNewRecordState", "transformation").version());
        assertEquals("3.6.1.Final", plugin("io.debezium.converters.BinaryDataConverter", "converter").version());
    }

    @Test
    void kafkasFileStreamConnectorsAreListedWithTheirConfig() {
        PluginDescription source = plugin("org.apache.kafka.connect.file.FileStreamSourceConnector", "source");
        PluginDescription sink = plugin("org.apache.kafka.connect.file.FileStreamSinkConnector", "sink");
        assertTrue(source.location().endsWith("/kafka-connect-file/"), source.location());
        assertTrue(keys(source).containsAll(List.of("file", "topic", "batch.size")), keys(source).toString());
        assertTrue(keys(sink).containsAll(List.of("file", "topics")), keys(sink).toString());
        // connect-file 4.3.1 reads its version through a class Kafka 4.4.0 moved
        // (org.apache.kafka.common.utils.AppInfoParser): the plugin's own kafka-clients serves it.
        assertEquals("4.3.1", source.version());
        assertEquals("4.3.1", sink.version());
    }

    @Test
    void theRuntimesOwnPluginsAndConfigProvidersAreListedFromTheClasspath() {
        PluginDescription json = plugin("org.apache.kafka.connect.json.JsonConverter", "converter");
        assertEquals("4.4.0", json.version());
        assertEquals("classpath", json.location());
        assertTrue(keys(json).contains("schemas.enable"));
        assertEquals("4.4.0", plugin("org.apache.kafka.connect.transforms.predicates.TopicNameMatches", "predicate").version());
        assertEquals("4.4.0", plugin("org.apache.kafka.connect.storage.SimpleHeaderConverter", "header_converter").version());
        // The runtime's, and each plugin's own kafka-clients' (isolated as Kafka Connect isolates
        // config providers), none with a config definition.
        List<PluginDescription> files = SharedScan.catalogue().describe().stream()
                .filter(p -> p.className().equals("org.apache.kafka.common.config.provider.FileConfigProvider"))
                .toList();
        assertTrue(files.stream().anyMatch(p -> p.location().equals("classpath")), files.toString());
        assertTrue(files.stream().allMatch(p -> p.type().equals("configprovider") && p.config() == null),
                files.toString());
    }

    @Test
    void theListingIsJsonInKafkasRestShape() throws Exception {
        JsonNode listing = Json.MAPPER.readTree(Json.write(JavaPluginHost.listing(SharedScan.catalogue())));
        assertEquals("hybrid_warn", listing.get("plugin_discovery").asText());
        JsonNode postgres = null;
        for (JsonNode plugin : listing.get("plugins")) {
            if (plugin.get("class").asText().equals("io.debezium.connector.postgresql.PostgresConnector")) {
                postgres = plugin;
            }
        }
        assertTrue(postgres != null, "PostgresConnector in the JSON listing");
        assertEquals("source", postgres.get("type").asText());
        JsonNode first = postgres.get("config").get(0);
        for (String field : List.of("name", "type", "required", "default_value", "importance", "documentation",
                "group", "order_in_group", "width", "display_name", "dependents")) {
            assertTrue(first.has(field), field + " in " + first);
        }
    }

    @Test
    void fileStreamSourceValidationReportsAMissingTopic() throws Exception {
        ConfigInfos result = SharedScan.catalogue().validate(Map.of(
                "name", "file-source",
                "connector.class", "org.apache.kafka.connect.file.FileStreamSourceConnector",
                "file", "/tmp/input.txt"));
        assertEquals(Map.of("topic", 1), errorsByKey(result), result.toString());
    }

    @Test
    void theErrorsOfAValidationAreItsKeysAndErrorsInKafkasOrder() throws Exception {
        ConfigInfos result = SharedScan.catalogue().validate(Map.of(
                "name", "file-source",
                "connector.class", "org.apache.kafka.connect.file.FileStreamSourceConnector",
                "file", "/tmp/input.txt"));
        JsonNode full = new ObjectMapper().readTree(Json.write(result));
        JsonNode errors = new ObjectMapper().readTree(Json.write(JavaPluginHost.errorsOf(result)));
        assertEquals(full.get("name"), errors.get("name"));
        assertEquals(full.get("error_count"), errors.get("error_count"));
        assertEquals(full.get("groups"), errors.get("groups"));
        assertEquals(full.get("configs").size(), errors.get("configs").size());
        for (int i = 0; i < full.get("configs").size(); i++) {
            JsonNode value = full.get("configs").get(i).get("value");
            JsonNode reduced = errors.get("configs").get(i);
            assertEquals(List.of("value"), List.copyOf(iterable(reduced.fieldNames())), reduced.toString());
            assertEquals(value.get("name"), reduced.get("value").get("name"));
            assertEquals(value.get("errors"), reduced.get("value").get("errors"));
        }
        assertTrue(errors.toString().length() * 10 < full.toString().length(), errors.toString());
    }

    private static <T> List<T> iterable(Iterator<T> items) {
        List<T> all = new ArrayList<>();
        items.forEachRemaining(all::add);
        return all;
    }

    @Test
    void fileStreamSourceValidationAcceptsAGoodConfigByItsAlias() throws Exception {
        // Kafka Connect accepts a plugin's simple name or its name without "Connector".
        ConfigInfos result = SharedScan.catalogue().validate(Map.of(
                "name", "file-source",
                "connector.class", "FileStreamSource",
                "file", "/tmp/input.txt",
                "topic", "lines"));
        assertEquals(0, result.errorCount(), result.toString());
    }

    @Test
    void debeziumValidationReportsAnUnreachableDatabaseOnItsField() throws Exception {
        // Port 1 on the loopback address: refused at once, nothing listens there.
        ConfigInfos result = SharedScan.catalogue().validate(Map.of(
                "name", "pg",
                "connector.class", "io.debezium.connector.postgresql.PostgresConnector",
                "database.hostname", "127.0.0.1",
                "database.port", "1",
                "database.user", "postgres",
                "database.dbname", "postgres",
                "topic.prefix", "pg"));
        assertEquals(Set.of("database.hostname"), errorsByKey(result).keySet(), result.toString());
    }

    @Test
    void serviceLoadingFindsTheFetchedPluginsByTheirManifests() {
        try (PluginCatalogue serviceLoaded = PluginCatalogue.open(
                Map.of("plugin.path", fetched.toString(), "plugin.discovery", "service_load"))) {
            Set<String> found = serviceLoaded.describe().stream()
                    .map(PluginDescription::className).collect(Collectors.toSet());
            assertTrue(found.containsAll(List.of(
                    "io.debezium.connector.postgresql.PostgresConnector",
                    "org.apache.kafka.connect.file.FileStreamSourceConnector",
                    "org.apache.kafka.connect.file.FileStreamSinkConnector")), found.toString());
        }
    }

    private static Map<String, Integer> errorsByKey(ConfigInfos result) {
        return result.configs().stream()
                .map(ConfigInfo::configValue)
                .filter(value -> value != null && !value.errors().isEmpty())
                .collect(Collectors.toMap(value -> value.name(), value -> value.errors().size()));
    }
}
