"""Kafka Connect's Java connectors on a real standalone worker, as Kafka Connect's
``connect-standalone`` runs them: Kafka's FileStreamSourceConnector (connect-file 4.3.1, from
the plugin directories ``make install`` fetched), its instance in the worker's Spark driver JVM
and its task under Kafka's own worker in a JVM host, with its source offsets in the worker's
offsets file (``offset.storage.file.filename``) as a Python task's are (and Kafka's
FileStreamSinkConnector beside it, on the same Kafka worker, its pipeline previewed):
GetOffsets shows what the task committed, a restarted worker resumes from there without
sending a line again, and AlterOffsets/ResetOffsets change what the task starts from.
Kafka's worker commits a source task's offsets every ``offset.flush.interval.ms`` (60 s,
left as it is) and as the task stops: the offsets seen here are those of the stops."""

from __future__ import annotations

import json
import uuid
from pathlib import Path

import pytest

from connect_grpc.client import ConnectClient
from connect_grpc.java.plugin_jars import CONNECT_FILE, ensure_plugins
from connect_grpc.kernel.domain import ConnectorOffset, ConnectorStatus, State
from connect_grpc.pipeline.preview_model import ConnectData, Outcome, TopicTail
from connect_grpc.testing.cluster import WorkerProcess, wait_until
from tests.integration.helpers import logged_events, read_all
from tests.integration.java_builds import running

pytestmark = [pytest.mark.integration, pytest.mark.timeout(600)]

FILE_SOURCE = "org.apache.kafka.connect.file.FileStreamSourceConnector"
FILE_SINK = "org.apache.kafka.connect.file.FileStreamSinkConnector"
STRING_CONVERTER = "org.apache.kafka.connect.storage.StringConverter"
#: The first call that needs the Java plugins waits for the scan of plugin.path in the
#: driver's JVM; the client retries the UNAVAILABLE of a call outliving its deadline.
CALL_TIMEOUT_S = 240
STATE_TIMEOUT_S = 90


def _worker(work: Path, bootstrap: str, connector_file: Path) -> WorkerProcess:
    """A standalone worker over ``work``'s offsets file, its Java connector from a file."""
    return WorkerProcess(work, bootstrap, {
        "plugin.path": str(ensure_plugins()),
        "plugin.discovery": "service_load",
    }, connector_files=[connector_file])


def _client(process: WorkerProcess) -> ConnectClient:
    return ConnectClient(process.address, timeout=CALL_TIMEOUT_S, retry_unavailable=True)


def _state(client: ConnectClient, name: str, state: State) -> ConnectorStatus:
    def reached() -> ConnectorStatus | None:
        status = client.get_connector_status(name)
        return status if status.connector.state is state else None

    try:
        status = wait_until(reached, timeout=STATE_TIMEOUT_S)
    except TimeoutError:
        raise AssertionError(f"{name} not {state.name}: {client.get_connector_status(name)}") \
            from None
    assert status is not None
    return status


def _lines(bootstrap: str, topic: str) -> list[str]:
    return [m.value().decode() for m in read_all(bootstrap, topic)]


def _await_lines(bootstrap: str, topic: str, expected: list[str]) -> None:
    try:
        wait_until(lambda: _lines(bootstrap, topic) == expected, timeout=STATE_TIMEOUT_S)
    except TimeoutError:
        raise AssertionError(f"{topic} holds {_lines(bootstrap, topic)}, not {expected}") \
            from None


def test_a_java_source_on_a_standalone_worker_keeps_its_offsets_in_the_workers_file(
    kafka_bootstrap: str, tmp_path: Path
) -> None:
    name = f"java-standalone-{uuid.uuid4().hex[:8]}"
    topic = f"java-standalone-lines-{uuid.uuid4().hex[:8]}"
    source = tmp_path / "in.txt"
    first = [f"line {i}" for i in range(5)]
    source.write_text("".join(f"{line}\n" for line in first), encoding="utf-8")
    connector_file = tmp_path / "connector.json"
    connector_file.write_text(json.dumps({"name": name, "config": {
        "connector.class": FILE_SOURCE, "file": str(source), "topic": topic, "tasks.max": "1",
        "key.converter": STRING_CONVERTER, "value.converter": STRING_CONVERTER,
    }}), encoding="utf-8")
    work = tmp_path / "worker"
    partition = {"filename": str(source)}

    def offsets_at(position: int) -> list[ConnectorOffset]:
        return [ConnectorOffset(partition, {"position": position})]

    def append(lines: list[str]) -> None:
        with source.open("a", encoding="utf-8") as appended:
            appended.write("".join(f"{line}\n" for line in lines))

    more = [f"line {i}" for i in range(5, 8)]
    with running(_worker(work, kafka_bootstrap, connector_file)) as process, \
            _client(process) as client:
        # Kafka's Java connector, not the Python built-in its class name also stands for
        assert _state(client, name, State.RUNNING).connector.version == CONNECT_FILE.version
        # the driver JVM's py4j connections answer without Nagle's wait (NoDelayConnections)
        installed = logged_events(process, "py4j_no_delay_installed")
        assert [event["installed"] for event in installed] == [True], installed
        _await_lines(kafka_bootstrap, topic, first)
        # the task's commit as it stops, through the worker's offsets file
        client.stop_connector(name)
        _state(client, name, State.STOPPED)
        assert client.get_offsets(name) == offsets_at(source.stat().st_size)
        client.resume_connector(name)
        _state(client, name, State.RUNNING)
        append(more)
        _await_lines(kafka_bootstrap, topic, first + more)
        # a Java sink on the same Kafka worker in the JVM (a sink keeps its offsets in its
        # consumer group, the worker's offsets file holding none of them)
        sink_name, sink_file = f"{name}-sink", tmp_path / "out.txt"
        client.create_connector(sink_name, {
            "connector.class": FILE_SINK, "file": str(sink_file), "topics": topic,
            "tasks.max": "1",
            "key.converter": STRING_CONVERTER, "value.converter": STRING_CONVERTER,
        })
        _state(client, sink_name, State.RUNNING)
        try:
            wait_until(lambda: sink_file.exists()
                       and sink_file.read_text(encoding="utf-8").splitlines() == first + more,
                       timeout=STATE_TIMEOUT_S)
        except TimeoutError:
            held = sink_file.read_text(encoding="utf-8") if sink_file.exists() else None
            raise AssertionError(f"{sink_file} holds {held!r}; "
                                 f"{client.get_connector_status(sink_name)}") from None
        # its pipeline previewed on this worker too: Kafka's StringConverter in the driver's
        # JVM reads the topic's last lines as the task did
        preview = client.preview_pipeline(name=sink_name, from_topic=TopicTail(topic, 2))
        assert [(r.outcome, r.output.value) for r in preview.records] == [  # type: ignore[union-attr]
            (Outcome.DELIVERED, ConnectData(json.dumps(line), '{"type":"string","optional":true}'))
            for line in more[-2:]
        ], preview
        client.delete_connector(sink_name)
    # the worker stopped its task, which committed as it stopped: its own offsets file holds
    # them (its journal until the next start compacts it), a standalone worker having no
    # offsets topic
    stored = "".join(p.read_text(encoding="utf-8") for p in work.glob("connect.offsets*"))
    assert json.dumps(name) in stored

    # the restarted worker's task goes on from there: the lines written since are the next
    # ones in the topic, no line sent again before them
    with running(_worker(work, kafka_bootstrap, connector_file)) as process, \
            _client(process) as client:
        assert client.get_offsets(name) == offsets_at(source.stat().st_size)
        _state(client, name, State.RUNNING)
        last = [f"line {i}" for i in range(8, 10)]
        append(last)
        _await_lines(kafka_bootstrap, topic, first + more + last)
        every = first + more + last
        end = source.stat().st_size

        # altered offsets (through FileStreamSourceConnector.alterOffsets) are where the
        # task starts from: back to the first line sends them all again
        client.stop_connector(name)
        _state(client, name, State.STOPPED)
        assert client.get_offsets(name) == offsets_at(end)
        altered = client.alter_offsets(name, offsets_at(0))
        assert altered.message == "The offsets for this connector have been altered successfully"
        assert client.get_offsets(name) == offsets_at(0)
        client.resume_connector(name)
        _state(client, name, State.RUNNING)
        _await_lines(kafka_bootstrap, topic, every * 2)

        # reset: no offsets, and the task starts from the file's start again
        client.stop_connector(name)
        _state(client, name, State.STOPPED)
        assert client.get_offsets(name) == offsets_at(end)
        reset = client.reset_offsets(name)
        assert reset == "The offsets for this connector have been reset successfully"
        assert client.get_offsets(name) == []
        client.resume_connector(name)
        _state(client, name, State.RUNNING)
        _await_lines(kafka_bootstrap, topic, every * 3)
