package io.connectgrpc.jvm.gateway;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.net.InetAddress;
import java.net.Socket;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.Test;

import py4j.DefaultGatewayServerListener;
import py4j.GatewayServer;
import py4j.Py4JServerConnection;

class NoDelayConnectionsTest {

    @Test
    void aConnectionOpenedAfterTheInstallHasNoDelay() throws Exception {
        GatewayServer server = new GatewayServer(new Object(), 0, 0, InetAddress.getLoopbackAddress(),
                InetAddress.getLoopbackAddress(), 0, 0, null);
        CompletableFuture<Boolean> noDelay = new CompletableFuture<>();
        assertTrue(NoDelayConnections.install(server));
        assertTrue(NoDelayConnections.install(server), "a second install finds the first");
        assertEquals(1, server.getListeners().stream().filter(l -> l instanceof NoDelayConnections).count());
        server.addListener(new DefaultGatewayServerListener() {
            @Override
            public void connectionStarted(Py4JServerConnection connection) {
                try {
                    noDelay.complete(connection.getSocket().getTcpNoDelay());
                } catch (Exception e) {
                    noDelay.completeExceptionally(e);
                }
            }
        });
        server.start();
        try (Socket client = new Socket(InetAddress.getLoopbackAddress(), server.getListeningPort())) {
            assertTrue(noDelay.get(10, TimeUnit.SECONDS), "the server's end of the connection");
        } finally {
            server.shutdown();
        }
    }

    @Test
    void anythingButAGatewayServerIsLeftAlone() {
        assertFalse(NoDelayConnections.install(new Object()));
        assertFalse(NoDelayConnections.install(null));
    }
}
