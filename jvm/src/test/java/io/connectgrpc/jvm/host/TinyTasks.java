package io.connectgrpc.jvm.host;

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
 * A tiny plugin the host tests build themselves: a source connector and a sink connector
 * whose tasks do what their config's {@code tiny.mode} says ({@code idle}: a source task that
 * polls nothing until it is stopped; {@code fail-start}: a task whose {@code start} throws a
 * wrapped cause; {@code ignore-stop}: a source task whose {@code poll} keeps the thread for a
 * minute whatever happens), packed as a plugin jar with its ServiceLoader manifest.
 */
final class TinyTasks {

    static final String PACKAGE = "tiny.tasks";
    static final String SOURCE_CONNECTOR = PACKAGE + ".TinySourceConnector";
    static final String SINK_CONNECTOR = PACKAGE + ".TinySinkConnector";
    static final String SOURCE_TASK = PACKAGE + ".TinySourceTask";
    static final String SINK_TASK = PACKAGE + ".TinySinkTask";
    static final String VERSION = "tiny-1.0";

    private TinyTasks() {
    }

    private static String connector(String name, String superclass, String task) {
        return String.join("\n",
                "package " + PACKAGE + ";",
                "import java.util.List;",
                "import java.util.Map;",
                "import org.apache.kafka.common.config.ConfigDef;",
                "import org.apache.kafka.connect.connector.Task;",
                "public class " + name + " extends " + superclass + " {",
                "  private Map<String, String> props;",
                "  public String version() { return \"" + VERSION + "\"; }",
                "  public void start(Map<String, String> props) { this.props = props; }",
                "  public Class<? extends Task> taskClass() { return " + task + ".class; }",
                "  public List<Map<String, String>> taskConfigs(int maxTasks) { return List.of(props); }",
                "  public void stop() { }",
                "  public ConfigDef config() { return new ConfigDef(); }",
                "}",
                "");
    }

    private static final String SOURCE_TASK_SOURCE = String.join("\n",
            "package " + PACKAGE + ";",
            "import java.util.List;",
            "import java.util.Map;",
            "import org.apache.kafka.connect.errors.ConnectException;",
            "import org.apache.kafka.connect.source.SourceRecord;",
            "import org.apache.kafka.connect.source.SourceTask;",
            "public class TinySourceTask extends SourceTask {",
            "  private String mode;",
            "  private volatile boolean stopping;",
            "  public String version() { return \"" + VERSION + "\"; }",
            "  public void start(Map<String, String> props) {",
            "    mode = props.getOrDefault(\"tiny.mode\", \"idle\");",
            "    if (mode.equals(\"fail-start\")) {",
            "      throw new ConnectException(\"tiny failed to start\", new IllegalStateException(\"the tiny cause\"));",
            "    }",
            "  }",
            "  public List<SourceRecord> poll() throws InterruptedException {",
            "    if (mode.equals(\"ignore-stop\")) {",
            "      long until = System.currentTimeMillis() + 60_000L;",
            "      while (System.currentTimeMillis() < until) {",
            "        try { Thread.sleep(100); } catch (InterruptedException e) { }",
            "      }",
            "      return null;",
            "    }",
            "    Thread.sleep(20);",
            "    return null;",
            "  }",
            "  public void stop() { stopping = true; }",
            "}",
            "");

    private static final String SINK_TASK_SOURCE = String.join("\n",
            "package " + PACKAGE + ";",
            "import java.util.Collection;",
            "import java.util.Map;",
            "import org.apache.kafka.connect.errors.ConnectException;",
            "import org.apache.kafka.connect.sink.SinkRecord;",
            "import org.apache.kafka.connect.sink.SinkTask;",
            "public class TinySinkTask extends SinkTask {",
            "  public String version() { return \"" + VERSION + "\"; }",
            "  public void start(Map<String, String> props) {",
            "    if (props.getOrDefault(\"tiny.mode\", \"idle\").equals(\"fail-start\")) {",
            "      throw new ConnectException(\"tiny sink failed to start\", new IllegalStateException(\"the tiny cause\"));",
            "    }",
            "  }",
            "  public void put(Collection<SinkRecord> records) { }",
            "  public void stop() { }",
            "}",
            "");

    /** Compiles and packs the plugin into {@code pluginPath}/tiny-tasks/tiny-tasks.jar. */
    static Path build(Path work, Path pluginPath) throws IOException {
        Path src = Files.createTempDirectory(work, "src");
        Path out = Files.createTempDirectory(work, "classes");
        Map<String, String> sources = Map.of(
                SOURCE_CONNECTOR, connector("TinySourceConnector",
                        "org.apache.kafka.connect.source.SourceConnector", "TinySourceTask"),
                SINK_CONNECTOR, connector("TinySinkConnector",
                        "org.apache.kafka.connect.sink.SinkConnector", "TinySinkTask"),
                SOURCE_TASK, SOURCE_TASK_SOURCE,
                SINK_TASK, SINK_TASK_SOURCE);
        List<String> files = new ArrayList<>();
        for (Map.Entry<String, String> source : sources.entrySet()) {
            Path file = src.resolve(source.getKey().replace('.', '/') + ".java");
            Files.createDirectories(file.getParent());
            Files.writeString(file, source.getValue(), StandardCharsets.UTF_8);
            files.add(file.toString());
        }
        String classpath = String.join(java.io.File.pathSeparator,
                codeSource(SourceConnector.class), codeSource(ConfigDef.class));
        List<String> args = new ArrayList<>(List.of(
                "--release", "17", "-nowarn", "-classpath", classpath, "-d", out.toString()));
        args.addAll(files);
        JavaCompiler javac = ToolProvider.getSystemJavaCompiler();
        if (javac == null) {
            throw new IllegalStateException("the tests need a JDK (javax.tools), not a JRE");
        }
        if (javac.run(null, null, null, args.toArray(String[]::new)) != 0) {
            throw new IllegalStateException("javac failed for the tiny tasks");
        }
        Path jar = pluginPath.resolve("tiny-tasks").resolve("tiny-tasks.jar");
        Files.createDirectories(jar.getParent());
        try (OutputStream file = Files.newOutputStream(jar); JarOutputStream stream = new JarOutputStream(file)) {
            List<Path> classes;
            try (Stream<Path> walk = Files.walk(out)) {
                classes = walk.filter(Files::isRegularFile).sorted().toList();
            }
            for (Path entry : classes) {
                stream.putNextEntry(new JarEntry(out.relativize(entry).toString().replace('\\', '/')));
                stream.write(Files.readAllBytes(entry));
                stream.closeEntry();
            }
            stream.putNextEntry(new JarEntry("META-INF/services/" + SourceConnector.class.getName()));
            stream.write((SOURCE_CONNECTOR + "\n").getBytes(StandardCharsets.UTF_8));
            stream.closeEntry();
            stream.putNextEntry(new JarEntry("META-INF/services/org.apache.kafka.connect.sink.SinkConnector"));
            stream.write((SINK_CONNECTOR + "\n").getBytes(StandardCharsets.UTF_8));
            stream.closeEntry();
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
