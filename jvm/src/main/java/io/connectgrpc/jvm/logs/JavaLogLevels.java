package io.connectgrpc.jvm.logs;

import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;

import org.apache.logging.log4j.Level;

/**
 * The levels of the Java loggers whose lines the bridge takes ({@link LogBridge}): the table of
 * levels set through the worker's API (KIP-495), as the worker keeps it (its {@code LEVELS_SET}).
 * A logger's level is that of the longest namespace of the table its name starts with, as a
 * plain string ({@code a.b} also covers {@code a.bc}, as Kafka Connect's sets do); {@code root}
 * covers every logger; a logger no entry covers is at {@link #DEFAULT}, Kafka Connect's default
 * root level. The JVM's log4j configuration (Spark's) is left as it is: the bridge's filter
 * decides for the loggers it takes, before log4j's own levels.
 *
 * <p>Tables come with a version that goes up with every set on the worker; a table is applied
 * only when newer than the one in force (the driver sends it from several threads: a host's
 * start, a change of levels, a SetLogLevel call). Thread-safe; reads take no lock.
 */
public final class JavaLogLevels {

    /** The level of a logger the table does not cover: Kafka Connect's default root level. */
    public static final Level DEFAULT = Level.INFO;
    /** The namespace that covers every logger. */
    static final String ROOT = "root";

    /** A table of levels, immutable: replaced as a whole by a newer one. */
    record Table(long version, String[] namespaces, Level[] levels, Level root) {

        /** The level of the logger {@code name} by this table. */
        Level levelOf(String name) {
            int best = -1;
            int bestLength = -1;
            for (int i = 0; i < namespaces.length; i++) {
                String namespace = namespaces[i];
                if (namespace.length() > bestLength && name.startsWith(namespace)) {
                    best = i;
                    bestLength = namespace.length();
                }
            }
            return best < 0 ? root : levels[best];
        }
    }

    private volatile Table table = new Table(-1L, new String[0], new Level[0], DEFAULT);

    /**
     * Applies the table of {@code version} (its entries, namespace and level name, in the order
     * they were set) when it is newer than the one in force; an entry whose level is not one of
     * log4j's names is skipped. Returns whether it was applied.
     */
    public synchronized boolean apply(long version, List<Map.Entry<String, String>> entries) {
        if (version <= table.version()) {
            return false;
        }
        List<String> namespaces = new ArrayList<>();
        List<Level> levels = new ArrayList<>();
        Level root = DEFAULT;
        for (Map.Entry<String, String> entry : entries) {
            Level level = entry.getValue() == null ? null : Level.getLevel(entry.getValue().strip().toUpperCase(Locale.ROOT));
            String namespace = entry.getKey() == null ? "" : entry.getKey().strip();
            if (level == null || namespace.isEmpty()) {
                continue;
            }
            if (namespace.equalsIgnoreCase(ROOT)) {
                // a set on root applies to every logger: it replaces what came before it
                namespaces.clear();
                levels.clear();
                root = level;
                continue;
            }
            // a set replaces the entries it covers, as the worker's table does
            for (int i = namespaces.size() - 1; i >= 0; i--) {
                if (namespaces.get(i).startsWith(namespace)) {
                    namespaces.remove(i);
                    levels.remove(i);
                }
            }
            namespaces.add(namespace);
            levels.add(level);
        }
        table = new Table(version, namespaces.toArray(new String[0]), levels.toArray(new Level[0]), root);
        return true;
    }

    /** The level of the logger {@code name}. */
    public Level levelOf(String name) {
        return table.levelOf(name);
    }

    /** Whether a line of {@code level} from the logger {@code name} is logged. */
    public boolean enabled(String name, Level level) {
        return level != null && levelOf(name).intLevel() >= level.intLevel();
    }

    /** The table in force: a level read from it holds for as long as it is this one (identity). */
    Table current() {
        return table;
    }

    /** The version of the table in force (-1 before any). */
    public long version() {
        return table.version();
    }
}
