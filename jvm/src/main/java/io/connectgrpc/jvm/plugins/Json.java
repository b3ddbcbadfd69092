package io.connectgrpc.jvm.plugins;

import java.util.LinkedHashMap;
import java.util.Map;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.core.type.TypeReference;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;

/**
 * JSON in and out of the host: Kafka's REST entities carry their own Jackson annotations, so
 * one plain {@link ObjectMapper} writes them exactly as Kafka Connect's REST API does.
 */
final class Json {

    static final ObjectMapper MAPPER = new ObjectMapper()
            .disable(SerializationFeature.FAIL_ON_EMPTY_BEANS);

    private Json() {
    }

    static String write(Object value) {
        try {
            return MAPPER.writeValueAsString(value);
        } catch (JsonProcessingException e) {
            throw new IllegalStateException("cannot write " + value.getClass().getName() + " as JSON", e);
        }
    }

    /**
     * A JSON object of string values, as a connector config travels (a JSON null stays a null
     * value, which Kafka's validation reports on its key).
     */
    static Map<String, String> readStringMap(String json) {
        return read(json, new TypeReference<LinkedHashMap<String, String>>() { }, "a JSON object of strings");
    }

    /** A JSON object, its values as Jackson reads them (strings, lists, nested objects). */
    static Map<String, Object> readObject(String json) {
        return read(json, new TypeReference<LinkedHashMap<String, Object>>() { }, "a JSON object");
    }

    private static <T> T read(String json, TypeReference<T> type, String expected) {
        try {
            T values = MAPPER.readValue(json, type);
            if (values == null) {
                throw new IllegalArgumentException("expected " + expected + ", got null");
            }
            return values;
        } catch (JsonProcessingException e) {
            throw new IllegalArgumentException("expected " + expected + ": " + e.getOriginalMessage(), e);
        }
    }

    /** An error as the host reports it: the exception's class, its message and its cause's. */
    static Map<String, Object> error(Throwable error) {
        Map<String, Object> body = new LinkedHashMap<>();
        body.put("class", error.getClass().getName());
        body.put("message", error.getMessage());
        Throwable root = error;
        while (root.getCause() != null && root.getCause() != root) {
            root = root.getCause();
        }
        if (root != error) {
            body.put("cause", root.getClass().getName() + ": " + root.getMessage());
        }
        return Map.of("error", body);
    }
}
