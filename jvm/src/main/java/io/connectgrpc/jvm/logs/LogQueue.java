package io.connectgrpc.jvm.logs;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

import io.connectgrpc.jvm.host.proto.LogRecord;

/**
 * A bounded queue of log records on their way to the worker: the thread that logs only offers
 * (it never waits for the worker), and a record that does not fit is dropped and counted; the
 * next record that fits carries the count ({@code LogRecord.dropped}). Thread-safe.
 */
public final class LogQueue {

    private final BlockingQueue<LogRecord> queue;
    private final AtomicLong dropped = new AtomicLong();

    public LogQueue(int capacity) {
        this.queue = new ArrayBlockingQueue<>(capacity);
    }

    /** Queues a record; false (and counted) when the queue is full. */
    boolean offer(LogRecord.Builder record) {
        long before = dropped.getAndSet(0L);
        if (before > 0L) {
            record.setDropped(before);
        }
        if (queue.offer(record.build())) {
            return true;
        }
        dropped.addAndGet(before + 1L);
        return false;
    }

    /**
     * The records queued, oldest first, at most {@code max}: waits up to {@code waitMs} for the
     * first one, then takes what is there (an empty list when none came).
     */
    public List<LogRecord> take(int max, long waitMs) throws InterruptedException {
        LogRecord first = queue.poll(Math.max(0L, waitMs), TimeUnit.MILLISECONDS);
        if (first == null) {
            return List.of();
        }
        List<LogRecord> records = new ArrayList<>(Math.min(max, queue.size() + 1));
        records.add(first);
        queue.drainTo(records, Math.max(0, max - 1));
        return records;
    }

    public boolean isEmpty() {
        return queue.isEmpty();
    }
}
