"""The JVM side's plugin catalogue on the plugins ``make install`` fetched: Kafka Connect
4.4.0's own classes scan ``plugin.path`` (``jvm/``, run here through its command line with
``java -cp``), and Debezium's PostgresConnector and Kafka's FileStream connectors come out with
their types, versions and config definitions. No broker and no Spark: each test is one JVM."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from connect_grpc.java.jvm_build import CATALOGUE_MAIN, jvm_classpath
from connect_grpc.java.plugin_jars import CONNECT_FILE, DEBEZIUM_POSTGRES, ensure_plugins

#: A scan takes 2-3 s on the 2-core machine, and much longer while other tests load it.
JAVA_TIMEOUT_S = 180


def run_main(*args: str, stdin: str | None = None) -> tuple[int, dict[str, Any], str]:
    """Runs the catalogue's command line; its exit code, its JSON answer and its stderr."""
    java = shutil.which("java")
    if java is None:
        pytest.fail("java is not on PATH: the JVM side needs a JDK 17")
    result = subprocess.run(
        [
            java,
            "-XX:TieredStopAtLevel=1",
            "-Dorg.slf4j.simpleLogger.defaultLogLevel=warn",
            "-cp",
            jvm_classpath(),
            CATALOGUE_MAIN,
            *args,
        ],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=JAVA_TIMEOUT_S,
        check=False,
    )
    answer = json.loads(result.stdout) if result.stdout.strip() else {}
    return result.returncode, answer, result.stderr


@pytest.fixture(scope="module")
def plugin_path() -> Path:
    # Already there after `make install`; fetched here otherwise (once per machine).
    return ensure_plugins()


@pytest.fixture(scope="module")
def catalogue(plugin_path: Path) -> dict[str, Any]:
    # KIP-898's service loading: both plugins ship manifests, and it spares the reflective scan
    # of the classpath (jvm/'s own tests cover the reflective modes).
    code, answer, stderr = run_main(
        "list", "--plugin-path", str(plugin_path), "--discovery", "service_load"
    )
    assert code == 0, stderr[-4000:]
    return answer


def plugin(catalogue: dict[str, Any], class_name: str, kind: str) -> dict[str, Any]:
    found = [p for p in catalogue["plugins"] if p["class"] == class_name and p["type"] == kind]
    assert found, f"{kind} {class_name} not in {[p['class'] for p in catalogue['plugins']]}"
    return found[0]


def config_keys(described: dict[str, Any]) -> set[str]:
    return {key["name"] for key in described["config"]}


def test_debezium_postgres_connector_is_listed_with_version_and_config(
    catalogue: dict[str, Any],
) -> None:
    postgres = plugin(catalogue, "io.debezium.connector.postgresql.PostgresConnector", "source")
    assert postgres["version"] == DEBEZIUM_POSTGRES.version
    assert postgres["location"].rstrip("/").endswith(f"/plugins/{DEBEZIUM_POSTGRES.name}")
    assert {"database.hostname", "database.port", "database.user", "topic.prefix"} <= (
        config_keys(postgres)
    )
    hostname = next(k for k in postgres["config"] if k["name"] == "database.hostname")
    # KIP-769's ConfigKeyInfo, as Kafka Connect's REST API writes it.
    assert set(hostname) == {
        "name",
        "type",
        "required",
        "default_value",
        "importance",
        "documentation",
        "group",
        "order_in_group",
        "width",
        "display_name",
        "dependents",
    }


def test_kafka_filestream_connectors_are_listed_with_their_config(
    catalogue: dict[str, Any],
) -> None:
    source = plugin(catalogue, "org.apache.kafka.connect.file.FileStreamSourceConnector", "source")
    sink = plugin(catalogue, "org.apache.kafka.connect.file.FileStreamSinkConnector", "sink")
    for described in (source, sink):
        assert described["location"].rstrip("/").endswith(f"/plugins/{CONNECT_FILE.name}")
        # connect-file 4.3.1 (the newest Maven Central serves) reads its version through a
        # kafka-clients class that 4.4.0 moved: its plugin directory's own kafka-clients has it.
        assert described["version"] == CONNECT_FILE.version
    assert {"file", "topic", "batch.size"} <= config_keys(source)
    assert {"file", "topics"} <= config_keys(sink)


def test_runtime_plugins_come_from_the_classpath(catalogue: dict[str, Any]) -> None:
    json_converter = plugin(catalogue, "org.apache.kafka.connect.json.JsonConverter", "converter")
    assert (json_converter["version"], json_converter["location"]) == ("4.4.0", "classpath")
    provider = plugin(
        catalogue, "org.apache.kafka.common.config.provider.FileConfigProvider", "configprovider"
    )
    assert provider["config"] is None
    assert catalogue["plugin_discovery"] == "service_load"


def test_validate_reports_debeziums_per_field_errors(plugin_path: Path) -> None:
    config = {
        "name": "pg",
        "connector.class": "io.debezium.connector.postgresql.PostgresConnector",
        # Port 1 on the loopback address: refused at once.
        "database.hostname": "127.0.0.1",
        "database.port": "1",
        "database.user": "postgres",
        "database.dbname": "postgres",
        "topic.prefix": "pg",
        "tasks.max": "many",
    }
    code, answer, stderr = run_main(
        "validate",
        "--plugin-path",
        str(plugin_path),
        "--discovery",
        "service_load",
        "--config",
        "-",
        stdin=json.dumps(config),
    )
    assert code == 0, stderr[-4000:]
    errors = {
        info["value"]["name"]: info["value"]["errors"]
        for info in answer["configs"]
        if info["value"] and info["value"]["errors"]
    }
    assert set(errors) == {"tasks.max", "database.hostname"}, errors
    assert answer["name"] == config["connector.class"]
    assert answer["error_count"] == sum(len(messages) for messages in errors.values())


def test_a_bad_command_line_exits_2() -> None:
    code, answer, stderr = run_main("list")
    assert (code, answer) == (2, {})
    assert "--plugin-path is needed" in stderr
