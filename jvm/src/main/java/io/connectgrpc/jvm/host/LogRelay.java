package io.connectgrpc.jvm.host;

import java.io.IOException;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

import io.connectgrpc.jvm.host.proto.HostMessage;
import io.connectgrpc.jvm.host.proto.LogLevel;
import io.connectgrpc.jvm.host.proto.LogLevels;
import io.connectgrpc.jvm.host.proto.LogRecord;
import io.connectgrpc.jvm.logs.LogBridge;
import io.connectgrpc.jvm.logs.LogQueue;

/**
 * Sends the log lines of a hosted task to the driver over the task's connection: the JVM's
 * bridge ({@link LogBridge}) queues the lines that name the task (and, in an executor, those that
 * name no task), and a thread of the relay's own sends them as {@code LogRecord}s, so that no
 * logging thread waits on the connection. Also applies the worker's log levels to the JVM's
 * bridge ({@link #applyLevels}).
 */
final class LogRelay implements AutoCloseable {

    /** How many lines wait for the connection before the next ones are dropped (and counted). */
    static final int CAPACITY = 10_000;
    /** The most lines sent at once (then flushed). */
    static final int BATCH = 512;
    /** How long the relay's thread waits for a line before it looks whether it should end. */
    static final long POLL_MS = 200L;

    private final DriverLink link;
    private final LogQueue queue = new LogQueue(CAPACITY);
    private final AutoCloseable attached;
    private final Thread thread;
    private volatile boolean closing;
    private volatile boolean sending;

    private LogRelay(DriverLink link, LogBridge bridge, String connector, int task) {
        this.link = link;
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
