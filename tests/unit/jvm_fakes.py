"""A JVM task host on a loopback socket, the other end of the driver's task-host protocol in
unit tests: it says hello with the token it was handed, reads the driver's messages on a
thread of its own, records each and hands it to ``answer``, and is a ``LaunchedHost`` (alive
while it reads). Each test's host says in ``answer`` what it does with a message."""

from __future__ import annotations

import contextlib
import socket
import threading
from typing import Any

from connect_grpc.host.v1 import host_pb2
from connect_grpc.runtime.hosting.jvm_wire import encode, read_message


class LoopbackJvm:
    #: What its Hello says of where it runs.
    executor_id = "3"
    hostname = "node-9"

    def __init__(self) -> None:
        self.sock: socket.socket | None = None
        self.thread: threading.Thread | None = None
        self.received: list[host_pb2.DriverMessage] = []

    def connect(self, address: tuple[str, int], token: str) -> Any:
        self.sock = socket.create_connection(address, timeout=10)
        hello = host_pb2.Hello(token=token, executor_id=self.executor_id, host=self.hostname)
        self.send(host_pb2.HostMessage(hello=hello))
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()
        return self

    def send(self, message: host_pb2.HostMessage) -> None:
        assert self.sock is not None
        self.sock.sendall(encode(message))

    def answer(self, message: host_pb2.DriverMessage) -> bool:
        """Answers one of the driver's messages; False ends the connection."""
        return True

    def served(self) -> None:
        """Called once the connection ended, whichever end ended it."""

    def _serve(self) -> None:
        assert self.sock is not None
        stream = self.sock.makefile("rb")
        try:
            while (data := read_message(stream)) is not None:
                message = host_pb2.DriverMessage.FromString(data)
                self.received.append(message)
                if not self.answer(message):
                    return
        except OSError:
            return
        finally:
            self.served()

    def sent(self, kind: str) -> list[Any]:
        """What the driver sent of one kind of message, in order."""
        return [getattr(m, kind) for m in self.received if m.WhichOneof("message") == kind]

    def close(self) -> None:
        if self.sock is not None:
            with contextlib.suppress(OSError):
                self.sock.shutdown(socket.SHUT_RDWR)
            self.sock.close()

    # LaunchedHost

    def alive(self) -> bool:
        return self.thread is not None and self.thread.is_alive()

    def failure(self) -> str:
        return ""

    def end(self) -> None:
        self.close()
