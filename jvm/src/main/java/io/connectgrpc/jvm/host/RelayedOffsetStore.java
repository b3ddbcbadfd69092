package io.connectgrpc.jvm.host;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.google.protobuf.ByteString;

import io.connectgrpc.jvm.host.proto.OffsetEntry;

import org.apache.kafka.connect.errors.ConnectException;
import org.apache.kafka.connect.runtime.WorkerConfig;
import org.apache.kafka.connect.storage.OffsetBackingStore;
import org.apache.kafka.connect.util.Callback;

/**
 * The source offsets of a Kafka worker whose connect-grpc worker keeps them itself (a
 * standalone worker, in its offsets file): Kafka Connect's standalone worker keeps them in
 * memory, loaded from its file at its start, and writes the file at each commit; here the
 * memory is loaded from what each task's {@code StartTask} carries (its connector's stored
 * offsets) and each commit is relayed to the driver that owns a task of the connector, the
 * write's future completing once the driver stored it.
 *
 * <p>Offsets keys are Kafka Connect's ({@code ["<connector>", {partition}]}, the internal
 * JSON converter's bytes), so a write is routed by the connector its keys name: Kafka's
 * worker gives every task of the worker the one store, and a commit may run on its offset
 * committer's thread. The offsets of a connector change only through its tasks while they
 * run (the worker alters them only when the connector is stopped), so a task's start loading
 * its connector's stored offsets, replacing what memory held of them, sees every write the
 * driver acknowledged and every alteration or reset made since.
 */
final class RelayedOffsetStore implements OffsetBackingStore {

    /** How long a write waits for the driver at most (Kafka's flush gives up sooner). */
    static final long WRITE_TIMEOUT_MS = 60_000L;

    private static final ObjectMapper JSON = new ObjectMapper();

    /** Sends a connector's offsets to its driver; the future completes once they are stored. */
    @FunctionalInterface
    interface Relay {
        CompletableFuture<Void> write(List<OffsetEntry> entries) throws IOException;
    }

    /**
     * The offsets by their key's JSON, not its bytes: the worker writes a partition's fields
     * in its own (sorted) order, a task's map in another, and Jackson's objects compare
     * whatever their fields' order.
     */
    private final Map<JsonNode, ByteBuffer> data = new ConcurrentHashMap<>();
    private final Map<String, List<Relay>> relays = new ConcurrentHashMap<>();

    /** Replaces what memory holds of {@code connector}'s offsets with {@code entries}. */
    void load(String connector, List<OffsetEntry> entries) {
        Map<JsonNode, ByteBuffer> loaded = new HashMap<>();
        for (OffsetEntry entry : entries) {
            JsonNode key = parse(ByteBuffer.wrap(entry.getKey().toByteArray()));
            if (key == null || !connector.equals(key.get(0).asText())) {
                throw new IllegalArgumentException("StartTask.source_offsets holds a key of another connector than "
                        + connector + ": " + entry.getKey().toStringUtf8());
            }
            if (entry.hasValue()) {
                loaded.put(key, ByteBuffer.wrap(entry.getValue().toByteArray()));
            }
        }
        synchronized (this) {
            data.keySet().removeIf(key -> connector.equals(key.get(0).asText()));
            data.putAll(loaded);
        }
    }

    /** {@code relay} takes the writes of {@code connector}'s offsets (a task of it runs). */
    void attach(String connector, Relay relay) {
        relays.computeIfAbsent(connector, name -> new CopyOnWriteArrayList<>()).add(relay);
    }

    /** {@code relay} no longer takes them (its task stopped). */
    void detach(String connector, Relay relay) {
        relays.computeIfPresent(connector, (name, list) -> {
            list.remove(relay);
            return list.isEmpty() ? null : list;
        });
    }

    @Override
    public void configure(WorkerConfig config) {
    }

    @Override
    public void start() {
    }

    @Override
    public void stop() {
    }

    @Override
    public Future<Map<ByteBuffer, ByteBuffer>> get(Collection<ByteBuffer> keys) {
        Map<ByteBuffer, ByteBuffer> found = new HashMap<>();
        for (ByteBuffer key : keys) {
            JsonNode parsed = parse(key);
            found.put(key, parsed == null ? null : data.get(parsed));
        }
        return CompletableFuture.completedFuture(found);
    }

    @Override
    public Future<Void> set(Map<ByteBuffer, ByteBuffer> values, Callback<Void> callback) {
        CompletableFuture<Void> written;
        try {
            Map<String, List<OffsetEntry>> byConnector = new LinkedHashMap<>();
            for (Map.Entry<ByteBuffer, ByteBuffer> entry : values.entrySet()) {
                String connector = connectorOf(entry.getKey());
                if (connector == null) {
                    throw new ConnectException("A source offset's key is not Kafka Connect's [\"<connector>\", "
                            + "{partition}]; the worker cannot store it");
                }
                OffsetEntry.Builder relayed = OffsetEntry.newBuilder().setKey(bytes(entry.getKey()));
                if (entry.getValue() != null) {
                    relayed.setValue(bytes(entry.getValue()));
                }
                byConnector.computeIfAbsent(connector, name -> new ArrayList<>()).add(relayed.build());
            }
            List<CompletableFuture<Void>> writes = new ArrayList<>();
            for (Map.Entry<String, List<OffsetEntry>> entry : byConnector.entrySet()) {
                writes.add(relayFor(entry.getKey()).write(entry.getValue()));
            }
            written = CompletableFuture.allOf(writes.toArray(CompletableFuture[]::new))
                    .orTimeout(WRITE_TIMEOUT_MS, TimeUnit.MILLISECONDS)
                    .thenRun(() -> remember(values));
        } catch (IOException | RuntimeException e) {
            written = CompletableFuture.failedFuture(
                    e instanceof ConnectException ? e : new ConnectException("Could not relay source offsets to the worker", e));
        }
        return written.whenComplete((ignored, error) -> {
            if (callback != null) {
                callback.onCompletion(error, null);
            }
        });
    }

    @Override
    public Set<Map<String, Object>> connectorPartitions(String connectorName) {
        Set<Map<String, Object>> partitions = new HashSet<>();
        for (JsonNode node : data.keySet()) {
            if (connectorName.equals(node.get(0).asText())) {
                @SuppressWarnings("unchecked")
                Map<String, Object> partition = JSON.convertValue(node.get(1), Map.class);
                partitions.add(partition);
            }
        }
        return partitions;
    }

    private synchronized void remember(Map<ByteBuffer, ByteBuffer> values) {
        for (Map.Entry<ByteBuffer, ByteBuffer> entry : values.entrySet()) {
            JsonNode key = parse(entry.getKey());
            if (entry.getValue() == null) {
                data.remove(key);
            } else {
                data.put(key, entry.getValue());
            }
        }
    }

    private Relay relayFor(String connector) {
        List<Relay> list = relays.get(connector);
        if (list != null) {
            for (Relay relay : list) {
                return relay;
            }
        }
        throw new ConnectException("No task of connector " + connector + " is connected to its worker here: "
                + "its source offsets cannot be stored");
    }

    /** The connector a key names, or null when it is not Kafka Connect's key. */
    static String connectorOf(ByteBuffer key) {
        JsonNode node = parse(key);
        return node == null ? null : node.get(0).asText();
    }

    private static JsonNode parse(ByteBuffer key) {
        if (key == null) {
            return null;
        }
        ByteBuffer copy = key.duplicate();
        byte[] raw = new byte[copy.remaining()];
        copy.get(raw);
        try {
            JsonNode node = JSON.readTree(raw);
            if (node != null && node.isArray() && node.size() == 2 && node.get(0).isTextual()
                    && node.get(1).isObject()) {
                return node;
            }
            return null;
        } catch (IOException e) {
            return null;
        }
    }

    private static ByteString bytes(ByteBuffer buffer) {
        return ByteString.copyFrom(buffer.duplicate());
    }
}
