"""A Java config provider of ``plugin.path`` on a real worker, as Kafka Connect users declare
their own (Vault's, a cloud secrets manager's): Strimzi's EnvVarConfigProvider
(``io.strimzi:kafka-env-var-config-provider`` from Maven Central, which ``make install``
lays out beside the other plugins) named by ``config.providers.<name>.class``, built in the
worker's JVM at its start, resolves the references of a Java connector's config (Kafka's
FileStreamSource reads the file it names), the stored config and task configs keep the
reference, a variable it has not is the reference's error, and a provider class that
``plugin.path`` has not stops the worker's start naming its property."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from connect_grpc.client import ConnectClient
from connect_grpc.java.plugin_jars import STRIMZI_ENV_VAR_PROVIDER, ensure_plugins
from connect_grpc.kernel.domain import State
from connect_grpc.kernel.errors import InvalidArgumentError
from connect_grpc.testing.cluster import WorkerProcess, wait_until
from tests.integration.helpers import logged_events, read_all
from tests.integration.java_builds import running

pytestmark = [pytest.mark.integration, pytest.mark.timeout(600)]

FILE_SOURCE = "org.apache.kafka.connect.file.FileStreamSourceConnector"
STRING_CONVERTER = "org.apache.kafka.connect.storage.StringConverter"
PROVIDER_CLASS = "io.strimzi.kafka.EnvVarConfigProvider"
#: The worker's environment variable the connector's reference names.
VARIABLE = "CONNECT_GRPC_TEST_JAVA_PROVIDER_FILE"
CALL_TIMEOUT_S = 240
STATE_TIMEOUT_S = 90


def _properties(provider_class: str) -> dict[str, str]:
    return {
        "plugin.path": str(ensure_plugins()),
        "plugin.discovery": "service_load",
        "config.providers": "senv",
        "config.providers.senv.class": provider_class,
    }


def test_a_java_config_provider_resolves_a_java_connectors_references(
    kafka_bootstrap: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert (ensure_plugins() / STRIMZI_ENV_VAR_PROVIDER.name).is_dir()
    source = tmp_path / "in.txt"
    lines = [f"secret line {i}" for i in range(3)]
    source.write_text("".join(f"{line}\n" for line in lines), encoding="utf-8")
    # the worker (and its Spark driver's JVM, where the provider reads it) inherits it
    monkeypatch.setenv(VARIABLE, str(source))
    name = f"java-provided-{uuid.uuid4().hex[:8]}"
    topic = f"java-provided-{uuid.uuid4().hex[:8]}"
    config = {"connector.class": FILE_SOURCE, "file": f"${{senv:{VARIABLE}}}", "topic": topic,
              "tasks.max": "1", "key.converter": STRING_CONVERTER,
              "value.converter": STRING_CONVERTER}
    worker = WorkerProcess(tmp_path / "worker", kafka_bootstrap, _properties(PROVIDER_CLASS))
    with running(worker) as process, \
            ConnectClient(process.address, timeout=CALL_TIMEOUT_S,
                          retry_unavailable=True) as client:
        # built at the start, before the worker served
        [opened] = logged_events(process, "java_config_provider_opened")
        assert (opened["provider"], opened["provider_class"]) == ("senv", PROVIDER_CLASS)

        client.create_connector(name, config)
        wait_until(lambda: [m.value().decode() for m in read_all(kafka_bootstrap, topic)]
                   == lines, timeout=STATE_TIMEOUT_S)
        status = client.get_connector_status(name)
        assert status.connector.state is State.RUNNING
        assert [task.status.state for task in status.tasks] == [State.RUNNING]
        # what is stored and shown keeps the reference; the task resolves it again
        assert client.get_connector_config(name)["file"] == f"${{senv:{VARIABLE}}}"
        [task] = client.list_tasks(name)
        assert task.config["file"] == f"${{senv:{VARIABLE}}}"

        # a variable the provider has not is that key's error, and nothing is created
        missing = f"CONNECT_GRPC_TEST_UNSET_{uuid.uuid4().hex[:6].upper()}"
        assert missing not in os.environ
        with pytest.raises(InvalidArgumentError) as caught:
            client.create_connector(f"{name}-missing", {**config, "file": f"${{senv:{missing}}}"})
        [violation] = caught.value.violations
        assert violation.field == "config.file"
        assert violation.description == (
            f"cannot resolve ${{senv:{missing}}}: the Java provider 'senv' ({PROVIDER_CLASS}) "
            f"has no value for key '{missing}'")
        assert f"{name}-missing" not in {c.name for c in client.list_connectors()}
        client.delete_connector(name)


def test_a_provider_class_plugin_path_has_not_stops_the_start_naming_its_property(
    kafka_bootstrap: str, tmp_path: Path
) -> None:
    absent = "com.example.secrets.NoSuchConfigProvider"
    worker = WorkerProcess(tmp_path / "worker", kafka_bootstrap, _properties(absent))
    result = subprocess.run(
        [sys.executable, "-m", "connect_grpc.cli", "standalone", str(worker.properties_path)],
        capture_output=True, text=True, timeout=300, check=False, start_new_session=True,
    )
    output = result.stdout + result.stderr
    assert result.returncode == 2, output
    [failure] = [json.loads(line) for line in output.splitlines()
                 if "worker_start_failed" in line and line.startswith("{")]
    assert failure["property"] == "config.providers.senv.class", failure
    assert failure["error"].startswith(f"config.providers.senv.class: provider 'senv' ({absent}): ")
    assert absent in failure["error"].partition("): ")[2], failure
    assert "Traceback" not in output, output
