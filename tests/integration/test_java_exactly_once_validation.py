"""The exactly-once checks of a Java source connector's config on a real distributed worker
with ``exactly.once.source.support=enabled``, over gRPC: as Kafka Connect's distributed
herder does, ``exactly.once.support=required`` asks the connector's ``exactlyOnceSupport``
and ``transaction.boundary=connector`` its ``canDefineTransactionBoundaries``, each of a
fresh instance in the worker's JVM, and each refusal is an error of its key in
ValidateConfig and a refused CreateConnector or PutConnectorConfig.

The connectors: Kafka's FileStreamSourceConnector (connect-file 4.3.1: exactly-once with a
file, not from stdin; never its own transaction boundaries), MirrorSourceConnector
(connect-mirror 4.3.1: exactly-once when its consumer reads committed records only, which its
own validation checks too), and the small plugin of :mod:`java_eos_worker` for what they do
not show: a connector that declares nothing (Kafka's default: null), one that defines its
own boundaries, and one whose declaration throws. The worker is the one ``test_mirror_maker``
uses too."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from connect_grpc.client import ConnectClient
from connect_grpc.kernel.domain import TargetState
from connect_grpc.kernel.errors import InvalidArgumentError
from connect_grpc.testing.cluster import WorkerProcess

pytestmark = [pytest.mark.integration, pytest.mark.timeout(600)]

FILE_SOURCE = "org.apache.kafka.connect.file.FileStreamSourceConnector"
MIRROR_SOURCE = "org.apache.kafka.connect.mirror.MirrorSourceConnector"
#: The first call that needs the Java plugins waits for the scan of plugin.path.
CALL_TIMEOUT_S = 240

EOS = "exactly.once.support"
BOUNDARY = "transaction.boundary"
UNSUPPORTED = ("The connector does not support exactly-once semantics with the provided "
               "configuration.")
NO_BOUNDARIES = ("The connector does not support connector-defined transaction boundaries with "
                 "the given configuration. Please reconfigure it to use a different transaction "
                 "boundary definition.")


@pytest.fixture(scope="module")
def worker(java_eos_worker: WorkerProcess) -> Iterator[ConnectClient]:
    with ConnectClient(java_eos_worker.address, timeout=CALL_TIMEOUT_S,
                       retry_unavailable=True) as client:
        yield client


@pytest.fixture
def name() -> str:
    return f"eos-{uuid.uuid4().hex[:8]}"


def _errors(client: ConnectClient, config: dict[str, str]) -> dict[str, list[str]]:
    """ValidateConfig's errors of the two exactly-once keys."""
    errors: dict[str, list[str]] = {EOS: [], BOUNDARY: []}
    for key, message in client.validate_config(config=config).all_errors():
        if key in errors:
            errors[key].append(message)
    return errors


def _refused_on(client: ConnectClient, name: str, config: dict[str, str], key: str) -> str:
    """Creating ``config`` is refused with an error of ``key``; nothing is created."""
    with pytest.raises(InvalidArgumentError) as refused:
        client.create_connector(name, config, TargetState.STOPPED)
    fields = {v.field: v.description for v in refused.value.violations}
    assert f"config.{key}" in fields, refused.value.message
    assert name not in [c.name for c in client.list_connectors()]
    return fields[f"config.{key}"]


def _file_source(tmp_path: Path, **extra: str) -> dict[str, str]:
    return {"connector.class": FILE_SOURCE, "file": str(tmp_path / "in.txt"),
            "topic": f"eos-lines-{uuid.uuid4().hex[:8]}", "tasks.max": "1", **extra}


def test_kafkas_file_source_is_exactly_once_with_a_file_and_never_bounds_transactions(
    worker: ConnectClient, name: str, tmp_path: Path
) -> None:
    required = _file_source(tmp_path, **{EOS: "required"})
    assert _errors(worker, required) == {EOS: [], BOUNDARY: []}
    # from stdin (no file) it cannot replay what it read: UNSUPPORTED
    stdin = {k: v for k, v in required.items() if k != "file"}
    assert _errors(worker, stdin) == {EOS: [UNSUPPORTED], BOUNDARY: []}
    assert _refused_on(worker, name, stdin, EOS) == UNSUPPORTED
    # it does not define transaction boundaries (the API's default, UNSUPPORTED)
    bounded = {**required, BOUNDARY: "connector"}
    assert _errors(worker, bounded) == {EOS: [], BOUNDARY: [NO_BOUNDARIES]}
    assert _refused_on(worker, name, bounded, BOUNDARY) == NO_BOUNDARIES
    # an update to what it does not support is refused too, and changes nothing
    worker.create_connector(name, required, TargetState.STOPPED)
    try:
        with pytest.raises(InvalidArgumentError) as refused:
            worker.put_connector_config(name, bounded)
        assert {v.field for v in refused.value.violations} == {f"config.{BOUNDARY}"}
        assert worker.get_connector_config(name).get(BOUNDARY) is None
        # requested skips the connector's declaration, as Kafka Connect does
        worker.put_connector_config(name, {**stdin, EOS: "requested"})
        assert worker.get_connector_config(name)[EOS] == "requested"
    finally:
        worker.delete_connector(name)


def test_mirror_source_is_exactly_once_only_when_it_reads_committed_records(
    worker: ConnectClient, kafka_bootstrap: str
) -> None:
    config = {
        "connector.class": MIRROR_SOURCE, "tasks.max": "1",
        "source.cluster.alias": "upstream", "target.cluster.alias": "downstream",
        "source.cluster.bootstrap.servers": kafka_bootstrap,
        "target.cluster.bootstrap.servers": kafka_bootstrap,
        EOS: "required",
    }
    assert _errors(worker, {**config, "consumer.isolation.level": "read_committed"}) == {
        EOS: [], BOUNDARY: []}
    # without, its own validation refuses the key first: the herder's check (Kafka's too)
    # is for a key with no error yet, so the one error is the connector's own
    [own] = _errors(worker, config)[EOS]
    assert own.startswith("MirrorSourceConnector can only provide exactly-once guarantees")


def test_a_connector_that_declares_nothing_needs_requested(
    worker: ConnectClient, name: str
) -> None:
    config = {"connector.class": "eosit.UndeclaredSource", EOS: "required"}
    [undeclared] = _errors(worker, config)[EOS]
    assert "does not declare whether it supports exactly-once" in undeclared
    assert f"{EOS}=requested" in undeclared
    _refused_on(worker, name, config, EOS)
    assert _errors(worker, {**config, EOS: "requested"}) == {EOS: [], BOUNDARY: []}


def test_a_connector_that_defines_its_boundaries_is_created_and_its_failure_is_an_error(
    worker: ConnectClient, name: str
) -> None:
    config = {"connector.class": "eosit.BoundingSource", EOS: "required", BOUNDARY: "connector"}
    assert _errors(worker, config) == {EOS: [], BOUNDARY: []}
    worker.create_connector(name, config, TargetState.STOPPED)
    assert worker.get_connector_config(name)[BOUNDARY] == "connector"
    worker.delete_connector(name)
    # a declaration that throws is an error of the key, with the Java exception's message
    exploding = {**config, "explode": "its slot"}
    assert _errors(worker, exploding)[EOS] == [
        "An unexpected error occurred during validation: "
        "org.apache.kafka.connect.errors.ConnectException: cannot tell without its slot"]
    _refused_on(worker, name, exploding, EOS)
