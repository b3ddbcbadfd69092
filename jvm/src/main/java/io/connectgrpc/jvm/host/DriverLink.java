package io.connectgrpc.jvm.host;

import java.io.BufferedInputStream;
import java.io.BufferedOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.util.List;

import io.connectgrpc.jvm.host.proto.DriverMessage;
import io.connectgrpc.jvm.host.proto.HostMessage;

/**
 * A task host's one connection to the worker's driver (proto/connect_grpc/host/v1): messages
 * are length-delimited (a varint size, then the message), written from any thread (the
 * session's, Kafka's task threads, whose status events it relays, and the task's log relay) and
 * read by one.
 */
final class DriverLink implements AutoCloseable {

    private final Socket socket;
    private final InputStream in;
    private final OutputStream out;
    private final Object writes = new Object();

    DriverLink(Socket socket) throws IOException {
        this.socket = socket;
        // Each message is flushed at once: a status event or an answer the driver waits for.
        socket.setTcpNoDelay(true);
        this.in = new BufferedInputStream(socket.getInputStream());
        this.out = new BufferedOutputStream(socket.getOutputStream());
    }

    /** Connects to the driver's listener within {@code timeoutMs}. */
    static DriverLink connect(String address, int port, int timeoutMs) throws IOException {
        Socket socket = new Socket();
        try {
            socket.connect(new InetSocketAddress(address, port), timeoutMs);
            return new DriverLink(socket);
        } catch (IOException | RuntimeException e) {
            socket.close();
            throw e;
        }
    }

    /** Sends one message; any thread. */
    void send(HostMessage message) throws IOException {
        synchronized (writes) {
            message.writeDelimitedTo(out);
            out.flush();
        }
    }

    /** Sends several messages, flushed once; any thread. */
    void send(List<HostMessage> messages) throws IOException {
        synchronized (writes) {
            for (HostMessage message : messages) {
                message.writeDelimitedTo(out);
            }
            out.flush();
        }
    }

    /** The driver's next message, blocking; null once the driver closed the connection. */
    DriverMessage receive() throws IOException {
        return DriverMessage.parseDelimitedFrom(in);
    }

    @Override
    public void close() {
        try {
            socket.close();
        } catch (IOException e) {
            // closing: nothing more to tell anyone
        }
    }
}
