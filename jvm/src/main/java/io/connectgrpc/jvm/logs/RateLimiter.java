package io.connectgrpc.jvm.logs;

import java.util.LinkedHashMap;
import java.util.Map;
import java.util.function.LongSupplier;

/**
 * Holds back repeated log lines, as the worker does for its Kafka clients' lines: a line of a
 * given key (logger, level, pattern and connector context) is let through the first time, then at
 * most once per window, carrying how many of its kind were held back since the previous one.
 * A retry loop that logs the same warning every 100 ms then costs one line every 30 s. At most
 * {@code maxKeys} keys are remembered (the least recently seen are forgotten). Thread-safe.
 */
final class RateLimiter {

    /** The window, as the worker's for its Kafka clients' lines. */
    static final long WINDOW_MS = 30_000L;
    static final int MAX_KEYS = 4096;

    private final long windowNanos;
    private final LongSupplier nanos;
    private final Map<String, long[]> seen;

    RateLimiter(long windowMs, int maxKeys, LongSupplier nanos) {
        this.windowNanos = windowMs * 1_000_000L;
        this.nanos = nanos;
        this.seen = new LinkedHashMap<>(64, 0.75f, true) {
            private static final long serialVersionUID = 1L;

            @Override
            protected boolean removeEldestEntry(Map.Entry<String, long[]> eldest) {
                return size() > maxKeys;
            }
        };
    }

    RateLimiter() {
        this(WINDOW_MS, MAX_KEYS, System::nanoTime);
    }

    /**
     * Whether a line of {@code key} goes through now: -1 if it is held back, else how many lines
     * of its key were held back since the previous one went through.
     */
    synchronized long admit(String key) {
        long now = nanos.getAsLong();
        long[] state = seen.get(key);  // {when the last one went through, how many held back since}
        if (state == null) {
            seen.put(key, new long[] {now, 0L});
            return 0L;
        }
        if (now - state[0] < windowNanos) {
            state[1]++;
            return -1L;
        }
        long held = state[1];
        state[0] = now;
        state[1] = 0L;
        return held;
    }
}
