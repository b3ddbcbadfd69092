package io.connectgrpc.jvm.logs;

import org.apache.logging.log4j.Level;
import org.apache.logging.log4j.Marker;
import org.apache.logging.log4j.core.LogEvent;
import org.apache.logging.log4j.core.Logger;
import org.apache.logging.log4j.core.filter.AbstractFilter;
import org.apache.logging.log4j.message.Message;

/**
 * The bridge's configuration filter: log4j asks it first whether a logger's call is logged,
 * before the logger's own level. For a line the bridge takes ({@link LogBridge#takes}) it answers
 * by the worker's levels (ACCEPT or DENY); for any other line NEUTRAL, and log4j decides by
 * Spark's configuration as before (every line, while the bridge has nowhere to send any). Every overload of log4j's filter is answered the same way,
 * so that each logging call (and {@code isDebugEnabled()}-style checks) is decided once.
 *
 * <p>log4j asks for every call, those of disabled levels included, before the logger's level
 * check: a call of a logger already taken that neither the worker's level nor log4j's lets
 * through is answered DENY first ({@link LogBridge#deniedEitherWay}), which is what the full
 * decision would come to, so that a task's trace and debug checks cost a few field reads
 * rather than the thread's class loader, its context and the table's namespaces.
 */
final class BridgeFilter extends AbstractFilter {

    private final LogBridge bridge;

    BridgeFilter(LogBridge bridge) {
        super(Result.NEUTRAL, Result.NEUTRAL);
        this.bridge = bridge;
    }

    private Result decide(Logger logger, Level level) {
        if (logger != null && bridge.deniedEitherWay(logger, level)) {
            return Result.DENY;
        }
        return decideFully(logger, level);
    }

    private Result decideFully(Logger logger, Level level) {
        String name = logger == null ? null : logger.getName();
        if (!bridge.active() || !bridge.takesHere(name)) {
            return Result.NEUTRAL;
        }
        return bridge.enabled(logger, level) ? Result.ACCEPT : Result.DENY;
    }

    @Override
    public Result filter(LogEvent event) {
        // an event already made (an appender's or a logger config's own filter): not this one's
        return Result.NEUTRAL;
    }

    @Override
    public Result filter(Logger logger, Level level, Marker marker, Message msg, Throwable t) {
        return decide(logger, level);
    }

    @Override
    public Result filter(Logger logger, Level level, Marker marker, Object msg, Throwable t) {
        return decide(logger, level);
    }

    @Override
    public Result filter(Logger logger, Level level, Marker marker, String msg, Object... params) {
        return decide(logger, level);
    }

    @Override
    public Result filter(Logger logger, Level level, Marker marker, String msg, Object p0) {
        return decide(logger, level);
    }

    @Override
    public Result filter(Logger logger, Level level, Marker marker, String msg, Object p0, Object p1) {
        return decide(logger, level);
    }

    @Override
    public Result filter(Logger logger, Level level, Marker marker, String msg, Object p0, Object p1, Object p2) {
        return decide(logger, level);
    }

    @Override
    public Result filter(Logger logger, Level level, Marker marker, String msg, Object p0, Object p1, Object p2, Object p3) {
        return decide(logger, level);
    }

    @Override
    public Result filter(Logger logger, Level level, Marker marker, String msg, Object p0, Object p1, Object p2, Object p3, Object p4) {
        return decide(logger, level);
    }

    @Override
    public Result filter(Logger logger, Level level, Marker marker, String msg, Object p0, Object p1, Object p2, Object p3, Object p4, Object p5) {
        return decide(logger, level);
    }

    @Override
    public Result filter(Logger logger, Level level, Marker marker, String msg, Object p0, Object p1, Object p2, Object p3, Object p4, Object p5, Object p6) {
        return decide(logger, level);
    }

    @Override
    public Result filter(Logger logger, Level level, Marker marker, String msg, Object p0, Object p1, Object p2, Object p3, Object p4, Object p5, Object p6, Object p7) {
        return decide(logger, level);
    }

    @Override
    public Result filter(Logger logger, Level level, Marker marker, String msg, Object p0, Object p1, Object p2, Object p3, Object p4, Object p5, Object p6, Object p7, Object p8) {
        return decide(logger, level);
    }

    @Override
    public Result filter(Logger logger, Level level, Marker marker, String msg, Object p0, Object p1, Object p2, Object p3, Object p4, Object p5, Object p6, Object p7, Object p8, Object p9) {
        return decide(logger, level);
    }
}
