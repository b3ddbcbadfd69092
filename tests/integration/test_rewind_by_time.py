"""Rewind a sink by time (issue 26 item 7) over real gRPC, on the shared standalone worker and
through a follower of the shared 3-worker cluster (the writes are forwarded to the leader):
records produced with known timestamps (CreateTime set by the producer), a FileStreamSink
stopped, rewound to a time, resumed, and read from the first record at or after it; a time
past a partition's end; initial offsets by time at creation; the refusals naming the field.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, TypeVar

import grpc
import pytest
from confluent_kafka import Producer

from connect_grpc.ctl.contexts import CONFIG_DIR_ENV
from connect_grpc.testing.cluster import WorkerProcess, wait_until
from connect_grpc.v1 import connect_pb2 as pb
from connect_grpc.v1 import connect_pb2_grpc as pb_grpc
from tests.integration.helpers import (
    DEPLOYMENTS,
    RUNNING,
    STOPPED,
    create,
    create_topic,
    deployment_stub,
    field_violations,
    source_config,
    wait_for_states,
)

pytestmark = [pytest.mark.integration, pytest.mark.timeout(300)]

T = TypeVar("T")
EXECUTABLE = str(Path(sys.executable).parent / "connect-grpc")
ALTERED = "The offsets for this connector have been altered successfully"
#: Milliseconds between two records of a partition; partition 1's are 5 ms after partition 0's.
STEP_MS = 10
RECORDS = 5


@pytest.fixture(params=DEPLOYMENTS)
def stub(request: pytest.FixtureRequest) -> Any:
    return deployment_stub(request)


def produce_timed(bootstrap: str, topic: str, base_ms: int) -> None:
    """Partition p's record i is "p<p>-<i>" with CreateTime base + i*STEP_MS + p*5."""
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5})
    for partition in (0, 1):
        for i in range(RECORDS):
            producer.produce(topic, value=f"p{partition}-{i}".encode(), partition=partition,
                             timestamp=base_ms + i * STEP_MS + partition * 5)
    assert producer.flush(30) == 0


def base_time_ms() -> int:
    """Ten minutes ago: inside any broker's accepted timestamp window."""
    return int(time.time() * 1000) - 600_000


def file_sink(topic: str, path: Path) -> dict[str, str]:
    return {"connector.class": "FileStreamSink", "tasks.max": "1", "topics": topic,
            "file": str(path)}


def lines(path: Path) -> list[str]:
    return path.read_text(encoding="utf-8").splitlines() if path.exists() else []


def of_partition(values: Sequence[str], partition: int) -> list[str]:
    return [v for v in values if v.startswith(f"p{partition}-")]


def at(time_ms: int) -> Any:
    from google.protobuf.timestamp_pb2 import Timestamp

    stamp = Timestamp()
    stamp.FromMilliseconds(time_ms)
    return stamp


def sink_partition(topic: str, partition: int) -> pb.OffsetFields:
    return pb.OffsetFields(fields={
        "kafka_topic": pb.OffsetValue(string_value=topic),
        "kafka_partition": pb.OffsetValue(integer_value=partition),
    })


def resolved(entries: Sequence[pb.ConnectorOffset]) -> dict[tuple[str, int], int]:
    return {
        (e.partition.fields["kafka_topic"].string_value,
         e.partition.fields["kafka_partition"].integer_value):
        e.offset.fields["kafka_offset"].integer_value
        for e in entries
    }


def stored(stub: pb_grpc.ConnectServiceStub, name: str) -> dict[tuple[str, int], int]:
    return resolved(stub.GetOffsets(pb.GetOffsetsRequest(name=name), timeout=30).offsets)


def retry_unavailable(call: Callable[[], T], timeout: float = 60.0) -> T:
    """Retries while the answer is UNAVAILABLE (the stopped sink's member still leaving)."""
    ends = time.monotonic() + timeout
    while True:
        try:
            return call()
        except grpc.RpcError as exc:
            if exc.code() is not grpc.StatusCode.UNAVAILABLE or time.monotonic() > ends:
                raise
            time.sleep(0.5)


def stop(stub: pb_grpc.ConnectServiceStub, name: str) -> None:
    stub.StopConnector(pb.StopConnectorRequest(name=name), timeout=60)
    wait_for_states(stub, name, STOPPED, [])


def resume_and_read(
    stub: pb_grpc.ConnectServiceStub, name: str, out: Path, count: int
) -> list[str]:
    """Resumes the sink; the lines it writes once ``count`` more arrived and 3 s passed
    with nothing more."""
    before = len(lines(out))
    stub.ResumeConnector(pb.ResumeConnectorRequest(name=name), timeout=60)
    wait_for_states(stub, name, RUNNING, [RUNNING])
    wait_until(lambda: len(lines(out)) >= before + count, timeout=120)
    time.sleep(3)
    return lines(out)[before:]


def test_a_stopped_sink_rewound_to_a_time_reads_from_the_first_record_at_or_after_it(
    stub: pb_grpc.ConnectServiceStub, kafka_bootstrap: str, kafka_admin: Any,
    unique_topic: str, name: str, tmp_path: Path,
) -> None:
    topic = create_topic(kafka_admin, unique_topic, partitions=2)
    base = base_time_ms()
    produce_timed(kafka_bootstrap, topic, base)
    out = tmp_path / "out.txt"
    create(stub, name, file_sink(topic, out))
    wait_until(lambda: len(lines(out)) >= 2 * RECORDS, timeout=120)
    wait_until(lambda: stored(stub, name) == {(topic, 0): 5, (topic, 1): 5}, timeout=60)
    stop(stub, name)

    # every partition at base+20: partition 0's record 2 (base+20), partition 1's record 2
    # (base+25; its record 1 is at base+15)
    answer = retry_unavailable(lambda: stub.AlterOffsets(pb.AlterOffsetsRequest(
        name=name, all_partitions_record_time=at(base + 20)), timeout=60))
    assert resolved(answer.resolved_offsets) == {(topic, 0): 2, (topic, 1): 2}
    assert answer.message == (
        f"{ALTERED}. Offsets resolved from record times: {topic}-0 at {base + 20} ms -> offset "
        f"2; {topic}-1 at {base + 20} ms -> offset 2."
    )
    assert stored(stub, name) == {(topic, 0): 2, (topic, 1): 2}
    again = resume_and_read(stub, name, out, 6)
    assert of_partition(again, 0) == ["p0-2", "p0-3", "p0-4"]
    assert of_partition(again, 1) == ["p1-2", "p1-3", "p1-4"]

    # per partition: partition 0 at its last record's time, partition 1 past its end
    wait_until(lambda: stored(stub, name) == {(topic, 0): 5, (topic, 1): 5}, timeout=60)
    stop(stub, name)
    answer = retry_unavailable(lambda: stub.AlterOffsets(pb.AlterOffsetsRequest(name=name, offsets=[
        pb.ConnectorOffset(partition=sink_partition(topic, 0), record_time=at(base + 40)),
        pb.ConnectorOffset(partition=sink_partition(topic, 1), record_time=at(base + 10_000)),
    ]), timeout=60))
    assert resolved(answer.resolved_offsets) == {(topic, 0): 4, (topic, 1): 5}
    assert answer.message.endswith(
        f"{topic}-1 at {base + 10_000} ms -> offset 5 (its end: no record at or after that time)."
    )
    assert resume_and_read(stub, name, out, 1) == ["p0-4"]


def test_a_sink_created_with_initial_offsets_by_time_starts_at_that_time(
    stub: pb_grpc.ConnectServiceStub, kafka_bootstrap: str, kafka_admin: Any,
    unique_topic: str, name: str, tmp_path: Path,
) -> None:
    topic = create_topic(kafka_admin, unique_topic, partitions=2)
    base = base_time_ms()
    produce_timed(kafka_bootstrap, topic, base)
    out = tmp_path / "out.txt"
    config = {k: v for k, v in file_sink(topic, out).items() if k != "topics"}
    config["topics.regex"] = re.escape(topic)
    response = stub.CreateConnector(pb.CreateConnectorRequest(
        name=name, config=config,
        initial_offsets=pb.ConnectorOffsets(all_partitions_record_time=at(base + 31)),
    ), timeout=60)
    # partition 0's first record at or after base+31 is record 4 (base+40); partition 1's
    # is record 3 (base+35)
    assert resolved(response.resolved_offsets) == {(topic, 0): 4, (topic, 1): 3}
    assert response.offsets_message.startswith(
        "The offsets for this connector have been set successfully. Offsets resolved from "
        "record times:"
    )
    wait_until(lambda: len(lines(out)) >= 3, timeout=120)
    time.sleep(3)
    written = lines(out)
    assert of_partition(written, 0) == ["p0-4"]
    assert of_partition(written, 1) == ["p1-3", "p1-4"]


def test_refusals_name_the_field(
    stub: pb_grpc.ConnectServiceStub, kafka_admin: Any, unique_topic: str, name: str,
    events: Path, tmp_path: Path,
) -> None:
    topic = create_topic(kafka_admin, unique_topic)
    create(stub, name, file_sink(topic, tmp_path / "out.txt"), pb.INITIAL_STATE_STOPPED)
    wait_for_states(stub, name, STOPPED, [])
    cases = [
        (pb.AlterOffsetsRequest(name=name, all_partitions_record_time=at(-1)),
         "all_partitions_record_time", "must not be before 1970-01-01T00:00:00Z"),
        (pb.AlterOffsetsRequest(name=name, offsets=[pb.ConnectorOffset(
            partition=sink_partition(topic, 0), record_time=at(5),
            offset=pb.OffsetFields(fields={"kafka_offset": pb.OffsetValue(integer_value=1)}),
        )]), "offsets[0].record_time", "either an offset or a record time"),
        (pb.AlterOffsetsRequest(name=name, all_partitions_record_time=at(5), offsets=[
            pb.ConnectorOffset(partition=sink_partition(topic, 0), record_time=at(5))]),
         "all_partitions_record_time", "not both"),
    ]
    for request, field, text in cases:
        with pytest.raises(grpc.RpcError) as excinfo:
            stub.AlterOffsets(request, timeout=60)
        assert excinfo.value.code() is grpc.StatusCode.INVALID_ARGUMENT, excinfo.value.details()
        assert text in field_violations(excinfo.value)[field]

    source = f"{name}-source"
    with pytest.raises(grpc.RpcError) as excinfo:
        stub.CreateConnector(pb.CreateConnectorRequest(
            name=source, config=source_config(events, tasks=1),
            initial_offsets=pb.ConnectorOffsets(all_partitions_record_time=at(5)),
        ), timeout=60)
    assert excinfo.value.code() is grpc.StatusCode.INVALID_ARGUMENT
    violations = field_violations(excinfo.value)
    assert "is a source connector" in violations["initial_offsets.all_partitions_record_time"]
    with pytest.raises(grpc.RpcError) as excinfo:
        stub.GetConnector(pb.GetConnectorRequest(name=source), timeout=30)
    assert excinfo.value.code() is grpc.StatusCode.NOT_FOUND


def test_ctl_rewinds_a_stopped_sink_to_a_time_and_shows_where_each_partition_went(
    worker: WorkerProcess, kafka_bootstrap: str, kafka_admin: Any, unique_topic: str,
    name: str, tmp_path: Path,
) -> None:
    topic = create_topic(kafka_admin, unique_topic, partitions=2)
    base = base_time_ms()
    produce_timed(kafka_bootstrap, topic, base)
    create(worker.stub, name, file_sink(topic, tmp_path / "out.txt"), pb.INITIAL_STATE_STOPPED)
    wait_for_states(worker.stub, name, STOPPED, [])
    when = (datetime(1970, 1, 1, tzinfo=UTC) + timedelta(milliseconds=base + 20)).isoformat()
    env = {**os.environ, CONFIG_DIR_ENV: str(tmp_path / "ctl-config")}
    result = subprocess.run(
        [EXECUTABLE, "ctl", "--target", worker.address, "offsets", "alter", name,
         "--to-time", when],
        env=env, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=90,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert f"{topic}-1 at {base + 20} ms -> offset 2" in result.stdout
    assert result.stdout.count('"kafka_offset":2') == 2, result.stdout
    assert stored(worker.stub, name) == {(topic, 0): 2, (topic, 1): 2}
