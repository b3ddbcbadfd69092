package io.connectgrpc.jvm.logs;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.io.UncheckedIOException;
import java.util.List;

import io.connectgrpc.jvm.host.proto.LogRecord;

import org.apache.logging.log4j.Level;
import org.apache.logging.log4j.core.LogEvent;
import org.apache.logging.log4j.message.Message;

/** A log4j event as the record the worker is sent ({@code LogRecord} of the task-host protocol). */
final class LogRecords {

    /** The most of a message, or of a stack trace, a record carries. */
    static final int MAX_TEXT = 64 * 1024;
    private static final String CUT = "... (cut at 64 KiB)";

    private LogRecords() {
    }

    /**
     * The record of {@code event} (read now: log4j may reuse the event once its appenders
     * returned).
     */
    static LogRecord.Builder of(LogEvent event, ConnectorContext context, long suppressed) {
        Message message = event.getMessage();
        LogRecord.Builder record = LogRecord.newBuilder()
                .setLogger(nonNull(event.getLoggerName()))
                .setLevel(level(event.getLevel()))
                .setMessage(cut(message == null ? "" : nonNull(message.getFormattedMessage())))
                .setThread(nonNull(event.getThreadName()))
                .setTimeMs(event.getTimeMillis())
                .setSuppressed(suppressed)
                .setConnector(context.connector());
        if (context.task() >= 0) {
            record.setTask(context.task());
        }
        Throwable thrown = event.getThrown();
        if (thrown != null) {
            record.setThrown(cut(trace(thrown)));
        }
        return record;
    }

    /** log4j's level as the protocol's (a custom level as the standard one at or above it). */
    static LogRecord.Level level(Level level) {
        int value = level == null ? Level.INFO.intLevel() : level.intLevel();
        if (value <= Level.FATAL.intLevel()) {
            return LogRecord.Level.LEVEL_FATAL;
        }
        if (value <= Level.ERROR.intLevel()) {
            return LogRecord.Level.LEVEL_ERROR;
        }
        if (value <= Level.WARN.intLevel()) {
            return LogRecord.Level.LEVEL_WARN;
        }
        if (value <= Level.INFO.intLevel()) {
            return LogRecord.Level.LEVEL_INFO;
        }
        if (value <= Level.DEBUG.intLevel()) {
            return LogRecord.Level.LEVEL_DEBUG;
        }
        return LogRecord.Level.LEVEL_TRACE;
    }

    /** The records as they go on the wire, each length-delimited. */
    static byte[] delimited(List<LogRecord> records) {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        try {
            for (LogRecord record : records) {
                record.writeDelimitedTo(out);
            }
        } catch (IOException e) {
            throw new UncheckedIOException(e);  // a byte array does not fail
        }
        return out.toByteArray();
    }

    private static String trace(Throwable thrown) {
        StringWriter text = new StringWriter();
        try (PrintWriter writer = new PrintWriter(text)) {
            thrown.printStackTrace(writer);
        } catch (RuntimeException e) {
            // a throwable whose own toString fails: its class is what there is
            return thrown.getClass().getName();
        }
        return text.toString().stripTrailing();
    }

    private static String cut(String text) {
        return text.length() <= MAX_TEXT ? text : text.substring(0, MAX_TEXT) + CUT;
    }

    private static String nonNull(String text) {
        return text == null ? "" : text;
    }
}
