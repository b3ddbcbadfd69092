package io.connectgrpc.jvm.plugins;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.Optional;

import org.apache.kafka.connect.connector.Connector;
import org.apache.kafka.connect.errors.ConnectException;
import org.apache.kafka.connect.runtime.rest.entities.ConfigInfos;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * Kafka Connect's plugin isolation and its handling of bad plugins, shown on small plugins the
 * test compiles: each behaves here as it does in a Kafka Connect worker, because the scan and
 * the class loaders are Kafka's own.
 */
class IsolationTest {

    private static PluginCatalogue catalogue;

    @BeforeAll
    static void scan() {
        catalogue = SharedScan.catalogue();
    }

    private static Optional<PluginDescription> plugin(String className) {
        return SharedScan.plugin(className, "source");
    }

    @Test
    void twoPluginsWithConflictingDependencyVersionsEachSeeTheirOwn() {
        PluginDescription a = plugin("tiny.a.AConnector").orElseThrow();
        PluginDescription b = plugin("tiny.b.BConnector").orElseThrow();
        assertEquals("a-1.0", a.version());
        assertEquals("b-2.0", b.version());
        assertTrue(a.location().endsWith("/plugins/plugin-a/"), a.location());
        assertEquals("source", a.type());
        assertTrue(a.config().stream().anyMatch(key -> key.name().equals("a.setting")));

        Connector aInstance = catalogue.plugins().newConnector("tiny.a.AConnector");
        Connector bInstance = catalogue.plugins().newConnector("tiny.b.BConnector");
        assertEquals("a-1.0", aInstance.version());
        assertEquals("b-2.0", bInstance.version());
        assertNotSame(aInstance.getClass().getClassLoader(), bInstance.getClass().getClassLoader());
    }

    @Test
    void aCorruptJarIsSkippedAndTheOtherPluginsStillLoad() {
        assertTrue(catalogue.describe().stream().noneMatch(
                p -> p.location() != null && p.location().contains("broken")));
        assertTrue(plugin("tiny.a.AConnector").isPresent());
    }

    @Test
    void aConnectorWhoseSuperclassIsMissingIsNotListed() {
        assertFalse(plugin("tiny.m.NeedsMissing").isPresent());
    }

    @Test
    void aVersionThatNeedsAMissingClassIsUndefined() {
        // Kafka logs the NoClassDefFoundError and lists the plugin with no version.
        assertEquals("undefined", plugin("tiny.v.VersionNeedsMissing").orElseThrow().version());
    }

    @Test
    void validatingAnUnknownConnectorClassFailsAsKafkaConnectDoes() {
        Exception error = assertThrows(Exception.class, () -> catalogue.validate(Map.of(
                "name", "x", "connector.class", "tiny.nowhere.Connector")));
        assertTrue(error.getMessage().contains("tiny.nowhere.Connector"), error.getMessage());
    }

    @Test
    void validatingATinyConnectorMergesTheFrameworksConfigWithItsOwn() throws Exception {
        ConfigInfos result = catalogue.validate(Map.of(
                "name", "a", "connector.class", "tiny.a.AConnector", "tasks.max", "not-a-number"));
        assertEquals("tiny.a.AConnector", result.name());
        List<String> names = result.configs().stream().map(info -> info.configKey().name()).toList();
        assertTrue(names.contains("a.setting"), names.toString());
        assertTrue(names.contains("tasks.max"), names.toString());
        List<String> withErrors = result.configs().stream()
                .filter(info -> info.configValue() != null && !info.configValue().errors().isEmpty())
                .map(info -> info.configValue().name())
                .toList();
        assertEquals(List.of("tasks.max"), withErrors, result.toString());
    }

    @Test
    void discoveryModesFollowKip898() throws IOException {
        Path mixed = Files.createDirectories(SharedScan.work().resolve("mixed"));
        Path classes = TinyPlugins.compile(SharedScan.work(), Map.of(
                "tiny.c.CConnector", TinyPlugins.connector(
                        "tiny.c", "CConnector", "org.apache.kafka.connect.source.SourceConnector",
                        "\"c\"", "c.setting"),
                "tiny.d.DConnector", TinyPlugins.connector(
                        "tiny.d", "DConnector", "org.apache.kafka.connect.source.SourceConnector",
                        "\"d\"", "d.setting")));
        TinyPlugins.jar(classes, "tiny/c/", mixed.resolve("with-manifest/c.jar"), "tiny.c.CConnector");
        TinyPlugins.jar(classes, "tiny/d/", mixed.resolve("without-manifest/d.jar"), null);

        try (PluginCatalogue serviceLoaded = PluginCatalogue.open(
                Map.of("plugin.path", mixed.toString(), "plugin.discovery", "service_load"))) {
            List<String> found = serviceLoaded.describe().stream().map(PluginDescription::className).toList();
            assertTrue(found.contains("tiny.c.CConnector"), found.toString());
            assertFalse(found.contains("tiny.d.DConnector"), found.toString());
        }
        ConnectException refused = assertThrows(ConnectException.class, () -> PluginCatalogue.open(
                Map.of("plugin.path", mixed.toString(), "plugin.discovery", "hybrid_fail")));
        assertTrue(refused.getMessage().contains("tiny.d.DConnector"), refused.getMessage());
    }
}
