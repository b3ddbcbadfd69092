"""Kafka Connect's Java plugins on a real standalone worker, over gRPC: ``plugin.path`` holds
the plugin directories ``make install`` fetched (Kafka's connect-file 4.3.1 and Debezium
PostgreSQL 3.6.1.Final) and a Python plugin directory. ListPlugins lists the Java plugins
beside the Python ones, ValidateConfig of a Java connector is Kafka Connect's own (scanned and
validated in the worker's Spark driver JVM), and the Python plugins keep working. (A standalone
worker runs Java connectors too, their source offsets in its offsets file:
``test_java_standalone``.)"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from connect_grpc.client import ConnectClient
from connect_grpc.java.plugin_jars import CONNECT_FILE, DEBEZIUM_POSTGRES, ensure_plugins
from connect_grpc.kernel.domain import ConfigInfos, ConnectorType, TargetState
from connect_grpc.plugin import PLUGIN_VERSION
from connect_grpc.testing.cluster import WorkerProcess

pytestmark = [pytest.mark.integration, pytest.mark.timeout(420)]

POSTGRES = "io.debezium.connector.postgresql.PostgresConnector"
FILE_SOURCE = "org.apache.kafka.connect.file.FileStreamSourceConnector"
PYTHON_SOURCE = "side_by_side_plugin.SideBySideSource"
#: The first call scans plugin.path in the driver's JVM: a few seconds alone, much longer on
#: a machine the other tests load. The client retries the UNAVAILABLE a call outliving its
#: deadline gets, until this timeout.
CALL_TIMEOUT_S = 240

PYTHON_PLUGIN = '''
from connect_grpc.plugin import ConfigDef, SourceConnector, SourceTask


class SideBySideTask(SourceTask):
    def start(self, config):
        pass

    def poll(self, max_records):
        return []

    def stop(self):
        pass


class SideBySideSource(SourceConnector):
    def config_def(self):
        return ConfigDef()

    def start(self, config):
        self.config = dict(config)

    def task_class(self):
        return SideBySideTask

    def task_configs(self, max_tasks):
        return [dict(self.config)]

    def stop(self, connector_deleted=False):
        pass
'''


@pytest.fixture(scope="module")
def worker(
    kafka_bootstrap: str, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[ConnectClient]:
    work = tmp_path_factory.mktemp("java-plugins")
    python_plugins = work / "python-plugins"
    (python_plugins / "side_by_side_plugin").mkdir(parents=True)
    (python_plugins / "side_by_side_plugin" / "__init__.py").write_text(
        PYTHON_PLUGIN, encoding="utf-8"
    )
    java_plugins = ensure_plugins()  # already there after `make install`
    extra = {
        "plugin.path": f"{java_plugins},{python_plugins}",
        # Both plugins ship ServiceLoader manifests: no reflective scan of Spark's classpath.
        "plugin.discovery": "service_load",
    }
    with WorkerProcess(work / "worker", kafka_bootstrap, extra_properties=extra) as process:
        client = ConnectClient(process.address, timeout=CALL_TIMEOUT_S, retry_unavailable=True)
        with client:
            yield client


def _errors(infos: ConfigInfos) -> dict[str, list[str]]:
    errors: dict[str, list[str]] = {}
    for key, message in infos.all_errors():
        errors.setdefault(key, []).append(message)
    return errors


def test_list_plugins_shows_the_java_plugins_beside_the_python_ones(
    worker: ConnectClient,
) -> None:
    listed = worker.list_plugins(include_config_definitions=True, all_plugin_types=True)
    by_name = {(p.class_name, p.plugin_type): p for p in listed}
    postgres = by_name[(POSTGRES, "source")]
    assert postgres.type is ConnectorType.SOURCE
    assert postgres.version == DEBEZIUM_POSTGRES.version == "3.6.1.Final"
    assert {"database.hostname", "database.port", "topic.prefix"} <= {
        key.name for key in postgres.config_definitions
    }
    file_source = by_name[(FILE_SOURCE, "source")]
    assert file_source.version == CONNECT_FILE.version == "4.3.1"
    assert {"file", "topic", "batch.size"} <= {k.name for k in file_source.config_definitions}
    assert by_name[("org.apache.kafka.connect.file.FileStreamSinkConnector", "sink")]
    # Debezium's own transformations and converters, and the config providers of the
    # plugins' kafka-clients.
    assert by_name[("io.debezium.transforms.ExtractNewRecordState", "transformation")].version \
        == "3.6.1.Final"
    assert ("org.apache.kafka.common.config.provider.FileConfigProvider", "configprovider") \
        in by_name
    # The Python plugins beside them: the built-ins and the one of the Python directory
    # (found by reading its sources), with its version.
    assert ("connect_grpc.connectors.file.FileStreamSourceConnector", "source") in by_name
    assert by_name[(PYTHON_SOURCE, "source")].version == PLUGIN_VERSION
    # Connectors only, by default: sinks then sources, as Kafka Connect lists them.
    connectors = worker.list_plugins()
    assert {p.plugin_type for p in connectors} == {"source", "sink"}
    assert POSTGRES in {p.class_name for p in connectors}


def test_validate_config_of_kafkas_filestream_source_is_kafkas(worker: ConnectClient) -> None:
    infos = worker.validate_config(config={
        "name": "java-file", "connector.class": FILE_SOURCE, "file": "/tmp/input.txt",
        "batch.size": "not-a-number",
    })
    assert infos.name == FILE_SOURCE
    errors = _errors(infos)
    assert set(errors) == {"topic", "batch.size"}, errors
    assert "topic" in errors["topic"][0]
    assert "not-a-number" in errors["batch.size"][0]
    # Kafka's framework keys are there, with their groups, as Kafka Connect shows them.
    keys = {info.value.name for info in infos.configs}
    assert {"connector.class", "tasks.max", "transforms", "errors.tolerance"} <= keys
    good = worker.validate_config(config={
        "name": "java-file", "connector.class": FILE_SOURCE, "file": "/tmp/input.txt",
        "topic": "lines",
    })
    assert good.error_count == 0, good.all_errors()


def test_debezium_validation_reports_an_unreachable_database_on_its_hostname(
    worker: ConnectClient,
) -> None:
    infos = worker.validate_config(config={
        "name": "pg",
        "connector.class": "PostgresConnector",  # Kafka Connect's alias
        "database.hostname": "127.0.0.1",
        "database.port": "1",  # nothing listens there: refused at once
        "database.user": "postgres",
        "database.password": "secret-password",
        "database.dbname": "postgres",
        "topic.prefix": "pg",
    })
    assert infos.name == POSTGRES
    errors = _errors(infos)
    assert set(errors) == {"database.hostname"}, errors
    password = next(i for i in infos.configs if i.value.name == "database.password")
    assert password.value.value == "[hidden]"
    assert "secret-password" not in repr(infos)


def test_python_plugins_keep_working_beside_them(worker: ConnectClient) -> None:
    infos = worker.validate_config(config={"connector.class": "FileStreamSource",
                                           "file": "/tmp/input.txt"})
    assert infos.name == "connect_grpc.connectors.file.FileStreamSourceConnector"
    assert set(_errors(infos)) == {"topic"}
    created = worker.create_connector(
        "python-beside-java", {"connector.class": PYTHON_SOURCE}, TargetState.STOPPED
    )
    assert created.info.name == "python-beside-java"
    worker.delete_connector("python-beside-java")
