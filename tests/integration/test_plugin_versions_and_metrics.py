"""Several versions of one plugin (KIP-891) and plugins' own metrics (KIP-877) on a real
standalone worker, over gRPC and its Prometheus endpoint.

Two ``plugin.path`` directories hold the same package ``vconn`` in versions 1.0.0 and
2.0.0. A connector with ``connector.plugin.version=[1.0,2.0)`` runs 1.0.0, one without the
key runs the latest; the statuses say which. A range no installed version is in is refused
by ValidateConfig and CreateConnector on its key, with Kafka's message. With tasks hosted
in Spark executors, the executor runs the copy the connector chose (a task of another
version fails at its start). The connector and its task register metrics through their
contexts, and the task's transformation as a Monitorable: scraped with the worker's tags,
the same whether the task is hosted on the driver or in an executor (whose readings the
driver takes once a second), gone once the connector is deleted.
"""

from __future__ import annotations

import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass

import grpc
import pytest
from prometheus_client.parser import text_string_to_metric_families

from connect_grpc.kafka.ports import free_port
from connect_grpc.testing.cluster import WorkerProcess, wait_until
from connect_grpc.v1 import connect_pb2 as pb
from tests.integration.helpers import (
    RUNNING,
    create,
    field_violations,
    states,
    wait_for_states,
)

pytestmark = [pytest.mark.integration, pytest.mark.timeout(300)]

CONNECTOR = "vconn.conn.VersionedSourceConnector"
TASK = "vconn.conn.VersionedSourceTask"
TRANSFORMATION = "vconn.conn.CountingTransformation"
COUNTING = {"transforms": "count", "transforms.count.type": TRANSFORMATION}
POLLS = "connect_grpc_plugin_polls"
TRANSFORMED = "connect_grpc_plugin_records_transformed"
VERSIONS = ("1.0.0", "2.0.0")
NO_MATCH = (
    f"Plugin {CONNECTOR} not found that matches the version range [5.0,6.0), available "
    "versions: [1.0.0, 2.0.0]"
)

#: The plugin, the same in both directories but for ``version_info``. Its modules import
#: each other relatively, as a second copy's must.
PLUGIN = '''
import time

from connect_grpc.plugin import ConfigDef, SourceConnector, SourceTask, Transformation

from .version_info import VERSION


class VersionedSourceTask(SourceTask):
    def version(self):
        return VERSION

    def start(self, config):
        if config.get("expect.version") != VERSION:
            raise RuntimeError(f"task {VERSION} started for {config.get('expect.version')}")
        self.polls = 0
        self.context.plugin_metrics.add_metric(
            self.context.plugin_metrics.metric_name("polls", "Calls of poll."),
            lambda: self.polls,
        )

    def poll(self, max_records):
        self.polls += 1
        time.sleep(0.05)
        return []

    def stop(self, connector_deleted=False):
        pass


class CountingTransformation(Transformation):
    def version(self):
        return VERSION

    def with_plugin_metrics(self, metrics):
        self.seen = 0
        metrics.add_metric(metrics.metric_name("records-transformed", "Records seen."),
                           lambda: self.seen)

    def apply(self, record):
        self.seen += 1
        return record


class VersionedSourceConnector(SourceConnector):
    def version(self):
        return VERSION

    def config_def(self):
        return ConfigDef()

    def start(self, config):
        self.context.plugin_metrics.add_metric("started-version", lambda: float(VERSION[0]))

    def task_class(self):
        return VersionedSourceTask

    def task_configs(self, max_tasks):
        return [{"expect.version": VERSION}]

    def stop(self, connector_deleted=False):
        pass
'''


@dataclass(frozen=True)
class Deployment:
    worker: WorkerProcess
    metrics_port: int
    hosting: str


@pytest.fixture(scope="module", params=["driver", "executor"])
def deployment(
    kafka_bootstrap: str, tmp_path_factory: pytest.TempPathFactory, request: pytest.FixtureRequest
) -> Iterator[Deployment]:
    work = tmp_path_factory.mktemp(f"plugin-versions-{request.param}")
    directories = []
    for version in VERSIONS:
        package = work / f"plugins-{version}" / "vconn"
        package.mkdir(parents=True)
        (package / "__init__.py").write_text("")
        (package / "version_info.py").write_text(f"VERSION = {version!r}\n")
        (package / "conn.py").write_text(PLUGIN)
        directories.append(str(package.parent))
    port = free_port()
    extra = {
        "plugin.path": ",".join(directories),
        "metrics.listener": f"http://127.0.0.1:{port}",
        "task.hosting": request.param,
    }
    (work / "worker").mkdir()
    with WorkerProcess(work / "worker", kafka_bootstrap, extra_properties=extra) as worker:
        yield Deployment(worker, port, request.param)


def _config(**extra: str) -> dict[str, str]:
    return {"connector.class": CONNECTOR, "tasks.max": "1", **extra}


def _scrape(port: int) -> dict[tuple[str, frozenset[tuple[str, str]]], float]:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as response:
        text = response.read().decode("utf-8")
    return {
        (sample.name, frozenset(sample.labels.items())): sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
    }


def _plugin_samples(port: int, connector: str) -> dict[str, dict[str, str]]:
    """The plugin metrics of ``connector``: name → labels."""
    return {
        name: dict(labels)
        for (name, labels) in _scrape(port)
        if name.startswith("connect_grpc_plugin_") and ("connector", connector) in labels
    }


def test_a_range_matching_no_version_is_refused_on_its_key(deployment: Deployment) -> None:
    stub = deployment.worker.stub
    validated = stub.ValidateConfig(
        pb.ValidateConfigRequest(plugin=CONNECTOR,
                                 config=_config(**{"connector.plugin.version": "[5.0,6.0)"})),
        timeout=60,
    )
    errors = {info.value.name: list(info.value.errors) for info in validated.configs
              if info.value.errors}
    assert errors == {"connector.plugin.version": [NO_MATCH]}
    with pytest.raises(grpc.RpcError) as refused:
        create(stub, "v-none", {**_config(**{"connector.plugin.version": "[5.0,6.0)"}),
                                "name": "v-none"})
    assert refused.value.code() is grpc.StatusCode.INVALID_ARGUMENT
    assert field_violations(refused.value) == {"config.connector.plugin.version": NO_MATCH}


def test_the_version_asked_for_runs_and_its_metrics_come_and_go(
    deployment: Deployment,
) -> None:
    stub, port = deployment.worker.stub, deployment.metrics_port
    create(stub, "v-old", _config(**{"connector.plugin.version": "[1.0,2.0)", **COUNTING}))
    create(stub, "v-new", _config())
    for name in ("v-old", "v-new"):
        wait_for_states(stub, name, RUNNING, [RUNNING])
    for name, version in (("v-old", "1.0.0"), ("v-new", "2.0.0")):
        status = stub.GetConnectorStatus(pb.GetConnectorStatusRequest(name=name),
                                         timeout=10).status
        assert status.connector.version == version
        assert [task.version for task in status.tasks] == [version]

    wait_until(
        lambda: "connect_grpc_plugin_started_version" in _plugin_samples(port, "v-old"),
        timeout=60,
    )
    if deployment.hosting == "executor":
        def hosted(name: str) -> bool:
            task = stub.GetTaskStatus(pb.GetTaskStatusRequest(name=name, task_id=0),
                                      timeout=10).task
            return task.placement.kind == pb.TaskPlacement.KIND_SPARK_EXECUTOR

        wait_until(lambda: hosted("v-old") and hosted("v-new"), timeout=120)
        time.sleep(2)  # a task of the wrong version fails at its start in the executor
    for name in ("v-old", "v-new"):  # still running: each task started its own version
        assert states(stub, name) == (RUNNING, [RUNNING])
    # wherever the task is hosted, its plugins' metrics are the same series
    wait_until(lambda: {POLLS, TRANSFORMED} <= _plugin_samples(port, "v-old").keys(), timeout=60)
    samples = _plugin_samples(port, "v-old")
    assert samples[POLLS] == {
        "connector": "v-old", "task": "0", "config": "task", "class": TASK, "version": "1.0.0",
    }
    assert samples[TRANSFORMED] == {  # without a version of its own: the latest
        "connector": "v-old", "task": "0", "config": "transforms", "class": TRANSFORMATION,
        "version": "2.0.0", "alias": "count",
    }
    polls = (POLLS, frozenset(samples[POLLS].items()))
    first = _scrape(port)[polls]
    wait_until(lambda: _scrape(port)[polls] > first, timeout=30)  # read again, not once
    assert samples["connect_grpc_plugin_started_version"] == {
        "connector": "v-old", "config": "connector", "class": CONNECTOR, "version": "1.0.0"
    }
    assert _scrape(port)[("connect_grpc_plugin_started_version",
                          frozenset(samples["connect_grpc_plugin_started_version"].items()))] == 1

    stub.DeleteConnector(pb.DeleteConnectorRequest(name="v-old"), timeout=60)
    wait_until(lambda: not _plugin_samples(port, "v-old"), timeout=60)
    assert "connect_grpc_plugin_started_version" in _plugin_samples(port, "v-new")
    stub.DeleteConnector(pb.DeleteConnectorRequest(name="v-new"), timeout=60)
