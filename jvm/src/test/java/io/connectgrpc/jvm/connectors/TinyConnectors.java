package io.connectgrpc.jvm.connectors;

import java.io.IOException;
import java.io.OutputStream;
import java.io.UncheckedIOException;
import java.net.URISyntaxException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.jar.JarEntry;
import java.util.jar.JarOutputStream;
import java.util.stream.Stream;

import javax.tools.JavaCompiler;
import javax.tools.ToolProvider;

import org.apache.kafka.common.config.ConfigDef;
import org.apache.kafka.connect.sink.SinkConnector;
import org.apache.kafka.connect.source.SourceConnector;

/**
 * Small connectors the tests compile and lay out as a plugin directory, each in a jar with
 * its ServiceLoader manifests (so that {@code plugin.discovery=service_load} finds them without
 * scanning the classpath). They are loaded by Kafka's plugin class loaders, which the tests
 * cannot reach by type: they report what happened to them in system properties named after
 * the connector ({@code tiny.<name>}), where a test reads it.
 *
 * <p>{@code tiny.life.LifeSource} and {@code tiny.life.LifeSink} follow their config:
 * {@code generate} (how many task configs; 1), {@code fail.start} (start throws an
 * IllegalStateException caused by an IOException with that message), {@code raise} (start
 * calls {@code context.raiseError}), {@code reconfigure} (start calls
 * {@code requestTaskReconfiguration}), {@code read.offset} (start reads the offset of the
 * partition {@code {"file": <value>}}), {@code alter} ({@code unsupported}, {@code reject}, or
 * the boolean {@code alterOffsets} answers). {@code tiny.broken.LinkageSource} needs a class its
 * plugin lacks as soon as it starts.
 */
final class TinyConnectors {

    static final String SOURCE = "tiny.life.LifeSource";
    static final String SINK = "tiny.life.LifeSink";
    static final String LINKAGE = "tiny.broken.LinkageSource";

    private static final String RECORDING = String.join("\n",
            "  private String name = \"unnamed\";",
            "  static void note(String name, String event) {",
            "    String key = \"tiny.\" + name;",
            "    String before = System.getProperty(key, \"\");",
            "    System.setProperty(key, before.isEmpty() ? event : before + \",\" + event);",
            "  }",
            "  void note(String event) { note(name, event); }",
            "  String loader() {",
            "    return Thread.currentThread().getContextClassLoader() == getClass().getClassLoader() ? \"\" : \"(foreign loader)\";",
            "  }",
            "  public String version() { return \"1.2.3\"; }",
            "  public ConfigDef config() { return new ConfigDef(); }",
            "  private String initialized;",
            "  public void initialize(ConnectorContext context) { super.initialize(context); initialized = \"initialize\" + loader(); }",
            "  public void start(Map<String, String> props) {",
            "    config = new HashMap<>(props);",
            "    name = props.getOrDefault(\"name\", \"unnamed\");",
            "    if (initialized != null) { note(initialized); initialized = null; }",
            "    note(\"start\" + loader());",
            "    if (props.containsKey(\"fail.start\")) {",
            "      throw new IllegalStateException(\"start refused\", new IOException(props.get(\"fail.start\")));",
            "    }",
            "    if (props.containsKey(\"reconfigure\")) { context.requestTaskReconfiguration(); }",
            "    if (props.containsKey(\"raise\")) { context.raiseError(new ConnectException(props.get(\"raise\"))); }",
            "    if (props.containsKey(\"metric\")) {",
            "      org.apache.kafka.common.metrics.PluginMetrics metrics = context.pluginMetrics();",
            "      metrics.addMetric(metrics.metricName(props.get(\"metric\"), \"tiny\", new java.util.LinkedHashMap<>()),",
            "          (org.apache.kafka.common.metrics.Gauge<Integer>) (c, now) -> 42);",
            "    }",
            "    READ_OFFSET",
            "  }",
            "  public List<Map<String, String>> taskConfigs(int maxTasks) {",
            "    note(\"taskConfigs\" + loader());",
            "    List<Map<String, String>> configs = new ArrayList<>();",
            "    int count = Integer.parseInt(config.getOrDefault(\"generate\", \"1\"));",
            "    for (int i = 0; i < count; i++) { configs.add(Map.of(\"n\", String.valueOf(i))); }",
            "    return configs;",
            "  }",
            "  public void stop() { note(\"stop\" + loader()); }",
            "  boolean alter(Map<String, String> props, Object offsets) {",
            "    note(props.getOrDefault(\"name\", \"unnamed\"), \"alter\" + loader() + \" \" + offsets);",
            "    String alter = props.getOrDefault(\"alter\", \"true\");",
            "    if (alter.equals(\"unsupported\")) { throw new UnsupportedOperationException(\"no external offsets\"); }",
            "    if (alter.equals(\"reject\")) { throw new ConnectException(\"position must be a Long\"); }",
            "    return Boolean.parseBoolean(alter);",
            "  }");

    private static final String IMPORTS = String.join("\n",
            "import java.io.IOException;",
            "import java.util.ArrayList;",
            "import java.util.HashMap;",
            "import java.util.List;",
            "import java.util.Map;",
            "import org.apache.kafka.common.TopicPartition;",
            "import org.apache.kafka.common.config.ConfigDef;",
            "import org.apache.kafka.connect.connector.ConnectorContext;",
            "import org.apache.kafka.connect.connector.Task;",
            "import org.apache.kafka.connect.errors.ConnectException;",
            "import org.apache.kafka.connect.sink.SinkConnector;",
            "import org.apache.kafka.connect.source.ConnectorTransactionBoundaries;",
            "import org.apache.kafka.connect.source.ExactlyOnceSupport;",
            "import org.apache.kafka.connect.source.SourceConnector;");

    private TinyConnectors() {
    }

    private static String lifeSource() {
        String readOffset = "if (props.containsKey(\"read.offset\")) { note(\"offset \" + "
                + "context().offsetStorageReader().offset(Map.of(\"file\", props.get(\"read.offset\")))); }";
        return "package tiny.life;\n" + IMPORTS + "\n"
                + "public class LifeSource extends SourceConnector {\n"
                + "  private Map<String, String> config = new HashMap<>();\n"
                + RECORDING.replace("READ_OFFSET", readOffset) + "\n"
                + "  public Class<? extends Task> taskClass() { return LifeSourceTask.class; }\n"
                + "  public ExactlyOnceSupport exactlyOnceSupport(Map<String, String> props) {\n"
                + "    return props.containsKey(\"undeclared\") ? null : ExactlyOnceSupport.SUPPORTED;\n"
                + "  }\n"
                + "  public ConnectorTransactionBoundaries canDefineTransactionBoundaries(Map<String, String> p) {\n"
                + "    return ConnectorTransactionBoundaries.SUPPORTED;\n"
                + "  }\n"
                + "  public boolean alterOffsets(Map<String, String> props, Map<Map<String, ?>, Map<String, ?>> offsets) {\n"
                + "    StringBuilder types = new StringBuilder();\n"
                + "    offsets.forEach((p, o) -> { if (o != null) { o.values().forEach(v -> types.append(v.getClass().getSimpleName())); } });\n"
                + "    note(props.getOrDefault(\"name\", \"unnamed\"), \"types \" + types);\n"
                + "    return alter(props, offsets);\n"
                + "  }\n"
                + "}\n";
    }

    private static String lifeSink() {
        return "package tiny.life;\n" + IMPORTS + "\n"
                + "public class LifeSink extends SinkConnector {\n"
                + "  private Map<String, String> config = new HashMap<>();\n"
                + RECORDING.replace("READ_OFFSET", "") + "\n"
                + "  public Class<? extends Task> taskClass() { return LifeSinkTask.class; }\n"
                + "  public boolean alterOffsets(Map<String, String> props, Map<TopicPartition, Long> offsets) {\n"
                + "    java.util.TreeMap<String, Long> sorted = new java.util.TreeMap<>();\n"
                + "    offsets.forEach((partition, offset) -> sorted.put(partition.toString(), offset));\n"
                + "    return alter(props, sorted);\n"
                + "  }\n"
                + "}\n";
    }

    private static String task(String simpleName, String superclass, String body) {
        return "package tiny.life;\n" + IMPORTS + "\n"
                + "public class " + simpleName + " extends " + superclass + " {\n"
                + "  public String version() { return \"1.2.3\"; }\n"
                + "  public void start(Map<String, String> props) { }\n"
                + "  public void stop() { }\n"
                + body
                + "}\n";
    }

    private static String linkageSource() {
        return "package tiny.broken;\n" + IMPORTS + "\n"
                + "public class LinkageSource extends SourceConnector {\n"
                + "  public String version() { return \"0.1\"; }\n"
                + "  public ConfigDef config() { return new ConfigDef(); }\n"
                + "  public void start(Map<String, String> props) { tiny.gone.Missing.call(); }\n"
                + "  public Class<? extends Task> taskClass() { return null; }\n"
                + "  public List<Map<String, String>> taskConfigs(int maxTasks) { return List.of(); }\n"
                + "  public void stop() { }\n"
                + "}\n";
    }

    /** Compiles the tiny connectors into {@code work} and lays them out as a plugin directory. */
    static Path build(Path work) {
        try {
            Path classes = compile(work, Map.of(
                    "tiny.life.LifeSource", lifeSource(),
                    "tiny.life.LifeSink", lifeSink(),
                    "tiny.life.LifeSourceTask", task("LifeSourceTask", "org.apache.kafka.connect.source.SourceTask",
                            "  public List<org.apache.kafka.connect.source.SourceRecord> poll() { return null; }\n"),
                    "tiny.life.LifeSinkTask", task("LifeSinkTask", "org.apache.kafka.connect.sink.SinkTask",
                            "  public void put(java.util.Collection<org.apache.kafka.connect.sink.SinkRecord> r) { }\n"),
                    "tiny.broken.LinkageSource", linkageSource(),
                    "tiny.gone.Missing", "package tiny.gone;\npublic final class Missing {\n"
                            + "  public static void call() { }\n}\n"));
            Path plugins = Files.createDirectories(work.resolve("plugins"));
            jar(classes, List.of("tiny/life/"), plugins.resolve("life/life.jar"),
                    Map.of(SourceConnector.class.getName(), SOURCE, SinkConnector.class.getName(), SINK));
            // the class the connector calls is left out of its plugin
            jar(classes, List.of("tiny/broken/"), plugins.resolve("broken/broken.jar"),
                    Map.of(SourceConnector.class.getName(), LINKAGE));
            return plugins;
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    private static Path compile(Path work, Map<String, String> sources) throws IOException {
        Path src = Files.createTempDirectory(work, "src");
        Path out = Files.createTempDirectory(work, "classes");
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
            throw new IllegalStateException("javac failed for " + sources.keySet());
        }
        return out;
    }

    private static void jar(Path classes, List<String> packages, Path jar, Map<String, String> services)
            throws IOException {
        Files.createDirectories(jar.getParent());
        try (OutputStream file = Files.newOutputStream(jar); JarOutputStream out = new JarOutputStream(file)) {
            List<Path> entries;
            try (Stream<Path> walk = Files.walk(classes)) {
                entries = walk.filter(Files::isRegularFile)
                        .filter(p -> packages.stream().anyMatch(classes.relativize(p).toString()::startsWith))
                        .sorted(Comparator.naturalOrder())
                        .toList();
            }
            for (Path entry : entries) {
                out.putNextEntry(new JarEntry(classes.relativize(entry).toString().replace('\\', '/')));
                out.write(Files.readAllBytes(entry));
                out.closeEntry();
            }
            for (Map.Entry<String, String> service : services.entrySet()) {
                out.putNextEntry(new JarEntry("META-INF/services/" + service.getKey()));
                out.write((service.getValue() + "\n").getBytes(StandardCharsets.UTF_8));
                out.closeEntry();
            }
        }
    }

    private static String codeSource(Class<?> type) {
        try {
            return Path.of(type.getProtectionDomain().getCodeSource().getLocation().toURI()).toString();
        } catch (URISyntaxException e) {
            throw new IllegalStateException(e);
        }
    }
}
