package io.connectgrpc.jvm.host;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.InputStream;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.util.HashSet;
import java.util.Set;

import io.connectgrpc.jvm.host.proto.HostMessage;

import org.apache.logging.log4j.LogManager;
import org.apache.logging.log4j.ThreadContext;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** A task's log relay tells the driver the JVM's Java loggers, each name once per connection. */
@Timeout(60)
class LogRelayTest {

    @Test
    void theRelayTellsTheDriverTheJvmsLoggersOncePerConnection() throws Exception {
        String logger = "com.example.plugin.Poller" + System.nanoTime();
        try (ServerSocket server = new ServerSocket(0, 1, InetAddress.getLoopbackAddress());
                DriverLink link = DriverLink.connect(server.getInetAddress().getHostAddress(), server.getLocalPort(), 5_000);
                Socket driver = server.accept()) {
            LogRelay relay = LogRelay.start(link, "relayed", 0);
            assertNotNull(relay, "the test JVM logs through log4j 2");
            ThreadContext.put("connector.context", "[relayed|task-0] ");
            LogManager.getLogger(logger).debug("seen at any level, on the task's thread");
            ThreadContext.clearMap();
            InputStream in = driver.getInputStream();
            Set<String> told = new HashSet<>();
            int reports = 0;
            while (!told.contains(logger)) {
                HostMessage message = HostMessage.parseDelimitedFrom(in);
                assertNotNull(message, "the connection ended before the logger was told");
                if (message.hasLoggersSeen()) {
                    reports++;
                    for (String name : message.getLoggersSeen().getNamesList()) {
                        assertTrue(told.add(name), name + " told twice");
                    }
                }
            }
            assertTrue(reports >= 1);
            assertFalse(told.contains("org.apache.spark.SparkContext"));
            relay.close();
        }
    }
}
