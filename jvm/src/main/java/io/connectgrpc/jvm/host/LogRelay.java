package io.connectgrpc.jvm.host;

import java.io.IOException;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;

import io.connectgrpc.jvm.host.proto.HostMessage;
import io.connectgrpc.jvm.host.proto.LogLevel;
import io.connectgrpc.jvm.host.proto.LogLevels;
import io.connectgrpc.jvm.host.proto.LogRecord;
import io.connectgrpc.jvm.host.proto.LoggersSeen;
import io.connectgrpc.jvm.logs.LogBridge;
import io.connectgrpc.jvm.logs.LogQueue;

/**
 * Sends the log lines of a hosted task to the driver over the task's connection: the JVM's
 * bridge ({@link LogBridge}) queues the lines that name the task (and, in an executor, those that
 * name no task), and a thread of the relay's own sends them as {@code LogRecord}s, so that no
 * logging thread waits on the connection. Also applies the worker's log levels to the JVM's
 * bridge ({@link #applyLevels}), and tells the driver the JVM's Java loggers it had not told
 * yet on this connection ({@code LoggersSeen}, at most every {@link #LOGGERS_EVERY_MS}), for
 * the worker's list of loggers: a JVM of an executor is not the driver's, whose loggers the
 * worker reads directly.
 */
final class LogRelay implements AutoCloseable {

    /** How many lines wait for the connection before the next ones are dropped (and counted). */
    static final int CAPACITY = 10_000;
    /** The most lines sent at once (then flushed). */
    static final int BATCH = 512;
    /** How long the relay's thread waits for a line before it looks whether it should end. */
    static final long POLL_MS = 200L;
    /** How often the relay looks for Java loggers it has not told the driver of. */
    static final long LOGGERS_EVERY_MS = 2_000L;
    /** The most logger names one LoggersSeen carries (the rest go in the next ones). */
    static final int LOGGERS_BATCH = 1_000;

    private final DriverLink link;
    private final LogBridge bridge;
    private final LogQueue queue = new LogQueue(CAPACITY);
    /** The logger names told to the driver on this connection (the relay's thread's only). */
    private final Set<String> told = new HashSet<>();
    private long loggersDue;
    private final AutoCloseable attached;
    private final Thread thread;
    private volatile boolean closing;
    private volatile boolean sending;

    private LogRelay(DriverLink link, LogBridge bridge, String connector, int task) {
        this.link = link;
        this.bridge = bridge;
        this.attached = bridge.attachTask(connector, task, queue);
        this.thread = new Thread(this::run, "connect-grpc-log-relay-" + connector + "-" + task);
        this.thread.setDaemon(true);
    }

    /**
     * A started relay of the task's lines; null when the JVM's logging is not log4j 2 (the
     * task's lines then stay in the JVM's own log).
     */
    static LogRelay start(DriverLink link, String connector, int task) {
        LogRelay relay;
        try {
            relay = new LogRelay(link, LogBridge.shared(), connector, task);
        } catch (RuntimeException | LinkageError e) {
            return null;
        }
        relay.thread.start();
        return relay;
    }

    /** Applies the worker's table of levels to this JVM's Java loggers (when newer). */
    static void applyLevels(LogLevels levels) {
        List<Map.Entry<String, String>> entries = new ArrayList<>(levels.getLevelsCount());
        for (LogLevel level : levels.getLevelsList()) {
            entries.add(Map.entry(level.getNamespace(), level.getLevel()));
        }
        try {
            LogBridge.shared().levels().apply(levels.getVersion(), entries);
        } catch (RuntimeException | LinkageError e) {
            // not log4j 2: the JVM's levels are its own configuration's
        }
    }

    private void run() {
        try {
            while (!closing || !queue.isEmpty()) {
                tellLoggers();
                List<LogRecord> records = queue.take(BATCH, POLL_MS);
                if (records.isEmpty()) {
                    continue;
                }
                sending = true;
                List<HostMessage> messages = new ArrayList<>(records.size());
                for (LogRecord record : records) {
                    messages.add(HostMessage.newBuilder().setLogRecord(record).build());
                }
                link.send(messages);
                sending = false;
            }
        } catch (IOException | InterruptedException e) {
            // the connection is gone (or the relay ends): its lines have nowhere to go
        } finally {
            sending = false;
            detach();
        }
    }

    /** Sends the names of the JVM's Java loggers not told yet, when it is time to look. */
    private void tellLoggers() throws IOException {
        long now = System.nanoTime();
        if (now - loggersDue < 0L) {
            return;
        }
        loggersDue = now + LOGGERS_EVERY_MS * 1_000_000L;
        List<String> fresh = new ArrayList<>();
        for (String name : bridge.loggerNames()) {
            if (!told.contains(name)) {
                fresh.add(name);
            }
        }
        for (int from = 0; from < fresh.size(); from += LOGGERS_BATCH) {
            List<String> names = fresh.subList(from, Math.min(fresh.size(), from + LOGGERS_BATCH));
            link.send(List.of(HostMessage.newBuilder()
                    .setLoggersSeen(LoggersSeen.newBuilder().addAllNames(names)).build()));
            told.addAll(names);
        }
    }

    /** Waits up to {@code ms} for the lines queued so far to be sent (before Stopped). */
    void flush(long ms) {
        long deadline = System.nanoTime() + ms * 1_000_000L;
        while ((!queue.isEmpty() || sending) && thread.isAlive() && System.nanoTime() < deadline) {
            try {
                Thread.sleep(10L);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                return;
            }
        }
    }

    /** Stops taking the task's lines; what is queued is sent if the connection allows. */
    @Override
    public void close() {
        detach();
        closing = true;
    }

    private void detach() {
        try {
            attached.close();
        } catch (Exception e) {
            // removing a map entry does not fail
        }
    }
}
