"""Java config providers of ``plugin.path`` on a real worker, as Kafka Connect users declare
their own (Vault's, a cloud secrets manager's):

- Strimzi's EnvVarConfigProvider (``io.strimzi:kafka-env-var-config-provider`` from Maven
  Central, which ``make install`` lays out beside the other plugins), built in the worker's
  JVM at its start, resolves the references of a Java connector's config (Kafka's
  FileStreamSource reads the file it names); the stored config and task configs keep the
  reference, and a variable it has not is the reference's error;
- a provider whose values expire (a small one compiled here, as a leasing secrets store
  gives its values a time to live) restarts the connector when they do, as Kafka Connect
  does, unless its ``config.action.reload`` is ``none``;
- a provider class ``plugin.path`` has not stops the worker's start naming its property."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from connect_grpc.client import ConnectClient
from connect_grpc.java.plugin_jars import STRIMZI_ENV_VAR_PROVIDER, ensure_plugins
from connect_grpc.kernel.domain import State
from connect_grpc.kernel.errors import InvalidArgumentError
from connect_grpc.testing.cluster import WorkerProcess, wait_until
from tests.integration.helpers import logged_events, read_all
from tests.integration.java_builds import build_plugin, java_worker, running

pytestmark = [pytest.mark.integration, pytest.mark.timeout(600)]

FILE_SOURCE = "org.apache.kafka.connect.file.FileStreamSourceConnector"
STRING_CONVERTER = "org.apache.kafka.connect.storage.StringConverter"
PROVIDER_CLASS = "io.strimzi.kafka.EnvVarConfigProvider"
LEASING_CLASS = "leases.LeasingConfigProvider"
#: The worker's environment variable the connector's reference names.
VARIABLE = "CONNECT_GRPC_TEST_JAVA_PROVIDER_FILE"
LEASE_TTL_MS = 1500
CALL_TIMEOUT_S = 240
STATE_TIMEOUT_S = 90

#: A provider whose every value holds ``ttl.ms`` (its parameter), as a leasing secrets store
#: (Vault's dynamic secrets) gives them: the value of any key is how many times it was asked.
LEASING_SOURCES = {
    "leases/LeasingConfigProvider.java": """
package leases;

import java.util.HashMap;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.kafka.common.config.ConfigData;
import org.apache.kafka.common.config.provider.ConfigProvider;

public class LeasingConfigProvider implements ConfigProvider {
    private final AtomicLong asked = new AtomicLong();
    private long ttlMs;

    @Override
    public void configure(Map<String, ?> configs) {
        ttlMs = Long.parseLong(String.valueOf(configs.get("ttl.ms")));
    }

    @Override
    public ConfigData get(String path) {
        return new ConfigData(Map.of(), ttlMs);
    }

    @Override
    public ConfigData get(String path, Set<String> keys) {
        Map<String, String> values = new HashMap<>();
        long count = asked.incrementAndGet();
        for (String key : keys) {
            values.put(key, Long.toString(count));
        }
        return new ConfigData(values, ttlMs);
    }

    @Override
    public void close() {
    }
}
""",
}


@pytest.fixture(scope="module")
def worker(
    kafka_bootstrap: str, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[WorkerProcess]:
    """A distributed worker with both providers; the environment variable its Strimzi
    provider reads is the path of ``<work>/in.txt``."""
    work = tmp_path_factory.mktemp("java-config-providers")
    plugins = work / "plugins"
    build_plugin(work / "build", plugins / "leasing-provider", LEASING_SOURCES,
                 {"org.apache.kafka.common.config.provider.ConfigProvider": [LEASING_CLASS]})
    process = java_worker(work, kafka_bootstrap, "java-config-providers", [plugins], {
        "config.providers": "senv,lease",
        "config.providers.senv.class": PROVIDER_CLASS,
        "config.providers.lease.class": LEASING_CLASS,
        "config.providers.lease.param.ttl.ms": str(LEASE_TTL_MS),
    })
    with pytest.MonkeyPatch.context() as env:
        # the worker (and its Spark driver's JVM, where the provider reads it) inherits it
        env.setenv(VARIABLE, str(work / "in.txt"))
        with running(process):
            yield process


def _client(process: WorkerProcess) -> ConnectClient:
    return ConnectClient(process.address, timeout=CALL_TIMEOUT_S, retry_unavailable=True)


def _source(topic: str, **more: str) -> dict[str, str]:
    return {"connector.class": FILE_SOURCE, "file": f"${{senv:{VARIABLE}}}", "topic": topic,
            "tasks.max": "1", "key.converter": STRING_CONVERTER,
            "value.converter": STRING_CONVERTER, **more}


def test_a_java_config_provider_resolves_a_java_connectors_references(
    worker: WorkerProcess, kafka_bootstrap: str
) -> None:
    assert (ensure_plugins() / STRIMZI_ENV_VAR_PROVIDER.name).is_dir()
    source = worker.work_dir.parent / "in.txt"
    lines = [f"secret line {i}" for i in range(3)]
    source.write_text("".join(f"{line}\n" for line in lines), encoding="utf-8")
    name = f"java-provided-{uuid.uuid4().hex[:8]}"
    topic = f"java-provided-{uuid.uuid4().hex[:8]}"
    # built at the start, before the worker served
    opened = {(e["provider"], e["provider_class"])
              for e in logged_events(worker, "java_config_provider_opened")}
    assert opened == {("senv", PROVIDER_CLASS), ("lease", LEASING_CLASS)}
    with _client(worker) as client:
        client.create_connector(name, _source(topic))
        wait_until(lambda: [m.value().decode() for m in read_all(kafka_bootstrap, topic)]
                   == lines, timeout=STATE_TIMEOUT_S)
        status = client.get_connector_status(name)
        assert [task.status.state for task in status.tasks] == [State.RUNNING]
        # what is stored and shown keeps the reference; the task resolves it again
        assert client.get_connector_config(name)["file"] == f"${{senv:{VARIABLE}}}"
        [task] = client.list_tasks(name)
        assert task.config["file"] == f"${{senv:{VARIABLE}}}"

        # a variable the provider has not is that key's error, and nothing is created
        missing = f"CONNECT_GRPC_TEST_UNSET_{uuid.uuid4().hex[:6].upper()}"
        assert missing not in os.environ
        with pytest.raises(InvalidArgumentError) as caught:
            client.create_connector(f"{name}-missing", _source(topic, file=f"${{senv:{missing}}}"))
        [violation] = caught.value.violations
        assert violation.field == "config.file"
        assert violation.description == (
            f"cannot resolve ${{senv:{missing}}}: the Java provider 'senv' ({PROVIDER_CLASS}) "
            f"has no value for key '{missing}'")
        assert f"{name}-missing" not in {c.name for c in client.list_connectors()}
        client.delete_connector(name)


def _restarts(worker: WorkerProcess, name: str) -> int:
    return sum(1 for e in logged_events(worker, "connector_config_expired")
               if e.get("connector") == name)


def test_a_connector_whose_values_expire_is_restarted_unless_told_not_to(
    worker: WorkerProcess, tmp_path: Path
) -> None:
    (tmp_path / "in.txt").write_text("one\n", encoding="utf-8")
    leased = f"java-leased-{uuid.uuid4().hex[:8]}"
    kept = f"java-kept-{uuid.uuid4().hex[:8]}"
    with _client(worker) as client:
        # batch.size's value comes from the leasing provider; file from the environment's
        for name, more in ((leased, {}), (kept, {"config.action.reload": "none"})):
            client.create_connector(name, _source(
                f"{name}-lines", file=str(tmp_path / "in.txt"), **{"batch.size": "${lease:db:n}"},
                **more))
        # each start reads values that hold 1.5 s: the connector restarts, again and again
        wait_until(lambda: _restarts(worker, leased) >= 2, timeout=STATE_TIMEOUT_S)

        def leased_running() -> bool:
            status = client.get_connector_status(leased)
            return status.connector.state is State.RUNNING and [
                task.status.state for task in status.tasks] == [State.RUNNING]

        wait_until(leased_running, timeout=STATE_TIMEOUT_S)

        def scheduled() -> list[dict[str, object]]:
            return [e for e in logged_events(worker, "connector_restart_scheduled")
                    if e.get("connector") == leased]

        # each start (the create's, then each restart's) scheduled the next restart
        wait_until(lambda: len(scheduled()) >= 3, timeout=STATE_TIMEOUT_S)
        assert {e["ttl_ms"] for e in scheduled()} == {LEASE_TTL_MS}
        # config.action.reload=none: the expiry is noted, never acted on
        assert _restarts(worker, kept) == 0
        ignored = [e for e in logged_events(worker, "connector_config_expiry_ignored")
                   if e.get("connector") == kept]
        assert ignored and ignored[0]["ttl_ms"] == LEASE_TTL_MS
        # a deleted connector's timer is cancelled with it
        client.delete_connector(leased)
        client.delete_connector(kept)
        after = _restarts(worker, leased)
        wait_until(lambda: not client.list_connectors(), timeout=STATE_TIMEOUT_S)
        time.sleep(LEASE_TTL_MS / 1000 + 1)
        assert _restarts(worker, leased) == after


def test_a_provider_class_plugin_path_has_not_stops_the_start_naming_its_property(
    kafka_bootstrap: str, tmp_path: Path
) -> None:
    absent = "com.example.secrets.NoSuchConfigProvider"
    process = WorkerProcess(tmp_path / "worker", kafka_bootstrap, {
        "plugin.path": str(ensure_plugins()),
        "plugin.discovery": "service_load",
        "config.providers": "senv",
        "config.providers.senv.class": absent,
    })
    result = subprocess.run(
        [sys.executable, "-m", "connect_grpc.cli", "standalone", str(process.properties_path)],
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
