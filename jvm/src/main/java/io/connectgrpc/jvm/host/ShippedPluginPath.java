package io.connectgrpc.jvm.host;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.Locale;

import io.connectgrpc.jvm.host.proto.StartTask;
import io.connectgrpc.jvm.host.proto.WarmWorker;

import org.apache.spark.SparkFiles;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Kafka's {@code plugin.path} in an executor of a Spark cluster: the copies of the worker's
 * plugin directories that the worker shipped with the application (Python's
 * {@code connect_grpc.java.shipped_plugins}, through {@code spark.archives}), which Spark
 * unpacked into the executor's {@link SparkFiles} root.
 *
 * <p>Each entry of the worker's {@code plugin.path} has its copy in a directory named
 * {@code connect-plugins-} and the first 16 hex digits of the SHA-256 of the entry's UTF-8
 * bytes, the name Python gives it; the directory holds what the entry holds (its plugin
 * locations), or for an entry that is a jar, that jar. Where an entry's copy is there, it
 * replaces the entry, whether or not the entry's path exists on this machine: the worker ships
 * exactly the jars its driver scanned, so that a connector's tasks run the plugin its instance
 * runs, not whatever another machine holds at the same path. Entries without a copy (a local
 * master ships none) are left as they are.
 */
final class ShippedPluginPath {

    private static final Logger log = LoggerFactory.getLogger(ShippedPluginPath.class);

    static final String PLUGIN_PATH = "plugin.path";
    static final String SHIPPED_PREFIX = "connect-plugins-";
    private static final int DIGEST_CHARS = 16;

    private ShippedPluginPath() {
    }

    /** The directory an entry's copy is unpacked into, under the {@link SparkFiles} root. */
    static String shippedName(String entry) {
        try {
            byte[] digest = MessageDigest.getInstance("SHA-256").digest(entry.getBytes(StandardCharsets.UTF_8));
            return SHIPPED_PREFIX + HexFormat.of().formatHex(digest).substring(0, DIGEST_CHARS);
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException("every JVM has SHA-256", e);
        }
    }

    /** {@code start} with the shipped copies in this executor's {@link SparkFiles} root. */
    static StartTask inExecutor(StartTask start) {
        return localize(start, Path.of(SparkFiles.getRootDirectory()));
    }

    /** {@code warm} with the shipped copies in this executor's {@link SparkFiles} root. */
    static WarmWorker inExecutor(WarmWorker warm) {
        return localize(warm, Path.of(SparkFiles.getRootDirectory()));
    }

    /**
     * {@code start} with each {@code plugin.path} entry (of its worker properties and of its
     * plugin scan's, which carry the same path) replaced by its copy under {@code root} where
     * there is one; {@code start} itself when no entry has a copy.
     */
    static StartTask localize(StartTask start, Path root) {
        String given = start.getPluginScanPropertiesMap().get(PLUGIN_PATH);
        String path = localPath(given, root);
        if (path == null) {
            return start;
        }
        log.info("The Java plugins of task {}-{} are the copies its worker shipped: plugin.path {} (the worker's: {})",
                start.getConnector(), start.getTask(), path, given);
        StartTask.Builder localized = start.toBuilder().putPluginScanProperties(PLUGIN_PATH, path);
        if (start.getWorkerPropertiesMap().containsKey(PLUGIN_PATH)) {
            localized.putWorkerProperties(PLUGIN_PATH, path);
        }
        return localized.build();
    }

    /**
     * {@code warm} localized as {@link #localize(StartTask, Path)} localizes a StartTask of the
     * same worker: the same properties come out of both, so that the task's start finds the
     * Kafka worker built from them.
     */
    static WarmWorker localize(WarmWorker warm, Path root) {
        String given = warm.getPluginScanPropertiesMap().get(PLUGIN_PATH);
        String path = localPath(given, root);
        if (path == null) {
            return warm;
        }
        log.info("The Java plugins of the Kafka worker built ahead for connect-grpc worker {} are the copies its "
                + "worker shipped: plugin.path {} (the worker's: {})", warm.getWorkerId(), path, given);
        WarmWorker.Builder localized = warm.toBuilder().putPluginScanProperties(PLUGIN_PATH, path);
        if (warm.getWorkerPropertiesMap().containsKey(PLUGIN_PATH)) {
            localized.putWorkerProperties(PLUGIN_PATH, path);
        }
        return localized.build();
    }

    /** The plugin.path {@code given} with the copies under {@code root}; null when none has one. */
    private static String localPath(String given, Path root) {
        if (given == null || given.isBlank()) {
            return null;
        }
        List<String> entries = new ArrayList<>();
        boolean shipped = false;
        for (String entry : given.split(",")) {
            String local = copyOf(entry.trim(), root);
            shipped |= local != null;
            entries.add(local != null ? local : entry);
        }
        return shipped ? String.join(",", entries) : null;
    }

    private static String copyOf(String entry, Path root) {
        if (entry.isEmpty()) {
            return null;
        }
        Path copy = root.resolve(shippedName(entry)).toAbsolutePath().normalize();
        if (!Files.isDirectory(copy)) {
            return null;
        }
        Path name = Path.of(entry).getFileName();
        if (name != null && name.toString().toLowerCase(Locale.ROOT).endsWith(".jar")) {
            Path jar = copy.resolve(name.toString());
            if (Files.isRegularFile(jar)) {
                return jar.toString();
            }
        }
        return copy.toString();
    }
}
