"""Secrets against a real worker process (real Spark, hosted tasks, real gRPC): config
provider references reach the plugins resolved and are returned unresolved, ValidateConfig
hides PASSWORD values and reports what cannot be resolved, no log line of the run holds a
resolved value (what the plugins print() included), and the config providers example of
docs/security.md works as written.

The module's worker is configured with that example's provider properties (its secret
directory replaced by this run's) and binds the wildcard address, so that its start-up warning about
an exposed listener is checked too.
"""

from __future__ import annotations

import contextlib
import json
import re
import subprocess
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from connect_grpc.client import ConnectClient
from connect_grpc.config.worker import read_properties
from connect_grpc.config_providers.redaction import HIDDEN
from connect_grpc.kafka.ports import free_port
from connect_grpc.kernel.domain import State
from connect_grpc.kernel.errors import InvalidArgumentError
from connect_grpc.testing.cluster import WorkerProcess, wait_until
from connect_grpc.testing.plugins import read_events
from tests.documents import SECURITY, section_text
from tests.integration.helpers import INSTRUMENTED_SOURCE, create_topic, produce

pytestmark = [pytest.mark.integration, pytest.mark.timeout(300)]

#: docs/security.md's section whose example the module's worker and connector follow.
PROVIDERS_SECTION = "## Config providers"
DOCUMENTED_SECRETS = "/tmp/connect-secrets"
DOCUMENTED_OUTPUT = "/tmp/connect-local"
DOCUMENTED_TOPIC = "connect-local"

RUN = uuid.uuid4().hex[:12]
FILE_SECRET = f"file-secret-{RUN}"
DIR_SECRET = f"dir-secret-{RUN}"
ENV_SECRET = f"env-secret-{RUN}"
ENV_VARIABLE = "CONNECT_SECRETS_TEST_TOKEN"
LISTENER_VARIABLE = "CONNECT_SECRETS_TEST_LISTENER"
SECRETS = (FILE_SECRET, DIR_SECRET, ENV_SECRET)


@dataclass(frozen=True, slots=True)
class SecurityExample:
    """The example of docs/security.md's "Config providers": its shell block, worker
    properties and connector."""

    shell: str
    properties: str
    connector: str


def security_example() -> SecurityExample:
    """The section's first block of each kind: the example comes before its subsection
    "Provider settings", whose properties block is no example to run."""
    blocks: dict[str, str] = {}
    for kind, body in re.findall(r"```(sh|properties|json)\n(.*?)```",
                                 section_text(SECURITY, PROVIDERS_SECTION), flags=re.DOTALL):
        blocks.setdefault(kind, body)
    return SecurityExample(blocks["sh"], blocks["properties"], blocks["json"])


@dataclass(frozen=True, slots=True)
class SecretsWorker:
    process: WorkerProcess
    client: ConnectClient
    secrets: Path
    output: Path


@pytest.fixture(scope="module")
def secrets_worker(
    kafka_bootstrap: str, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[SecretsWorker]:
    root = tmp_path_factory.mktemp("secrets")
    secrets, output = root / "connect-secrets", root / "connect-local"
    example = security_example()
    shell = example.shell.replace(DOCUMENTED_SECRETS, str(secrets))
    subprocess.run(["bash", "-euc", shell.replace(DOCUMENTED_OUTPUT, str(output))],
                   check=True, timeout=30)
    output.mkdir()
    (secrets / "db.properties").write_text(f"password={FILE_SECRET}\n", encoding="utf-8")
    (secrets / "token").write_text(DIR_SECRET, encoding="utf-8")
    properties_file = root / "providers.properties"
    properties_file.write_text(example.properties.replace(DOCUMENTED_SECRETS, str(secrets)),
                               encoding="utf-8")
    port = free_port()
    process = WorkerProcess(
        root / "worker", kafka_bootstrap,
        # the worker's own property resolves with its providers too (KIP-421)
        extra_properties={**read_properties(properties_file),
                          "listeners": f"${{env:{LISTENER_VARIABLE}}}"},
        port=port,
    )
    with pytest.MonkeyPatch.context() as env:
        env.setenv(ENV_VARIABLE, ENV_SECRET)  # the worker inherits the test's environment
        env.setenv(LISTENER_VARIABLE, f"grpc://0.0.0.0:{port}")
        process.start()
    try:
        with ConnectClient(process.address, timeout=60) as client:
            yield SecretsWorker(process, client, secrets, output)
    finally:
        process.stop()


def test_the_workers_own_property_resolved_its_reference(secrets_worker: SecretsWorker) -> None:
    """Its properties file names its listener by a reference to the documented env provider:
    the worker serves where the variable said."""
    written = read_properties(secrets_worker.process.properties_path)
    assert written["listeners"] == f"${{env:{LISTENER_VARIABLE}}}"
    assert secrets_worker.client.get_cluster_info().worker_id == secrets_worker.process.id


def _referencing_config(secrets: Path, events: Path) -> dict[str, str]:
    return {
        "connector.class": INSTRUMENTED_SOURCE,
        "tasks.max": "2",
        "test.events.file": str(events),
        "test.record.config": "true",
        "test.secret": f"${{file:{secrets}/db.properties:password}}",
        "dir.token": f"${{dir:{secrets}:token}}",
        "env.token": f"${{env:{ENV_VARIABLE}}}",
    }


def _running(client: ConnectClient, name: str, tasks: int) -> bool:
    status = client.get_connector_status(name)
    return status.connector.state is State.RUNNING and [
        task.status.state for task in status.tasks
    ] == [State.RUNNING] * tasks


def wait_running(worker: SecretsWorker, name: str, tasks: int) -> None:
    try:
        wait_until(lambda: _running(worker.client, name, tasks), timeout=120)
    except TimeoutError:
        status = worker.client.get_connector_status(name)
        raise AssertionError(f"{name} not running: {status}\n{worker.process.logs()}") from None


def test_references_reach_the_plugins_resolved_and_are_returned_unresolved(
    secrets_worker: SecretsWorker, name: str, events: Path
) -> None:
    client = secrets_worker.client
    config = _referencing_config(secrets_worker.secrets, events)
    client.create_connector(name, config)
    try:
        wait_running(secrets_worker, name, 2)
        wait_until(lambda: len([e for e in read_events(events)
                                if e["event"] == "task_start"]) == 2, timeout=60)
        started = {(e["event"], e["task"]): e["config"] for e in read_events(events)
                   if e["event"] in ("connector_start", "task_start")}
        assert set(started) == {("connector_start", None), ("task_start", 0), ("task_start", 1)}
        for received in started.values():
            assert received["test.secret"] == FILE_SECRET
            assert received["dir.token"] == DIR_SECRET
            assert received["env.token"] == ENV_SECRET

        expected = {**config, "name": name}
        assert client.get_connector_config(name) == expected
        assert dict(client.get_connector(name).config) == expected
        [listing] = [c for c in client.list_connectors(expand_info=True) if c.name == name]
        assert listing.info is not None and dict(listing.info.config) == expected
        tasks = client.list_tasks(name)
        assert [dict(t.config) for t in tasks] == [
            {**expected, "task.id": str(t)} for t in range(2)
        ]
        returned = repr((client.get_connector_status(name), tasks, listing))
        assert not any(secret in returned for secret in SECRETS)
    finally:
        client.delete_connector(name)


def test_validation_hides_passwords_and_names_what_cannot_be_resolved(
    secrets_worker: SecretsWorker, events: Path
) -> None:
    client, secrets = secrets_worker.client, secrets_worker.secrets
    config = _referencing_config(secrets, events)
    infos = client.validate_config(config=config)
    assert infos.error_count == 0, infos.all_errors()
    shown = {info.value.name: info.value.value for info in infos.configs}
    assert shown["test.secret"] == HIDDEN
    assert not any(secret in repr(infos) for secret in SECRETS)

    broken = {
        **config,
        "test.secret": f"${{file:{secrets}/db.properties:nope}}",
        "dir.token": f"${{dir:{secrets}/..:token}}",
        "env.token": "${vault:secret/db:password}",
    }
    errors = dict(client.validate_config(config=broken).all_errors())
    assert errors == {
        "test.secret": f"cannot resolve ${{file:{secrets}/db.properties:nope}}: properties "
                       f"file {secrets}/db.properties has no key 'nope'",
        "dir.token": f"cannot resolve ${{dir:{secrets}/..:token}}: path {secrets}/.. is not "
                     f"under the allowed.paths of provider 'dir' ({secrets})",
        "env.token": "cannot resolve ${vault:secret/db:password}: no config provider 'vault': "
                     "this worker's providers (config.providers) are file, dir, env",
    }
    with pytest.raises(InvalidArgumentError) as caught:
        client.create_connector(f"broken-{RUN}", broken)
    assert sorted(v.field for v in caught.value.violations) == [
        "config.dir.token", "config.env.token", "config.test.secret"
    ]
    assert f"broken-{RUN}" not in {c.name for c in client.list_connectors()}


def test_a_class_that_is_not_a_plugin_is_refused(secrets_worker: SecretsWorker) -> None:
    with pytest.raises(InvalidArgumentError) as caught:
        secrets_worker.client.create_connector(
            f"os-{RUN}", {"connector.class": "os.path.Thing", "tasks.max": "1"}
        )
    [violation] = caught.value.violations
    assert violation.field == "config.connector.class"
    assert "must be a registered plugin" in violation.description
    assert "plugin.path" in violation.description


def test_the_readme_security_example(
    secrets_worker: SecretsWorker, unique_topic: str, kafka_bootstrap: str, kafka_admin: Any
) -> None:
    """The example's connector file, with the run's paths and a topic of its own: the sink
    writes where the secret file says, and the reference is what the worker returns."""
    client = secrets_worker.client
    text = security_example().connector.replace(DOCUMENTED_SECRETS, str(secrets_worker.secrets))
    request = json.loads(text)
    config = {**request["config"], "topics": unique_topic}
    assert request["config"]["topics"] == DOCUMENTED_TOPIC
    name = f"{request['name']}-{RUN}"
    create_topic(kafka_admin, unique_topic)
    client.create_connector(name, config)
    try:
        wait_running(secrets_worker, name, 1)
        lines = [f"line {i}" for i in range(5)]
        produce(kafka_bootstrap, unique_topic, lines)
        written = secrets_worker.output / "from-secret.txt"
        wait_until(lambda: written.exists()
                   and written.read_text(encoding="utf-8").splitlines() == lines, timeout=60)
        assert client.get_connector_config(name)["file"] == (
            f"${{file:{secrets_worker.secrets}/sink.properties:path}}"
        )
    finally:
        client.delete_connector(name)


def _log_events(worker: SecretsWorker) -> list[dict[str, Any]]:
    """The JSON lines of the worker's whole log: the driver's, and its executors' Python
    workers' that Spark forwards (local master: into the worker process's stderr)."""
    events = []
    for line in worker.process.log_path.read_text(encoding="utf-8", errors="replace").splitlines():
        with contextlib.suppress(ValueError):
            event = json.loads(line)
            if isinstance(event, dict):
                events.append(event)
    return events


def _printed(events: list[dict[str, Any]], name: str) -> set[tuple[str, int | None, str]]:
    """(stream, task or None for the connector, the line) of the connector's printed lines."""
    return {(e["stream"], e.get("task"), e["line"]) for e in events
            if e["event"] == "plugin_output" and e.get("connector") == name}


def test_what_plugins_print_is_logged_masked_on_the_driver_and_in_their_hosts(
    secrets_worker: SecretsWorker, name: str, events: Path
) -> None:
    """Three tasks on local[2]: two hosted in Spark tasks, one on the driver (no slot left);
    the connector and each task print() their resolved config to stdout and stderr."""
    config = {**_referencing_config(secrets_worker.secrets, events),
              "tasks.max": "3", "test.print.config": "true"}
    secrets_worker.client.create_connector(name, config)
    try:
        wait_running(secrets_worker, name, 3)
        expected = {(stream, task) for stream in ("stdout", "stderr") for task in (None, 0, 1, 2)}
        try:
            wait_until(lambda: {(stream, task) for stream, task, _ in
                                _printed(_log_events(secrets_worker), name)} >= expected,
                       timeout=60)
        except TimeoutError:
            raise AssertionError(secrets_worker.process.logs()) from None
    finally:
        secrets_worker.client.delete_connector(name)
    logged = _log_events(secrets_worker)
    for stream, task, line in _printed(logged, name):
        who = f"connector {name}" if task is None else f"task {name}-{task}"
        assert line.startswith(f"{who} config: {{"), (stream, line)
        assert f"'test.secret': '{HIDDEN}'" in line and f"'env.token': '{HIDDEN}'" in line
    hosted = {e["task"] for e in logged if e["event"] == "task_hosted" and e["connector"] == name}
    assert len(hosted) == 2 and hosted < {0, 1, 2}  # the third task printed on the driver
    log = secrets_worker.process.log_path.read_text(encoding="utf-8", errors="replace")
    leaked = [line for line in log.splitlines() if any(secret in line for secret in SECRETS)]
    assert not leaked, "\n".join(leaked[:5])


def test_no_log_line_of_the_run_holds_a_resolved_secret(
    secrets_worker: SecretsWorker, name: str, events: Path
) -> None:
    """The instrumented plugins log the resolved configs they are given (on the driver and
    in the Spark tasks hosting them), so the worker must mask them; the whole log of the
    module's run so far is searched (run last, it covers the other tests' connectors too)."""
    client = secrets_worker.client
    client.create_connector(name, _referencing_config(secrets_worker.secrets, events))
    try:
        wait_until(lambda: len([e for e in read_events(events)
                                if e["event"] == "task_start"]) == 2, timeout=120)
        wait_until(lambda: "instrumented_task_started" in secrets_worker.process.logs(),
                   timeout=30)
    finally:
        client.delete_connector(name)
    log = secrets_worker.process.log_path.read_text(encoding="utf-8", errors="replace")
    lines = log.splitlines()
    assert any("instrumented_connector_started" in line and HIDDEN in line for line in lines)
    assert any("instrumented_task_started" in line and HIDDEN in line for line in lines)
    leaked = [line for line in lines if any(secret in line for secret in SECRETS)]
    assert not leaked, "\n".join(leaked[:5])
    warnings = [json.loads(line) for line in lines
                if "grpc_listener_exposed_without_tls" in line]
    assert [(w["level"], w["host"]) for w in warnings] == [("warning", "0.0.0.0")]
