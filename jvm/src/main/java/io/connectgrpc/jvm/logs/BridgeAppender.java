package io.connectgrpc.jvm.logs;

import org.apache.logging.log4j.core.LogEvent;
import org.apache.logging.log4j.core.appender.AbstractAppender;
import org.apache.logging.log4j.core.config.Property;

/**
 * The bridge's appender, on the root logger: hands the lines the bridge takes to it, and
 * ignores the others (Spark's). Never throws into a logging call.
 */
final class BridgeAppender extends AbstractAppender {

    private final LogBridge bridge;

    BridgeAppender(String name, LogBridge bridge) {
        super(name, null, null, true, Property.EMPTY_ARRAY);
        this.bridge = bridge;
    }

    @Override
    public void append(LogEvent event) {
        try {
            if (bridge.takes(event.getLoggerName(), event.getContextData().getValue(LogBridge.CONTEXT_KEY))) {
                bridge.publish(event);
            }
        } catch (RuntimeException | LinkageError e) {
            // a line the worker does not get is not worth failing the plugin's call for
        }
    }
}
