package io.connectgrpc.jvm.plugins;

import java.io.IOException;
import java.io.OutputStream;
import java.net.URISyntaxException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.jar.JarEntry;
import java.util.jar.JarOutputStream;
import java.util.stream.Stream;

import javax.tools.JavaCompiler;
import javax.tools.ToolProvider;

import org.apache.kafka.common.config.ConfigDef;
import org.apache.kafka.connect.source.SourceConnector;

/**
 * Small plugins compiled and packed by the tests themselves, for what the fetched plugins
 * cannot show: two plugins that carry different versions of the same dependency, a plugin
 * whose classes need one that is not there, a plugin without a ServiceLoader manifest.
 */
final class TinyPlugins {

    private TinyPlugins() {
    }

    /** The source of a source connector whose version and one config key are given. */
    static String connector(String pkg, String simpleName, String superclass, String versionExpression, String key) {
        return String.join("\n",
                "package " + pkg + ";",
                "import java.util.List;",
                "import java.util.Map;",
                "import org.apache.kafka.common.config.ConfigDef;",
                "import org.apache.kafka.connect.connector.Task;",
                "public class " + simpleName + " extends " + superclass + " {",
                "  public String version() { return " + versionExpression + "; }",
                "  public void start(Map<String, String> props) { }",
                "  public Class<? extends Task> taskClass() { return null; }",
                "  public List<Map<String, String>> taskConfigs(int maxTasks) { return List.of(); }",
                "  public void stop() { }",
                "  public ConfigDef config() {",
                "    return new ConfigDef().define(\"" + key + "\", ConfigDef.Type.STRING, \"x\",",
                "        ConfigDef.Importance.LOW, \"A setting of " + simpleName + ".\");",
                "  }",
                "}",
                "");
    }

    /** A class {@code pkg.Dep} whose {@code version()} answers {@code version}. */
    static String dependency(String pkg, String version) {
        return "package " + pkg + ";\npublic final class Dep {\n"
                + "  public static String version() { return \"" + version + "\"; }\n}\n";
    }

    /** An abstract source connector other classes extend. */
    static String base(String pkg) {
        return "package " + pkg + ";\n"
                + "public abstract class Base extends org.apache.kafka.connect.source.SourceConnector { }\n";
    }

    /**
     * Compiles {@code sources} (class name to source) against Kafka's Connect API and the
     * classes in {@code classpath}, into a new directory under {@code work}.
     */
    static Path compile(Path work, Map<String, String> sources, Path... classpath) throws IOException {
        Path src = Files.createTempDirectory(work, "src");
        Path out = Files.createTempDirectory(work, "classes");
        List<String> files = new ArrayList<>();
        for (Map.Entry<String, String> source : sources.entrySet()) {
            Path file = src.resolve(source.getKey().replace('.', '/') + ".java");
            Files.createDirectories(file.getParent());
            Files.writeString(file, source.getValue(), StandardCharsets.UTF_8);
            files.add(file.toString());
        }
        List<String> path = new ArrayList<>(List.of(codeSource(SourceConnector.class), codeSource(ConfigDef.class)));
        for (Path entry : classpath) {
            path.add(entry.toString());
        }
        List<String> args = new ArrayList<>(List.of(
                "--release", "17", "-nowarn", "-classpath", String.join(java.io.File.pathSeparator, path),
                "-d", out.toString()));
        args.addAll(files);
        JavaCompiler javac = ToolProvider.getSystemJavaCompiler();
        if (javac == null) {
            throw new IllegalStateException("the tests need a JDK (javax.tools), not a JRE");
        }
        int status = javac.run(null, null, null, args.toArray(String[]::new));
        if (status != 0) {
            throw new IllegalStateException("javac failed with status " + status + " for " + sources.keySet());
        }
        return out;
    }

    /**
     * Packs the classes under {@code classes} whose path starts with {@code packagePath} into
     * {@code jar}; {@code serviceLoaded} (may be null) is listed in a ServiceLoader manifest
     * for {@link SourceConnector}, as KIP-898 asks of plugins.
     */
    static Path jar(Path classes, String packagePath, Path jar, String serviceLoaded) throws IOException {
        Files.createDirectories(jar.getParent());
        try (OutputStream file = Files.newOutputStream(jar); JarOutputStream out = new JarOutputStream(file)) {
            List<Path> entries;
            try (Stream<Path> walk = Files.walk(classes)) {
                entries = walk.filter(Files::isRegularFile)
                        .filter(p -> classes.relativize(p).toString().startsWith(packagePath))
                        .sorted()
                        .toList();
            }
            for (Path entry : entries) {
                out.putNextEntry(new JarEntry(classes.relativize(entry).toString().replace('\\', '/')));
                out.write(Files.readAllBytes(entry));
                out.closeEntry();
            }
            if (serviceLoaded != null) {
                out.putNextEntry(new JarEntry("META-INF/services/" + SourceConnector.class.getName()));
                out.write((serviceLoaded + "\n").getBytes(StandardCharsets.UTF_8));
                out.closeEntry();
            }
        }
        return jar;
    }

    private static String codeSource(Class<?> type) {
        try {
            return Path.of(type.getProtectionDomain().getCodeSource().getLocation().toURI()).toString();
        } catch (URISyntaxException e) {
            throw new IllegalStateException(e);
        }
    }
}
