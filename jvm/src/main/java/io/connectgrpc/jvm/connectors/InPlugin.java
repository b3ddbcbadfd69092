package io.connectgrpc.jvm.connectors;

import org.apache.kafka.connect.runtime.isolation.LoaderSwap;
import org.apache.kafka.connect.runtime.isolation.Plugins;
import org.apache.kafka.connect.util.LoggingContext;

/**
 * Runs a call on a plugin as Kafka's worker runs it: with the plugin's class loader as the
 * thread's context class loader, and with Kafka's logging context of its connector (the
 * {@code connector.context} of its log lines).
 */
final class InPlugin {

    /** A call on a plugin. */
    @FunctionalInterface
    interface Work<T> {
        T run();
    }

    private InPlugin() {
    }

    static <T> T run(Plugins plugins, ClassLoader loader, String connector, Work<T> work) {
        LoaderSwap swap = plugins.withClassLoader(loader);
        LoggingContext logging = connector == null ? null : LoggingContext.forConnector(connector);
        try {
            return work.run();
        } finally {
            if (logging != null) {
                logging.close();
            }
            swap.close();
        }
    }
}
