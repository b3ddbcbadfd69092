"""The driver's end of the source offsets a JVM host relays for a worker that keeps them
itself (a standalone worker's offsets file): a source task's start carries its connector's
stored offsets, and each ``OffsetsWrite`` is stored before it is answered, in order, with
why when it cannot be."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from connect_grpc.host.v1 import host_pb2
from connect_grpc.kernel.domain import TaskId
from connect_grpc.runtime.hosting.jvm_host import JavaTaskSpec, JvmTaskHost
from connect_grpc.runtime.hosting.jvm_wire import JvmHostListener, encode, read_message
from connect_grpc.storage.file_offsets import FileOffsetStore

BIG = 2**63 - 1


@pytest.fixture
def listener() -> Iterator[JvmHostListener]:
    listening = JvmHostListener(lambda: "127.0.0.1")
    yield listening
    listening.close()


@pytest.fixture
def store(tmp_path: Path) -> FileOffsetStore:
    offsets = FileOffsetStore(tmp_path / "connect.offsets")
    offsets.start()
    return offsets


def _host(store: FileOffsetStore | None, listener: JvmHostListener, sink: bool = False) -> Any:
    spec = JavaTaskSpec(
        TaskId("files", 0), "w", {}, {}, {}, sink=sink, exactly_once=False,
        shutdown_timeout_ms=1000, offset_store=store,
    )
    return JvmTaskHost(spec, lambda address, token: None, listener,  # type: ignore[arg-type, return-value]
                       lambda: None, executor=False)


def _entry(key: bytes, value: bytes | None) -> host_pb2.OffsetEntry:
    entry = host_pb2.OffsetEntry(key=key)
    if value is not None:
        entry.value = value
    return entry


def test_a_source_tasks_start_carries_its_connectors_stored_offsets(
    store: FileOffsetStore, listener: JvmHostListener
) -> None:
    store.put("files", [({"filename": "/in"}, {"position": BIG})])
    store.put("other", [({"filename": "/in"}, {"position": 1})])
    host = _host(store, listener)
    [entry] = host._stored_offsets()
    assert entry.key == b'["files",{"filename":"/in"}]'
    assert entry.value == b'{"position":9223372036854775807}'
    # a sink's offsets are its consumer group's; a worker with an offsets topic sends none
    assert _host(store, listener, sink=True)._stored_offsets() == []
    assert _host(None, listener)._stored_offsets() == []


def test_a_sink_task_of_a_worker_keeping_its_offsets_says_so_without_a_store() -> None:
    """The JVM's Kafka worker of a standalone worker relays source offsets; a sink task
    started on it must be told so too, though it has no offsets to load or relay."""

    def spec(sink: bool, store: FileOffsetStore | None, keeps: bool) -> JavaTaskSpec:
        return JavaTaskSpec(TaskId("files", 0), "w", {}, {}, {}, sink=sink,
                            exactly_once=False, shutdown_timeout_ms=1000, offset_store=store,
                            worker_keeps_offsets=keeps)

    assert spec(sink=True, store=None, keeps=True).keeps_offsets
    assert not spec(sink=True, store=None, keeps=False).keeps_offsets
    assert spec(sink=False, store=FileOffsetStore(Path("/nowhere")), keeps=False).keeps_offsets


def test_relayed_offsets_are_stored_whatever_their_fields_order_and_tombstones_reset(
    store: FileOffsetStore, listener: JvmHostListener
) -> None:
    host = _host(store, listener)
    written = host._write_offsets([
        _entry(b'["files",{"z":1,"filename":"/in"}]', b'{"position":42}'),
        _entry(b'["files",{"filename":"/gone"}]', b'{"position":1}'),
    ])
    assert written == ""
    assert store.get("files", {"filename": "/in", "z": 1}) == {"position": 42}
    assert host._write_offsets([_entry(b'["files",{"filename":"/gone"}]', None)]) == ""
    assert store.get_all("files") == [({"filename": "/in", "z": 1}, {"position": 42})]


def test_an_offset_of_another_connector_or_of_no_connector_is_refused_and_nothing_stored(
    store: FileOffsetStore, listener: JvmHostListener
) -> None:
    host = _host(store, listener)
    refused = host._write_offsets([
        _entry(b'["files",{"filename":"/in"}]', b'{"position":1}'),
        _entry(b'["other",{"filename":"/in"}]', b'{"position":1}'),
    ])
    assert "OffsetsWrite.entries" in refused and "files" in refused
    assert "not one of connector files" in _host(store, listener)._write_offsets(
        [_entry(b'{"filename":"/in"}', b"{}")])
    assert store.get_all("files") == [] and store.get_all("other") == []
    assert "Kafka's offsets topic" in _host(None, listener)._write_offsets([])


def test_a_connection_stores_each_write_in_order_and_answers_it(
    store: FileOffsetStore, listener: JvmHostListener
) -> None:
    host = _host(store, listener)
    token, connected = listener.expect()
    jvm = socket.create_connection(listener.address(), timeout=10)
    jvm.sendall(encode(host_pb2.HostMessage(hello=host_pb2.Hello(token=token))))
    conn = connected.result(timeout=10)
    conn.start("test-reader", lambda check: "", None, host._write_offsets)
    key = b'["files",{"filename":"/in"}]'
    for write_id, position in ((1, b"1"), (2, b"2"), (3, b"3")):
        jvm.sendall(encode(host_pb2.HostMessage(offsets_write=host_pb2.OffsetsWrite(
            id=write_id, entries=[_entry(key, b'{"position":' + position + b"}")]))))
    jvm.sendall(encode(host_pb2.HostMessage(offsets_write=host_pb2.OffsetsWrite(
        id=4, entries=[_entry(b'["other",{}]', b"{}")]))))
    stream = jvm.makefile("rb")
    answers = []
    for _ in range(4):
        data = read_message(stream)
        assert data is not None
        answers.append(host_pb2.DriverMessage.FromString(data).offsets_written)
    assert [(a.id, a.error) for a in answers[:3]] == [(1, ""), (2, ""), (3, "")]
    assert answers[3].id == 4 and "not one of connector files" in answers[3].error
    assert store.get("files", {"filename": "/in"}) == {"position": 3}
    assert conn.lost is None
    jvm.close()
    conn.close()
