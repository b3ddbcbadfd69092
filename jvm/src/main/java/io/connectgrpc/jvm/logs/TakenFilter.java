package io.connectgrpc.jvm.logs;

import org.apache.logging.log4j.core.LogEvent;
import org.apache.logging.log4j.core.filter.AbstractFilter;

/**
 * Added to each of the JVM's other appenders (Spark's console): keeps out the lines the bridge
 * hands to the worker, so that they are written once, by the worker, masked; a taken line with
 * nowhere to go (no task hosted in this JVM any more) still goes to Spark's log.
 */
final class TakenFilter extends AbstractFilter {

    private final LogBridge bridge;

    TakenFilter(LogBridge bridge) {
        super(Result.NEUTRAL, Result.NEUTRAL);
        this.bridge = bridge;
    }

    @Override
    public Result filter(LogEvent event) {
        String context = event.getContextData().getValue(LogBridge.CONTEXT_KEY);
        if (bridge.takes(event.getLoggerName(), context)
                && bridge.route(ConnectorContext.parse(context)) != null) {
            return Result.DENY;
        }
        return Result.NEUTRAL;
    }
}
