"""The driver's end of the task-host protocol (``runtime.hosting.jvm_wire``): its framing (a
varint size, then the message, as Java's writeDelimitedTo), the listener that matches a
host's connection to the task waiting for it by the token of its Hello, and a connection's
events, Stopped, checks and loss. A test host speaks from a loopback socket."""

from __future__ import annotations

import io
import socket
import threading
import time
from collections.abc import Iterator

import pytest

from connect_grpc.host.v1 import host_pb2
from connect_grpc.runtime.hosting.jobs import HostLostError
from connect_grpc.runtime.hosting.jvm_wire import (
    MAX_MESSAGE_BYTES,
    JvmHostListener,
    encode,
    read_message,
)

pytestmark = pytest.mark.timeout(30)


def test_a_message_is_framed_by_its_varint_size_as_java_frames_it() -> None:
    event = host_pb2.TaskEvent(kind=host_pb2.TaskEvent.KIND_FAILED, trace="x" * 300)
    framed = encode(host_pb2.HostMessage(task_event=event))
    body = host_pb2.HostMessage(task_event=event).SerializeToString()
    # 300+ bytes: a two-byte varint, low seven bits first with the continuation bit set
    assert framed[:2] == bytes([(len(body) & 0x7F) | 0x80, len(body) >> 7])
    assert framed[2:] == body
    stream = io.BytesIO(framed + encode(host_pb2.HostMessage(stopped=host_pb2.Stopped(clean=True))))
    first = read_message(stream)
    assert first is not None
    assert host_pb2.HostMessage.FromString(first).task_event.trace == "x" * 300
    second = read_message(stream)
    assert second is not None
    assert host_pb2.HostMessage.FromString(second).stopped.clean
    assert read_message(stream) is None  # a clean end between two messages


def test_a_stream_that_ends_inside_a_message_or_sizes_one_too_large_is_refused() -> None:
    framed = encode(host_pb2.HostMessage(hello=host_pb2.Hello(token="t" * 200)))
    with pytest.raises(EOFError):
        read_message(io.BytesIO(framed[:1]))
    with pytest.raises(EOFError):
        read_message(io.BytesIO(framed[:-1]))
    too_large = MAX_MESSAGE_BYTES + 1
    size = bytearray()
    while too_large:
        low, too_large = too_large & 0x7F, too_large >> 7
        size.append(low | (0x80 if too_large else 0))
    with pytest.raises(ValueError, match="bytes"):
        read_message(io.BytesIO(bytes(size)))


@pytest.fixture
def listener() -> Iterator[JvmHostListener]:
    listening = JvmHostListener(lambda: "127.0.0.1")
    yield listening
    listening.close()


def _host(listener: JvmHostListener, token: str) -> socket.socket:
    """A test host: connects and says hello with ``token``."""
    host = socket.create_connection(listener.address(), timeout=10)
    hello = host_pb2.Hello(token=token, executor_id="7", host="node-3")
    host.sendall(encode(host_pb2.HostMessage(hello=hello)))
    return host


def _read(host: socket.socket) -> host_pb2.DriverMessage:
    data = read_message(host.makefile("rb"))
    assert data is not None, "the driver closed the connection"
    return host_pb2.DriverMessage.FromString(data)


def test_the_listener_hands_a_connection_to_the_task_whose_token_it_says(
    listener: JvmHostListener,
) -> None:
    token, connected = listener.expect()
    stranger = _host(listener, "not-a-token-anyone-waits-for")
    host = _host(listener, token)
    conn = connected.result(timeout=10)
    assert (conn.executor_id, conn.host) == ("7", "node-3")
    # a connection with a token nobody waits for is closed unanswered
    stranger.settimeout(10)
    assert stranger.recv(1) == b""
    # a token is good for one connection only
    again = _host(listener, token)
    again.settimeout(10)
    assert again.recv(1) == b""
    for sock in (stranger, host, again):
        sock.close()
    conn.close()


def test_a_connection_queues_events_keeps_stopped_and_answers_checks(
    listener: JvmHostListener,
) -> None:
    token, connected = listener.expect()
    host = _host(listener, token)
    conn = connected.result(timeout=10)
    asked: list[int] = []

    def answer(check: int) -> str:
        asked.append(check)
        return "" if check == host_pb2.CheckRequest.CHECK_PRE_PRODUCER else "not yours"

    conn.start("test-reader", answer)
    started = host_pb2.TaskEvent(kind=host_pb2.TaskEvent.KIND_STARTED, version="4.3.1")
    host.sendall(encode(host_pb2.HostMessage(task_event=started)))
    conn.wait(5)
    assert [e.version for e in conn.take_events()] == ["4.3.1"]
    for request_id, check in ((1, host_pb2.CheckRequest.CHECK_PRE_PRODUCER),
                              (2, host_pb2.CheckRequest.CHECK_POST_PRODUCER)):
        request = host_pb2.CheckRequest(id=request_id, check=check)
        host.sendall(encode(host_pb2.HostMessage(check_request=request)))
        done = _read(host).check_done
        assert done.id == request_id
    assert done.error == "not yours"
    assert asked == [host_pb2.CheckRequest.CHECK_PRE_PRODUCER,
                     host_pb2.CheckRequest.CHECK_POST_PRODUCER]
    conn.send(host_pb2.DriverMessage(stop_task=host_pb2.StopTask(timeout_ms=1000)))
    assert _read(host).stop_task.timeout_ms == 1000
    stopped = host_pb2.Stopped(clean=False, trace="not stopped in time")
    host.sendall(encode(host_pb2.HostMessage(stopped=stopped)))
    assert conn.wait_stopped(5).trace == "not stopped in time"
    host.close()
    conn.close()


def test_a_connection_the_host_closes_is_lost_and_wakes_its_waiter(
    listener: JvmHostListener,
) -> None:
    token, connected = listener.expect()
    host = _host(listener, token)
    conn = connected.result(timeout=10)
    conn.start("test-reader", lambda check: "")
    woke = threading.Event()

    def waiter() -> None:
        conn.wait(20)
        woke.set()

    threading.Thread(target=waiter, daemon=True).start()
    time.sleep(0.2)
    host.close()
    assert woke.wait(5), "a lost host wakes the task's wait"
    assert conn.lost is not None and "closed" in conn.lost
    assert conn.wait_stopped(0.1) is None
    with pytest.raises(HostLostError):
        for _ in range(50):  # the kernel may take one send to notice
            conn.send(host_pb2.DriverMessage(stop_task=host_pb2.StopTask(timeout_ms=1)))
            time.sleep(0.05)
    conn.close()


def test_a_closed_listener_takes_no_new_host_and_cancels_the_waits(
    listener: JvmHostListener,
) -> None:
    _, connected = listener.expect()
    listener.address()
    listener.close()
    assert connected.cancelled()
    with pytest.raises(HostLostError, match="stopping"):
        listener.address()
