package io.connectgrpc.jvm.connectors;

import java.io.PrintWriter;
import java.io.StringWriter;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.core.type.TypeReference;
import com.fasterxml.jackson.databind.ObjectMapper;

import org.apache.kafka.connect.errors.ConnectException;

/**
 * What crosses the py4j gateway: JSON strings. Every call of {@link ConnectorHost} answers
 * {@code {"ok": <value>}} or {@code {"error": {...}}}; a Java exception (a plugin's
 * {@link LinkageError} included) becomes such an answer, never an exception through the
 * gateway, so that Python sees the plugin's exception class, message and stack trace.
 */
final class Answers {

    static final ObjectMapper MAPPER = new ObjectMapper();

    /** A call whose result goes into {@code {"ok": ...}}. */
    @FunctionalInterface
    interface Call {
        Object run() throws Exception;
    }

    private Answers() {
    }

    /**
     * Runs {@code call} and answers its result, or its failure as {@link #error(Throwable)}
     * describes it. Only the JVM's own failures ({@link VirtualMachineError}: out of memory,
     * a stack overflow) go through: nothing can be answered after them.
     */
    static String answer(Call call) {
        Object result;
        try {
            result = call.run();
        } catch (Throwable failure) {
            if (failure instanceof VirtualMachineError fatal) {
                throw fatal;
            }
            if (failure instanceof InterruptedException) {
                Thread.currentThread().interrupt();
            }
            return write(Collections.singletonMap("error", error(failure)));
        }
        return write(Collections.singletonMap("ok", result));
    }

    /**
     * An exception as Python reports it: its class and message, those of its root cause (the
     * innermost cause, which a status shows first), whether it is a {@link ConnectException},
     * and the whole stack trace, causes included.
     */
    static Map<String, Object> error(Throwable failure) {
        Throwable root = failure;
        while (root.getCause() != null && root.getCause() != root) {
            root = root.getCause();
        }
        Map<String, Object> body = new LinkedHashMap<>();
        body.put("class", failure.getClass().getName());
        body.put("message", failure.getMessage());
        body.put("root_class", root.getClass().getName());
        body.put("root_message", root.getMessage());
        // Kafka Connect's own signal of a refusal (KIP-875: offsets a connector rejects)
        body.put("connect_exception", failure instanceof ConnectException);
        body.put("trace", stackTrace(failure));
        return body;
    }

    static String stackTrace(Throwable failure) {
        StringWriter text = new StringWriter();
        try (PrintWriter out = new PrintWriter(text)) {
            failure.printStackTrace(out);
        }
        return text.toString();
    }

    static String write(Object value) {
        try {
            return MAPPER.writeValueAsString(value);
        } catch (JsonProcessingException e) {
            throw new IllegalStateException("cannot write " + value.getClass().getName() + " as JSON", e);
        }
    }

    /** A JSON object of string values (a connector config; a JSON null stays null). */
    static Map<String, String> stringMap(String json, String what) {
        return read(json, new TypeReference<LinkedHashMap<String, String>>() { }, what);
    }

    /** A JSON object. */
    static Map<String, Object> object(String json, String what) {
        return read(json, new TypeReference<LinkedHashMap<String, Object>>() { }, what);
    }

    /** A JSON array of objects. */
    static List<Map<String, Object>> objects(String json, String what) {
        return read(json, new TypeReference<List<Map<String, Object>>>() { }, what);
    }

    private static <T> T read(String json, TypeReference<T> type, String what) {
        if (json == null) {
            throw new IllegalArgumentException(what + " is required (a JSON value), got null");
        }
        try {
            T value = MAPPER.readValue(json, type);
            if (value == null) {
                throw new IllegalArgumentException(what + " must be given, got JSON null");
            }
            return value;
        } catch (JsonProcessingException e) {
            throw new IllegalArgumentException(what + " is not valid JSON of its kind: " + e.getOriginalMessage(), e);
        }
    }
}
