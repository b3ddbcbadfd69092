package io.connectgrpc.jvm.plugins;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Comparator;
import java.util.Map;
import java.util.Optional;
import java.util.stream.Stream;

/**
 * One reflective scan ({@code hybrid_warn}, Kafka Connect's default) shared by the test
 * classes of a run: of the plugins {@code make install} fetched (the {@code connect.grpc.plugins}
 * system property, which Maven's surefire configuration sets) and of the small plugins the
 * tests build, side by side on one {@code plugin.path}. A reflective scan walks the whole
 * classpath as well, which is most of its cost: one, not one per test class.
 */
final class SharedScan {

    /** The system property that names the fetched plugins' directory. */
    static final String FETCHED_PLUGINS_PROPERTY = "connect.grpc.plugins";

    private static Path work;
    private static Path tinyPath;
    private static PluginCatalogue catalogue;

    private SharedScan() {
    }

    /** The fetched plugins' directory, if the build fetched it. */
    static Optional<Path> fetchedPath() {
        String property = System.getProperty(FETCHED_PLUGINS_PROPERTY);
        if (property == null || property.isBlank()) {
            return Optional.empty();
        }
        Path path = Path.of(property);
        return Files.isDirectory(path.resolve("debezium-connector-postgres"))
                && Files.isDirectory(path.resolve("kafka-connect-file")) ? Optional.of(path) : Optional.empty();
    }

    /** Why the fetched-plugin tests are skipped, when they are. */
    static String fetchedMissingMessage() {
        return "no fetched plugins in " + System.getProperty(FETCHED_PLUGINS_PROPERTY)
                + " (system property " + FETCHED_PLUGINS_PROPERTY + "): run `make install`, which fetches"
                + " kafka-connect-file and debezium-connector-postgres there";
    }

    static synchronized Path work() {
        if (work == null) {
            try {
                work = Files.createTempDirectory("connect-grpc-jvm-test");
            } catch (IOException e) {
                throw new UncheckedIOException(e);
            }
            Runtime.getRuntime().addShutdownHook(new Thread(SharedScan::deleteWork));
        }
        return work;
    }

    /** The small plugins' directory (built once). */
    static synchronized Path tinyPath() {
        if (tinyPath == null) {
            try {
                tinyPath = buildTinyPlugins(Files.createDirectories(work().resolve("plugins")));
            } catch (IOException e) {
                throw new UncheckedIOException(e);
            }
        }
        return tinyPath;
    }

    static synchronized PluginCatalogue catalogue() {
        if (catalogue == null) {
            String path = fetchedPath().map(fetched -> fetched + "," + tinyPath()).orElse(tinyPath().toString());
            catalogue = PluginCatalogue.open(Map.of("plugin.path", path, "plugin.discovery", "hybrid_warn"));
        }
        return catalogue;
    }

    static Optional<PluginDescription> plugin(String className, String type) {
        return catalogue().describe().stream()
                .filter(p -> p.className().equals(className) && p.type().equals(type))
                .findFirst();
    }

    private static Path buildTinyPlugins(Path plugins) throws IOException {
        Path classes = TinyPlugins.compile(work(), Map.of(
                "tiny.a.AConnector", TinyPlugins.connector(
                        "tiny.a", "AConnector", "org.apache.kafka.connect.source.SourceConnector",
                        "\"a-\" + tiny.shared.Dep.version()", "a.setting"),
                "tiny.b.BConnector", TinyPlugins.connector(
                        "tiny.b", "BConnector", "org.apache.kafka.connect.source.SourceConnector",
                        "\"b-\" + tiny.shared.Dep.version()", "b.setting"),
                "tiny.shared.Dep", TinyPlugins.dependency("tiny.shared", "1.0"),
                "tiny.absent.Base", TinyPlugins.base("tiny.absent"),
                "tiny.m.NeedsMissing", TinyPlugins.connector(
                        "tiny.m", "NeedsMissing", "tiny.absent.Base", "\"1\"", "m.setting"),
                "tiny.gone.Dep", TinyPlugins.dependency("tiny.gone", "9"),
                "tiny.v.VersionNeedsMissing", TinyPlugins.connector(
                        "tiny.v", "VersionNeedsMissing", "org.apache.kafka.connect.source.SourceConnector",
                        "tiny.gone.Dep.version()", "v.setting")));
        Path dep2 = TinyPlugins.compile(work(), Map.of("tiny.shared.Dep", TinyPlugins.dependency("tiny.shared", "2.0")));

        // Two plugins, each with its own version of the same dependency class.
        TinyPlugins.jar(classes, "tiny/a/", plugins.resolve("plugin-a/a-connector.jar"), "tiny.a.AConnector");
        TinyPlugins.jar(classes, "tiny/shared/", plugins.resolve("plugin-a/shared-1.0.jar"), null);
        TinyPlugins.jar(classes, "tiny/b/", plugins.resolve("plugin-b/b-connector.jar"), "tiny.b.BConnector");
        TinyPlugins.jar(dep2, "tiny/shared/", plugins.resolve("plugin-b/shared-2.0.jar"), null);
        // A jar that is not a zip file.
        Files.createDirectories(plugins.resolve("broken"));
        Files.writeString(plugins.resolve("broken/broken.jar"), "not a zip file", StandardCharsets.UTF_8);
        // A connector whose superclass is in a jar the plugin lacks.
        TinyPlugins.jar(classes, "tiny/m/", plugins.resolve("needs-missing/m-connector.jar"), "tiny.m.NeedsMissing");
        // A connector whose version() needs a class the plugin lacks.
        TinyPlugins.jar(classes, "tiny/v/", plugins.resolve("version-missing/v-connector.jar"),
                "tiny.v.VersionNeedsMissing");
        return plugins;
    }

    private static void deleteWork() {
        if (catalogue != null) {
            catalogue.close();
        }
        try (Stream<Path> walk = Files.walk(work)) {
            walk.sorted(Comparator.reverseOrder()).forEach(path -> path.toFile().delete());
        } catch (IOException e) {
            // A temporary directory left behind is harmless.
        }
    }
}
