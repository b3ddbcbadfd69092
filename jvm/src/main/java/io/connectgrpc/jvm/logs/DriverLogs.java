package io.connectgrpc.jvm.logs;

import java.io.IOException;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

import com.fasterxml.jackson.core.type.TypeReference;
import com.fasterxml.jackson.databind.ObjectMapper;

import org.apache.logging.log4j.Level;

/**
 * The driver's end of the bridge, for the worker's Python through py4j (only strings, numbers
 * and bytes cross): the lines of the driver's JVM (its connectors' calls, Kafka's plugin scan,
 * its Java tasks' when not hosted over a connection) queue here, and the worker drains them
 * ({@link #drain}: a bounded wait, length-delimited {@code LogRecord}s); the worker's levels are
 * applied here ({@link #setLevels}) and its list of loggers read ({@link #loggers}). One per
 * worker; {@link #close} detaches it.
 */
public final class DriverLogs implements AutoCloseable {

    /** How many lines wait for the worker before the next ones are dropped (and counted). */
    static final int CAPACITY = 10_000;
    private static final ObjectMapper JSON = new ObjectMapper();

    private final LogBridge bridge;
    private final LogQueue queue;
    private final AutoCloseable attached;

    DriverLogs(LogBridge bridge, int capacity) {
        this.bridge = bridge;
        this.queue = new LogQueue(capacity);
        this.attached = bridge.attachDriver(queue);
    }

    /**
     * Installs the JVM's bridge (once), applies the worker's levels ({@code levelsJson}: a JSON
     * array of [namespace, level] pairs in the order they were set, at {@code version}) and
     * queues the driver's lines from now on.
     */
    public static DriverLogs open(long version, String levelsJson) throws IOException {
        LogBridge bridge = LogBridge.shared();
        bridge.levels().apply(version, entries(levelsJson));
        return new DriverLogs(bridge, CAPACITY);
    }

    /**
     * The lines queued, at most {@code max}, waiting up to {@code waitMs} for the first: each a
     * length-delimited {@code LogRecord} (empty when none came).
     */
    public byte[] drain(int max, long waitMs) throws InterruptedException {
        return LogRecords.delimited(queue.take(max, waitMs));
    }

    /** The JVM's loggers the worker lists, with their levels: a JSON object, name to level. */
    public String loggers() throws IOException {
        Map<String, String> names = new TreeMap<>();
        bridge.knownLoggers().forEach((name, level) -> names.put(name, level.name()));
        return JSON.writeValueAsString(names);
    }

    /**
     * Applies the worker's table of levels at {@code version} (as {@link #open}) after a set on
     * {@code namespace}; answers the JSON array of the loggers (of {@link #loggers}) under it
     * whose level changed, sorted ({@code []} when a newer table was already applied).
     */
    public String setLevels(long version, String levelsJson, String namespace) throws IOException {
        Map<String, Level> before = bridge.knownLoggers();
        if (!bridge.levels().apply(version, entries(levelsJson))) {
            return "[]";
        }
        boolean root = JavaLogLevels.ROOT.equalsIgnoreCase(namespace);
        List<String> changed = new ArrayList<>();
        bridge.knownLoggers().forEach((name, level) -> {
            if ((root || name.startsWith(namespace)) && level != before.get(name)) {
                changed.add(name);
            }
        });
        return JSON.writeValueAsString(changed);
    }

    /** Lines queued and not drained yet are dropped; later lines go elsewhere, or nowhere. */
    @Override
    public void close() throws Exception {
        attached.close();
    }

    static List<Map.Entry<String, String>> entries(String levelsJson) throws IOException {
        List<List<String>> pairs = JSON.readValue(levelsJson, new TypeReference<List<List<String>>>() { });
        List<Map.Entry<String, String>> entries = new ArrayList<>(pairs.size());
        for (List<String> pair : pairs) {
            if (pair.size() != 2) {
                throw new IOException("a level entry is [namespace, level], got " + pair);
            }
            entries.add(Map.entry(pair.get(0), pair.get(1)));
        }
        return entries;
    }
}
