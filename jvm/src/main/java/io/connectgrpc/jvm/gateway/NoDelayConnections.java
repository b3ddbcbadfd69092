package io.connectgrpc.jvm.gateway;

import java.net.Socket;
import java.net.SocketException;

import py4j.DefaultGatewayServerListener;
import py4j.GatewayServer;
import py4j.GatewayServerListener;
import py4j.Py4JServerConnection;

/**
 * Sends the driver JVM's py4j answers without waiting: each connection the Python side opens
 * from now on gets {@code TCP_NODELAY}. py4j writes an answer through an 8 KiB buffer, so an
 * answer larger than that leaves in several writes; without this, the second write waits
 * (Nagle's algorithm) until Python acknowledges the first, which it delays by ~40 ms, as a
 * request/response peer does: every answer over 8 KiB (a Java connector's validation, a
 * plugin listing) took 44 ms where a smaller one takes a fraction of a millisecond.
 */
public final class NoDelayConnections extends DefaultGatewayServerListener {

    private NoDelayConnections() {
    }

    /**
     * Installs the listener on the driver's py4j server (the object py4j binds as
     * {@code GATEWAY_SERVER}); returns whether it could (false for any other object).
     */
    public static boolean install(Object server) {
        if (!(server instanceof GatewayServer gateway)) {
            return false;
        }
        for (GatewayServerListener listener : gateway.getListeners()) {
            if (listener instanceof NoDelayConnections) {
                return true;
            }
        }
        gateway.addListener(new NoDelayConnections());
        return true;
    }

    /** Turns Nagle's algorithm off on {@code socket}; a socket already closed is left. */
    static void noDelay(Socket socket) {
        if (socket == null) {
            return;
        }
        try {
            socket.setTcpNoDelay(true);
        } catch (SocketException e) {
            // closed meanwhile: nothing will be written to it
        }
    }

    @Override
    public void connectionStarted(Py4JServerConnection connection) {
        noDelay(connection.getSocket());
    }
}
