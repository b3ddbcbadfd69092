"""A connector's request_task_reconfiguration makes the herder recompute its tasks."""

from __future__ import annotations

from collections.abc import Mapping
from typing import ClassVar

import pytest

from connect_grpc.connectors.api import SourceConnector, Task
from connect_grpc.connectors.plugins import Plugins
from connect_grpc.herder.standalone import StandaloneHerder
from connect_grpc.kernel.configdef import ConfigDef
from connect_grpc.kernel.domain import TargetState
from connect_grpc.testing.cluster import wait_until
from tests.task_fakes import IdleSource
from tests.unit.fake_worker import FakeWorker


class GrowingConnector(SourceConnector):
    """Runs as many tasks as ``tables`` says, like a source that discovers tables."""

    tables: ClassVar[int] = 1

    def config_def(self) -> ConfigDef:
        return ConfigDef()

    def start(self, config: Mapping[str, str]) -> None:
        return None

    def task_class(self) -> type[Task]:
        return IdleSource

    def task_configs(self, max_tasks: int) -> list[dict[str, str]]:
        return [{"table": str(i)} for i in range(min(max_tasks, GrowingConnector.tables))]

    def stop(self, connector_deleted: bool = False) -> None:
        return None


@pytest.fixture
def plugins() -> Plugins:
    return Plugins(registered=(GrowingConnector,))


def test_reconfiguration_request_replaces_the_tasks(
    herder: StandaloneHerder, worker_holder: dict[str, FakeWorker]
) -> None:
    GrowingConnector.tables = 1
    config = {"connector.class": f"{__name__}.GrowingConnector", "tasks.max": "5"}
    herder.create_connector("c", config, TargetState.STARTED)
    assert len(herder.task_configs("c")) == 1
    GrowingConnector.tables = 3
    worker_holder["worker"].listener.on_reconfiguration_requested("c")
    wait_until(lambda: len(herder.task_configs("c")) == 3, timeout=10)
    assert [t.config["table"] for t in herder.task_configs("c")] == ["0", "1", "2"]


def test_resume_after_a_reconfiguration_request_runs_the_new_task_set(
    herder: StandaloneHerder, worker_holder: dict[str, FakeWorker]
) -> None:
    GrowingConnector.tables = 1
    config = {"connector.class": f"{__name__}.GrowingConnector", "tasks.max": "5"}
    herder.create_connector("c", config, TargetState.STARTED)
    herder.pause_connector("c")
    GrowingConnector.tables = 2
    worker_holder["worker"].listener.on_reconfiguration_requested("c")
    herder.resume_connector("c")
    assert len(herder.task_configs("c")) == 2
