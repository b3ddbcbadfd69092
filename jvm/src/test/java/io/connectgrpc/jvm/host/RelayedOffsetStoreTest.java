package io.connectgrpc.jvm.host;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;

import com.google.protobuf.ByteString;

import io.connectgrpc.jvm.host.proto.OffsetEntry;

import org.apache.kafka.connect.json.JsonConverter;
import org.apache.kafka.connect.json.JsonConverterConfig;
import org.apache.kafka.connect.storage.OffsetStorageReaderImpl;
import org.apache.kafka.connect.storage.OffsetStorageWriter;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * The offsets a standalone worker's Kafka worker gives its source tasks, read and written
 * through Kafka's own {@link OffsetStorageReaderImpl} and {@link OffsetStorageWriter} as
 * Kafka's source tasks do.
 */
class RelayedOffsetStoreTest {

    /** A relay that keeps what it was sent and answers when told. */
    private static final class Driver implements RelayedOffsetStore.Relay {
        final List<List<OffsetEntry>> sent = new ArrayList<>();
        final List<CompletableFuture<Void>> answers = new ArrayList<>();

        @Override
        public synchronized CompletableFuture<Void> write(List<OffsetEntry> entries) {
            sent.add(entries);
            CompletableFuture<Void> answer = new CompletableFuture<>();
            answers.add(answer);
            return answer;
        }
    }

    private static JsonConverter converter(boolean key) {
        JsonConverter converter = new JsonConverter();
        converter.configure(Map.of(JsonConverterConfig.SCHEMAS_ENABLE_CONFIG, "false"), key);
        return converter;
    }

    private static OffsetEntry entry(String key, String value) {
        OffsetEntry.Builder entry = OffsetEntry.newBuilder().setKey(ByteString.copyFromUtf8(key));
        if (value != null) {
            entry.setValue(ByteString.copyFromUtf8(value));
        }
        return entry.build();
    }

    private static OffsetStorageReaderImpl reader(RelayedOffsetStore store, String connector) {
        return new OffsetStorageReaderImpl(store, connector, converter(true), converter(false));
    }

    @Test
    void aTaskReadsTheOffsetsItsStartLoadedAndALoadReplacesTheConnectorsOwn() {
        RelayedOffsetStore store = new RelayedOffsetStore();
        store.load("files", List.of(
                entry("[\"files\",{\"filename\":\"/in\"}]", "{\"position\":9223372036854775807}"),
                entry("[\"files\",{\"filename\":\"/gone\"}]", null)));
        store.load("other", List.of(entry("[\"other\",{\"filename\":\"/in\"}]", "{\"position\":3}")));
        Map<String, Object> offset = reader(store, "files").offset(Map.of("filename", "/in"));
        assertEquals(Map.of("position", Long.MAX_VALUE), offset);
        assertNull(reader(store, "files").offset(Map.of("filename", "/gone")));

        // an offset reset since (the start carries none for it): the task no longer sees it
        store.load("files", List.of());
        assertNull(reader(store, "files").offset(Map.of("filename", "/in")));
        assertEquals(Map.of("position", 3L), reader(store, "other").offset(Map.of("filename", "/in")));
        assertEquals(Set.of(Map.of("filename", "/in")), store.connectorPartitions("other"));
    }

    @Test
    void aKeyIsFoundWhateverTheOrderOfItsPartitionsFields() throws Exception {
        RelayedOffsetStore store = new RelayedOffsetStore();
        // the worker writes a partition's fields sorted; a task's map may have them in any order
        store.load("db", List.of(entry("[\"db\",{\"a\":\"x\",\"b\":2}]", "{\"lsn\":7}")));
        Map<ByteBuffer, ByteBuffer> found = new HashMap<>();
        ByteBuffer key = buffer("[\"db\",{\"b\":2,\"a\":\"x\"}]");
        store.get(List.of(key)).get().forEach(found::put);
        assertEquals(buffer("{\"lsn\":7}"), found.get(key));
    }

    @Test
    void aLoadRefusesAnotherConnectorsKey() {
        RelayedOffsetStore store = new RelayedOffsetStore();
        IllegalArgumentException refused = assertThrows(IllegalArgumentException.class,
                () -> store.load("files", List.of(entry("[\"other\",{}]", "{}"))));
        assertTrue(refused.getMessage().contains("StartTask.source_offsets"), refused.getMessage());
    }

    @Test
    @Timeout(30)
    void aCommitIsRelayedToItsConnectorsDriverAndCompletesWhenStored() throws Exception {
        RelayedOffsetStore store = new RelayedOffsetStore();
        Driver driver = new Driver();
        store.attach("files", driver);
        OffsetStorageWriter writer = new OffsetStorageWriter(store, "files", converter(true), converter(false));
        writer.offset(Map.of("filename", "/in"), Map.of("position", 42L));
        assertTrue(writer.beginFlush());
        AtomicReference<Throwable> called = new AtomicReference<>(new IllegalStateException("not called"));
        Future<Void> flushed = writer.doFlush((error, result) -> called.set(error));
        assertFalse(flushed.isDone());
        assertEquals(1, driver.sent.size());
        OffsetEntry sent = driver.sent.get(0).get(0);
        assertEquals("[\"files\",{\"filename\":\"/in\"}]", sent.getKey().toStringUtf8());
        assertEquals("{\"position\":42}", sent.getValue().toStringUtf8());
        // not readable before the driver stored it
        assertNull(reader(store, "files").offset(Map.of("filename", "/in")));

        driver.answers.get(0).complete(null);
        flushed.get(10, TimeUnit.SECONDS);
        writer.cancelFlush();  // no-op after a completed flush, as Kafka's task does nothing more
        assertNull(called.get());
        assertEquals(Map.of("position", 42L), reader(store, "files").offset(Map.of("filename", "/in")));
    }

    @Test
    @Timeout(30)
    void aCommitTheDriverRefusesFailsWithItsReasonAndChangesNothing() {
        RelayedOffsetStore store = new RelayedOffsetStore();
        Driver driver = new Driver();
        store.attach("files", driver);
        Map<ByteBuffer, ByteBuffer> values = new HashMap<>();
        values.put(buffer("[\"files\",{\"f\":1}]"), buffer("{\"p\":1}"));
        AtomicReference<Throwable> called = new AtomicReference<>();
        Future<Void> written = store.set(values, (error, result) -> called.set(error));
        driver.answers.get(0).completeExceptionally(new IllegalStateException("disk full"));
        ExecutionException failed = assertThrows(ExecutionException.class, () -> written.get(10, TimeUnit.SECONDS));
        assertTrue(failed.getCause().getMessage().contains("disk full"), failed.getCause().getMessage());
        assertTrue(called.get() != null);
        assertNull(reader(store, "files").offset(Map.of("f", 1L)));
    }

    @Test
    void aCommitOfAConnectorWithNoTaskAttachedFailsAndSaysWhy() {
        RelayedOffsetStore store = new RelayedOffsetStore();
        Driver driver = new Driver();
        store.attach("files", driver);
        store.detach("files", driver);
        Map<ByteBuffer, ByteBuffer> values = new HashMap<>();
        values.put(buffer("[\"files\",{\"f\":1}]"), buffer("{\"p\":1}"));
        ExecutionException failed = assertThrows(ExecutionException.class,
                () -> store.set(values, null).get(10, TimeUnit.SECONDS));
        assertTrue(failed.getCause().getMessage().contains("No task of connector files"),
                failed.getCause().getMessage());
        assertTrue(driver.sent.isEmpty());
    }

    @Test
    void aKeyThatIsNotKafkaConnectsIsRefused() {
        RelayedOffsetStore store = new RelayedOffsetStore();
        Map<ByteBuffer, ByteBuffer> values = new HashMap<>();
        values.put(buffer("{\"f\":1}"), buffer("{\"p\":1}"));
        ExecutionException failed = assertThrows(ExecutionException.class,
                () -> store.set(values, null).get(10, TimeUnit.SECONDS));
        assertTrue(failed.getCause().getMessage().contains("not Kafka Connect's"), failed.getCause().getMessage());
    }

    private static ByteBuffer buffer(String text) {
        return ByteBuffer.wrap(text.getBytes(StandardCharsets.UTF_8));
    }
}
