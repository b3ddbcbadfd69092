"""Debezium PostgreSQL 3.6.1.Final's validation against a live private PostgreSQL, on a real
distributed worker whose ``plugin.path`` holds the plugin directory ``make install`` fetched
(the session's shared Java worker):
ListPlugins lists the connector with its version; ValidateConfig of a correct config (pgoutput)
has no error and changes nothing in the database; a wrong password, port or database gives
Debezium's own error on ``database.hostname``, as Kafka Connect's REST validation answers it
(Debezium reports every connection failure on that key); PreviewPipeline runs Debezium's own
ExtractNewRecordState on a change event. No task runs."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest

from connect_grpc.client import ConnectClient
from connect_grpc.kafka.ports import free_port
from connect_grpc.kernel.domain import ConfigInfos, ConnectorType
from connect_grpc.pipeline.preview_model import Outcome, SampleRecord, Verdict
from connect_grpc.testing.cluster import WorkerProcess
from connect_grpc.testing.postgres import PostgresServer
from tests.integration.conftest import POSTGRES_PASSWORD

# as the other modules of the shared Java worker: the first test of a session's first such
# module waits for its plugins' builds and its start
pytestmark = [pytest.mark.integration, pytest.mark.timeout(600)]

POSTGRES_CONNECTOR = "io.debezium.connector.postgresql.PostgresConnector"
#: The worker's first call scans plugin.path in the driver's JVM: seconds alone, much longer
#: while other tests load the machine. The client retries the UNAVAILABLE of a call that
#: outlives its deadline, until this timeout.
CALL_TIMEOUT_S = 240
#: How Debezium 3.6.1 prefixes a failed connection check (PostgresConnector.validateConnection).
DEBEZIUM_CONNECTION_ERROR = "Error while validating connector config: "


@pytest.fixture(scope="module")
def worker(shared_java_worker: WorkerProcess) -> Iterator[ConnectClient]:
    """The session's shared Java worker (``tests/integration/java_worker.py``), rather than a
    worker of the module's own: a distributed worker whose ``plugin.path`` holds the plugin
    directories ``make install`` fetched (Debezium's among them), found by their
    ServiceLoader manifests (Debezium ships them: no reflective scan of Spark's classpath)."""
    with ConnectClient(shared_java_worker.address, timeout=CALL_TIMEOUT_S,
                       retry_unavailable=True) as client:
        yield client


def _config(postgres: PostgresServer, database: str, **overrides: str) -> dict[str, str]:
    config = {
        "name": "inventory",
        "connector.class": POSTGRES_CONNECTOR,
        "tasks.max": "1",
        **postgres.debezium_connection(database),
        "plugin.name": "pgoutput",
        "topic.prefix": "inventory",
        "slot.name": "inventory_slot",
        "publication.name": "inventory_publication",
        "publication.autocreate.mode": "filtered",
        "table.include.list": "public.orders",
        "key.converter": "org.apache.kafka.connect.json.JsonConverter",
        "value.converter": "org.apache.kafka.connect.json.JsonConverter",
        "value.converter.schemas.enable": "false",
    }
    config.update(overrides)
    return config


def _errors(infos: ConfigInfos) -> dict[str, list[str]]:
    errors: dict[str, list[str]] = {}
    for key, message in infos.all_errors():
        errors.setdefault(key, []).append(message)
    return errors


def test_list_plugins_shows_the_postgres_connector_and_its_version(
    worker: ConnectClient,
) -> None:
    listed = {p.class_name: p for p in worker.list_plugins()}
    postgres = listed[POSTGRES_CONNECTOR]
    assert postgres.type is ConnectorType.SOURCE
    assert postgres.version == "3.6.1.Final"


def test_a_correct_config_validates_with_no_error_and_changes_nothing(
    worker: ConnectClient, postgres: PostgresServer, postgres_database: str
) -> None:
    postgres.execute("CREATE TABLE orders (id int PRIMARY KEY, item text)", postgres_database)
    infos = worker.validate_config(config=_config(postgres, postgres_database))
    assert infos.name == POSTGRES_CONNECTOR
    assert infos.error_count == 0, infos.all_errors()
    values = {info.value.name: info.value.value for info in infos.configs}
    assert values["database.port"] == str(postgres.port)
    assert values["plugin.name"] == "pgoutput"
    assert values["database.password"] == "[hidden]"
    # Validation only connects: no slot and no publication are made.
    assert postgres.replication_slots(postgres_database) == []
    assert postgres.query("SELECT pubname FROM pg_publication", postgres_database) == []


def test_a_wrong_password_is_debeziums_error_on_the_hostname(
    worker: ConnectClient, postgres: PostgresServer, postgres_database: str
) -> None:
    infos = worker.validate_config(config=_config(
        postgres, postgres_database, **{"database.password": "not-the-password"}))
    errors = _errors(infos)
    assert set(errors) == {"database.hostname"}, errors
    [message] = errors["database.hostname"]
    assert message.startswith(DEBEZIUM_CONNECTION_ERROR), message
    assert 'password authentication failed for user "postgres"' in message
    assert infos.error_count == 1
    assert "not-the-password" not in repr(infos)
    assert POSTGRES_PASSWORD not in repr(infos)


def test_a_wrong_port_is_debeziums_error_on_the_hostname(
    worker: ConnectClient, postgres: PostgresServer, postgres_database: str
) -> None:
    nothing_there = free_port()
    infos = worker.validate_config(config=_config(
        postgres, postgres_database, **{"database.port": str(nothing_there)}))
    errors = _errors(infos)
    assert set(errors) == {"database.hostname"}, errors
    [message] = errors["database.hostname"]
    assert message.startswith(DEBEZIUM_CONNECTION_ERROR), message
    assert f"127.0.0.1:{nothing_there}" in message
    assert "refused" in message


def test_a_missing_database_is_debeziums_error_on_the_hostname(
    worker: ConnectClient, postgres: PostgresServer, postgres_database: str
) -> None:
    infos = worker.validate_config(config=_config(
        postgres, postgres_database, **{"database.dbname": f"{postgres_database}_missing"}))
    errors = _errors(infos)
    assert set(errors) == {"database.hostname"}, errors
    assert f'database "{postgres_database}_missing" does not exist' in (
        errors["database.hostname"][0])


def _row(name: str) -> dict[str, object]:
    return {"type": "struct", "name": name, "optional": True, "fields": [
        {"field": "id", "type": "int32", "optional": False},
        {"field": "item", "type": "string", "optional": True}]}


#: A change event as Debezium's PostgreSQL connector polls it (a trimmed envelope: the row
#: before and after, the source's table, the operation), as a preview sample's JSON envelope.
UPDATE_EVENT = json.dumps({
    "schema": {"type": "struct", "name": "inventory.public.orders.Envelope", "optional": False,
               "fields": [
                   {**_row("inventory.public.orders.Value"), "field": "before"},
                   {**_row("inventory.public.orders.Value"), "field": "after"},
                   {"field": "source", "type": "struct", "optional": False,
                    "name": "io.debezium.connector.postgresql.Source",
                    "fields": [{"field": "table", "type": "string", "optional": True}]},
                   {"field": "op", "type": "string", "optional": False}]},
    "payload": {"before": {"id": 1, "item": "pen"}, "after": {"id": 1, "item": "ink"},
                "source": {"table": "orders"}, "op": "u"},
})


def test_debeziums_own_smt_previews_a_change_event_as_its_task_would_transform_it(
    worker: ConnectClient, postgres: PostgresServer, postgres_database: str
) -> None:
    """PreviewPipeline of the connector with Debezium's ExtractNewRecordState (a class of
    Debezium's plugin directory, loaded in its class loader in the driver's JVM): the event
    becomes its row after the change, with the operation added, then JSON without schemas."""
    postgres.execute("CREATE TABLE orders (id int PRIMARY KEY, item text)", postgres_database)
    config = _config(postgres, postgres_database, **{
        "transforms": "unwrap",
        "transforms.unwrap.type": "io.debezium.transforms.ExtractNewRecordState",
        "transforms.unwrap.add.fields": "op",
    })
    preview = worker.preview_pipeline(config=config, samples=[
        SampleRecord(topic="inventory.public.orders", value=UPDATE_EVENT)])
    [record] = preview.records
    assert record.outcome is Outcome.DELIVERED, record.failure
    unwrap = record.stages[0]
    assert (unwrap.stage, unwrap.alias, unwrap.verdict) == (
        "TRANSFORMATION", "unwrap", Verdict.APPLIED)
    assert unwrap.class_name == "io.debezium.transforms.ExtractNewRecordState"
    assert record.output is not None and isinstance(record.output.value, bytes)
    assert json.loads(record.output.value) == {"id": 1, "item": "ink", "__op": "u"}
    # a preview writes nothing: no slot, no publication
    assert postgres.replication_slots(postgres_database) == []
